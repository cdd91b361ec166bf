"""The benchmark scripts as a newcomer runs them: a missing peer (OpenSpiel) is refused in one
line naming the fix, not with a traceback, and a wrong option is refused before any work, in one
line saying what is wrong and what would do. Nothing here times anything."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch: pytest.MonkeyPatch):
    """Import a script of benchmarks/ by name, afresh (the scripts import ``_common`` as a
    top-level module, as they do when run)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def scripts() -> list[str]:
        return [
            name
            for name, module in sys.modules.items()
            if Path(getattr(module, "__file__", None) or "/").parent == BENCHMARKS
        ]

    def load(name: str):
        for script in scripts():  # those a script imports too (bench_scale: bench_cfr)
            del sys.modules[script]
        return importlib.import_module(name)

    yield load
    for script in scripts():  # none keeps a module imported with pyspiel hidden
        del sys.modules[script]


def run_main(module, monkeypatch: pytest.MonkeyPatch, *argv: str) -> SystemExit:
    monkeypatch.setattr(sys, "argv", [f"{module.__name__}.py", *argv])
    with pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value


@pytest.mark.parametrize(
    "script", ["bench_cfr", "bench_bridge", "bench_scale", "bench_mccfr", "bench_env"]
)
def test_without_openspiel_a_script_loads_and_refuses_in_one_line(
    script: str, benchmarks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """These imported pyspiel at the top: without it the run (and even --help) ended in a
    ModuleNotFoundError traceback."""
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # `import pyspiel` now fails
    module = benchmarks(script)
    exit_ = run_main(module, monkeypatch, "--quick")
    assert str(exit_.code).startswith("this benchmark needs open_spiel as the peer")
    assert "pip install 'nashzoo[bench]'" in str(exit_.code)
    assert "\n" not in str(exit_.code)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--seeds", "0"], "--seeds must be at least 1, got 0"),
        (["--only", "nashzoo os,zzz"], "--only zzz matches no solver; the solvers are: nashzoo"),
        (["--sweep", "liars_dice"], "--sweep takes GAME:TARGET:LEARNER"),
        (["--sweep", "liars_dice:0.1:cfr"], "LEARNER os_mccfr or es_mccfr"),
        (["--sweep", "liars_dice:x:os_mccfr"], "TARGET must be a number"),
        (["--sweep", "kuhn_poker:0.1:os_mccfr", "--config", "{bad"], "is not JSON"),
        (["--sweep", "kuhn_poker:0.1:os_mccfr", "--config", "[1]"], "a JSON object"),
        (["--cap", "0"], "--cap must be positive"),
    ],
)
def test_bench_mccfr_refuses_a_wrong_option_in_one_line(
    argv: list[str], says: str, benchmarks, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Before: a ValueError traceback (--sweep, --config), an empty table (--only), or seven
    seeds (--seeds 0 read as "the default")."""
    exit_ = run_main(benchmarks("bench_mccfr"), monkeypatch, *argv)
    assert exit_.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("bench_mccfr.py: error: ") and says in error


def test_bench_revisions_refuses_a_revision_that_is_no_commit(
    benchmarks, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Before: `git worktree add` failed and the run ended in a CalledProcessError traceback."""
    exit_ = run_main(benchmarks("bench_revisions"), monkeypatch, "--before", "no-such-revision")
    assert exit_.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("bench_revisions.py: error: --before no-such-revision is not a commit")
    assert "e.g. --before HEAD~1" in error


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--device", "cpu", "--learners", "nfps,nfsp"], "--learners nfps: not a torch learner"),
        (["--device", "gpu"], "--device gpu: use cuda, cuda:N, or cpu"),
        (["--device", "cpu", "--steps", "0"], "--steps must be at least 1"),
        (
            ["--device", "cpu", "--markdown", str(BENCHMARKS.parent / "BENCHMARKS.md")],
            "write into a scratch copy",
        ),
    ],
)
def test_check_cuda_refuses_a_wrong_option_before_any_work(
    argv: list[str], says: str, benchmarks, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """GPU time is scarce: a misspelt learner came back as a failed row after the others ran,
    and a --device cpu dry run replaced the GPU's results in BENCHMARKS.md with CPU ones."""
    pytest.importorskip("torch")
    exit_ = run_main(benchmarks("check_cuda"), monkeypatch, *argv)
    assert exit_.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("check_cuda.py: error: ") and says in error


def test_check_cuda_writes_the_steps_it_ran(benchmarks) -> None:
    """The section said "3 steps" whatever --steps was."""
    pytest.importorskip("torch")
    text = benchmarks("check_cuda").markdown([], "CPU (dry run)", "now", rounds=3, steps=1)
    assert "`benchmarks/check_cuda.py`, 1 step)" in text


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--only-rung", "9"], "--only-rung must be 1-5"),
        (["--max-rung", "0"], "--max-rung must be 1-5"),
        (["--rounds", "0"], "--rounds must be at least 1"),
        (["--only-target", "cfr"], "add --targets (with the ladder) or --targets-only"),
    ],
)
def test_bench_scale_refuses_an_option_that_would_run_nothing_or_everything(
    argv: list[str], says: str, benchmarks, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Before: an empty table with exit 0 (--only-rung 9, --max-rung 0), a StatisticsError
    after the work (--rounds 0), or the whole ladder with --only-target ignored."""
    pytest.importorskip("pyspiel")
    exit_ = run_main(benchmarks("bench_scale"), monkeypatch, *argv)
    assert exit_.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("bench_scale.py: error: ") and says in error


def test_bench_scale_only_rung_5_needs_no_max_rung(benchmarks) -> None:
    """--only-rung 5 was filtered out by the default --max-rung 4: an empty table."""
    pytest.importorskip("pyspiel")
    module = benchmarks("bench_scale")
    assert [r.number for r in module._rungs(module._parser().parse_args(["--only-rung", "5"]))] == [
        5
    ]
    assert [r.number for r in module._rungs(module._parser().parse_args([]))] == [1, 2, 3, 4]


@pytest.mark.parametrize("argv", [["--every", "0"], ["--iterations", "5", "--every", "10"]])
def test_bench_deep_cfr_memory_refuses_checkpoints_it_would_never_reach(
    argv: list[str], benchmarks, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Before: a ZeroDivisionError (--every 0), or a table of no Deep CFR rows."""
    pytest.importorskip("torch")
    exit_ = run_main(benchmarks("bench_deep_cfr_memory"), monkeypatch, *argv)
    assert exit_.code == 2
    assert "--every must be at least 1 and at most --iterations" in capsys.readouterr().err
