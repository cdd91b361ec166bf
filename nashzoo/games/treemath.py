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

import threading
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nashzoo.games.tree import CompiledTree


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


_BR_CACHE: weakref.WeakKeyDictionary[CompiledTree, tuple[_ResponderIndex, ...]] = (
    weakref.WeakKeyDictionary()
)


def _responder_index(tree: CompiledTree, player: int) -> _ResponderIndex:
    with _SF_LOCK:
        cached = _BR_CACHE.get(tree)
        if cached is None:
            cached = _BR_CACHE[tree] = tuple(
                _build_responder_index(tree, p) for p in range(tree.num_players)
            )
        return cached[player]


def _build_responder_index(tree: CompiledTree, player: int) -> _ResponderIndex:
    seqs = tree.terminal_sequences[player]
    mine = tree.infoset_player == player
    depths = []
    for k in range(seqs.shape[1]):
        at_depth = np.flatnonzero(mine & (tree.infoset_depth == k))
        depths.append(
            (
                _frozen(at_depth),
                _frozen(~tree.legal_mask[at_depth]),
                _frozen(at_depth * tree.num_actions),
            )
        )
    return _ResponderIndex(
        rows=_frozen(np.flatnonzero(mine)),
        columns=tuple(_frozen(seqs[:, k]) for k in range(seqs.shape[1])),
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


def regret_matching(regrets: np.ndarray, legal_mask: np.ndarray) -> np.ndarray:
    """Regret matching (Hart & Mas-Colell 2000), the ONE implementation every learner uses.

    Each row becomes proportional to its positive regrets over legal actions; rows without
    positive regret become uniform over legal actions. Works on ``[..., num_actions]`` arrays.
    """
    legal_mask = np.asarray(legal_mask, dtype=bool)
    positive = np.where(legal_mask, np.maximum(regrets, 0.0), 0.0)
    legal = (
        legal_mask
        if legal_mask.shape == positive.shape
        else np.broadcast_to(legal_mask, positive.shape)
    )
    # Row sums accumulated column by column: same numbers as ``.sum(axis=-1)`` for the short
    # action axes of these games, several times faster than a reduction over a 2-3 wide axis.
    total = positive[..., 0].copy()
    count = legal[..., 0].astype(np.float64)
    for a in range(1, positive.shape[-1]):
        total += positive[..., a]
        count += legal[..., a]
    total, count = total[..., None], count[..., None]
    uniform = legal / np.maximum(count, 1)
    return np.where(total > 0.0, positive / np.where(total > 0.0, total, 1.0), uniform)


def uniform_strategy(tree: CompiledTree) -> np.ndarray:
    """Uniform over legal actions at every information set."""
    mask = tree.legal_mask.astype(np.float64)
    return mask / mask.sum(axis=1, keepdims=True)


# --- sequence form: the fused pass of the full-width learners ---------------------------------
#
# A player's *realization plan* ``x`` holds, for every sequence ``(I, a)`` of that player, the
# product of the player's own probabilities on the way to and including ``a`` at ``I``:
# ``x[I, a] = pi_i(I) * sigma(I, a)``. It is built top-down over the player's own depth (perfect
# recall: ``x[I, a] = x[parent(I)] * sigma(I, a)``, where ``parent(I)`` is the player's previous
# sequence). Counterfactual values are then one gather over the terminals (the other players'
# plans at their last sequence before each terminal, times chance and payoff, summed into the
# player's last sequence) and a bottom-up pass over the player's own depth
# (``q[parent(I)] += sum_a sigma(I, a) q[I, a]``). Each depth is a handful of 1-D takes and one
# small ``np.bincount``: far fewer, smaller operations than the per-terminal products of
# ``counterfactual_values``, which stays as the reference the fast pass is tested against.


@dataclass(frozen=True, eq=False)
class _Level:
    """One own depth of one player: its legal sequences and the sequences leading to them."""

    sequences: np.ndarray  # [S_d] flat ids ``infoset * A + action`` of the legal sequences
    parents: np.ndarray  # [S_d] flat id of the sequence leading to each one's infoset
    parent_ids: np.ndarray  # [U_d] distinct values of ``parents``
    parent_slot: np.ndarray  # [S_d] position of each ``parents`` entry in ``parent_ids``


@dataclass(frozen=True, eq=False)
class SequenceForm:
    """Index arrays of a tree's sequence form, built once per tree by :func:`sequence_form`.

    Flat sequence ids are ``infoset * num_actions + action``; ``tree.num_sequences`` stands for
    the empty sequence (the root), whose realization probability is always 1.
    """

    parent_sequence: np.ndarray  # [I] sequence of the owner leading to each information set
    last_sequence: tuple[np.ndarray, ...]  # per player [Z]: last own sequence before terminal z
    levels: tuple[tuple[_Level, ...], ...]  # per player, own depth 0, 1, ...
    terminal_weight: np.ndarray  # [P, Z] chance reach times each player's payoff


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


_SF_CACHE: weakref.WeakKeyDictionary[CompiledTree, SequenceForm] = weakref.WeakKeyDictionary()
_SF_LOCK = threading.Lock()


def sequence_form(tree: CompiledTree) -> SequenceForm:
    """The tree's :class:`SequenceForm` index arrays (built once per tree, then cached)."""
    with _SF_LOCK:
        cached = _SF_CACHE.get(tree)
        if cached is None:
            cached = _SF_CACHE[tree] = _build_sequence_form(tree)
        return cached


def _build_sequence_form(tree: CompiledTree) -> SequenceForm:
    num_actions, pad = tree.num_actions, tree.num_sequences
    parent = np.full(tree.num_infosets, pad, dtype=np.int64)
    last = []
    for seqs in tree.terminal_sequences:
        # On every terminal path the sequence before position k leads to the infoset at k.
        previous = np.full(seqs.shape[0], pad, dtype=np.int64)
        for k in range(seqs.shape[1]):
            current = seqs[:, k]
            moved = current != pad
            parent[current[moved] // num_actions] = previous[moved]
            previous = np.where(moved, current, previous)
        last.append(_frozen(previous))
    levels = []
    for p in range(tree.num_players):
        mine = tree.infoset_player == p
        depth = int(tree.infoset_depth[mine].max(initial=-1)) + 1
        player_levels = []
        for d in range(depth):
            infosets = np.flatnonzero(mine & (tree.infoset_depth == d))
            legal = tree.legal_mask[infosets]
            grid = infosets[:, None] * num_actions + np.arange(num_actions)
            parents = np.broadcast_to(parent[infosets][:, None], grid.shape)[legal]
            parent_ids, parent_slot = np.unique(parents, return_inverse=True)
            player_levels.append(
                _Level(
                    sequences=_frozen(grid[legal]),
                    parents=_frozen(parents),
                    parent_ids=_frozen(parent_ids),
                    parent_slot=_frozen(parent_slot.reshape(-1)),
                )
            )
        levels.append(tuple(player_levels))
    weight = tree.terminal_chance_reach[None, :] * tree.terminal_utility.T
    return SequenceForm(
        parent_sequence=_frozen(parent),
        last_sequence=tuple(last),
        levels=tuple(levels),
        terminal_weight=_frozen(np.ascontiguousarray(weight)),
    )


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array


def _plan_into(levels: tuple[_Level, ...], flat: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (zeros, ``[num_sequences + 1]`` with a trailing 1) with one player's plan."""
    for level in levels:
        out[level.sequences] = out[level.parents] * flat[level.sequences]
    return out


def realization_plan(tree: CompiledTree, strategy: np.ndarray, player: int) -> np.ndarray:
    """``player``'s realization plan of ``strategy`` as a ``[num_infosets, num_actions]`` array.

    ``plan[I, a] = pi_player(I) * strategy[I, a]`` on ``player``'s information sets, zero
    elsewhere. Mixing plans (not behaviour strategies) is what makes averages of strategies
    exact; :func:`behaviour_strategy` turns a plan back into action probabilities.
    """
    sf = sequence_form(tree)
    flat = np.ascontiguousarray(strategy, dtype=np.float64).reshape(-1)
    out = np.zeros(tree.num_sequences + 1)
    out[-1] = 1.0
    _plan_into(sf.levels[player], flat, out)
    return out[:-1].reshape(tree.num_infosets, tree.num_actions)


def counterfactual_pass(
    tree: CompiledTree, strategy: np.ndarray, player: int
) -> CounterfactualPass:
    """Counterfactual values, infoset values, own realization plan and expected return of
    ``player`` under the joint ``strategy``, in one fused sequence-form pass.

    Same numbers as :func:`counterfactual_values` (which it is tested against) at a fraction of
    the cost: the other players' plans are built top-down, gathered once per terminal, and the
    player's values are pushed bottom-up through its own depth.
    """
    sf = sequence_form(tree)
    n_seq = tree.num_sequences
    flat = np.ascontiguousarray(strategy, dtype=np.float64).reshape(-1)
    weight = sf.terminal_weight[player]
    plan = np.zeros(n_seq + 1)
    for other in range(tree.num_players):
        if other == player:
            continue
        plan[:] = 0.0
        plan[-1] = 1.0
        _plan_into(sf.levels[other], flat, plan)
        weight = weight * plan[sf.last_sequence[other]]
    q = np.bincount(sf.last_sequence[player], weights=weight, minlength=n_seq + 1)
    for level in reversed(sf.levels[player]):
        seqs = level.sequences
        q[level.parent_ids] += np.bincount(
            level.parent_slot, weights=flat[seqs] * q[seqs], minlength=level.parent_ids.shape[0]
        )
    value = float(q[-1])
    plan[:] = 0.0
    plan[-1] = 1.0
    _plan_into(sf.levels[player], flat, plan)
    shape = (tree.num_infosets, tree.num_actions)
    q_rows = q[:-1].reshape(shape)
    values = np.einsum("ij,ij->i", strategy, q_rows)
    return CounterfactualPass(q_rows, values, plan[:-1].reshape(shape), value)


def behaviour_strategy(
    tree: CompiledTree, weights: np.ndarray, *, rows: np.ndarray | None = None
) -> np.ndarray:
    """Behaviour strategy proportional to non-negative ``weights`` on each information set.

    ``weights`` is ``[num_infosets, num_actions]`` (a realization plan, or the reach-weighted
    strategy sums of CFR); each row is normalised over its legal actions, and rows with no
    weight (information sets the strategy never reaches) become uniform over legal actions.
    With ``rows``, only those rows are normalised and the others are uniform.
    """
    weights = np.where(tree.legal_mask, weights, 0.0)
    if rows is not None:
        keep = np.zeros(tree.num_infosets, dtype=bool)
        keep[rows] = True
        weights[~keep] = 0.0
    total = weights.sum(axis=1, keepdims=True)
    uniform = tree.legal_mask / tree.legal_mask.sum(axis=1, keepdims=True)
    return np.where(total > 0.0, weights / np.where(total > 0.0, total, 1.0), uniform)
