"""One caching pattern for everything computed once per game (trees, env tables, LP solutions).

Values are keyed by the game's class AND its :attr:`~nashzoo.games.Game.id`: two games with the
same id and class have the same rules, so they share one value; a game class defined again
(a reloaded module, a notebook cell run twice, two test variants with one name) gets its own,
so a stale tree of an old definition is never served. Values must be immutable (read-only
arrays, frozen dataclasses): they are shared by every caller.

What the key cannot see is a change of rules under the same class and id: a State class (or a
module-level table the rules read) defined again while its Game class stays, as when only a
notebook's State cell is run again. :func:`clear_caches` forgets every cached value for that.

Each cache keeps the values of the :data:`CACHED_GAMES` games asked for most recently: a sweep
over hundreds of games in one process (a notebook, a script) held every one's tree and env
tables for good, 39 MB a 300x300 matrix game, 4 GB after 41 of them. A value past those is
still served while anything else holds it (a policy holds its game's tree), so a game's value
stays one object as long as it is in use; one that nobody holds is built again if asked for.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from nashzoo.games.base import Game

T = TypeVar("T")

CACHED_GAMES = 16
"""How many games' values each cache keeps (the most recently asked for)."""


class GameCache(Generic[T]):
    """``cache(game)``: ``build(game)`` computed once per game, then shared while the game is
    among the :data:`CACHED_GAMES` most recently asked for."""

    def __init__(self, build: Callable[[Game], T]) -> None:
        self._build = build
        self._values: OrderedDict[tuple[type, str], T] = OrderedDict()
        # Every value still alive anywhere, the evicted ones included: identity checks
        # (``policy.tree is tree``) must hold while a value is in use.
        self._alive: weakref.WeakValueDictionary[tuple[type, str], Any] = (
            weakref.WeakValueDictionary()
        )
        # Held only to read and change the two dicts above and the one below, never while a
        # value is built: a thread asking for a cached (or a small) game does not wait on
        # another thread's build of a big one.
        self._lock = threading.Lock()
        # One lock per game being built, so two threads never build one value twice (the
        # second waits for the first's value). A build may use the same cache for another
        # game (its own lock; rules never need each other both ways). Re-entrant, so a build
        # that asks for its own game (a user's hook by mistake) ends in a RecursionError, not
        # a hang. Each with the number of threads holding or waiting for it: the last one out
        # removes it, whether the build returned or raised (a build that raised, as a refused
        # game's does, used to leave its lock, and its game's class, here for good).
        self._building: dict[tuple[type, str], tuple[threading.RLock, list[int]]] = {}
        # Counts clear()s: a value whose build started before one is served to its caller but
        # not kept (built, maybe, from the rules clear_caches() was called to forget).
        self._generation = 0
        _ALL.add(self)

    def __call__(self, game: Game) -> T:
        key = (type(game), game.id)
        value = self._cached(key)
        if value is not _MISSING:
            return value
        with self._lock:
            building, users = self._building.setdefault(key, (threading.RLock(), [0]))
            users[0] += 1
        try:
            with building:
                value = self._cached(key)  # built by the thread this one waited for
                if value is _MISSING:
                    with self._lock:
                        generation = self._generation
                    value = self._build(game)
                    self._keep(key, value, generation)
        finally:
            with self._lock:
                users[0] -= 1
                if not users[0] and self._building.get(key, (None,))[0] is building:
                    del self._building[key]  # (a child forked during the build has none)
        return value

    def _cached(self, key: tuple[type, str]) -> Any:
        """The value built already (kept, or evicted but still alive: kept again), or
        :data:`_MISSING`. A value may be ``None`` (``lp_refusal``'s "nothing to refuse"): taken
        for "not built", it was built again on every call."""
        with self._lock:
            value = self._values.get(key, _MISSING)
            if value is not _MISSING:
                self._values.move_to_end(key)
                return value
            value = self._alive.get(key, _MISSING)
            if value is not _MISSING:
                self._values[key] = value
                self._evict()
            return value

    def _keep(self, key: tuple[type, str], value: T, generation: int) -> None:
        with self._lock:
            if generation != self._generation:  # clear() was called during the build
                return
            with contextlib.suppress(TypeError):  # None, a bool, a str cannot be weakly referenced
                self._alive[key] = value
            self._values[key] = value
            self._evict()

    def _evict(self) -> None:
        """Forget the values of all but the CACHED_GAMES games asked for last (lock held)."""
        while len(self._values) > CACHED_GAMES:
            self._values.popitem(last=False)

    def __contains__(self, game: Game) -> bool:
        """Whether ``game``'s value is built already (so asking for it costs nothing)."""
        key = (type(game), game.id)
        return key in self._values or key in self._alive

    def held(self, game_class: type, game_id: str) -> T | None:
        """The value built for the game of this class and id, kept or still alive, without
        building it (``None`` where there is none)."""
        key = (game_class, game_id)
        with self._lock:
            value = self._values.get(key, _MISSING)
            if value is _MISSING:
                value = self._alive.get(key, _MISSING)
        return None if value is _MISSING else value

    def game_class_of(self, value: T) -> type | None:
        """The class of the game ``value`` was built for, where it is this cache's value of one
        (``None`` otherwise)."""
        with self._lock:
            pairs = [*self._values.items(), *self._alive.items()]
        return next((cls for (cls, _), v in pairs if v is value), None)

    def keep_if_absent(self, game_class: type, game_id: str, value: T) -> None:
        """Keep ``value`` as the game's, built elsewhere (another process's, unpickled here),
        unless the game has a value already: asked for later, it is then served instead of
        being built again. Only for a value known to come from this process's rules (a
        ``processes=2`` worker's, sent just now by its caller): nothing here checks it."""
        key = (game_class, game_id)
        with self._lock:
            if key not in self._values and key not in self._alive:
                with contextlib.suppress(TypeError):
                    self._alive[key] = value
                self._values[key] = value
                self._evict()

    def clear(self) -> None:
        """Forget every value (tests, or memory after a very large game)."""
        with self._lock:
            self._generation += 1
            self._values.clear()
            self._alive.clear()


_ALL: weakref.WeakSet[GameCache] = weakref.WeakSet()


def _forget_builds_after_fork() -> None:
    """In a child just forked, give every cache new locks and no builds in flight.

    A build in flight holds its game's lock (and a finished one may be between two uses of
    the cache's lock) in the thread that runs it, and a forked child has no such thread: a
    ``fork`` pool started while another thread compiled a game (a Trainer or an evaluation in
    a thread, a notebook's background job) had workers that hung for ever, without a word, the
    first time they asked for that game. The child builds it again if it asks for it."""
    for cache in list(_ALL):
        cache._lock = threading.Lock()
        cache._building = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_builds_after_fork)

_MISSING: Any = object()
"""What :meth:`GameCache._cached` answers for a value not built (``None`` is a value)."""


def clear_caches() -> None:
    """Forget every value computed once per game: compiled trees, env tables, LP solutions and
    the rest. Call it after changing a game's rules without defining its Game class again (a
    State class or a table edited in a running notebook), or to free at once the memory of the
    games a process no longer plays (each cache keeps only the :data:`CACHED_GAMES` used last
    in any case)."""
    for cache in list(_ALL):
        cache.clear()
