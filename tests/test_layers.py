"""Data flows one way (ARCHITECTURE.md): no layer imports a layer above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nashzoo"
ORDER = ["games", "envs", "io", "agents", "eval", "train", "cli"]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "nashzoo" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else None


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


@pytest.mark.parametrize("layer", ORDER[:-1])
def test_no_upward_imports(layer):
    rank = ORDER.index(layer)
    offenders = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            target = _layer(module)
            if target is not None and ORDER.index(target) > rank:
                offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_the_architecture_diagram_draws_the_layers_in_this_order():
    """docs/ARCHITECTURE.md's diagram is what a newcomer reads: it must match ORDER."""
    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text()
    diagram = text.split("```", 2)[1]
    drawn = [
        line.split()[0].split("/")[1].removesuffix(".py")
        for line in diagram.splitlines()
        if line.startswith("nashzoo/")
    ]
    assert drawn == ORDER


# The switch of the optional compiled kernels may import numba (guarded: numpy is the fallback),
# and a long walk's progress bar tqdm (guarded: without it, no bar).
OPTIONAL = {
    PACKAGE / "games" / "_numba.py": {"numba"},
    PACKAGE / "games" / "progress.py": {"tqdm"},
}


def test_games_need_only_numpy():
    import sys

    allowed = {"numpy", "nashzoo", "__future__"}
    for path in (PACKAGE / "games").rglob("*.py"):
        for module in _imports(path):
            root = module.split(".")[0]
            if root == "pyspiel" and path.name == "openspiel.py":
                continue  # the optional OpenSpiel bridge, imported lazily (checked below)
            ok = root in allowed | OPTIONAL.get(path, set()) or root in sys.stdlib_module_names
            assert ok, f"{path}: {module}"


def test_openspiel_bridge_imports_pyspiel_lazily():
    """The bridge is importable without open_spiel: pyspiel only inside functions."""
    tree = ast.parse((PACKAGE / "games" / "openspiel.py").read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top for a in n.names] + [
        n.module for n in top if isinstance(n, ast.ImportFrom) and n.module
    ]
    assert not any(name.split(".")[0] in {"pyspiel", "open_spiel"} for name in names)


def test_numba_is_imported_on_first_need_not_with_nashzoo():
    """numba costs about 0.3 s and 40 MB to import: a user of the envs, the command line or a
    policy file never pays it, and the first learner (or kernel call) loads it, compiled."""
    import subprocess
    import sys

    pytest.importorskip("numba")
    code = """
import sys
import nashzoo.cli
from nashzoo.envs import leduc_holdem_v0
env = leduc_holdem_v0.env()
env.reset(seed=0)
for agent in env.agent_iter():
    observation, _, terminated, truncated, _ = env.last()
    env.step(None if terminated or truncated else int(observation["action_mask"].argmax()))
print("numba" in sys.modules)
from nashzoo.agents import make_learner
make_learner("cfr_plus", "kuhn_poker", 0)
from nashzoo.games.treemath import _jit
print("numba" in sys.modules, type(_jit.full_width_step).__name__, _jit.ENABLED)
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "NASHZOO_PURE_NUMPY"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split("\n")
    assert out[0] == "False"
    assert out[1] == "True CPUDispatcher True"


def test_a_kernel_called_first_makes_every_kernel_numbas():
    """The first call of any compiled kernel (nothing has read ENABLED yet) compiles it and
    turns every kernel defined so far into numba's, so kernels that call others find them
    compiled."""
    import subprocess
    import sys

    pytest.importorskip("numba")
    code = """
import numpy as np
from nashzoo.games import layout
from nashzoo.games.treemath import _jit
before = type(_jit._segment).__name__
out = np.empty((1, 2))
_jit.regret_matching_rows(
    np.array([[3.0, 1.0]]), np.array([[True, True]]), np.array([0.5]), out
)
print(before, out.tolist(), type(_jit._segment).__name__, type(layout._lay_out_loop).__name__)
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "NASHZOO_PURE_NUMPY"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["_Lazy", "[[0.75,", "0.25]]", "CPUDispatcher", "CPUDispatcher"]


def test_without_numba_the_first_need_falls_back_to_numpy():
    """numba is imported on first need now, not at import: where it cannot be imported, that
    first need (a learner's set-up) finds the switch off and the numpy twins run, with the
    same numbers."""
    import importlib.util
    import subprocess
    import sys

    run = """
from nashzoo.agents import TabularPolicy, make_learner
from nashzoo.eval import nash_conv
from nashzoo.games.treemath import _jit
a = make_learner("cfr_plus", "kuhn_poker", 0)
b = make_learner("cfr_plus", "kuhn_poker", 1)
for _ in range(50):
    a.step(b.current_policy())
    b.step(a.current_policy())
joint = TabularPolicy.joint("kuhn_poker", [a.average_policy(), b.average_policy()])
print(_jit.ENABLED, type(_jit.full_width_step).__name__, repr(nash_conv("kuhn_poker", joint)))
"""
    blocked = 'import sys\nsys.modules["numba"] = None  # as if numba were not installed\n'
    env = {k: v for k, v in __import__("os").environ.items() if k != "NASHZOO_PURE_NUMPY"}
    without = subprocess.run(
        [sys.executable, "-c", blocked + run], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert without[:2] == ["False", "_Lazy"]
    if importlib.util.find_spec("numba") is not None:
        with_numba = subprocess.run(
            [sys.executable, "-c", run], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        assert with_numba[:2] == ["True", "CPUDispatcher"]
        assert with_numba[2] == without[2]  # the same floats, bit for bit
