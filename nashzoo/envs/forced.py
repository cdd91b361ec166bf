"""Forced chance outcomes (``reset(options={"chance_outcomes": [...]})``), checked as a whole.

The outcomes are used in order, one per chance node the game reaches. Which chance nodes a game
reaches may depend on the players' moves (Leduc deals its public card only if nobody folds), so
:func:`check_forced` asks whether SOME play uses every outcome: each possible at the chance node
where it is drawn, none left over when the game ends. A list no play can follow is refused at
``reset()`` (Leduc ``[0, 1, 0]``: the public card is player 0's card; Kuhn ``[0, 1, 2]``: Kuhn
has two chance nodes), rather than as an error on a later legal move or silently ignored.

A list that some play follows is accepted; the moves then played may still take another path:

* outcomes left over when that play ends (a fold before the public card of a fixed Leduc deal)
  are not used, as a duplicate match's deal is not all used when a hand ends early;
* an outcome that is not possible at the chance node those moves reach (a game whose chance
  outcomes depend on the moves) is refused at that move, which is not played
  (:func:`not_possible_here`).

The search walks the tree from the root, depth first, and stops at the first play that works.
In the tables mode it is exact; in the states mode it is bounded by :data:`SEARCH_MAX_NODES`
(a game too big to tabulate may be too big to search), past which the list is accepted and
checked as play goes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from nashzoo.games import CHANCE

N = TypeVar("N")

SEARCH_MAX_NODES = 20_000
"""Nodes the states mode visits looking for a play that uses every forced outcome."""


@dataclass(frozen=True)
class TreeWalk(Generic[N]):
    """How the search reads one env mode's tree (node ints in the tables, ``Node`` objects in
    the states)."""

    player: Callable[[N], int]
    outcomes: Callable[[N], Sequence[int]]  # at chance nodes
    child: Callable[[N, int], N]
    legal: Callable[[N], Sequence[int]]  # at decision nodes
    history: Callable[[N], list[int]]


@dataclass
class _Furthest:
    """The failures that used the most forced outcomes: where the search got furthest."""

    used: int = -1
    not_possible: list[Any] = field(default_factory=list)  # chance nodes refusing the next one
    ended: list[Any] = field(default_factory=list)  # terminals reached with outcomes left

    def add(self, used: int, node: Any, possible: bool) -> None:
        if used > self.used:
            self.used, self.not_possible, self.ended = used, [], []
        if used == self.used:
            (self.ended if possible else self.not_possible).append(node)


def check_forced(
    walk: TreeWalk[N], root: N, forced: list[int], name: str, budget: int | None = None
) -> bool:
    """Raise ``ValueError`` if no play of the game ``name`` from ``root`` uses every outcome of
    ``forced``; return whether that is known (``False``: the search ran past ``budget`` nodes
    and the rest is checked as play goes)."""
    stack = [(root, 0)]
    furthest = _Furthest()
    visited = 0
    while stack:
        node, used = stack.pop()
        if used == len(forced):
            return True
        visited += 1
        if budget is not None and visited > budget:
            return False
        who = walk.player(node)
        if who == CHANCE:
            if forced[used] in walk.outcomes(node):
                stack.append((walk.child(node, forced[used]), used + 1))
            else:
                furthest.add(used, node, possible=False)
        elif who >= 0:
            stack.extend((walk.child(node, a), used) for a in reversed(walk.legal(node)))
        else:
            furthest.add(used, node, possible=True)
    raise ValueError(_refusal(walk, furthest, forced, name))


def _refusal(walk: TreeWalk[Any], furthest: _Furthest, forced: list[int], name: str) -> str:
    """Why no play uses ``forced``, from where the search got furthest."""
    used = furthest.used
    if furthest.not_possible:
        nodes = furthest.not_possible
        possible = sorted({o for n in nodes for o in walk.outcomes(n)})
        where = f"history {walk.history(nodes[0])}"
        if len(nodes) > 1:
            where = f"any of the {len(nodes)} chance nodes play can reach (e.g. {where})"
        return (
            f"forced chance outcome {forced[used]!r} (options['chance_outcomes'][{used}]) is "
            f"not possible at {where}; possible outcomes are: {', '.join(map(str, possible))}"
        )
    return (
        f"options['chance_outcomes'] gives {len(forced)} outcomes, but every play of {name} "
        f"ends after using at most {used} (e.g. at history {walk.history(furthest.ended[0])}); "
        f"drop the last {len(forced) - used}"
    )


def not_possible_here(outcome: int, used: int, history: list[int], possible: Sequence[int]) -> str:
    """The message for a forced outcome the moves played made impossible (see the module
    docstring): the move that reached the chance node is not played."""
    return (
        f"forced chance outcome {outcome!r} (options['chance_outcomes'][{used}]) is not possible "
        f"at history {history}, where these moves lead; possible outcomes are: "
        f"{', '.join(map(str, possible))}. The move was not played: play another, or reset() "
        "with outcomes this play can follow"
    )
