"""The compile's layout: what a depth-first walk recorded, as a :class:`CompiledTree`.

The fast walk (``games/fast_walk.py``) records per history, depth first: its parent, player,
information set (numbered in order of discovery), action, edge probability and depth, and the
payoffs at terminals; per information set its owner, legal actions and first history. The tree
wants more: the nodes in breadth-first order (a stable sort by depth), information sets
numbered by their first breadth-first node, and what follows from the paths: each terminal's
chance reach and each player's last sequence there, each information set's owner's number of
own moves before it and last sequence, checked equal at every one of its histories (perfect
recall).

Two twins compute the same arrays, bit for bit (``tests/test_compile_paths.py`` runs both on
every game it compiles):

* with numba (the ``fast`` extra), one compiled loop over the records (:func:`_loop_layout`).
  A small game's numpy layout is a hundred-odd calls on arrays of a few dozen entries, whose
  fixed cost was two thirds of Kuhn's compile through the OpenSpiel bridge; the loop is one
  call. It rewrites the walk's per-history buffers in breadth-first order in place, one
  scratch column at a time, so they become the tree's arrays and its peak memory is the numpy
  twin's (within 3 bytes a history through the bridge, Leduc to 13-rank Leduc).
* without, numpy one depth at a time (:func:`_numpy_layout`), each depth-first column let go as
  soon as it is reordered, so the two copies of a column are alive one at a time.

Either raises :class:`Unexplained` on a payoff that is not finite or an information set whose
histories have different own pasts; the caller then runs the checking walk, which names the
history.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, NamedTuple

import numpy as np

from nashzoo.games import _numba
from nashzoo.games.base import TERMINAL, Game
from nashzoo.games.compiled import CompiledTree, first_seen_rank, readonly, replayed_keys_kept


class Unexplained(Exception):
    """The fast walk met something the checking walk must explain (it names the history)."""


class _Nodes(NamedTuple):
    """The per-node arrays in breadth-first order (information sets already renumbered)."""

    parent: np.ndarray
    player: np.ndarray
    infoset: np.ndarray
    action: np.ndarray
    chance_prob: np.ndarray
    level_starts: np.ndarray


class _Layout(NamedTuple):
    """The tree's stored arrays (as :class:`CompiledTree` names them: the nodes' and the rest),
    and per information set (new id) its old id and its first breadth-first history (where its
    key is asked)."""

    nodes: _Nodes
    infoset_player: np.ndarray
    infoset_depth: np.ndarray
    infoset_parent_sequence: np.ndarray
    legal_mask: np.ndarray
    terminal_nodes: np.ndarray
    terminal_utility: np.ndarray
    terminal_chance_reach: np.ndarray
    terminal_last_sequence: np.ndarray
    renumbered: np.ndarray  # new id -> old id
    found: np.ndarray  # new id -> first breadth-first node


def lay_out(game: Game, records: Any) -> CompiledTree:
    """The fast walk's ``records`` (``fast_walk._Records``; its buffers are let go) as the
    compiled tree the checking walk would build; raises :class:`Unexplained` on anything the
    checking walk must explain."""
    legal_sizes = np.fromiter(map(len, records.legal), dtype=np.int64, count=len(records.legal))
    legal_flat = np.fromiter(itertools.chain.from_iterable(records.legal), dtype=np.int64)
    twin = _loop_layout if _numba.ENABLED else _numpy_layout
    arrays = twin(records, game.num_players, game.num_actions, legal_sizes, legal_flat)
    found_order = list(records.index)
    keys = tuple([found_order[i] for i in arrays.renumbered.tolist()])
    parent, action, found = arrays.nodes.parent, arrays.nodes.action, arrays.found
    stored = {**arrays.nodes._asdict(), **arrays._asdict()}
    del stored["nodes"], stored["renumbered"], stored["found"]
    tree = CompiledTree(
        game_id=game.id,
        num_players=game.num_players,
        num_actions=game.num_actions,
        **{name: readonly(values) for name, values in stored.items()},
        infoset_labels=functools.partial(replayed_keys_kept, keys, game, parent, action, found),
    )
    tree.__dict__["infoset_index"] = {key: i for i, key in enumerate(keys)}
    return tree


# --- the compiled twin ------------------------------------------------------------------------
def _loop_layout(
    rec: Any, players: int, num_actions: int, legal_sizes: np.ndarray, legal_flat: np.ndarray
) -> _Layout:
    """:func:`_lay_out_loop` over the records' buffers, whose per-history columns it rewrites
    in breadth-first order in place: they become the tree's (numpy views of the records'
    buffers); the other buffers are let go."""
    nodes = (
        np.frombuffer(rec.parent, dtype=np.int32),
        np.frombuffer(rec.player, dtype=np.int8),
        np.frombuffer(rec.infoset, dtype=np.int32),
        np.frombuffer(rec.action, dtype=np.int32),
        np.frombuffer(rec.chance_prob, dtype=np.float64),
    )
    *arrays, finite, agree = _lay_out_loop(
        *nodes,
        np.frombuffer(rec.depth, dtype=np.uint16),
        np.frombuffer(rec.utility, dtype=np.float64),
        np.frombuffer(rec.first, dtype=np.int64),
        np.frombuffer(rec.owner, dtype=np.int8),
        legal_sizes,
        legal_flat,
        num_actions,
        players,
    )
    rec.parent = rec.player = rec.infoset = rec.action = None
    rec.chance_prob = rec.depth = rec.utility = None
    if not finite:
        raise Unexplained("a payoff is not finite")
    if not agree:
        raise Unexplained("two histories of an information set have different own pasts")
    level_starts, *rest = arrays
    return _Layout(_Nodes(*nodes, level_starts), *rest)


@_numba.compiled
def _lay_out_loop(
    parent: np.ndarray,
    player: np.ndarray,
    infoset: np.ndarray,
    action: np.ndarray,
    prob: np.ndarray,
    depth: np.ndarray,
    utility: np.ndarray,
    first: np.ndarray,
    owner: np.ndarray,
    legal_sizes: np.ndarray,
    legal_flat: np.ndarray,
    num_actions: int,
    players: int,
):
    """The whole layout in three passes over the histories: depth first (each history's
    breadth-first position, and the per-history columns rewritten in that order, in place),
    breadth first (information sets numbered as first met, terminals and their payoffs in node
    order), breadth first again one depth at a time (the paths). Returns the :class:`_Layout`
    fields after the per-history columns, then whether every payoff is finite and whether every
    information set's histories agree on their own past."""
    level_starts = _level_starts(depth)
    position, num_terminals = _breadth_first_loop(
        parent, player, infoset, action, prob, depth, level_starts
    )
    nodes = (parent, player, infoset, action, prob)
    renumbered, terminal_nodes, terminal_utility, finite = _number_loop(
        infoset, utility, owner.shape[0], num_terminals, players
    )
    found, infoset_player, legal_mask = _infoset_tables_loop(
        renumbered, position, first, owner, legal_sizes, legal_flat, num_actions
    )
    own_depth, own_last, terminal_reach, terminal_last, agree = _paths_loop(
        nodes, level_starts, owner.shape[0], num_actions, players, num_terminals
    )
    return (
        level_starts,
        infoset_player,
        own_depth,
        own_last,
        legal_mask,
        terminal_nodes,
        terminal_utility,
        terminal_reach,
        terminal_last,
        renumbered,
        found,
        finite,
        agree,
    )


@_numba.compiled
def _level_starts(depth: np.ndarray) -> np.ndarray:
    """Where each depth starts in breadth-first order (and the end): a count per depth."""
    deepest = 0
    for i in range(depth.shape[0]):
        deepest = max(deepest, depth[i])
    level_starts = np.zeros(deepest + 2, np.int64)
    for i in range(depth.shape[0]):
        level_starts[depth[i] + 1] += 1
    for d in range(deepest + 1):
        level_starts[d + 1] += level_starts[d]
    return level_starts


@_numba.compiled
def _breadth_first_loop(parent, player, infoset, action, prob, depth, level_starts):
    """Each history's breadth-first position (a counting sort on depth, stable: within a depth
    the depth-first order stays, parent then action), and the columns rewritten in that order
    in place, one at a time through a scratch column (so the records' buffers become the
    tree's arrays: no second copy of every column at once). A terminal's infoset entry (-1 in
    the tree) holds ``-2 - row`` of its payoffs until :func:`_number_loop` reads it. Returns
    the positions and the number of terminals."""
    n = parent.shape[0]
    fill = level_starts[:-1].copy()
    position = np.empty(n, np.int32)
    for i in range(n):
        position[i] = fill[depth[i]]
        fill[depth[i]] += 1
    scratch = np.empty(n, np.int32)
    for i in range(n):  # a parent comes before its children: the root is depth-first node 0
        scratch[position[i]] = position[parent[i]] if i > 0 else -1
    parent[:] = scratch
    num_terminals = 0
    for i in range(n):
        if player[i] == TERMINAL:
            scratch[position[i]] = -2 - num_terminals
            num_terminals += 1
        else:
            scratch[position[i]] = infoset[i]
    infoset[:] = scratch
    _permute(action, position, scratch)
    _permute(player, position, np.empty(n, np.int8))
    _permute(prob, position, np.empty(n, np.float64))
    return position, num_terminals


@_numba.compiled
def _permute(column, position, scratch) -> None:
    """``column`` rewritten in place so that entry ``i`` moves to ``position[i]``."""
    for i in range(column.shape[0]):
        scratch[position[i]] = column[i]
    column[:] = scratch


@_numba.compiled
def _number_loop(b_infoset, utility, num_infosets, num_terminals, players):
    """Information sets renumbered by first breadth-first node (in ``b_infoset``, in place;
    terminals' slots back to -1), the terminals' nodes and payoffs in node order. Returns
    new id -> old id, the terminals' nodes and payoffs, whether the payoffs are all finite."""
    rank = np.full(num_infosets, -1, np.int64)
    renumbered = np.empty(num_infosets, np.int64)
    numbered = 0
    terminal_nodes = np.empty(num_terminals, np.int32)
    terminal_utility = np.empty((num_terminals, players), np.float64)
    finite = True
    z = 0
    for at in range(b_infoset.shape[0]):
        s = b_infoset[at]
        if s >= 0:
            if rank[s] < 0:
                rank[s] = numbered
                renumbered[numbered] = s
                numbered += 1
            b_infoset[at] = rank[s]
        elif s <= -2:
            row = -2 - s
            b_infoset[at] = -1
            terminal_nodes[z] = at
            for p in range(players):
                terminal_utility[z, p] = utility[row * players + p]
                finite = finite and np.isfinite(terminal_utility[z, p])
            z += 1
    return renumbered, terminal_nodes, terminal_utility, finite


@_numba.compiled
def _infoset_tables_loop(renumbered, position, first, owner, legal_sizes, legal_flat, num_actions):
    """Per information set (new id): its first breadth-first node, owner and legal mask."""
    num_infosets = renumbered.shape[0]
    legal_start = np.zeros(num_infosets + 1, np.int64)
    for s in range(num_infosets):
        legal_start[s + 1] = legal_start[s] + legal_sizes[s]
    found = np.empty(num_infosets, np.int64)
    infoset_player = np.empty(num_infosets, np.int8)
    legal_mask = np.zeros((num_infosets, num_actions), np.bool_)
    for new in range(num_infosets):
        old = renumbered[new]
        found[new] = position[first[old]]
        infoset_player[new] = owner[old]
        for j in range(legal_start[old], legal_start[old + 1]):
            legal_mask[new, legal_flat[j]] = True
    return found, infoset_player, legal_mask


@_numba.compiled
def _paths_loop(nodes, level_starts, num_infosets, num_actions, players, num_terminals):
    """What follows from the paths, one depth at a time (the buffers of two depths alive),
    taken as :func:`_paths` takes them: per information set its owner's own moves before it
    and last sequence (set at its first history, compared at the others), per terminal its
    chance reach and each player's last sequence. Returns those and whether all agreed."""
    b_player, b_infoset = nodes[1], nodes[2]
    own_depth = np.full(num_infosets, -1, np.int32)
    own_last = np.full(num_infosets, -1, np.int32)
    terminal_reach = np.empty(num_terminals, np.float64)
    terminal_last = np.empty((players, num_terminals), np.int32)
    agree = True
    reach = np.ones(1)
    last = np.full((players, 1), num_infosets * num_actions, np.int32)  # the empty sequence
    moves = np.zeros((players, 1), np.int32)
    z = 0
    for d in range(level_starts.shape[0] - 1):
        lo, hi = level_starts[d], level_starts[d + 1]
        if d > 0:
            above = level_starts[d - 1]
            reach, last, moves = _step_down(nodes, lo, hi, above, reach, last, moves, num_actions)
        for j in range(hi - lo):
            who = b_player[lo + j]
            if who >= 0:
                s = b_infoset[lo + j]
                if own_depth[s] < 0:
                    own_depth[s] = moves[who, j]
                    own_last[s] = last[who, j]
                elif own_depth[s] != moves[who, j] or own_last[s] != last[who, j]:
                    agree = False
            elif who == TERMINAL:
                terminal_reach[z] = reach[j]
                for p in range(players):
                    terminal_last[p, z] = last[p, j]
                z += 1
    return own_depth, own_last, terminal_reach, terminal_last, agree


@_numba.compiled
def _step_down(nodes, lo, hi, above, reach, last, moves, num_actions):
    """The reach, last sequences and own moves of the histories ``lo:hi`` of one depth from
    their parents' (the depth above, starting at ``above``)."""
    b_parent, b_player, b_infoset, b_action, b_prob = nodes
    players = last.shape[0]
    next_reach = np.empty(hi - lo)
    next_last = np.empty((players, hi - lo), np.int32)
    next_moves = np.empty((players, hi - lo), np.int32)
    for j in range(hi - lo):
        up = b_parent[lo + j]
        local = up - above
        next_reach[j] = reach[local] * b_prob[lo + j]
        for p in range(players):
            next_last[p, j] = last[p, local]
            next_moves[p, j] = moves[p, local]
        mover = b_player[up]
        if mover >= 0:
            next_last[mover, j] = b_infoset[up] * num_actions + b_action[lo + j]
            next_moves[mover, j] += 1
    return next_reach, next_last, next_moves


# --- the numpy twin ---------------------------------------------------------------------------
def _numpy_layout(
    rec: Any, players: int, num_actions: int, legal_sizes: np.ndarray, legal_flat: np.ndarray
) -> _Layout:
    """The layout in numpy calls, one depth at a time; the records' buffers are let go."""
    num_infosets = len(rec.owner)
    nodes, rank, terminal_nodes, utility, found = _breadth_first(rec, players, num_infosets)
    if not np.isfinite(utility).all():
        raise Unexplained("a payoff is not finite")
    own_depth, own_last, reach, last = _paths(nodes, players, num_actions, num_infosets)
    renumbered = np.argsort(rank)  # new id -> old id
    mask = np.zeros((num_infosets, num_actions), dtype=bool)
    mask[np.repeat(np.arange(num_infosets), legal_sizes), legal_flat] = True
    return _Layout(
        nodes,
        infoset_player=np.frombuffer(rec.owner, dtype=np.int8)[renumbered],
        infoset_depth=own_depth.astype(np.int32),
        infoset_parent_sequence=own_last.astype(np.int32),
        legal_mask=mask[renumbered],
        terminal_nodes=terminal_nodes,
        terminal_utility=utility,
        terminal_chance_reach=reach,
        terminal_last_sequence=last.astype(np.int32),
        renumbered=renumbered,
        found=found[renumbered],
    )


def _breadth_first(
    rec: Any, players: int, num_infosets: int
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
