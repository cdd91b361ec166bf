"""The fast walk: every history of a game visited with as little Python per history as possible.

``compile_tree`` uses it for every game without a vectorised builder of its own: a user's game
(through its States) and a bridged OpenSpiel game (through raw ``pyspiel`` states, see
``games/openspiel.py``). Depth first, it records six numbers per history into typed buffers
(parent, player, information set, action, edge probability, depth) and the payoffs at
terminals; per new information set its key, owner, legal actions and where it was found (the
tensors are asked of the game's States there when first wanted). A depth-first walk keeps only
the States of one path (and their siblings) alive.

Everything that follows from the path is computed afterwards with numpy, one depth at a time:
the breadth-first order (a stable sort by depth), each terminal's chance reach, each player's
last sequence and number of own moves, and from those the perfect-recall check (every history
of an information set has the same own past). The per-history checks that need the state in
hand (a valid player, chance probabilities summing to one, legal actions, payoffs) run as the
walk goes, through :mod:`nashzoo.games.checks`.

On a terminal, a walk that runs for more than a couple of seconds shows a bar of the histories
visited (:mod:`nashzoo.games.progress`).

It is optimistic: on anything wrong (a failed check, a history disagreeing with its information
set, any exception from the game) it raises, and ``tree.compile_checked`` runs the checking walk
``tree.walk_states`` instead, which raises the one-line error naming the history. When it
succeeds its tree is the checking walk's, array for array (``tests/test_compile_paths.py``).
"""

from __future__ import annotations

import array
import itertools
import operator
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from nashzoo.games import checks
from nashzoo.games.base import CHANCE, TERMINAL, Game
from nashzoo.games.compiled import CompiledTree, first_seen_rank, readonly, replayed_labels
from nashzoo.games.progress import WalkProgress


class StateOps(NamedTuple):
    """How the walk asks a state what it needs: plain functions of the state, so the hot loop
    makes no attribute lookups and serves nashzoo States and raw ``pyspiel`` states alike."""

    player: Callable[[Any], Any]  # who moves: a player, CHANCE or TERMINAL
    returns: Callable[[Any], Sequence[float]]  # the payoffs at a terminal
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


class Unexplained(Exception):
    """The fast walk met something the checking walk must explain (it names the history)."""


def walk(game: Game, root: Any, ops: StateOps) -> CompiledTree:
    """Every history from ``root``, as the checking walk would compile it; raises on anything
    wrong (see the module docstring)."""
    records = _Records()
    with WalkProgress(game.id) as progress:
        _visit_all(game, root, ops, records, progress)
    return _lay_out(game, records)


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
        self.owner: list[int] = []
        self.legal: list[list[int]] = []
        self.edges: list[list[tuple[int, float]]] = []  # (action, 1.0) per legal action
        self.first = array.array("q")  # the depth-first node where each set was found

    def new_infoset(
        self, game: Game, state: Any, node: int, who: int, key: Any, legal: list
    ) -> int:
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
    add_parent, add_player, add_infoset = rec.parent.append, rec.player.append, rec.infoset.append
    add_action, add_prob, add_depth = rec.action.append, rec.chance_prob.append, rec.depth.append
    add_utility = rec.utility.extend
    index, owner, legals, edges_of = rec.index, rec.owner, rec.legal, rec.edges
    stack = [(root, -1, -1, 1.0, 0)]
    pop, push = stack.pop, stack.append
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
        for action, p in edges[:0:-1]:
            push((child(state, action), node, action, p, depth))
        action, p = edges[0]
        push((last_child(state, action), node, action, p, depth))
        node += 1
        if node >= look_again:
            look_again = report(node)


class _Nodes(NamedTuple):
    """The per-node arrays in breadth-first order (information sets already renumbered)."""

    parent: np.ndarray
    player: np.ndarray
    infoset: np.ndarray
    action: np.ndarray
    chance_prob: np.ndarray
    level_starts: np.ndarray


def _lay_out(game: Game, rec: _Records) -> CompiledTree:
    """The records as a :class:`CompiledTree`: breadth-first, information sets numbered by
    their first breadth-first node, paths checked for perfect recall."""
    players, num_actions, num_infosets = game.num_players, game.num_actions, len(rec.owner)
    nodes, rank, terminal_nodes, utility, found = _breadth_first(rec, players, num_infosets)
    if not np.isfinite(utility).all():
        raise Unexplained("a payoff is not finite")
    own_depth, own_last, reach, last = _paths(nodes, players, num_actions, num_infosets)
    renumbered = np.argsort(rank)  # new id -> old id
    keys = list(rec.index)
    keys = tuple(keys[i] for i in renumbered)
    found = found[renumbered]  # each set's first depth-first node, by new id
    mask = np.zeros((num_infosets, num_actions), dtype=bool)
    sizes = np.fromiter(map(len, rec.legal), dtype=np.int64, count=num_infosets)
    legal = np.fromiter(itertools.chain.from_iterable(rec.legal), dtype=np.int64)
    mask[np.repeat(np.arange(num_infosets), sizes), legal] = True
    tree = CompiledTree(
        game_id=game.id,
        num_players=players,
        num_actions=num_actions,
        **{name: readonly(values) for name, values in nodes._asdict().items()},
        infoset_player=readonly(np.asarray(rec.owner, dtype=np.int8)[renumbered]),
        infoset_depth=readonly(own_depth.astype(np.int32)),
        infoset_parent_sequence=readonly(own_last.astype(np.int32)),
        legal_mask=readonly(mask[renumbered]),
        terminal_nodes=readonly(terminal_nodes),
        terminal_utility=readonly(utility),
        terminal_chance_reach=readonly(reach),
        terminal_last_sequence=readonly(last.astype(np.int32)),
        infoset_labels=lambda: (keys, replayed_labels(game, nodes.parent, nodes.action, found)[1]),
    )
    tree.__dict__["infoset_index"] = {key: i for i, key in enumerate(keys)}
    return tree


def _breadth_first(
    rec: _Records, players: int, num_infosets: int
) -> tuple[_Nodes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nodes by depth (a stable sort of the depth-first order, which within one depth is
    already parent-then-action order), the information sets' renumbering (old id -> new id),
    the terminals' positions and their payoffs in that order, and where each information set
    was found (by old id). Each depth-first buffer is let go as soon as it is reordered, so the
    two copies of a column are alive one at a time."""
    depth = np.frombuffer(rec.depth, dtype=np.uint16)
    level_starts = np.concatenate(([0], np.cumsum(np.bincount(depth))))
    order = np.argsort(depth, kind="stable").astype(np.int32)  # position -> depth-first id
    del depth
    rec.depth = None
    position = np.empty_like(order)
    position[order] = np.arange(order.size, dtype=np.int32)
    terminals = position[np.flatnonzero(np.frombuffer(rec.player, dtype=np.int8) == TERMINAL)]
    by_node = np.argsort(terminals, kind="stable")
    utility = np.frombuffer(rec.utility).reshape(-1, players)[by_node]
    rec.utility = None
    parent = position[rec.take("parent", np.int32, order)]
    parent[0] = -1  # the root, the only node of depth 0
    found = position[np.frombuffer(rec.first, dtype=np.int64)]
    del position
    infoset = rec.take("infoset", np.int32, order)
    decision = infoset >= 0
    rank = first_seen_rank(infoset[decision], num_infosets)
    infoset[decision] = rank[infoset[decision]]
    nodes = _Nodes(
        parent=parent,
        player=rec.take("player", np.int8, order),
        infoset=infoset,
        action=rec.take("action", np.int32, order),
        chance_prob=rec.take("chance_prob", np.float64, order),
        level_starts=level_starts,
    )
    return nodes, rank, terminals[by_node], utility, found


def _paths(
    nodes: _Nodes, players: int, num_actions: int, num_infosets: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What follows from the paths, one depth at a time: per information set its owner's
    number of own moves before it and last sequence (checked equal at every one of its
    histories: perfect recall); per terminal its chance reach and each player's last sequence.
    Sequences are ``infoset * num_actions + action`` (new ids), ``num_infosets * num_actions``
    where a player has not moved yet. Each depth costs the same few numpy calls whatever the
    number of players (every player's columns are indexed at once by who moved), which is
    most of a small game's layout."""
    pad = num_infosets * num_actions
    own = np.full((num_infosets, 2), -1, dtype=np.int64)  # own moves before, last sequence
    reach, last, moves = np.ones(1), np.full((players, 1), pad), np.zeros((players, 1), np.int64)
    reaches, lasts = [], []
    starts = nodes.level_starts.tolist()
    for d in range(len(starts) - 1):
        lo, hi = starts[d], starts[d + 1]
        if d:
            up = nodes.parent[lo:hi]
            local = up - starts[d - 1]
            reach = reach[local] * nodes.chance_prob[lo:hi]
            last, moves = last[:, local], moves[:, local]
            mover = nodes.player[up]
            moved = (mover >= 0).nonzero()[0]
            if moved.size:
                by = mover[moved]
                sequence = nodes.infoset[up[moved]].astype(np.int64) * num_actions
                last[by, moved] = sequence + nodes.action[lo + moved]
                moves[by, moved] += 1
        who = nodes.player[lo:hi]
        mine = (who >= 0).nonzero()[0]
        if mine.size:
            by = who[mine]
            _agree(own, nodes.infoset[lo + mine], np.stack((moves[by, mine], last[by, mine]), 1))
        end = (who == TERMINAL).nonzero()[0]
        reaches.append(reach[end])
        lasts.append(last[:, end])
    own_depth, own_last = own.T
    return own_depth, own_last, np.concatenate(reaches), np.concatenate(lasts, axis=1)


def _agree(table: np.ndarray, iset: np.ndarray, values: np.ndarray) -> None:
    """Record ``values`` (one row per history) for the information sets ``iset`` seen for the
    first time and check that every history agrees with what its set recorded (raises
    :class:`Unexplained`)."""
    seen = table[iset]
    table[iset] = np.where(seen < 0, values, seen)
    if (table[iset] != values).any():
        raise Unexplained("two histories of an information set have different own pasts")
