"""The README cannot lie: its Python examples run, and CI calls its test command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
ENV_ID = re.compile(r"nashzoo/[A-Za-z0-9_]+-v[0-9]+")


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_examples_run(index, capsys):
    from nashzoo.games import game_names, unregister_game

    before = set(game_names())
    try:
        # Run as a script is: an example's main guard (``processes=2``) must be entered.
        code = compile(BLOCKS[index], f"README.md python block {index}", "exec")
        exec(code, {"__name__": "__main__"})
    finally:  # a game the example registers must not leak into other tests
        for name in set(game_names()) - before:
            unregister_game(name)


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0].strip().splitlines()
    commands = [c.split("#")[0].strip() for c in commands]
    assert commands == ["make race", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, flags=re.M)


def test_no_placeholder_left():
    assert "PLACEHOLDER" not in README and "TODO" not in README


def test_every_registry_id_in_the_docs_is_registered():
    import gymnasium
    import pettingzoo

    import nashzoo.envs  # noqa: F401  (registers the envs)

    docs = {"README.md": README}
    pages = [
        ROOT / "DEVELOPERS.md",
        ROOT / "docs" / "integrations.md",
        ROOT / "docs" / "ARCHITECTURE.md",
    ]
    for path in [*pages, *sorted((ROOT / "nashzoo").rglob("*.py"))]:
        if path.exists():
            docs[str(path.relative_to(ROOT))] = path.read_text()
    ids = {(name, m) for name, text in docs.items() for m in ENV_ID.findall(text)}
    assert any(name == "README.md" for name, _ in ids), "README names no registry id"
    registered = set(pettingzoo.aec_registry) | set(gymnasium.registry)  # PettingZoo or Gymnasium
    missing = sorted(f"{m} (in {name})" for name, m in ids if m not in registered)
    assert not missing, f"registry ids named in the docs but not registered: {missing}"


def test_readme_names_exactly_the_core_dependencies():
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)\]", pyproject, flags=re.S | re.M).group(1)
    core = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in re.findall(r'"(.*?)"', block)}
    reuse = README.split("## Reusing the environments", 1)[1].split("```", 1)[0]
    sentence = reuse.split("(", 1)[0]  # "... needs only numpy, scipy, ... and tqdm"
    named = set(re.findall(r"[a-z][a-z0-9_-]+", sentence.split("needs only", 1)[1]))
    assert named - {"and"} == core
    assert "no torch" in reuse and "torch" not in core


def test_developers_md_names_every_extra_and_what_bench_installs():
    """DEVELOPERS.md's set-up step lists the extras ``all`` installs and what ``bench`` holds;
    four of ``bench``'s seven packages had gone unnamed."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = extras["optional-dependencies"]
    setup = (ROOT / "DEVELOPERS.md").read_text().split("The library itself", 1)[0]
    setup = " ".join(setup.split())
    for extra in extras:
        named = f"`{extra}`" in setup or f"[{extra}]" in setup  # `fast` or ".[all]"
        assert named, f"DEVELOPERS.md does not name the extra {extra!r}"
    for requirement in extras["bench"]:
        package = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        assert package in setup, f"DEVELOPERS.md does not say why bench installs {package}"


def test_nothing_in_the_repository_points_outside_it():
    """Someone who clones the repository has everything its docs and code refer to."""
    import subprocess

    needles = ("../" + "shared", "/" + "work/")  # split so this file does not match itself
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".md", ".py", ".toml", ".cfg", ".txt", ""} or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if any(needle in line for needle in needles):
                offenders.append(f"{name}:{number}")
    assert not offenders, f"references outside the repository: {offenders}"
    assert "docs/ARCHITECTURE.md" in (ROOT / "DEVELOPERS.md").read_text()


def test_the_repository_tracks_no_run_output():
    """A race, train or tournament folder committed by accident (its lock file, or results
    outside ``docs/results``) is caught here rather than shipped to every clone."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    homes = {".ci", ".gitignore", "BENCHMARKS.md", "DEVELOPERS.md", "LICENSE", "MANIFEST.in"}
    homes |= {"Makefile", "README.md", "benchmarks", "docs", "nashzoo", "pyproject.toml", "tests"}
    strays = sorted({name.split("/", 1)[0] for name in tracked} - homes)
    assert not strays, f"tracked files outside the repository's homes: {strays}"
    outputs = ("race_config.json", "train_config.json", "tournament.json", "results.csv")
    misplaced = [
        name
        for name in tracked
        if name.endswith(".nashzoo.lock")
        or (name.rsplit("/", 1)[-1] in outputs and not name.startswith("docs/results/"))
    ]
    assert not misplaced, f"run outputs tracked outside docs/results: {misplaced}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_test_names_no_earlier_runs_test_as_a_death(tmp_path):
    """``.pytest-running`` is written and removed only by a run in one process: a file left by
    an earlier one (a one-process run killed with its make) stayed through every run with
    workers, and the first ordinary failure of one was reported as a death in that file's test.
    The Makefile is run as it is, with a venv whose pytest fails as a failing test does."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    bin_folder = tmp_path / "venv" / "bin"
    bin_folder.mkdir(parents=True)
    for name, status in (("ruff", 0), ("python", 1)):
        (bin_folder / name).write_text(f"#!/bin/sh\nexit {status}\n")
        (bin_folder / name).chmod(0o755)
    (tmp_path / "venv" / ".installed").touch()
    (tmp_path / ".pytest-running").write_text("tests/test_gone.py::test_of_an_earlier_run\n")
    outer = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")  # a make test running this one passes its own
    env = {name: value for name, value in os.environ.items() if name not in outer}
    done = subprocess.run(
        ["make", "test", "VENV=venv"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "test_of_an_earlier_run" not in done.stdout + done.stderr
