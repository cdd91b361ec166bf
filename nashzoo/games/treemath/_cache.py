"""One cache for the index arrays the kernels derive from a tree: built once per tree and kind,
dropped with the tree (a compiled tree is immutable, so its derived indexes never go stale)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from nashzoo._locks import ForkSafeLock
from nashzoo.games.tree import CompiledTree, readonly

T = TypeVar("T")

# Keyed by the tree's id, not the tree: a plain dict look-up, several times cheaper than a
# WeakKeyDictionary's (which makes a weak reference per call), and it is on every kernel's
# path. A finalizer drops a tree's entries when the tree dies, before its id can be reused.
_CACHE: dict[int, dict[str, Any]] = {}
_LOCK = ForkSafeLock(reentrant=True)  # a forked child gets it new (nashzoo._locks)


def per_tree(tree: CompiledTree, kind: str, build: Callable[[CompiledTree], T]) -> T:
    """``build(tree)``, computed on the first call for this ``(tree, kind)`` and then reused."""
    entries = _CACHE.get(id(tree))
    if entries is not None and kind in entries:
        return entries[kind]
    with _LOCK:
        entries = _CACHE.get(id(tree))
        if entries is None:
            entries = _CACHE[id(tree)] = {}
            weakref.finalize(tree, _CACHE.pop, id(tree), None)
        if kind not in entries:
            entries[kind] = build(tree)
        return entries[kind]


def read_only_view(array: np.ndarray) -> np.ndarray:
    """``array`` itself when it is read-only, else a view of it that cannot be written through:
    a live table handed on without a copy (a learner's to the checkpoint writer), and the one
    argument type the compiled kernels are loaded for (numba keeps a version per argument
    type, so a writeable table would load, or compile, a second one in a timed step)."""
    if not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


def frozen(array: np.ndarray) -> np.ndarray:
    """A contiguous, read-only copy (or view) of ``array``: cached indexes are shared."""
    return readonly(np.ascontiguousarray(array))
