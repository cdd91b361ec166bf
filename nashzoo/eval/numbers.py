"""Payoffs and exploitabilities in words: fixed-point formats that suit the game's scale, and
which of two computed numbers count as equal.

A researcher's game may pay in chips (thousands) or in small fractions (1e-6). A table printed
with three decimals shows the second as rows of ``+0.000``, and a tie decided by an absolute
rounding (``round(x, 12)``) ranks equal scores by rounding noise once payoffs reach 1e6. Both
depend on the size of the numbers, so both are read from them here: :func:`payoff_decimals`
and :func:`tie_tolerance`, used by the tournament's table and ranking and the race's report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["format_number", "payoff_decimals", "payoff_spec", "rank_by", "tie_tolerance"]

TIE_RELATIVE = 1e-12
"""Two exact numbers closer than this fraction of the largest number beside them are equal:
sums of the same payoffs taken in another order differ by a few ulps (about 1e-16 of the
payoffs' size), far below it, and a real difference at this size would not show in any table."""

MOST_DECIMALS = 12
"""The most decimals :func:`payoff_decimals` asks for; a table of payoffs smaller than 1e-9
shows them as ``+0.000000000000`` rather than growing without end."""


def _largest(values: Iterable[float]) -> float:
    """The largest finite absolute value among ``values`` (0.0 when there is none)."""
    finite = [abs(float(v)) for v in values if math.isfinite(float(v))]
    return max(finite, default=0.0)


def payoff_decimals(values: Iterable[float], *, digits: int = 3, least: int = 3) -> int:
    """How many decimals a fixed-point table of ``values`` needs for its largest number to show
    ``digits`` significant digits: ``least`` (3) for payoffs of 1 or more, so Kuhn's and Leduc's
    tables read as they always have, 8 for payoffs around 1e-6, at most :data:`MOST_DECIMALS`."""
    largest = _largest(values)
    if largest == 0.0:
        return least
    wanted = digits - 1 - math.floor(math.log10(largest))
    return max(least, min(MOST_DECIMALS, wanted))


def payoff_spec(values: Iterable[float], *, sign: bool = True, extra: int = 0) -> str:
    """A ``format`` spec for :func:`format_number` (``"+.3f"``) with :func:`payoff_decimals`
    (plus ``extra``) decimals."""
    return f"{'+' if sign else ''}.{payoff_decimals(values) + extra}f"


def format_number(value: float, spec: str) -> str:
    """``format(value, spec)``, except that under a fixed-point ``spec`` (``"+.3f"``) what
    rounds to zero shows as zero, never as ``-0.000`` (a draw worth -1e-17 is not a loss)."""
    if spec.endswith("f") and math.isfinite(float(value)):
        value = round(float(value), int(spec.rsplit(".", 1)[1][:-1])) + 0.0
    return format(value, spec)


def tie_tolerance(scale: float) -> float:
    """How far apart two numbers computed from a game whose largest payoff is ``scale`` may be
    and still count as equal: :data:`TIE_RELATIVE` of it."""
    return TIE_RELATIVE * abs(scale)


def rank_by(scores: Sequence[float], names: Sequence[str], *, scale: float) -> tuple[int, ...]:
    """Indices of ``scores`` from highest to lowest, where scores within
    :func:`tie_tolerance` of ``scale`` (the game's largest payoff) of the highest of their
    group are a tie, ordered by ``names``: equal scores computed along different paths (every
    strategy's 0 against uniform in RPS, off by 1e-17, or by 1e-10 when the payoffs are 1e6)
    never rank one entrant above another, and scores of a game paying 1e-13 are not all tied."""
    tolerance = tie_tolerance(scale)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    ranking: list[int] = []
    group: list[int] = []
    for i in order:
        if group and scores[group[0]] - scores[i] > tolerance:
            ranking += sorted(group, key=lambda k: names[k])
            group = []
        group.append(i)
    return tuple(ranking + sorted(group, key=lambda k: names[k]))
