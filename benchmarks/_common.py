"""Helpers every benchmark script shares: its section of BENCHMARKS.md, package versions."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

from nashzoo.io import atomic_write_bytes


def write_section(path: Path, section: str, body: str, part: str = "results") -> None:
    """Write ``body``, a benchmark's generated ``part`` of the ``section`` (a ``## ...``
    heading) of ``path``, atomically, without touching anything else.

    The part lies between two HTML comments (invisible on a rendered page) naming it, and a
    rerun replaces only what lies between them: notes written by hand in the same section,
    outside the marks, and every other part and section are kept. A section without this
    part gets it appended at its end, and a file without the section gets the section, so
    nothing already in the file is ever lost. ``body`` may start with the heading."""
    body = body.strip("\n")
    if body.startswith(section):
        body = body[len(section) :].strip("\n")
    begin, end = part_marks(part)
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    # The heading as a whole line (a mention of it in prose is not the section).
    heading = re.search(rf"^{re.escape(section)}$", text, flags=re.MULTILINE)
    if heading is None:
        new = f"{text.rstrip()}\n\n{section}\n\n{block}\n"
    else:
        stop = text.find("\n## ", heading.end())
        stop = len(text) if stop < 0 else stop + 1
        inside = text[heading.end() : stop]
        old = re.search(rf"^{re.escape(begin)}$.*?^{re.escape(end)}$", inside, re.M | re.S)
        if old is not None:
            inside = inside[: old.start()] + block + inside[old.end() :]
        else:
            inside = f"{inside.rstrip()}\n\n{block}\n\n"
        new = text[: heading.end()] + inside + text[stop:]
    # Atomic (a reader, or a run interrupted half-way, sees the old file or the new one, never
    # a part, and no temporary file is left), keeping the file's permissions: nashzoo's writer.
    atomic_write_bytes(path, (new.rstrip("\n") + "\n").encode("utf-8"), keep_mode=True)


def part_marks(part: str) -> tuple[str, str]:
    """The two comment lines that enclose a generated ``part`` of a section."""
    if "--" in part or "\n" in part:
        raise ValueError(f"part name {part!r} cannot go in an HTML comment")
    return (
        f"<!-- generated: {part} (rerunning the benchmark replaces up to the closing mark) -->",
        f"<!-- end of generated: {part} -->",
    )


def require_openspiel() -> None:
    """Exit with one line naming the fix when OpenSpiel, the peer most benchmarks measure in the
    same run, cannot be imported (a fresh clone with only the library's own dependencies), not
    with a traceback from the first ``import pyspiel``."""
    try:
        import pyspiel  # noqa: F401
    except ImportError as err:
        raise SystemExit(
            f"this benchmark needs open_spiel as the peer: {err} (pip install 'nashzoo[bench]')"
        ) from None


def version(package: str) -> str:
    """Installed version of ``package`` ("not installed" otherwise)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def provenance(load_before: float, load_after: float, packages: tuple[str, ...] = ()) -> str:
    """One line saying where and when a result was measured, for the generated parts of
    BENCHMARKS.md: the time (UTC), the machine, the versions of Python and ``packages``, the
    load average before and after, the repository's commit (``+ local changes`` when the code
    differs from it, see :func:`commit`) and the command line that reproduces it."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    versions = ", ".join(f"{name} {version(name)}" for name in packages)
    command = " ".join(shlex.quote(arg) for arg in _reproducing(sys.argv[1:]))
    script = Path(sys.argv[0]).name
    return (
        f"{now}; {os.cpu_count()}-core {platform.machine()} CPU, {platform.system()}; "
        f"Python {platform.python_version()}{', ' + versions if versions else ''}; load "
        f"average {load_before:.2f} before, {load_after:.2f} after; {commit()}; "
        f"`benchmarks/{script} {command}`"
    )


_PATH_OPTIONS = ("--markdown", "--out")
"""Options whose value is a path a run writes to (the document, a scratch folder)."""


def _reproducing(argv: list[str]) -> list[str]:
    """The command line as BENCHMARKS.md shows it: ``--markdown`` and ``--out`` name what they
    write by its name alone (a run written into a scratch copy, ``/tmp/run/BENCHMARKS.md``,
    then copied back, shows ``--markdown BENCHMARKS.md``), so the document points at nothing
    outside the repository."""
    out, after_path = [], False
    for arg in argv:
        option, equals, value = arg.partition("=")
        if after_path:
            arg, after_path = Path(arg).name, False
        elif arg in _PATH_OPTIONS:
            after_path = True
        elif equals and option in _PATH_OPTIONS:
            arg = f"{option}={Path(value).name}"
        out.append(arg)
    return out


CODE = ("nashzoo", "benchmarks", "pyproject.toml")


def commit() -> str:
    """``commit <short hash>`` of the repository holding this file (``+ local changes`` when
    the code differs from it: the library, the benchmarks or the package metadata, not the
    documents a run writes into), or ``commit unknown`` outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *CODE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "commit unknown"
    return f"commit {head}{' + local changes' if changed else ''}"
