"""Giving freed memory back to the system after building a big tree or index.

glibc's allocator serves blocks below its mmap threshold (which grows, as big blocks are freed,
up to 32 MB) from the heap, and keeps what is freed there for later use instead of returning
it. Compiling a tree makes many such temporaries: after compiling a 42-million-history Liar's
dice, 1.25 GB of freed heap stayed resident beside the 1.7 GB tree, and every later peak (the
learners' tables, which are bigger blocks and so are never served from it) stood on top of it;
building each seat's kernel index left as much again. ``malloc_trim(0)`` returns it. Elsewhere
(macOS, Windows, musl) there is no such call and nothing is done.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["TRIM_AFTER", "give_back_after_build", "give_back_freed_memory"]

TRIM_AFTER = 1 << 20
"""Builds over at least this many histories (or terminals) give their freed memory back: a
trim costs milliseconds after the largest builds, but after the build of a tree of a few
thousand histories it would be a sizeable part of it."""


@functools.cache
def _malloc_trim() -> Callable[[int], Any] | None:
    try:
        import ctypes  # imported here: a Python built without it still compiles games
    except ImportError:
        return None
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no C library to open this way (Windows)
        return None


def give_back_freed_memory() -> bool:
    """Return the C heap's freed memory to the system where the C library can (glibc's
    ``malloc_trim``); whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def give_back_after_build(size: int) -> None:
    """:func:`give_back_freed_memory` after a build over ``size`` histories or terminals, when
    that is at least :data:`TRIM_AFTER`."""
    if size >= TRIM_AFTER:
        give_back_freed_memory()
