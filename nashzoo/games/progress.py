"""Progress of a long walk over a game's histories, for the person waiting at a terminal.

Compiling a game through its States (a user's game, a bridged OpenSpiel game) costs a few
microseconds a history: a game of millions of histories takes a minute. The walks tell a
:class:`WalkProgress` their count now and then; it shows a tqdm bar on stderr only when stderr
is a terminal and the walk has run for :data:`PROGRESS_DELAY` seconds, so small games, tests and
logs never see it. tqdm is imported only then, and its absence only means no bar: the games
layer needs nothing but numpy.
"""

from __future__ import annotations

import sys
import time
from typing import Any

PROGRESS_DELAY = 2.0
"""Seconds a walk runs before it shows a progress bar (only on a terminal)."""

PROGRESS_EVERY = 1 << 16
"""Histories between two looks at the clock: in between, a walk only compares its count with
the one :class:`WalkProgress` returned."""


class WalkProgress:
    """The histories visited so far, as a tqdm bar on stderr: shown only when stderr is a
    terminal and the walk has run for :data:`PROGRESS_DELAY` seconds, so a small game, a test
    or a log never sees it; a large game's compile (a bridged OpenSpiel game, a user's game of
    millions of histories) says how far it is and how fast it goes."""

    def __init__(self, game_id: str) -> None:
        self.game_id = game_id
        self.watching = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.bar: Any = None
        self.shown = 0

    def __call__(self, visited: int) -> int:
        """Report ``visited`` histories; return the count at which to look again."""
        if not self.watching:
            return sys.maxsize  # never again: a walk off a terminal pays nothing more
        if self.bar is None and time.perf_counter() - self.start >= PROGRESS_DELAY:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # the games layer needs only numpy: without tqdm, no bar
                self.watching = False
                return sys.maxsize
            name = self.game_id if len(self.game_id) <= 40 else self.game_id[:37] + "..."
            self.bar = tqdm(
                desc=f"compiling {name}", unit=" histories", unit_scale=True, leave=False
            )
        if self.bar is not None:
            self.bar.update(visited - self.shown)
            self.shown = visited
        return visited + PROGRESS_EVERY

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> WalkProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
