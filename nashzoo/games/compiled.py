"""The compiled tree: a whole game as flat numpy arrays, built by ``compile_tree``.

Nodes are stored in breadth-first order, so every node comes after its parent and the nodes of
depth ``d`` are the slice ``level_starts[d]:level_starts[d + 1]``; within one depth, nodes are in
the order of their paths (parent first, then action id). Information sets are numbered by their
first breadth-first node.

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

Arrays are read-only: a compiled tree is shared, never mutated. Every way of building one (the
State walks in ``tree`` and ``fast_walk``, the vectorised builders of the native games) gives
the same arrays for the same game, bit for bit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nashzoo.games import checks
from nashzoo.games.base import display_id

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
        """Histories in the tree: decision, chance and terminal nodes."""
        return int(self.parent.shape[0])

    @property
    def num_infosets(self) -> int:
        """Information sets of all players (the rows of a :class:`TabularPolicy`)."""
        return int(self.infoset_player.shape[0])

    @property
    def num_terminals(self) -> int:
        """Terminal histories."""
        return int(self.terminal_nodes.shape[0])

    @property
    def num_sequences(self) -> int:
        """``num_infosets * num_actions``: also the padding id that reads probability 1."""
        return self.num_infosets * self.num_actions

    def __repr__(self) -> str:
        return (
            f"<CompiledTree {display_id(self.game_id)}: {self.num_nodes:,} histories, "
            f"{self.num_infosets:,} information sets, {self.num_actions} actions>"
        )

    def infosets_of(self, player: int) -> np.ndarray:
        """Indices of ``player``'s information sets."""
        return np.flatnonzero(self.infoset_player == player)

    def index_of(self, key: str) -> int:
        """Index of the information set with this key (KeyError naming the key otherwise)."""
        try:
            return self.infoset_index[key]
        except KeyError:
            raise KeyError(f"no information set {key!r} in {display_id(self.game_id)}") from None

    # --- copies and pickles ------------------------------------------------------------------
    def __copy__(self) -> CompiledTree:
        return self  # read-only and shared: a copy would only cost memory

    def __deepcopy__(self, memo: dict[int, Any]) -> CompiledTree:
        return self  # a learner deep-copied shares its game's tree, as the original does

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (to a worker process, or back from one): the stored arrays and, once
        computed, the information-set labels, not the tables derived from them; unpickled, the
        receiving process's own tree of the game where it holds an equal one
        (:func:`nashzoo.games.tree.unpickled_tree`). Pickled whole, a learner's tree came back
        from a ``processes=2`` worker as a second copy, with its own sequence-form and
        NashConv indexes built again beside the first's."""
        from nashzoo.games.tree import pickled_tree_state, unpickled_tree  # tree imports this

        return (unpickled_tree, pickled_tree_state(self))

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
    def largest_payoff(self) -> float:
        """The largest absolute payoff of any player at any terminal (0.0 for a game that pays
        nothing): the size every payoff tolerance, table format and reward scale is read
        against."""
        return float(np.abs(self.terminal_utility).max(initial=0.0))

    @functools.cached_property
    def branching(self) -> int:
        """The width of a table indexed by action or chance-outcome id: ``num_actions`` or the
        largest outcome id plus one, whichever is more."""
        return max(self.num_actions, int(self.action.max(initial=-1)) + 1)

    @functools.cached_property
    def child_start(self) -> np.ndarray:
        """``[N + 1]`` int64: the children of node ``n`` are the nodes
        ``child_start[n]:child_start[n + 1]``, in the order the game lists its moves there
        (ascending ids in every built-in game; ``action`` says each child's id). The
        breadth-first layout keeps every node's children together, so this is one cumulative
        count: the children of any node, however wide, cost nothing per missing action (unlike
        :attr:`children`). A terminal's range is empty."""
        counts = np.bincount(self.parent[1:], minlength=self.num_nodes)
        out = np.empty(self.num_nodes + 1, dtype=np.int64)
        out[0] = 1
        np.cumsum(counts, out=out[1:])
        out[1:] += 1
        return readonly(out)

    @functools.cached_property
    def legal_rank(self) -> np.ndarray:
        """``[I, A]`` int64: each legal action's position among its decision nodes' children,
        -1 at illegal ones. Every node of an information set lists the set's legal actions in
        one order (the compile checks that), so the child of decision node ``n`` for legal
        action ``a`` is ``child_start[n] + legal_rank[infoset[n], a]``: a gather, with no
        ``[N, A]`` table. Read off the children themselves, so a game that lists its actions
        in another order than their ids still gets each action's own child."""
        kids = np.arange(1, self.num_nodes, dtype=np.int64)
        kids = kids[self.player[self.parent[1:]] >= 0]  # the children of decision nodes
        up = self.parent[kids].astype(np.int64)
        rank = np.full((self.num_infosets, self.num_actions), -1, dtype=np.int64)
        rank[self.infoset[up], self.action[kids]] = kids - self.child_start[up]
        return readonly(rank)

    def decision_children(self, nodes: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The children of decision nodes ``nodes`` for their legal actions ``actions`` (equal
        shapes; no check that the actions are legal: see :attr:`legal_rank`)."""
        return self.child_start[nodes] + self.legal_rank[self.infoset[nodes], actions]

    @functools.cached_property
    def children(self) -> np.ndarray:
        """``[N, B]`` int32 child node per action/outcome id, -1 where none.

        Dense, so it costs ``N * B`` entries, ``B`` the widest node's width: a 1000x1000
        matrix game's is 4 GB. Nothing in nashzoo builds it (its own code reads
        :attr:`child_start` and :attr:`legal_rank`); it is kept for users' scripts on small
        games."""
        out = np.full((self.num_nodes, self.branching), -1, dtype=np.int32)
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


def readonly(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only in place (compiled trees are shared)."""
    array.setflags(write=False)
    return array


def first_seen_rank(infoset: np.ndarray, num_infosets: int) -> np.ndarray:
    """Old information set id -> new id, numbering the sets in order of their first node in
    ``infoset`` (the decision nodes' sets in breadth-first order)."""
    _, first = np.unique(infoset, return_index=True)
    rank = np.empty(num_infosets, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(num_infosets)
    return rank


def renumber_sequences(values: Any, rank: np.ndarray, num_actions: int, pad: int) -> np.ndarray:
    """Sequence ids ``infoset * num_actions + action`` with the information sets renumbered by
    ``rank``; -1 (no move yet) becomes ``pad``, the empty sequence."""
    values = np.asarray(values, dtype=np.int64)
    moved = values >= 0
    out = np.full(values.shape, pad, dtype=np.int64)
    out[moved] = rank[values[moved] // num_actions] * num_actions + values[moved] % num_actions
    return out.astype(np.int32)


def given_labels(keys: tuple[str, ...], tensors: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Labels a builder already has: ``functools.partial(given_labels, keys, tensors)`` is a
    tree's ``infoset_labels`` that pickles (a lambda would not, and a tree goes to other
    processes: race workers, ``processes=2``)."""
    return keys, tensors


def replayed_keys_kept(
    keys: tuple[str, ...], game: Any, parent: np.ndarray, action: np.ndarray, positions: Any
) -> tuple[tuple[str, ...], np.ndarray]:
    """``keys`` as a walk found them and the tensors replayed (:func:`replayed_labels`)."""
    return keys, replayed_labels(game, parent, action, positions)[1]


def replayed_labels(
    game: Any, parent: np.ndarray, action: np.ndarray, positions: np.ndarray
) -> tuple[tuple[str, ...], np.ndarray]:
    """The key and tensor of the player to move at each node of ``positions`` (one per
    information set), asked of the game's own States: each history is replayed from the root
    through ``parent`` and ``action``, in path order, so histories share their common prefixes
    and only the States of one path are alive at a time."""
    paths = []
    for position in positions.tolist():
        path = []
        while position > 0:
            path.append(position)
            position = int(parent[position])
        paths.append(path[::-1])
    keys: list[str] = [""] * len(paths)
    tensors: list[np.ndarray] = [np.zeros(0)] * len(paths)
    states = [game.new_initial_state()]  # along ``along``, the root first
    along: list[int] = []
    for i in sorted(range(len(paths)), key=paths.__getitem__):
        path = paths[i]
        common = 0
        while common < min(len(along), len(path)) and along[common] == path[common]:
            common += 1
        del along[common:], states[common + 1 :]
        for position in path[common:]:
            states.append(states[-1]._child(int(action[position])))
            along.append(position)
        state = states[-1]
        who = state.current_player()
        tensor = checks.check_tensor(game, state, who, state.infoset_tensor(who))
        keys[i], tensors[i] = state.infoset_key(who), tensor
    size = getattr(game, "infoset_tensor_size", 0)
    stacked = np.stack(tensors) if tensors else np.zeros((0, size))
    return tuple(keys), stacked.astype(np.float32)
