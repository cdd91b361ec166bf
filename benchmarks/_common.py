"""Helpers every benchmark script shares: its section of BENCHMARKS.md, package versions."""

from __future__ import annotations

import importlib.metadata
import os
import re
import tempfile
from pathlib import Path


def write_section(path: Path, section: str, body: str) -> None:
    """Replace (or append) ``section`` (a ``## ...`` heading) of ``path`` with ``body``,
    atomically; every other section is kept as it is. ``body`` may start with the heading."""
    body = body.strip("\n")
    if not body.startswith(section):
        body = f"{section}\n\n{body}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    # The heading as a whole line (a mention of it in prose is not the section).
    heading = re.search(rf"^{re.escape(section)}$", text, flags=re.MULTILINE)
    start = heading.start() if heading else -1
    if start < 0:
        new = text.rstrip("\n") + "\n\n" + body + "\n"
    else:
        end = text.find("\n## ", start + len(section))
        rest = "\n\n" + text[end + 1 :] if end >= 0 else "\n"
        new = text[:start] + body + rest
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(new if new.endswith("\n") else new + "\n")
    os.replace(tmp.name, path)


def version(package: str) -> str:
    """Installed version of ``package`` ("not installed" otherwise)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
