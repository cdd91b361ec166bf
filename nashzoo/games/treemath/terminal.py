"""Per-terminal reference kernels: each player's reach of every terminal, and counterfactual
values computed from whole terminal paths.

They are a few gathers, cumulative products and ``np.bincount`` calls over the
``[num_terminals, max_moves]`` sequence matrices of the tree (``tree.terminal_sequences``), written
straight from the definitions; the sequence-form kernels the learners and the evaluator run are
tested against them.
"""

from __future__ import annotations

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath._cache import frozen, per_tree


def _flat(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """Strategy as a flat vector with a trailing 1.0 at the padding index."""
    flat = np.empty(tree.num_sequences + 1)
    flat[:-1] = strategy.reshape(-1)
    flat[-1] = 1.0
    return flat


def _reach_from_flat(tree: CompiledTree, flat: np.ndarray) -> np.ndarray:
    """``terminal_reach`` from a flat strategy. The gather is laid out ``[moves, terminals]`` and
    the moves multiplied column by column, in path order: the same products, bit for bit, as a
    row-wise ``prod(axis=1)``, several times faster (numpy reduces short rows slowly)."""
    out = np.empty((tree.num_players, tree.num_terminals))
    for p, seqs in enumerate(tree.terminal_sequences):
        probs = flat[seqs.T]
        row = out[p]
        row[:] = probs[0]
        for k in range(1, probs.shape[0]):
            row *= probs[k]
    return out


def terminal_reach(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """``[num_players, num_terminals]``: each player's own reach ``pi_p(z)``."""
    return _reach_from_flat(tree, _flat(tree, strategy))


def _others_reach(tree: CompiledTree, reach: np.ndarray, player: int) -> np.ndarray:
    """``pi_c(z) * prod_{q != player} pi_q(z)`` for every terminal."""
    if reach.shape[0] == 2:  # the common case, without np.delete's copy
        return tree.terminal_chance_reach * reach[1 - player]
    others = np.delete(reach, player, axis=0).prod(axis=0)
    return tree.terminal_chance_reach * others


def _exclusive_suffix(probs: np.ndarray) -> np.ndarray:
    """``out[z, k] = prod_{j > k} probs[z, j]`` (zero-safe: no division)."""
    out = np.ones_like(probs)
    if probs.shape[1] > 1:
        out[:, :-1] = np.cumprod(probs[:, :0:-1], axis=1)[:, ::-1]
    return out


def _exclusive_prefix(probs: np.ndarray) -> np.ndarray:
    """``out[z, k] = prod_{j < k} probs[z, j]``."""
    out = np.ones_like(probs)
    if probs.shape[1] > 1:
        out[:, 1:] = np.cumprod(probs[:, :-1], axis=1)
    return out


def counterfactual_values(
    tree: CompiledTree, strategy: np.ndarray, player: int
) -> tuple[np.ndarray, np.ndarray]:
    """Counterfactual action values and own reach of ``player``'s information sets.

    Returns:
        ``(q, reach)``: ``q[I, a]`` is the counterfactual value of taking ``a`` at ``I``
        (Zinkevich et al. 2007: sum over terminals below ``I.a`` of
        ``pi_{-i}(z) u_i(z) pi_i(I.a -> z)``), zero for other players' infosets;
        ``reach[I]`` is ``pi_i(I)``, player ``i``'s own probability of reaching ``I``
        (what the average strategy is weighted by).
    """
    flat = _flat(tree, strategy)
    reach = terminal_reach(tree, strategy)
    seqs = tree.terminal_sequences[player]
    probs = flat[seqs]
    weight = _others_reach(tree, reach, player) * tree.terminal_utility[:, player]
    contrib = weight[:, None] * _exclusive_suffix(probs)
    n_seq = tree.num_sequences
    q = np.bincount(seqs.ravel(), weights=contrib.ravel(), minlength=n_seq + 1)[:n_seq]
    own = np.zeros(tree.num_infosets + 1)
    own[seqs.ravel() // tree.num_actions] = _exclusive_prefix(probs).ravel()
    return q.reshape(tree.num_infosets, tree.num_actions), own[:-1]


def terminal_spans(tree: CompiledTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, first, after)``: the terminals (positions in ``tree.terminal_nodes``) in
    depth-first order, children visited in their stored order (ascending action id in every
    built-in game), and for every node the half-open range ``[first, after)`` of that order
    holding the terminals below it (a terminal's range is itself). Sums over the terminals
    below every node are then two gathers of one cumulative sum. Computed a depth at a time
    (terminal counts bottom-up, offsets top-down); cached per tree."""
    return per_tree(tree, "terminal_spans", _build_terminal_spans)


def _build_terminal_spans(tree: CompiledTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts = tree.level_starts
    child_start = tree.child_start
    parent = tree.parent.astype(np.int64)
    below = np.zeros(tree.num_nodes, dtype=np.int64)
    below[tree.terminal_nodes] = 1
    for d in range(len(starts) - 3, -1, -1):  # the deepest parents first
        lo, hi = starts[d + 1], starts[d + 2]  # their children: the next depth
        sums = np.concatenate(([0], np.cumsum(below[lo:hi])))
        kids = child_start[starts[d] : starts[d + 1] + 1] - lo
        below[starts[d] : starts[d + 1]] += sums[kids[1:]] - sums[kids[:-1]]
    first = np.zeros(tree.num_nodes, dtype=np.int64)
    for d in range(1, len(starts) - 1):  # a depth's first offsets from its parents'
        lo, hi = starts[d], starts[d + 1]
        before = np.cumsum(below[lo:hi]) - below[lo:hi]  # the depth's earlier nodes' terminals
        up = parent[lo:hi]
        first[lo:hi] = first[up] + before - before[child_start[up] - lo]
    order = np.empty(tree.num_terminals, dtype=np.int64)
    order[first[tree.terminal_nodes]] = np.arange(tree.num_terminals)
    return frozen(order), frozen(first), frozen(first + below)
