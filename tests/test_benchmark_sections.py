"""The benchmarks' writer of BENCHMARKS.md: a rerun replaces its own generated part of a
section and nothing else (hand-written notes beside it, other parts, other sections)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parent.parent / "benchmarks" / "_common.py"
_spec = importlib.util.spec_from_file_location("benchmarks_common", COMMON)
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
write_section, part_marks = common.write_section, common.part_marks

BEGIN, END = part_marks("results")

DOC = f"""# Benchmarks

## Speed

Hand-written before.

{BEGIN}
| old | table |
{END}

Hand-written after: the ## Speed table is old.

## Other

Kept.
"""


def test_a_rerun_replaces_only_its_part(tmp_path: Path) -> None:
    path = tmp_path / "B.md"
    path.write_text(DOC)
    write_section(path, "## Speed", "| new | table |")
    assert path.read_text() == DOC.replace("| old | table |", "| new | table |")


def test_the_heading_in_the_body_is_not_written_twice(tmp_path: Path) -> None:
    path = tmp_path / "B.md"
    path.write_text(DOC)
    write_section(path, "## Speed", "## Speed\n\n| new | table |\n")
    assert path.read_text() == DOC.replace("| old | table |", "| new | table |")


def test_parts_of_one_section_are_independent(tmp_path: Path) -> None:
    path = tmp_path / "B.md"
    path.write_text(DOC)
    write_section(path, "## Speed", "targets v1", part="targets")
    write_section(path, "## Speed", "| new | table |")
    write_section(path, "## Speed", "targets v2", part="targets")
    text = path.read_text()
    begin, end = part_marks("targets")
    # The new part went to the end of the section, after the hand-written note.
    assert (
        f"Hand-written after: the ## Speed table is old.\n\n{begin}\ntargets v2\n{end}\n\n## Other"
    ) in text
    assert "| new | table |" in text and "| old | table |" not in text
    assert "targets v1" not in text and text.count(begin) == 1


def test_a_section_without_marks_keeps_its_text_and_gains_the_part(tmp_path: Path) -> None:
    """An older file whose section has no marks loses nothing: the part is added at the
    section's end (before the next section)."""
    path = tmp_path / "B.md"
    path.write_text("# Benchmarks\n\n## Speed\n\nOld prose.\n\n## Other\n\nKept.\n")
    write_section(path, "## Speed", "fresh")
    assert path.read_text() == (
        f"# Benchmarks\n\n## Speed\n\nOld prose.\n\n{BEGIN}\nfresh\n{END}\n\n## Other\n\nKept.\n"
    )


def test_a_missing_section_or_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "B.md"
    write_section(path, "## Speed", "first")
    assert path.read_text() == f"# Benchmarks\n\n## Speed\n\n{BEGIN}\nfirst\n{END}\n"
    write_section(path, "## Later", "second")
    assert path.read_text().endswith(f"## Later\n\n{BEGIN}\nsecond\n{END}\n")
    assert "first" in path.read_text()


def test_a_mention_of_the_heading_in_prose_is_not_the_section(tmp_path: Path) -> None:
    path = tmp_path / "B.md"
    path.write_text(DOC)
    write_section(path, "## Other", "generated")
    text = path.read_text()
    assert text.startswith(DOC.rstrip("\n").removesuffix("Kept."))
    assert text.endswith(f"## Other\n\nKept.\n\n{BEGIN}\ngenerated\n{END}\n")


def test_a_part_name_that_would_break_the_comment_is_refused() -> None:
    with pytest.raises(ValueError, match="HTML comment"):
        part_marks("a--b")


def test_the_command_line_shown_names_the_files_it_writes_by_their_names_alone() -> None:
    """A run written into a scratch copy (and a scratch --out folder: check_cuda.py's
    checkpoints) shows them by name: BENCHMARKS.md points at nothing outside the repository."""
    argv = ["--quick", "--markdown", "/tmp/run/BENCHMARKS.md", "--markdown=/x/y/B.md", "--n", "3"]
    argv += ["--out", "/tmp/ck", "--out=/tmp/a/b"]
    assert common._reproducing(argv) == [
        "--quick",
        "--markdown",
        "BENCHMARKS.md",
        "--markdown=B.md",
        "--n",
        "3",
        "--out",
        "ck",
        "--out=b",
    ]


def test_a_rewrite_keeps_the_files_permissions(tmp_path: Path) -> None:
    """The new file is written beside the old one and moved over it: it must not take the
    temporary file's owner-only mode (BENCHMARKS.md was left -rw------- by every run)."""
    path = tmp_path / "B.md"
    path.write_text(DOC)
    path.chmod(0o644)
    write_section(path, "## Speed", "| new | table |")
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["B.md"]  # no temporary file left


@pytest.mark.parametrize("mode", [0o640, 0o600, 0o664])
def test_a_rewrite_keeps_any_mode_through_nashzoos_atomic_writer(tmp_path: Path, mode) -> None:
    """One atomic writer: BENCHMARKS.md is written by ``nashzoo.io.atomic_write_bytes`` (with
    ``keep_mode``), not by a copy of its own; modes the umask would not give are kept too."""
    from nashzoo.io import atomic_write_bytes

    assert common.atomic_write_bytes is atomic_write_bytes
    path = tmp_path / "B.md"
    path.write_text(DOC)
    path.chmod(mode)
    write_section(path, "## Speed", "| new ± table |")
    assert path.stat().st_mode & 0o777 == mode
    assert "| new ± table |" in path.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["B.md"]
