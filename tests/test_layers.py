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
