"""``compile_tree(game)``: the whole game tree as flat numpy arrays, enumerated once.

This is the fast path every full-width solver and the exact evaluator share. Nodes are stored in
breadth-first order, so every node comes after its parent and the nodes of depth ``d`` are the
slice ``level_starts[d]:level_starts[d + 1]``.

Besides the per-node arrays, the tree keeps the *sequence form*: a player's sequence is a flat id
``infoset * num_actions + action`` (``num_sequences`` is the empty sequence); every information
set stores the sequence of its owner leading to it (``infoset_parent_sequence``) and every
terminal the last sequence of each player on its path (``terminal_last_sequence``). Reach
probabilities, counterfactual values and best responses are then a few gathers and
``np.bincount`` calls per own depth (see ``treemath``), with no Python call per node.

Stored: what the kernels read, in the narrowest exact dtype (int32 ids, int8 players, float64
probabilities and payoffs). Derived on first use and then kept: ``depth``, ``children``,
``utility`` (per node), the whole paths ``terminal_sequences``, and, for a game whose builder
describes information sets lazily, their keys and tensors. A tree the full-width learners and
the evaluator use never builds the per-node ``children`` and ``utility`` tables.

Arrays are read-only, and the result is cached per game id: it is shared, never mutated.
"""

from __future__ import annotations

import array
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nashzoo.games import checks
from nashzoo.games.base import CHANCE, TERMINAL, Game, State
from nashzoo.games.cache import GameCache

InfosetLabels = Callable[[], tuple[tuple[str, ...], np.ndarray]]
"""Returns every information set's key and its ``[I, D]`` float32 tensor, in index order."""


@dataclass(frozen=True, eq=False)
class CompiledTree:
    """Flat arrays describing every history of a game. Build with :func:`compile_tree`."""

    game_id: str
    num_players: int
    num_actions: int
    # --- nodes (breadth-first order) ---------------------------------------------------------
    parent: np.ndarray  # [N] int32, -1 at the root
    player: np.ndarray  # [N] int8: player id, CHANCE (-1) or TERMINAL (-4)
    infoset: np.ndarray  # [N] int32 infoset of the acting player, -1 at chance/terminal nodes
    action: np.ndarray  # [N] int32 action (or chance outcome) leading here from the parent
    chance_prob: np.ndarray  # [N] float64 probability of that edge if the parent is chance, else 1
    level_starts: np.ndarray  # [max_depth + 2] int64 offsets of each depth
    # --- information sets --------------------------------------------------------------------
    infoset_player: np.ndarray  # [I] int8
    infoset_depth: np.ndarray  # [I] int32: number of moves the player made before this infoset
    infoset_parent_sequence: np.ndarray  # [I] int32 owner's sequence leading here
    legal_mask: np.ndarray  # [I, A] bool
    # --- terminals ---------------------------------------------------------------------------
    terminal_nodes: np.ndarray  # [Z] int32 node index of each terminal
    terminal_utility: np.ndarray  # [Z, P] float64
    terminal_chance_reach: np.ndarray  # [Z] float64 product of chance probabilities on the path
    terminal_last_sequence: np.ndarray  # [P, Z] int32 each player's last sequence before z
    infoset_labels: InfosetLabels  # keys and tensors, computed once when first asked for

    @property
    def num_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def num_terminals(self) -> int:
        return int(self.terminal_nodes.shape[0])

    @property
    def num_sequences(self) -> int:
        """``num_infosets * num_actions``: also the padding id that reads probability 1."""
        return self.num_infosets * self.num_actions

    def infosets_of(self, player: int) -> np.ndarray:
        """Indices of ``player``'s information sets."""
        return np.flatnonzero(self.infoset_player == player)

    def index_of(self, key: str) -> int:
        """Index of the information set with this key (KeyError naming the key otherwise)."""
        try:
            return self.infoset_index[key]
        except KeyError:
            raise KeyError(f"no information set {key!r} in {self.game_id}") from None

    def nbytes(self) -> int:
        """Bytes held by the stored arrays (derived tables and labels not counted)."""
        return sum(value.nbytes for value in vars(self).values() if isinstance(value, np.ndarray))

    # --- information-set labels (computed once) ----------------------------------------------
    @functools.cached_property
    def _labels(self) -> tuple[tuple[str, ...], np.ndarray]:
        keys, tensors = self.infoset_labels()
        return tuple(keys), readonly(np.asarray(tensors, dtype=np.float32))

    @property
    def infoset_keys(self) -> tuple[str, ...]:
        """Every information set's key, in index order."""
        return self._labels[0]

    @property
    def infoset_tensors(self) -> np.ndarray:
        """``[I, D]`` float32: every information set's tensor, in index order."""
        return self._labels[1]

    @functools.cached_property
    def infoset_index(self) -> dict[str, int]:
        """``{key: index}`` of every information set."""
        return {key: i for i, key in enumerate(self.infoset_keys)}

    # --- derived node tables (computed once) -------------------------------------------------
    @functools.cached_property
    def depth(self) -> np.ndarray:
        """``[N]`` int32 depth of every node."""
        sizes = np.diff(self.level_starts)
        return readonly(np.repeat(np.arange(sizes.size, dtype=np.int32), sizes))

    @functools.cached_property
    def children(self) -> np.ndarray:
        """``[N, B]`` int32 child node per action/outcome id, -1 where none."""
        branching = max(self.num_actions, int(self.action.max(initial=-1)) + 1)
        out = np.full((self.num_nodes, branching), -1, dtype=np.int32)
        out[self.parent[1:], self.action[1:]] = np.arange(1, self.num_nodes, dtype=np.int32)
        return readonly(out)

    @functools.cached_property
    def utility(self) -> np.ndarray:
        """``[N, P]`` float64 returns at terminal nodes, zeros elsewhere."""
        out = np.zeros((self.num_nodes, self.num_players))
        out[self.terminal_nodes] = self.terminal_utility
        return readonly(out)

    @functools.cached_property
    def terminal_sequences(self) -> tuple[np.ndarray, ...]:
        """Per player ``[Z, L_p]`` int64: the flat sequence ids of the player's moves on the way
        to each terminal, in order, padded with ``num_sequences`` (which reads probability 1)."""
        pad = self.num_sequences
        up = np.append(self.infoset_parent_sequence.astype(np.int64), pad)
        out = []
        for p in range(self.num_players):
            backwards = [self.terminal_last_sequence[p].astype(np.int64)]
            while True:
                previous = up[backwards[-1] // self.num_actions]  # pad // A is the pad row
                if (previous == pad).all():
                    break
                backwards.append(previous)
            stacked = np.stack(backwards)  # [K, Z], last move first
            length = (stacked != pad).sum(axis=0)
            width = max(1, int(length.max(initial=0)))
            k = np.arange(width)[None, :]
            source = length[:, None] - 1 - k  # position in ``backwards`` of the k-th move
            valid = source >= 0
            picked = stacked[np.where(valid, source, 0), np.arange(stacked.shape[1])[:, None]]
            out.append(readonly(np.where(valid, picked, pad)))
        return tuple(out)


def compile_tree(game: Game) -> CompiledTree:
    """Enumerate ``game`` once into a :class:`CompiledTree` (cached per game, see
    :mod:`nashzoo.games.cache`).

    Every history is checked on the way (see :mod:`nashzoo.games.checks`): a game with
    chance probabilities not summing to one, out-of-range or missing actions, malformed
    returns or imperfect recall raises a :class:`~nashzoo.games.base.GameDefinitionError`
    naming the history, instead of giving numbers that are silently wrong.
    """
    return _TREES(game)


def readonly(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only in place (compiled trees are shared)."""
    array.setflags(write=False)
    return array


def _compile(game: Game) -> CompiledTree:
    """A game offering ``compile_arrays()`` builds its own arrays (a native game's vectorised
    builder, tested against the generic walk); any other game is walked State by State."""
    builder = getattr(game, "compile_arrays", None)
    if builder is not None:
        return builder()
    return walk_states(game)


def walk_states(game: Game) -> CompiledTree:
    """The generic path: walk ``game``'s States depth first, every history checked, then put
    the nodes (and information sets) in breadth-first order. Depth first keeps only one path of
    States alive (a breadth-first frontier can hold a million), and the per-node numbers go to
    compact typed buffers, not Python lists."""
    walk = _Walk(game)
    stack = [
        (
            game.new_initial_state(),
            -1,
            -1,
            1.0,
            1.0,
            (-1,) * game.num_players,
            (0,) * game.num_players,
            0,
        )
    ]
    while stack:
        stack.extend(reversed(walk.visit(*stack.pop())))
    return walk.finish()


_Entry = tuple[Any, int, int, float, float, tuple[int, ...], tuple[int, ...], int]
"""A stack entry: (state, parent node, action from the parent, edge probability, chance
reach, each player's last sequence so far (-1: none), each player's number of moves so far,
depth)."""


class _Walk:
    """The generic enumeration: :meth:`visit` records one history (in depth-first order) and
    returns its children; :meth:`finish` reorders everything breadth first."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.parent = array.array("i")
        self.player = array.array("b")
        self.infoset = array.array("i")
        self.action = array.array("i")
        self.chance_prob = array.array("d")
        self.depth = array.array("i")
        self.terminal_nodes = array.array("q")
        self.terminal_utility = array.array("d")
        self.terminal_chance = array.array("d")
        self.terminal_last = array.array("q")
        self.keys: list[str] = []
        self.index: dict[str, int] = {}
        self.iset_player: list[int] = []
        self.iset_depth: list[int] = []
        self.iset_parent: list[int] = []
        self.iset_mask: list[np.ndarray] = []
        self.iset_tensor: list[np.ndarray] = []
        self.signature: list[tuple[int, int, tuple[int, ...], int]] = []  # for the recall check
        self.legal_of: list[list[int]] = []  # legal actions of each information set

    def visit(
        self,
        state: State,
        par: int,
        act: int,
        prob: float,
        reach: float,
        last: tuple[int, ...],
        moves: tuple[int, ...],
        depth: int,
    ) -> list[_Entry]:
        """Record one history; return its children's entries, in action order."""
        game = self.game
        node = len(self.parent)
        self.parent.append(par)
        self.action.append(act)
        self.chance_prob.append(prob)
        self.depth.append(depth)
        who = checks.check_player(game, state, state.current_player())
        self.player.append(who)
        if who == TERMINAL:
            self.infoset.append(-1)
            self.terminal_nodes.append(node)
            self.terminal_utility.extend(checks.check_returns(game, state, state.returns()))
            self.terminal_chance.append(reach)
            self.terminal_last.extend(last)
            return []
        if who == CHANCE:
            self.infoset.append(-1)
            outcomes = checks.check_chance(game, state, state.chance_outcomes())
            return [
                (state._child(o), node, o, p, reach * p, last, moves, depth + 1)
                for o, p in outcomes
            ]
        iset = self._infoset(state, who, last[who], moves[who])
        self.infoset.append(iset)
        next_moves = (*moves[:who], moves[who] + 1, *moves[who + 1 :])
        base = iset * game.num_actions
        return [
            (
                state._child(a),
                node,
                a,
                1.0,
                reach,
                (*last[:who], base + a, *last[who + 1 :]),
                next_moves,
                depth + 1,
            )
            for a in self.legal_of[iset]
        ]

    def _infoset(self, state: State, who: int, last: int, moves: int) -> int:
        key = state.infoset_key(who)
        legal = checks.check_legal(self.game, state, who, state.legal_actions())
        signature = (who, moves, tuple(legal), last)
        iset = self.index.get(key)
        if iset is None:
            iset = self.index[key] = len(self.keys)
            self.keys.append(key)
            self.iset_player.append(who)
            self.iset_depth.append(moves)
            self.iset_parent.append(last)
            self.signature.append(signature)
            self.legal_of.append(legal)
            mask = np.zeros(self.game.num_actions, dtype=bool)
            mask[legal] = True
            self.iset_mask.append(mask)
            self.iset_tensor.append(state.infoset_tensor(who))
        elif self.signature[iset] != signature:
            checks.check_recall(self.game, state, key, self.signature[iset], signature)
        return iset

    def finish(self) -> CompiledTree:
        """The arrays in breadth-first order: nodes by depth (a stable sort of the depth-first
        order, which within one depth is already parent-then-action order), information sets
        numbered by their first breadth-first node."""
        game, num_actions, players = self.game, self.game.num_actions, self.game.num_players
        depth = np.frombuffer(self.depth, dtype=np.int32)
        order = np.argsort(depth, kind="stable")  # breadth-first position -> depth-first id
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        infoset = np.frombuffer(self.infoset, dtype=np.int32)[order].astype(np.int64)
        decision = infoset >= 0
        rank = _first_seen_rank(infoset[decision], len(self.keys))
        renumbered = np.argsort(rank)  # new id -> old id
        pad = len(self.keys) * num_actions
        parent = np.frombuffer(self.parent, dtype=np.int32)[order]
        parent = np.where(parent >= 0, position[np.maximum(parent, 0)], -1)
        terminals = position[np.frombuffer(self.terminal_nodes, dtype=np.int64)]
        by_node = np.argsort(terminals, kind="stable")
        utility = np.frombuffer(self.terminal_utility).reshape(-1, players)[by_node]
        last = np.frombuffer(self.terminal_last, dtype=np.int64).reshape(-1, players)[by_node]
        keys, tensors = self._renumbered_labels(renumbered)
        mask = np.asarray(self.iset_mask, dtype=bool).reshape(len(self.keys), num_actions)
        tree = CompiledTree(
            game_id=game.id,
            num_players=players,
            num_actions=num_actions,
            parent=readonly(parent.astype(np.int32)),
            player=readonly(np.frombuffer(self.player, dtype=np.int8)[order]),
            infoset=readonly(np.where(decision, rank[np.maximum(infoset, 0)], -1).astype(np.int32)),
            action=readonly(np.frombuffer(self.action, dtype=np.int32)[order]),
            chance_prob=readonly(np.frombuffer(self.chance_prob)[order]),
            level_starts=readonly(np.concatenate(([0], np.cumsum(np.bincount(depth))))),
            infoset_player=readonly(np.asarray(self.iset_player, dtype=np.int8)[renumbered]),
            infoset_depth=readonly(np.asarray(self.iset_depth, dtype=np.int32)[renumbered]),
            infoset_parent_sequence=readonly(
                _renumber_sequences(self.iset_parent, rank, num_actions, pad)[renumbered]
            ),
            legal_mask=readonly(mask[renumbered]),
            terminal_nodes=readonly(np.sort(terminals).astype(np.int32)),
            terminal_utility=readonly(utility),
            terminal_chance_reach=readonly(np.frombuffer(self.terminal_chance)[by_node]),
            terminal_last_sequence=readonly(
                np.ascontiguousarray(_renumber_sequences(last, rank, num_actions, pad).T)
            ),
            infoset_labels=lambda: (keys, tensors),
        )
        tree.__dict__["infoset_index"] = {key: i for i, key in enumerate(keys)}
        return tree

    def _renumbered_labels(self, renumbered: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
        """The information sets' keys and tensors in the new numbering (``renumbered``: new id
        -> old id)."""
        keys = tuple(self.keys[i] for i in renumbered)
        tensor_size = getattr(self.game, "infoset_tensor_size", 0)
        tensors = (
            np.stack(self.iset_tensor).astype(np.float32)[renumbered]
            if self.iset_tensor
            else np.zeros((0, tensor_size), dtype=np.float32)
        )
        return keys, tensors


def _first_seen_rank(infoset: np.ndarray, num_infosets: int) -> np.ndarray:
    """Old information set id -> new id, numbering the sets in order of their first node in
    ``infoset`` (the decision nodes' sets in breadth-first order)."""
    _, first = np.unique(infoset, return_index=True)
    rank = np.empty(num_infosets, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(num_infosets)
    return rank


def _renumber_sequences(values: Any, rank: np.ndarray, num_actions: int, pad: int) -> np.ndarray:
    """Sequence ids ``infoset * num_actions + action`` with the information sets renumbered by
    ``rank``; -1 (no move yet) becomes ``pad``, the empty sequence."""
    values = np.asarray(values, dtype=np.int64)
    moved = values >= 0
    out = np.full(values.shape, pad, dtype=np.int64)
    out[moved] = rank[values[moved] // num_actions] * num_actions + values[moved] % num_actions
    return out.astype(np.int32)


_TREES: GameCache[CompiledTree] = GameCache(_compile)
