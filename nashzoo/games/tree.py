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
    """The generic path: walk ``game``'s States breadth-first, every history checked."""
    walk = _Walk(game)
    root = (game.new_initial_state(), -1, -1, 1.0, 1.0, (-1,) * game.num_players)
    frontier = [(*root, (0,) * game.num_players)]
    while frontier:
        frontier = walk.level(frontier)
    return walk.finish()


_Entry = tuple[Any, int, int, float, float, tuple[int, ...], tuple[int, ...]]
"""A frontier entry: (state, parent node, action from the parent, edge probability, chance
reach, each player's last sequence so far (-1: none), each player's number of moves so far)."""


class _Walk:
    """The generic breadth-first enumeration: one :meth:`level` call per depth, appending each
    history's numbers to flat Python lists that :meth:`finish` turns into arrays."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.parent: list[int] = []
        self.player: list[int] = []
        self.infoset: list[int] = []
        self.action: list[int] = []
        self.chance_prob: list[float] = []
        self.level_starts = [0]
        self.terminal_nodes: list[int] = []
        self.terminal_utility: list[np.ndarray] = []
        self.terminal_chance: list[float] = []
        self.terminal_last: list[tuple[int, ...]] = []
        self.keys: list[str] = []
        self.index: dict[str, int] = {}
        self.iset_player: list[int] = []
        self.iset_depth: list[int] = []
        self.iset_parent: list[int] = []
        self.iset_mask: list[np.ndarray] = []
        self.iset_tensor: list[np.ndarray] = []
        self.signature: list[tuple[int, int, tuple[int, ...], int]] = []  # for the recall check
        self.legal_of: list[list[int]] = []  # legal actions of each information set

    def level(self, frontier: list[_Entry]) -> list[_Entry]:
        """Record one depth of histories; return the next depth's frontier."""
        game, num_actions = self.game, self.game.num_actions
        nodes = len(self.parent)
        children: list[_Entry] = []
        for state, par, act, prob, reach, last, moves in frontier:
            node = nodes
            nodes += 1
            self.parent.append(par)
            self.action.append(act)
            self.chance_prob.append(prob)
            who = checks.check_player(game, state, state.current_player())
            self.player.append(who)
            if who == TERMINAL:
                self.infoset.append(-1)
                self.terminal_nodes.append(node)
                self.terminal_utility.append(checks.check_returns(game, state, state.returns()))
                self.terminal_chance.append(reach)
                self.terminal_last.append(last)
            elif who == CHANCE:
                self.infoset.append(-1)
                for outcome, p in checks.check_chance(game, state, state.chance_outcomes()):
                    children.append(
                        (state._child(outcome), node, outcome, p, reach * p, last, moves)
                    )
            else:
                iset = self._infoset(state, who, last[who], moves[who])
                self.infoset.append(iset)
                next_moves = (*moves[:who], moves[who] + 1, *moves[who + 1 :])
                base = iset * num_actions
                for a in self.legal_of[iset]:
                    next_last = (*last[:who], base + a, *last[who + 1 :])
                    children.append((state._child(a), node, a, 1.0, reach, next_last, next_moves))
        self.level_starts.append(nodes)
        return children

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
        game = self.game
        num_infosets = len(self.keys)
        pad = num_infosets * game.num_actions

        def sequences(values: list) -> np.ndarray:
            array = np.asarray(values, dtype=np.int64)
            return np.where(array < 0, pad, array).astype(np.int32)

        tensor_size = getattr(game, "infoset_tensor_size", 0)
        tensors = (
            np.stack(self.iset_tensor).astype(np.float32)
            if self.iset_tensor
            else np.zeros((0, tensor_size), dtype=np.float32)
        )
        keys = tuple(self.keys)
        last = sequences(self.terminal_last).reshape(len(self.terminal_nodes), game.num_players)
        tree = CompiledTree(
            game_id=game.id,
            num_players=game.num_players,
            num_actions=game.num_actions,
            parent=readonly(np.asarray(self.parent, dtype=np.int32)),
            player=readonly(np.asarray(self.player, dtype=np.int8)),
            infoset=readonly(np.asarray(self.infoset, dtype=np.int32)),
            action=readonly(np.asarray(self.action, dtype=np.int32)),
            chance_prob=readonly(np.asarray(self.chance_prob, dtype=np.float64)),
            level_starts=readonly(np.asarray(self.level_starts, dtype=np.int64)),
            infoset_player=readonly(np.asarray(self.iset_player, dtype=np.int8)),
            infoset_depth=readonly(np.asarray(self.iset_depth, dtype=np.int32)),
            infoset_parent_sequence=readonly(sequences(self.iset_parent)),
            legal_mask=readonly(
                np.asarray(self.iset_mask, dtype=bool).reshape(num_infosets, game.num_actions)
            ),
            terminal_nodes=readonly(np.asarray(self.terminal_nodes, dtype=np.int32)),
            terminal_utility=readonly(
                np.asarray(self.terminal_utility, dtype=np.float64).reshape(-1, game.num_players)
            ),
            terminal_chance_reach=readonly(np.asarray(self.terminal_chance, dtype=np.float64)),
            terminal_last_sequence=readonly(np.ascontiguousarray(last.T)),
            infoset_labels=lambda: (keys, tensors),
        )
        tree.__dict__["infoset_index"] = self.index  # already built on the way
        return tree


_TREES: GameCache[CompiledTree] = GameCache(_compile)
