"""Exact best responses, expected returns and NashConv on the sequence form.

Each player's realization plan is built once (top-down over its own depth); a terminal's reach
by player ``p`` is ``plan_p[last_p(z)]``. A best response is one bottom-up pass over the
responder's own depth that keeps the best action's value at each information set
(:meth:`~nashzoo.games.treemath.SequenceForm.best_backup`); see Johanson et al. (2011),
"Accelerating Best Response Calculation in Large Extensive Games", IJCAI, for why an
information set's value is the sum over its histories under perfect recall. Cost: one gather
and one ``np.bincount`` over the terminals per player, then work proportional to the infosets.

NashConv's on-policy values are backed up the same way along the players' own strategies
(:meth:`~nashzoo.games.treemath.SequenceForm.backup`, a CFR step's value), not taken as BLAS
dot products: a BLAS sum's order depends on the library, the CPU and the number of threads
(OpenBLAS splits a long dot product across its threads), a backup's does not, so NashConv is
the same float everywhere, and the compiled kernel (numba, two players: both players' values
in one call) gives it bit for bit.
"""

from __future__ import annotations

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath import _jit
from nashzoo.games.treemath.scratch import shared_scratch
from nashzoo.games.treemath.sequence import SequenceForm, flat_view, sequence_form


def _terminal_reaches(sf: SequenceForm, flat: np.ndarray, num_players: int) -> list[np.ndarray]:
    """Each player's own reach ``pi_p(z)`` of every terminal."""
    return [sf.plan(p, flat)[sf.last_sequence[p]] for p in range(num_players)]


def _others(reaches: list[np.ndarray], player: int) -> np.ndarray | float:
    out: np.ndarray | float = 1.0
    for p, reach in enumerate(reaches):
        if p != player:
            out = out * reach
    return out


def best_response(
    tree: CompiledTree, strategy: np.ndarray, player: int
) -> tuple[float, np.ndarray]:
    """Exact best response of ``player`` to the other players' parts of ``strategy``.

    Returns:
        ``(value, br)``: the best-response value for ``player`` and a pure strategy array that
        holds the best response on ``player``'s infosets (ties: the lowest action id) and
        ``strategy`` everywhere else.
    """
    sf = sequence_form(tree)
    flat = np.ascontiguousarray(strategy, dtype=np.float64).reshape(-1)
    reaches = _terminal_reaches(sf, flat, tree.num_players)
    weight = sf.terminal_weight[player] * _others(reaches, player)
    value, choices = sf.best_backup(player, weight)
    br = np.array(strategy, dtype=np.float64, copy=True)
    br[tree.infoset_player == player] = 0.0
    for first, choice in choices:
        br.reshape(-1)[first + choice] = 1.0
    return value, br


SHARED_SCRATCH_FROM = 1 << 20
"""Sequences from which NashConv's compiled kernel uses the tree's shared scratch rows
(:mod:`~nashzoo.games.treemath.scratch`) for three of its five: 1.1 GB less at each
evaluation of rung 5; below, rows of its own, which cost a small tree's NashConv less."""


def expected_returns(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """Exact expected return of every player when all play ``strategy``: the on-policy values
    of :func:`nash_conv`, the same floats (each player's terminal weights backed up along its
    own strategy, in a fixed order)."""
    sf = sequence_form(tree)
    flat = flat_view(strategy)
    reaches = _terminal_reaches(sf, flat, tree.num_players)
    return np.array(
        [
            sf.backup(p, sf.terminal_weight[p] * _others(reaches, p), flat)[-1]
            for p in range(tree.num_players)
        ]
    )


def nash_conv(tree: CompiledTree, strategy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(nash_conv, best_response_values, on_policy_values)`` of a joint strategy.

    The players' plans are built once and shared by the on-policy values and every best
    response; on a two-player tree with numba, both players' values are one compiled call.
    """
    conv, best, on_policy = _values(tree, strategy)
    return conv, np.array(best), np.array(on_policy)


def nash_conv_value(tree: CompiledTree, strategy: np.ndarray) -> float:
    """NashConv alone: :func:`nash_conv`'s first result, without its per-player arrays (on a
    small tree, building them costs a sizeable part of the whole evaluation)."""
    return _values(tree, strategy)[0]


def _values(
    tree: CompiledTree, strategy: np.ndarray
) -> tuple[float, tuple[float, ...], tuple[float, ...]]:
    """NashConv, the best-response values and the on-policy values, as floats.

    Both values of a player come from its terminal weights ``pi_c u_p pi_{-p}`` summed into its
    last sequences and backed up its own depths: along its strategy (the on-policy value, as
    a CFR step's) and along its best actions. Every sum has a fixed order, so the numbers do
    not depend on the BLAS library or its threads, and the compiled path (one kernel on a
    two-player tree) gives the same floats.
    """
    sf = sequence_form(tree)
    flat = flat_view(strategy)
    if _jit.ENABLED and tree.num_players == 2:
        index, weights = sf.nash_conv_arguments
        if flat.shape[0] < SHARED_SCRATCH_FROM:
            br0, br1, on0, on1 = _jit.two_player_values(index, weights, flat)
        else:  # three of the kernel's five rows: a trainer's learners', free between steps
            scratch = shared_scratch(tree)
            rows, infoset_values = scratch.take()
            try:
                more = np.empty((2, rows.shape[1]))
                br0, br1, on0, on1 = _jit.two_player_values_into(index, weights, flat, rows, more)
            finally:
                scratch.give_back((rows, infoset_values))
        return (br0 - on0) + (br1 - on1), (br0, br1), (on0, on1)
    reaches = _terminal_reaches(sf, flat, tree.num_players)
    on_policy = np.empty(tree.num_players)
    br_values = np.empty(tree.num_players)
    for p in range(tree.num_players):
        weight = sf.terminal_weight[p] * _others(reaches, p)
        on_policy[p] = sf.backup(p, weight, flat)[-1]
        br_values[p] = sf.best_backup(p, weight)[0]
    conv = float(np.sum(br_values - on_policy))
    return conv, tuple(br_values.tolist()), tuple(on_policy.tolist())
