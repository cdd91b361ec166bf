"""The scale benchmark's memory figures measure a compile, not a cached tree: a learner's
set-up warms its kernels up on Kuhn's tree, which the measurement must not find compiled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")  # bench_scale measures OpenSpiel beside nashzoo

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench_scale():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_scale

        yield bench_scale
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_kuhn_is_compiled_inside_the_traced_measurement(bench_scale) -> None:
    from nashzoo.games import compile_tree, load_game

    tree_bytes = compile_tree(load_game("kuhn_poker")).nbytes()  # cached in this process
    traced = bench_scale.measure_traced("kuhn_poker")
    assert traced["histories"] == 58
    # A cached tree would be found in a few hundred bytes: the compile builds all of it.
    assert traced["traced_compile_peak_bytes"] > tree_bytes
    assert traced["traced_peak_bytes"] >= traced["traced_held_bytes"] > tree_bytes
