"""Progress and limits of a long walk over a game's histories.

Compiling a game through its States (a user's game, a bridged OpenSpiel game) costs a few
microseconds a history: a game of millions of histories takes a minute. The walks tell a
:class:`WalkProgress` their count now and then. It shows a tqdm bar on stderr only when stderr
is a terminal and the walk has run for :data:`PROGRESS_DELAY` seconds, so small games, tests and
logs never see it (tqdm is imported only then, and its absence only means no bar: the games
layer needs nothing but numpy). At every look it also checks the walk against the limits of
:mod:`nashzoo.games.limits`, so a game too big for the machine is refused with one line.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from typing import Any

from nashzoo.games.limits import WalkLimits

PROGRESS_DELAY = 2.0
"""Seconds a walk runs before it shows a progress bar (only on a terminal)."""

PROGRESS_EVERY = 1 << 16
"""The most histories between two looks: in between, a walk only compares its count with the
one :class:`WalkProgress` returned."""

FIRST_LOOK = 1 << 6
"""Histories before the first look after the start, and the fewest between two looks. Small:
a deep game's walk holds megabytes per history on its stack (crazyhouse: 2.6 GB at 1,024
histories, shogi 10 GB), so the memory baseline has to be read early; a game smaller than
this (Kuhn: 58) is never looked at, and a fast walk's looks are spaced by time anyway."""

LOOK_SECONDS = 0.25
"""The time aimed at between two looks (within the two bounds above): a game whose histories
are slow to make (deep ones, whose walk stack holds many states) is still checked often."""


def progress_bar(**options: Any) -> Any:
    """A tqdm bar made with ``options``: a notebook's widget where ``ipywidgets`` is installed,
    text otherwise. ``tqdm.auto`` alone, in a notebook without ``ipywidgets``, warned
    "IProgress not found. Please update jupyter and ipywidgets" at the first bar of a session,
    then drew text anyway. Raises ImportError without tqdm (which every layer but the games'
    depends on)."""
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(**options)


class WalkProgress:
    """The histories visited so far, as a tqdm bar on stderr: shown only when stderr is a
    terminal and the walk has run for :data:`PROGRESS_DELAY` seconds, so a small game, a test
    or a log never sees it; a large game's compile (a bridged OpenSpiel game, a user's game of
    millions of histories) says how far it is and how fast it goes. Every look also checks
    the walk's :class:`~nashzoo.games.limits.WalkLimits`."""

    def __init__(self, game_id: str, estimate: Callable[[], int] | None = None) -> None:
        """``estimate``: the tree's size from a sample of its paths, asked once if the walk
        grows long (:class:`~nashzoo.games.limits.WalkLimits`)."""
        self.game_id = game_id
        self.watching = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.bar: Any = None
        self.shown = 0
        self.limits = WalkLimits(game_id, estimate)
        self.last_look = (self.start, 0)
        self.step = FIRST_LOOK

    def __call__(self, visited: int) -> int:
        """Report ``visited`` histories; return the count at which to look again. Raises
        :class:`~nashzoo.games.base.GameTooLarge` once the walk passes its limits."""
        room = self.limits.check(visited)
        now = time.perf_counter()
        if self.watching:
            self._show(visited, now)
        then, before = self.last_look
        if visited > before:  # the next look about LOOK_SECONDS away at the rate seen
            rate = (visited - before) / max(now - then, 1e-9)
            self.step = max(FIRST_LOOK, int(rate * LOOK_SECONDS))
        self.last_look = (now, visited)
        look_again = visited + min(self.step, PROGRESS_EVERY, room or PROGRESS_EVERY)
        if self.limits.cap is not None:
            look_again = min(look_again, self.limits.cap + 1)
        return look_again

    def _show(self, visited: int, now: float) -> None:
        """The bar: created once the walk has run PROGRESS_DELAY seconds, then updated."""
        if self.bar is None and now - self.start >= PROGRESS_DELAY:
            name = self.game_id if len(self.game_id) <= 40 else self.game_id[:37] + "..."
            try:
                self.bar = progress_bar(
                    desc=f"compiling {name}", unit=" histories", unit_scale=True, leave=False
                )
            except ImportError:  # the games layer needs only numpy: without tqdm, no bar
                self.watching = False
                return
        if self.bar is not None:
            self.bar.update(visited - self.shown)
            self.shown = visited

    def __enter__(self) -> WalkProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
