"""The fast walk: every history of a game visited with as little Python per history as possible.

``compile_tree`` uses it for every game without a vectorised builder of its own: a user's game
(through its States) and a bridged OpenSpiel game (through raw ``pyspiel`` states, see
``games/openspiel.py``). Depth first, it records six numbers per history into typed buffers
(parent, player, information set, action, edge probability, depth) and the payoffs at
terminals; per new information set its key, owner, legal actions and where it was found (the
tensors are asked of the game's States there when first wanted). A depth-first walk keeps only
the States of one path (and their siblings) alive.

Everything that follows from the path is computed afterwards, by the layout
(:mod:`nashzoo.games.layout`): the breadth-first order, each terminal's chance reach, each
player's last sequence and number of own moves, and from those the perfect-recall check (every
history of an information set has the same own past). The per-history checks that need the
state in hand (a valid player, chance probabilities summing to one, legal actions, payoffs) run
as the walk goes, through :mod:`nashzoo.games.checks`.

On a terminal, a walk that runs for more than a couple of seconds shows a bar of the histories
visited (:mod:`nashzoo.games.progress`).

It is optimistic: on anything wrong (a failed check, a history disagreeing with its information
set, any exception from the game) it raises, and ``tree.compile_checked`` runs the checking walk
``tree.walk_states`` instead, which raises the one-line error naming the history. When it
succeeds its tree is the checking walk's, array for array (``tests/test_compile_paths.py``).
"""

from __future__ import annotations

import array
import operator
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from nashzoo.games import checks
from nashzoo.games.base import CHANCE, TERMINAL, Game
from nashzoo.games.compiled import CompiledTree
from nashzoo.games.layout import Unexplained, lay_out
from nashzoo.games.limits import sampled_size
from nashzoo.games.progress import WalkProgress


class StateOps(NamedTuple):
    """How the walk asks a state what it needs: plain functions of the state, so the hot loop
    makes no attribute lookups and serves nashzoo States and raw ``pyspiel`` states alike."""

    player: Callable[[Any], Any]  # who moves: a player, CHANCE or TERMINAL
    returns: Callable[[Any], Sequence[float] | np.ndarray]  # the payoffs at a terminal
    outcomes: Callable[[Any], list[tuple[int, float]]]  # checked chance outcomes
    key: Callable[[Any, int], Any]  # information-set key of the player to move
    legal: Callable[[Any], list]  # legal actions, as a list
    child: Callable[[Any, int], Any]  # a new state, the parent untouched
    last_child: Callable[[Any, int], Any]  # the parent's last child asked for: may reuse it


def state_ops(game: Game) -> StateOps:
    """The :class:`StateOps` of nashzoo's State API (payoffs and chance outcomes checked)."""

    def child(state: Any, action: int) -> Any:
        return state._child(action)

    return StateOps(
        player=operator.methodcaller("current_player"),
        returns=lambda state: checks.check_returns(game, state, state.returns()),
        outcomes=lambda state: checks.check_chance(game, state, state.chance_outcomes()),
        key=lambda state, player: state.infoset_key(player),
        legal=lambda state: list(state.legal_actions()),
        child=child,
        last_child=child,
    )


def walk(game: Game, root: Any, ops: StateOps) -> CompiledTree:
    """Every history from ``root``, as the checking walk would compile it; raises on anything
    wrong (see the module docstring)."""
    records = _Records()
    with WalkProgress(game.id, lambda: estimated_size(game)) as progress:
        _visit_all(game, root, ops, records, progress)
    return lay_out(game, records)


def estimated_size(game: Game) -> int:
    """``game``'s histories estimated from random paths through its States
    (:func:`~nashzoo.games.limits.sampled_size`), from a fresh root: a walk may have advanced
    its own in place. What a long walk asks once (:class:`~nashzoo.games.limits.WalkLimits`)."""
    return sampled_size(game.new_initial_state(), state_ops(game))


class _Records:
    """What the walk records: per history in depth-first order (typed buffers), per
    information set in order of discovery (its key in ``index``)."""

    def __init__(self) -> None:
        self.parent: array.array | None = array.array("i")
        self.player: array.array | None = array.array("b")
        self.infoset: array.array | None = array.array("i")
        self.action: array.array | None = array.array("i")
        self.chance_prob: array.array | None = array.array("d")
        self.depth: array.array | None = array.array("H")
        self.utility: array.array | None = array.array("d")  # [terminals * players]
        self.index: dict[Any, int] = {}
        self.owner = array.array("b")
        self.legal: list[list[int]] = []
        self.edges: list[list[tuple[int, float]]] = []  # (action, 1.0) per legal action
        self.first = array.array("q")  # the depth-first node where each set was found

    def buffers(self) -> tuple[array.array, ...]:
        """The per-history buffers a walk appends to, in the order ``_visit_all`` takes them."""
        found = (
            self.parent,
            self.player,
            self.infoset,
            self.action,
            self.chance_prob,
            self.depth,
            self.utility,
        )
        if any(buffer is None for buffer in found):
            raise ValueError("these records were laid out already: a walk needs fresh _Records")
        return found  # type: ignore[return-value]

    def new_infoset(
        self, game: Game, state: Any, node: int, who: int, key: Any, legal: list
    ) -> int:
        if key.__class__ is not str:
            raise Unexplained("an information-set key that is not a str")
        legal = checks.check_legal(game, state, who, legal)
        iset = self.index[key] = len(self.owner)
        self.owner.append(who)
        self.legal.append(legal)
        self.edges.append([(a, 1.0) for a in legal])
        self.first.append(node)
        return iset

    def take(self, name: str, dtype: Any, order: np.ndarray) -> np.ndarray:
        """The buffer ``name`` in breadth-first order; the buffer itself is let go."""
        out = np.frombuffer(getattr(self, name), dtype=dtype)[order]
        setattr(self, name, None)
        return out


def _visit_all(
    game: Game, root: Any, ops: StateOps, rec: _Records, progress: WalkProgress | None = None
) -> None:
    """The hot loop: one pass over every history, depth first, children in action order;
    ``progress`` is told the count now and then (at decision and chance nodes)."""
    report = progress if progress is not None else (lambda visited: sys.maxsize)
    players = game.num_players
    player_of, returns_of, outcomes_of, key_of, legal_of, child, last_child = ops
    parents, movers, infosets, actions, probs, depths, utilities = rec.buffers()
    add_parent, add_player, add_infoset = parents.append, movers.append, infosets.append
    add_action, add_prob, add_depth = actions.append, probs.append, depths.append
    add_utility = utilities.extend
    index, owner, legals, edges_of = rec.index, rec.owner, rec.legal, rec.edges
    stack = [(root, -1, -1, 1.0, 0)]
    pop, push = stack.pop, stack.append
    # Past MAX_DEPTH moves the checking walk refuses the game as endless: give up there (the
    # depth buffer's overflow at 65,536 gives up too, first under the default MAX_DEPTH)
    deepest = checks.MAX_DEPTH
    node = 0
    look_again = report(0)
    while stack:
        state, up, act, prob, depth = pop()
        who = player_of(state)
        if who.__class__ is not int:
            who = checks.check_player(game, state, who)
        add_parent(up)
        add_action(act)
        add_prob(prob)
        add_depth(depth)
        add_player(who)
        if who == TERMINAL:  # first: most histories of a game tree are terminals
            payoffs = returns_of(state)
            if len(payoffs) != players:
                raise Unexplained("returns of the wrong length")
            add_utility(payoffs)
            add_infoset(-1)
            node += 1
            continue
        if 0 <= who < players:
            key = key_of(state, who)
            legal = legal_of(state)
            iset = index.get(key)
            if iset is None:
                iset = rec.new_infoset(game, state, node, who, key, legal)
            elif legal != legals[iset] or who != owner[iset]:
                raise Unexplained("a history disagrees with its information set")
            add_infoset(iset)
            edges = edges_of[iset]
        elif who == CHANCE:
            edges = outcomes_of(state)
            add_infoset(-1)
        else:
            raise Unexplained(f"current_player() returned {who!r}")
        depth += 1
        if depth > deepest:
            raise Unexplained("a history past MAX_DEPTH moves")
        for action, p in edges[:0:-1]:
            push((child(state, action), node, action, p, depth))
        action, p = edges[0]
        push((last_child(state, action), node, action, p, depth))
        node += 1
        if node >= look_again:
            look_again = report(node)
