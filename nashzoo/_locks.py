"""Module-level locks that a forked child gets afresh.

A lock held by another thread when a process forks stays held in the child, which has no such
thread to let it go: the child then waits for ever the first time it takes the lock. A ``fork``
process pool (``multiprocessing.Pool``, and ``ProcessPoolExecutor`` on Linux before Python
3.14) started while a notebook's or a sweep's thread compiled a game, built a tree's index or
bound the numba kernels had workers that hung without a word. Every lock nashzoo keeps at module
level is a :class:`ForkSafeLock`, so one mechanism covers them all
(``tests/test_process_pools.py`` checks that no module keeps a plain one). The game caches'
locks, one per cache and per game being built, are renewed by the caches themselves
(:mod:`nashzoo.games.cache`), which also forget the builds in flight.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType
from typing import Any

__all__ = ["ForkSafeLock"]


class ForkSafeLock:
    """A ``threading.Lock`` (or ``RLock`` with ``reentrant=True``) that a forked child holds
    new, unheld: usable as a context manager, as the lock it wraps."""

    __slots__ = ("__weakref__", "_lock", "_new")

    def __init__(self, *, reentrant: bool = False) -> None:
        self._new: Any = threading.RLock if reentrant else threading.Lock
        self._lock = self._new()
        _ALL.add(self)

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._lock.__exit__(kind, error, trace)

    def _renew(self) -> None:
        self._lock = self._new()


_ALL: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_all_after_fork() -> None:
    for lock in list(_ALL):
        lock._renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_all_after_fork)
