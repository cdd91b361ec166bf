"""Which nashzoo code produced a result: its version and a digest of its source files.

The version alone cannot tell two development checkouts apart (it stays the same between
releases), and a race resumed after ``git pull`` or a local edit would otherwise pool runs timed
by different code into one table without a word. The digest covers every ``.py`` file of the
installed package, so any change to the code shows.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["code_id"]


@functools.cache
def code_id() -> str:
    """``"VERSION+DIGEST"``: nashzoo's version and the first 12 hex digits of a SHA-256 of
    its source files' paths and contents (computed once per process, in a few milliseconds)."""
    import nashzoo

    root = Path(nashzoo.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"{nashzoo.__version__}+{digest.hexdigest()[:12]}"
