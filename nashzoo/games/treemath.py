"""Vectorised sequence-form arithmetic over a :class:`~nashzoo.games.tree.CompiledTree`.

A *strategy* here is a ``[num_infosets, num_actions]`` float array of action probabilities for
every information set of every player (zeros on illegal actions). Every function is a few
gathers, cumulative products and ``np.bincount`` calls over the ``[num_terminals, max_moves]``
sequence matrices of the tree; none makes a Python call per history. These kernels are shared by
the exact evaluator (``nashzoo.eval``) and the full-width learners (``nashzoo.agents``), so a
best response or a counterfactual value is computed in exactly one place.

Notation: for a terminal ``z``, ``pi_p(z)`` is the product of player ``p``'s action probabilities on
the path to ``z``, ``pi_c(z)`` the chance probability, ``u_p(z)`` the payoff.
"""

from __future__ import annotations

import numpy as np

from nashzoo.games.tree import CompiledTree


def _flat(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """Strategy as a flat vector with a trailing 1.0 at the padding index."""
    flat = np.empty(tree.num_sequences + 1)
    flat[:-1] = strategy.reshape(-1)
    flat[-1] = 1.0
    return flat


def terminal_reach(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """``[num_players, num_terminals]``: each player's own reach ``pi_p(z)``."""
    flat = _flat(tree, strategy)
    return np.stack([flat[seqs].prod(axis=1) for seqs in tree.terminal_sequences])


def expected_returns(tree: CompiledTree, strategy: np.ndarray) -> np.ndarray:
    """Exact expected return of every player when all play ``strategy``."""
    reach = tree.terminal_chance_reach * terminal_reach(tree, strategy).prod(axis=0)
    return reach @ tree.terminal_utility


def _others_reach(tree: CompiledTree, reach: np.ndarray, player: int) -> np.ndarray:
    """``pi_c(z) * prod_{q != player} pi_q(z)`` for every terminal."""
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
    seqs = tree.terminal_sequences[player]
    reach = terminal_reach(tree, strategy)
    weight = _others_reach(tree, reach, player) * tree.terminal_utility[:, player]
    mine = tree.infoset_player == player
    br = np.array(strategy, dtype=np.float64, copy=True)
    br[mine] = 0.0
    num_actions, n_seq = tree.num_actions, tree.num_sequences
    illegal = ~tree.legal_mask
    for k in range(seqs.shape[1] - 1, -1, -1):
        flat = _flat(tree, br)
        suffix = flat[seqs[:, k + 1 :]].prod(axis=1)
        q = np.bincount(seqs[:, k], weights=weight * suffix, minlength=n_seq + 1)[:n_seq]
        q = q.reshape(tree.num_infosets, num_actions)
        at_depth = np.flatnonzero(mine & (tree.infoset_depth == k))
        if at_depth.size:
            values = np.where(illegal[at_depth], -np.inf, q[at_depth])
            br[at_depth, np.argmax(values, axis=1)] = 1.0
    flat = _flat(tree, br)
    value = float(weight @ flat[seqs].prod(axis=1))
    return value, br


def nash_conv(tree: CompiledTree, strategy: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(nash_conv, best_response_values, on_policy_values)`` of a joint strategy."""
    on_policy = expected_returns(tree, strategy)
    br_values = np.array([best_response(tree, strategy, p)[0] for p in range(tree.num_players)])
    return float(np.sum(br_values - on_policy)), br_values, on_policy


def regret_matching(regrets: np.ndarray, legal_mask: np.ndarray) -> np.ndarray:
    """Regret matching (Hart & Mas-Colell 2000), the ONE implementation every learner uses.

    Each row becomes proportional to its positive regrets over legal actions; rows without
    positive regret become uniform over legal actions. Works on ``[..., num_actions]`` arrays.
    """
    positive = np.where(legal_mask, np.maximum(regrets, 0.0), 0.0)
    total = positive.sum(axis=-1, keepdims=True)
    uniform = legal_mask / np.maximum(legal_mask.sum(axis=-1, keepdims=True), 1)
    return np.where(total > 0.0, positive / np.where(total > 0.0, total, 1.0), uniform)


def uniform_strategy(tree: CompiledTree) -> np.ndarray:
    """Uniform over legal actions at every information set."""
    mask = tree.legal_mask.astype(np.float64)
    return mask / mask.sum(axis=1, keepdims=True)
