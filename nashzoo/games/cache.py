"""One caching pattern for everything computed once per game (trees, env tables, LP solutions).

Values are keyed by the game's class AND its :attr:`~nashzoo.games.Game.id`: two games with the
same id and class have the same rules, so they share one value; a game class defined again
(a reloaded module, a notebook cell run twice, two test variants with one name) gets its own,
so a stale tree of an old definition is never served. Values must be immutable (read-only
arrays, frozen dataclasses): they are shared by every caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from nashzoo.games.base import Game

T = TypeVar("T")


class GameCache(Generic[T]):
    """``cache(game)``: ``build(game)`` computed once per game, then shared."""

    def __init__(self, build: Callable[[Game], T]) -> None:
        self._build = build
        self._values: dict[tuple[type, str], T] = {}
        # Held while building, so two threads never build one big value twice; re-entrant, so a
        # build may use the same cache for another game.
        self._lock = threading.RLock()

    def __call__(self, game: Game) -> T:
        key = (type(game), game.id)
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = self._build(game)
            return value

    def clear(self) -> None:
        """Forget every value (tests, or memory after a very large game)."""
        with self._lock:
            self._values.clear()
