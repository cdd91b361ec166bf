"""Regret matching and the per-row normalisations every learner shares."""

from __future__ import annotations

import functools

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath import _jit
from nashzoo.games.treemath._cache import frozen, per_tree


def row_sums(table: np.ndarray) -> np.ndarray:
    """Sums over the last axis, added column by column: the same numbers as ``sum(axis=-1)``
    for the short action axes of these games, several times faster than numpy's reduction
    over a 2-3 wide axis."""
    total = table[..., 0].copy()
    for a in range(1, table.shape[-1]):
        total += table[..., a]
    return total


class RegretMatcher:
    """Regret matching (Hart & Mas-Colell 2000) over one fixed legal mask: the ONE
    implementation every learner uses (:func:`regret_matching` is its one-shot form).

    Each row becomes proportional to its positive regrets over legal actions; rows without
    positive regret become uniform over legal actions. Works on ``[..., num_actions]`` arrays.
    The uniform rows are computed once per mask, so a learner that matches the same mask
    every iteration keeps one matcher.
    """

    def __init__(self, legal_mask: np.ndarray) -> None:
        self.legal = np.asarray(legal_mask, dtype=bool)
        self.inverse_count = inverse_legal_counts(self.legal)
        """One over each row's number of legal actions (at least one): its uniform
        probability."""

    @functools.cached_property
    def uniform(self) -> np.ndarray:
        """The uniform rows, built on first use: the compiled path reads ``inverse_count``
        instead, one number per row rather than one per action."""
        return self.legal * self.inverse_count[..., None]

    def __call__(self, regrets: np.ndarray) -> np.ndarray:
        if _jit.ENABLED and regrets.ndim == 2 and self.legal.shape == regrets.shape:
            out = np.empty(regrets.shape)
            _jit.regret_matching_rows(
                np.ascontiguousarray(regrets, dtype=np.float64),
                self.legal,
                self.inverse_count,
                out,
            )
            return out
        positive = np.where(self.legal, np.maximum(regrets, 0.0), 0.0)
        total = row_sums(positive)[..., None]
        if self.uniform.shape == positive.shape:
            out = self.uniform.copy()
        else:
            out = np.array(np.broadcast_to(self.uniform, positive.shape))
        return np.divide(positive, total, out=out, where=total > 0.0)


def regret_matching(regrets: np.ndarray, legal_mask: np.ndarray) -> np.ndarray:
    """Regret matching of ``regrets`` over ``legal_mask`` (see :class:`RegretMatcher`)."""
    return RegretMatcher(legal_mask)(regrets)


def uniform_strategy(tree: CompiledTree) -> np.ndarray:
    """Uniform over legal actions at every information set (a new table, the caller's to
    write): the legal mask times each row's one over its number of legal actions, which is
    kept per tree (one number a row; counting the mask anew each time was most of the cost
    of every average policy on a big tree, and keeping the whole table would hold as much
    memory as a learner's table)."""
    return np.multiply(tree.legal_mask, _inverse_legal_counts(tree)[:, None])


def _inverse_legal_counts(tree: CompiledTree) -> np.ndarray:
    return per_tree(tree, "inverse_legal_counts", _inverse_counts)


def _inverse_counts(tree: CompiledTree) -> np.ndarray:
    return frozen(inverse_legal_counts(tree.legal_mask))


def inverse_legal_counts(legal_mask: np.ndarray) -> np.ndarray:
    """One over each row's number of legal actions (at least one): its uniform probability,
    what :class:`RegretMatcher` and :func:`uniform_strategy` fill rows without regret or
    weight with."""
    return 1.0 / np.maximum(legal_mask.sum(axis=-1), 1)


def behaviour_strategy(
    tree: CompiledTree, weights: np.ndarray, *, rows: np.ndarray | None = None
) -> np.ndarray:
    """Behaviour strategy proportional to non-negative ``weights`` on each information set.

    ``weights`` is ``[num_infosets, num_actions]`` (a realization plan, or the reach-weighted
    strategy sums of CFR); each row is normalised over its legal actions, and rows with no
    weight (information sets the strategy never reaches) become uniform over legal actions.
    With ``rows`` (indices, or a boolean mask over the information sets), only those rows are
    normalised, and only they are read: the others are uniform. Each row's numbers are the
    same whichever rows are asked for."""
    out = uniform_strategy(tree)
    if rows is None:
        rows = np.arange(tree.num_infosets)
    rows = np.asarray(rows)
    if rows.dtype == bool:
        rows = np.flatnonzero(rows)
    elif rows.size == 0:
        rows = np.empty(0, dtype=np.intp)  # np.asarray([]) is float: no rows, all uniform
    # In place where it can be: on a big tree every table here is hundreds of MB.
    legal = np.asarray(weights, dtype=np.float64)[rows]  # a copy: fancy indexing
    np.copyto(legal, 0.0, where=~tree.legal_mask[rows])
    total = legal.sum(axis=1)
    reached = total > 0.0
    legal /= np.where(reached, total, 1.0)[:, None]
    out[rows[reached]] = legal[reached]
    return out


_FLOAT64 = np.dtype(np.float64)


def distribution_status(
    tree: CompiledTree, probs: np.ndarray, tolerance: float, exact: float
) -> int | None:
    """The compiled one-pass verdict on a whole strategy table (see
    ``_jit.distribution_status``: 0 every row an exact distribution, 1 some only within
    ``tolerance``, 2 some not even that), or None where the numpy checks must answer: without
    numba, for a table that is not C-contiguous float64 of the tree's shape, or for rows wider
    than the compiled sum adds in numpy's order."""
    legal = tree.legal_mask
    if not (
        _jit.ENABLED
        and probs.shape == legal.shape
        and probs.dtype == _FLOAT64
        and probs.flags.c_contiguous
        and legal.shape[1] <= _jit.SUM_AS_NUMPY_WIDTH
    ):
        return None
    return int(_jit.distribution_status(probs, legal, tolerance, exact))
