"""Regret matching and the per-row normalisations every learner shares."""

from __future__ import annotations

import functools

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath import _jit


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
        self.inverse_count = 1.0 / np.maximum(self.legal.sum(axis=-1), 1)
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
    """Uniform over legal actions at every information set."""
    mask = tree.legal_mask.astype(np.float64)
    return mask / mask.sum(axis=1, keepdims=True)


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
