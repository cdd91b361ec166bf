"""The README cannot lie: its Python examples run, and CI calls its test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_examples_run(index, capsys):
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {})


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0].strip().splitlines()
    commands = [c.split("#")[0].strip() for c in commands]
    assert commands == ["make race", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, flags=re.M)


def test_no_placeholder_left():
    assert "PLACEHOLDER" not in README and "TODO" not in README
