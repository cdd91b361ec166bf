"""Sequence form: realization plans and the fused counterfactual pass of the full-width learners.

A player's *realization plan* ``x`` holds, for every sequence ``(I, a)`` of that player, the
product of the player's own probabilities on the way to and including ``a`` at ``I``:
``x[I, a] = pi_i(I) * sigma(I, a)``. It is built top-down over the player's own depth (perfect
recall: ``x[I, a] = x[parent(I)] * sigma(I, a)``, where ``parent(I)`` is the player's previous
sequence). Counterfactual values are then one gather over the terminals (the other players'
plans at their last sequence before each terminal, times chance and payoff, summed into the
player's last sequence) and a bottom-up pass over the player's own depth
(``q[parent(I)] += sum_a sigma(I, a) q[I, a]``). Each depth is a handful of 1-D takes and one
small ``np.bincount``: far fewer, smaller operations than the per-terminal products of
:func:`nashzoo.games.treemath.counterfactual_values`, which stays as the reference the fast pass
is tested against.

Flat sequence ids are ``infoset * num_actions + action``; ``tree.num_sequences`` stands for the
empty sequence (the root), whose realization probability is always 1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nashzoo.games import heap
from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath import _jit
from nashzoo.games.treemath._cache import frozen, per_tree, read_only_view
from nashzoo.games.treemath.matching import row_sums

TIE_TOLERANCE = 1e-12
"""Action values of a best response within this much of the best, times the tree's payoff
scale (its largest absolute payoff), count as tied; ties go to the lowest action id. Relative
to the game's payoffs: an absolute floor made every action tie in a game whose payoffs are
below about 1e-12, and a tolerance relative to the best value alone split rounding-level
differences of values near zero in a game of large payoffs."""


@dataclass(frozen=True, eq=False)
class OwnDepth:
    """The legal sequences of one player at one own depth, and the sequences leading to them."""

    sequences: np.ndarray  # [S_d] flat ids ``infoset * A + action`` of the legal sequences
    parents: np.ndarray  # [S_d] flat id of the sequence leading to each one's infoset
    parent_ids: np.ndarray  # [U_d] distinct values of ``parents``
    parent_slot: np.ndarray  # [S_d] position of each ``parents`` entry in ``parent_ids``
    grid: np.ndarray  # [I_d, A] flat ids of every (infoset, action) at this depth, legal or not
    illegal: np.ndarray  # [I_d, A] bool: the action is illegal there
    infoset_slot: np.ndarray  # [I_d] position of each infoset's parent in ``parent_ids``


@dataclass(frozen=True, eq=False)
class SequenceForm:
    """Index arrays of a tree's sequence form (built once per tree by :func:`sequence_form`)
    and the two passes over them every sequence-form kernel is made of.

    What each path needs is built on its first use and then kept: the compiled kernels' packed
    indexes (:meth:`kernel_arguments`, :attr:`nash_conv_arguments`), or the numpy passes'
    per-depth arrays (:attr:`depths`) and terminal weights (:attr:`terminal_weight`). A learner
    on the compiled path never holds the numpy path's arrays (on Liar's dice about a third of
    the memory the tree and a learner hold)."""

    num_sequences: int
    num_actions: int
    parent_sequence: np.ndarray  # [I] sequence of the owner leading to each information set
    last_sequence: tuple[np.ndarray, ...]  # per player [Z]: last own sequence before terminal z
    payoff_scale: float  # the largest absolute payoff of any player at any terminal
    tree: _TreeArrays  # the tree's own (read-only) arrays the lazily built parts derive from

    @functools.cached_property
    def depths(self) -> tuple[tuple[OwnDepth, ...], ...]:
        """Per player, its own depths 0, 1, ...: the numpy passes' index."""
        return tuple(tuple(self._own_depths(p)) for p in range(len(self.last_sequence)))

    @functools.cached_property
    def terminal_weight(self) -> np.ndarray:
        """``[P, Z]`` chance reach times each player's payoff."""
        tree = self.tree
        return frozen(tree.terminal_chance_reach[None, :] * tree.terminal_utility.T)

    def _own_infosets(self, player: int) -> tuple[np.ndarray, np.ndarray]:
        """``player``'s information sets in own-depth order (ids ascending within a depth),
        and the number at each own depth."""
        tree = self.tree
        mine = np.flatnonzero(tree.infoset_player == player)
        depth = tree.infoset_depth[mine]
        infosets = mine[np.argsort(depth, kind="stable")]
        counts = np.bincount(depth, minlength=int(depth.max(initial=-1)) + 1)
        return infosets, counts

    def _own_depths(self, player: int) -> list[OwnDepth]:
        infosets, counts = self._own_infosets(player)
        out = []
        for rows in np.split(infosets, np.cumsum(counts)[:-1]) if counts.size else []:
            legal = self.tree.legal_mask[rows]
            grid = rows[:, None] * self.num_actions + np.arange(self.num_actions)
            parents = np.broadcast_to(self.parent_sequence[rows][:, None], grid.shape)[legal]
            parent_ids, parent_slot = np.unique(parents, return_inverse=True)
            out.append(
                OwnDepth(
                    sequences=frozen(grid[legal]),
                    parents=frozen(parents),
                    parent_ids=frozen(parent_ids),
                    parent_slot=frozen(parent_slot.reshape(-1)),
                    grid=frozen(grid),
                    illegal=frozen(~legal),
                    infoset_slot=frozen(np.searchsorted(parent_ids, self.parent_sequence[rows])),
                )
            )
        return out

    def _ordered(self, player: int) -> tuple[np.ndarray, ...]:
        """For the compiled kernels' single loop: ``player``'s legal sequences in own-depth
        order (as the concatenated :attr:`depths` hold them), their parents, the depths'
        offsets into them; the information sets in own-depth order and the depths' offsets."""
        infosets, counts = self._own_infosets(player)
        legal = self.tree.legal_mask[infosets]
        grid = infosets[:, None] * self.num_actions + np.arange(self.num_actions)
        parents = np.broadcast_to(self.parent_sequence[infosets][:, None], grid.shape)[legal]
        depth = np.broadcast_to(self.tree.infoset_depth[infosets][:, None], grid.shape)[legal]
        return (
            grid[legal],
            parents,
            np.cumsum(np.concatenate([[0], np.bincount(depth, minlength=counts.size)])),
            infosets,
            np.cumsum(np.concatenate([[0], counts])),
        )

    def kernel_arguments(self, player: int) -> tuple[np.ndarray, np.ndarray]:
        """The static leading arguments of ``player``'s compiled two-player pass: the packed
        index (own sequences and parents, own depth offsets, the other player's sequences and
        parents, the last own and other sequence of every terminal) and the player's terminal
        weights. Built on first use per player (a learner of one seat never builds the
        other's) and then kept.

        The terminals come in the order of the player's last sequence, a stable sort of the
        tree's: the pass adds each terminal into its last sequence's entry of ``q``, which
        this makes a walk from front to back instead of jumps across the whole vector (on a
        tree of tens of millions of sequences, most of the pass's time went to those jumps).
        Each entry still gets its terminals in the tree's order, so every sum, and every
        number the kernels give, is the same as in the tree's order."""
        built = self.__dict__.setdefault("_kernel_arguments", {})
        if player not in built:
            built[player] = self._built_kernel_arguments(player)
            # The sorts' and the packing's temporaries, gone now, back to the system.
            heap.give_back_after_build(built[player][1].size)
        return built[player]

    def _built_kernel_arguments(self, player: int) -> tuple[np.ndarray, np.ndarray]:
        own_last, other_last, weight = self._terminals_in_order(player)
        index = _jit.pack(
            *self._ordered(player)[:3], *self._ordered(1 - player)[:2], own_last, other_last
        )
        return frozen(index), frozen(weight)

    def _terminals_in_order(self, player: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``player``'s and the other player's last sequence before every terminal and
        ``player``'s terminal weights, the terminals stably sorted by ``player``'s last
        sequence (the order every compiled terminal sum takes, see :meth:`kernel_arguments`)."""
        order = np.argsort(self.last_sequence[player], kind="stable")
        if "terminal_weight" in self.__dict__:
            weight = self.terminal_weight[player]
        else:  # the same products, without keeping every player's row
            weight = self.tree.terminal_chance_reach * self.tree.terminal_utility[:, player]
        return (
            self.last_sequence[player][order],
            self.last_sequence[1 - player][order],
            weight[order],
        )

    @functools.cached_property
    def nash_conv_arguments(self) -> tuple[np.ndarray, np.ndarray]:
        """The leading arguments of the compiled two-player NashConv
        (``_jit.two_player_values``): a packed index and the terminal weights, both with each
        player's terminals in the order of its last sequence (a stable sort, as in
        :meth:`kernel_arguments`: each sum keeps its order, so the numbers are the numpy
        path's). The index holds, per player, the sequences in own-depth order, their parents,
        the depths' offsets, the player's and the other player's last sequence before every
        terminal (in the player's order), the information sets in own-depth order and the
        depths' offsets; then every information set's parent sequence and the legal mask
        (0/1). The weights are ``[2, Z]``, row ``p`` in player ``p``'s order."""
        built = self._built_nash_conv_arguments()
        heap.give_back_after_build(built[1].shape[1])  # the build's temporaries, gone now
        return built

    def _built_nash_conv_arguments(self) -> tuple[np.ndarray, np.ndarray]:
        arrays, weights = [], []
        legal = np.zeros(self.num_sequences, dtype=np.int64)
        for p in range(2):
            sequences, parents, offsets, infosets, infoset_offsets = self._ordered(p)
            own_last, other_last, weight = self._terminals_in_order(p)
            arrays += [sequences, parents, offsets, own_last, other_last, infosets, infoset_offsets]
            weights.append(weight)
            legal[sequences] = 1
        return frozen(_jit.pack(*arrays, self.parent_sequence, legal)), frozen(np.stack(weights))

    def plan(self, player: int, flat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``player``'s realization plan of the flat strategy ``flat`` (``[num_sequences]``),
        as a ``[num_sequences + 1]`` vector ending in the empty sequence's 1. Written into
        ``out`` when given (its other players' entries are left as they are)."""
        if out is None:
            out = np.zeros(self.num_sequences + 1)
        out[-1] = 1.0
        for depth in self.depths[player]:
            out[depth.sequences] = out[depth.parents] * flat[depth.sequences]
        return out

    def backup(self, player: int, terminal_weight: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """``q[I, a] = sum_z terminal_weight[z] * pi_player(Ia -> z)`` over the terminals below
        each of ``player``'s sequences, as a ``[num_sequences + 1]`` vector whose last entry is
        the root's value ``sum_z terminal_weight[z] * pi_player(z)``: each terminal's weight
        lands on the player's last sequence before it, then values climb the own depths
        (``q[parent(I)] += sum_a sigma(I, a) q[I, a]``)."""
        q = np.bincount(
            self.last_sequence[player], weights=terminal_weight, minlength=self.num_sequences + 1
        )
        for depth in reversed(self.depths[player]):
            seqs = depth.sequences
            q[depth.parent_ids] += np.bincount(
                depth.parent_slot, weights=flat[seqs] * q[seqs], minlength=depth.parent_ids.size
            )
        return q

    def best_backup(
        self, player: int, terminal_weight: np.ndarray
    ) -> tuple[float, list[tuple[np.ndarray, np.ndarray]]]:
        """Best response of ``player`` to the play folded into ``terminal_weight``
        (``pi_{-player}(z) pi_c(z) u_player(z)``): from the deepest own depth up, each
        information set picks its best legal action (ties within :data:`TIE_TOLERANCE` times
        the payoff scale: the lowest id) and passes that
        action's value to the sequence leading to it. Perfect recall makes every information
        set sit at one own depth, so one pass suffices. Returns the value and, per own depth
        (deepest first), the information sets' flat id rows ``grid[:, 0]`` and their choices.
        """
        q = np.bincount(
            self.last_sequence[player], weights=terminal_weight, minlength=self.num_sequences + 1
        )
        choices = []
        # Every value is a sum of payoffs times probabilities, so it is at most the payoff
        # scale in size, and so is its rounding error relative to that scale.
        tolerance = TIE_TOLERANCE * self.payoff_scale
        for depth in reversed(self.depths[player]):
            values = np.where(depth.illegal, -np.inf, q[depth.grid])
            best = values.max(axis=1)
            # Ties within rounding go to the lowest action id, whatever the summation order.
            tied = values >= (best - tolerance)[:, None]
            choice = tied.argmax(axis=1)
            q[depth.parent_ids] += np.bincount(
                depth.infoset_slot, weights=best, minlength=depth.parent_ids.size
            )
            choices.append((depth.grid[:, 0], choice))
        return float(q[-1]), choices


def sequence_form(tree: CompiledTree) -> SequenceForm:
    """The tree's :class:`SequenceForm` (built once per tree, then cached)."""
    return per_tree(tree, "sequence_form", _build_sequence_form)


def _build_sequence_form(tree: CompiledTree) -> SequenceForm:
    return SequenceForm(
        num_sequences=tree.num_sequences,
        num_actions=tree.num_actions,
        parent_sequence=frozen(tree.infoset_parent_sequence.astype(np.int64)),
        last_sequence=tuple(frozen(row) for row in tree.terminal_last_sequence),  # the tree's
        payoff_scale=tree.largest_payoff,
        tree=_TreeArrays(
            tree.infoset_player,
            tree.infoset_depth,
            tree.legal_mask,
            tree.terminal_chance_reach,
            tree.terminal_utility,
        ),
    )


class _TreeArrays(NamedTuple):
    """The arrays of a tree its sequence form builds its parts from on demand (the tree's own
    read-only arrays, not copies; not the tree itself, which the per-tree cache must not keep
    alive)."""

    infoset_player: np.ndarray
    infoset_depth: np.ndarray
    legal_mask: np.ndarray
    terminal_chance_reach: np.ndarray
    terminal_utility: np.ndarray


def realization_plan(tree: CompiledTree, strategy: np.ndarray, player: int) -> np.ndarray:
    """``player``'s realization plan of ``strategy`` as a ``[num_infosets, num_actions]`` array.

    ``plan[I, a] = pi_player(I) * strategy[I, a]`` on ``player``'s information sets, zero
    elsewhere. Mixing plans (not behaviour strategies) is what makes averages of strategies
    exact; :func:`nashzoo.games.treemath.behaviour_strategy` turns a plan back into action
    probabilities.
    """
    flat = np.ascontiguousarray(strategy, dtype=np.float64).reshape(-1)
    out = sequence_form(tree).plan(player, flat)
    return out[:-1].reshape(tree.num_infosets, tree.num_actions)


class CounterfactualPass(NamedTuple):
    """What one full-width CFR update of one player needs, from :func:`counterfactual_pass`.

    Attributes:
        q: ``[I, A]`` counterfactual action values of the player's infosets (zero elsewhere);
            identical to ``counterfactual_values(...)[0]``.
        values: ``[I]`` counterfactual value of each infoset, ``sum_a sigma(I, a) q[I, a]``
            (zero outside the player's infosets), what the instantaneous regret subtracts.
        plan: ``[I, A]`` the player's realization plan ``pi_i(I) sigma(I, a)`` (zero elsewhere):
            the weight of ``sigma(I, a)`` in the average strategy.
        value: the player's expected return under ``strategy``.
    """

    q: np.ndarray
    values: np.ndarray
    plan: np.ndarray
    value: float


def counterfactual_pass(
    tree: CompiledTree,
    strategy: np.ndarray,
    player: int,
    *,
    others: np.ndarray | None = None,
) -> CounterfactualPass:
    """Counterfactual values, infoset values, own realization plan and expected return of
    ``player`` under the joint ``strategy``, in one fused sequence-form pass.

    ``others``, when given, is read for the other players' rows instead of ``strategy`` (a
    learner passes its own table and the opponent's without building a joint one). Same
    numbers as :func:`nashzoo.games.treemath.counterfactual_values` (which it is tested
    against) at a fraction of the cost: the other players' plans are built top-down, gathered
    once per terminal, and the player's values are pushed bottom-up through its own depth.
    """
    sf = sequence_form(tree)
    flat = flat_view(strategy)
    other_flat = flat if others is None else flat_view(others)
    shape = (tree.num_infosets, tree.num_actions)
    if _jit.ENABLED and tree.num_players == 2:
        q, plan = np.empty(sf.num_sequences + 1), np.empty(sf.num_sequences + 1)
        values = np.empty(tree.num_infosets)
        index, weight = sf.kernel_arguments(player)
        work = np.empty((2, sf.num_sequences + 1))
        _jit.two_player_pass(  # read-only tables: the kernel version warm_up loads
            index,
            weight,
            sf.num_actions,
            read_only_view(flat),
            read_only_view(other_flat),
            q,
            plan,
            values,
            work,
            True,
        )
        return CounterfactualPass(q[:-1].reshape(shape), values, plan[:-1].reshape(shape), q[-1])
    weight = sf.terminal_weight[player]
    plan = np.zeros(sf.num_sequences + 1)
    for other in range(tree.num_players):
        if other != player:
            weight = weight * sf.plan(other, other_flat, plan)[sf.last_sequence[other]]
    q = sf.backup(player, weight, flat)
    plan[:] = 0.0
    sf.plan(player, flat, plan)
    q_rows = q[:-1].reshape(shape)
    values = row_sums(flat.reshape(shape) * q_rows)  # actions in order, as the compiled path
    return CounterfactualPass(q_rows, values, plan[:-1].reshape(shape), float(q[-1]))


def flat_view(table: np.ndarray) -> np.ndarray:
    """A strategy table as a flat float64 vector (a view when it already is one)."""
    if table.dtype == _FLOAT64 and table.flags.c_contiguous:
        return table.ravel()  # a view of a C-contiguous table, faster than reshape
    return np.ascontiguousarray(table, dtype=np.float64).ravel()


_FLOAT64 = np.dtype(np.float64)


def node_paths(tree: CompiledTree) -> tuple[np.ndarray, np.ndarray]:
    """``(chance_reach, last_sequence)`` of every node: the product of the chance probabilities
    on its path (``[N]``) and, per player, the player's last sequence before it (``[P, N]``;
    ``num_sequences`` where the player has not moved yet). Built level by level, parents first;
    cached per tree."""
    return per_tree(tree, "node_paths", _build_node_paths)


def _build_node_paths(tree: CompiledTree) -> tuple[np.ndarray, np.ndarray]:
    chance_reach = np.ones(tree.num_nodes)
    last = np.full((tree.num_players, tree.num_nodes), tree.num_sequences, dtype=np.int64)
    parent = tree.parent.astype(np.int64)
    infoset = tree.infoset.astype(np.int64)
    starts = tree.level_starts
    for d in range(1, len(starts) - 1):
        nodes = np.arange(starts[d], starts[d + 1])
        par = parent[nodes]
        chance_reach[nodes] = chance_reach[par] * tree.chance_prob[nodes]
        mover = tree.player[par]
        moved_seq = infoset[par] * tree.num_actions + tree.action[nodes]
        for p in range(tree.num_players):
            last[p, nodes] = np.where(mover == p, moved_seq, last[p, par])
    return frozen(chance_reach), frozen(last)
