"""Per-terminal kernels: reach, expected returns, counterfactual values, best responses.

Every function is a few gathers, cumulative products and ``np.bincount`` calls over the
``[num_terminals, max_moves]`` sequence matrices of the tree (``tree.terminal_sequences``); none
makes a Python call per history.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def expected_returns(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """Exact expected return of every player when all play ``strategy``."""
    reach = tree.terminal_chance_reach * terminal_reach(tree, strategy).prod(axis=0)
    return reach @ tree.terminal_utility


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


def best_response(
    tree: CompiledTree, strategy: np.ndarray, player: int
) -> tuple[float, np.ndarray]:
    """Exact best response of ``player`` to the other players' parts of ``strategy``.

    Works from ``player``'s deepest information sets up: at each depth the action values are
    accumulated with the choices already fixed below, then the best legal action is picked
    (ties: the lowest action id). Perfect recall makes every infoset sit at one depth.

    Returns:
        ``(value, br)``: the best-response value for ``player`` and a pure strategy array that
        holds the best response on ``player``'s infosets and ``strategy`` everywhere else.
    """
    return _best_response(tree, strategy, terminal_reach(tree, strategy), player)


@dataclass(frozen=True, eq=False)
class _ResponderIndex:
    """Per-player index arrays of :func:`best_response`, built once per tree."""

    rows: np.ndarray  # [I_p] the player's information sets
    columns: tuple[np.ndarray, ...]  # per path position k: contiguous ``seqs[:, k]``
    depths: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    # per k: (infosets at own depth k, their illegal masks, their flat ids ``infoset * A``)


def _responder_index(tree: CompiledTree, player: int) -> _ResponderIndex:
    indexes = per_tree(
        tree,
        "responder_index",
        lambda t: tuple(_build_responder_index(t, p) for p in range(t.num_players)),
    )
    return indexes[player]


def _build_responder_index(tree: CompiledTree, player: int) -> _ResponderIndex:
    seqs = tree.terminal_sequences[player]
    mine = tree.infoset_player == player
    depths = []
    for k in range(seqs.shape[1]):
        at_depth = np.flatnonzero(mine & (tree.infoset_depth == k))
        depths.append(
            (
                frozen(at_depth),
                frozen(~tree.legal_mask[at_depth]),
                frozen(at_depth * tree.num_actions),
            )
        )
    return _ResponderIndex(
        rows=frozen(np.flatnonzero(mine)),
        columns=tuple(frozen(seqs[:, k]) for k in range(seqs.shape[1])),
        depths=tuple(depths),
    )


def _best_response(
    tree: CompiledTree, strategy: np.ndarray, reach: np.ndarray, player: int
) -> tuple[float, np.ndarray]:
    """:func:`best_response` given ``terminal_reach(tree, strategy)``.

    ``suffix[z]`` is the product of the best-response choices already fixed below depth ``k``
    on the way to ``z``; choices are 0 or 1, so it is exact and is updated with one gather per
    depth instead of being recomputed from the whole path.
    """
    index = _responder_index(tree, player)
    weight = _others_reach(tree, reach, player) * tree.terminal_utility[:, player]
    br = np.array(strategy, dtype=np.float64, copy=True)
    br[index.rows] = 0.0
    flat = _flat(tree, br)
    n_seq = tree.num_sequences
    suffix = np.ones(tree.num_terminals)
    for k in range(len(index.columns) - 1, -1, -1):
        column = index.columns[k]
        at_depth, illegal, base = index.depths[k]
        q = np.bincount(column, weights=weight * suffix, minlength=n_seq + 1)[:n_seq]
        if at_depth.size:
            values = np.where(illegal, -np.inf, q.reshape(tree.num_infosets, -1)[at_depth])
            choice = np.argmax(values, axis=1)
            br[at_depth, choice] = 1.0
            flat[base + choice] = 1.0
        suffix = suffix * flat[column]
    return float(weight @ suffix), br


def nash_conv(tree: CompiledTree, strategy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(nash_conv, best_response_values, on_policy_values)`` of a joint strategy.

    The players' reach probabilities are computed once and shared by the on-policy values and
    every best response.
    """
    reach = terminal_reach(tree, strategy)
    on_policy = (tree.terminal_chance_reach * reach.prod(axis=0)) @ tree.terminal_utility
    br_values = np.array(
        [_best_response(tree, strategy, reach, p)[0] for p in range(tree.num_players)]
    )
    return float(np.sum(br_values - on_policy)), br_values, on_policy
