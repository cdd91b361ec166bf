"""One full-width iteration of one seat of the CFR family, as one fused kernel.

Brown & Sandholm (2019), "Solving Imperfect-Information Games via Discounted Regret
Minimization", AAAI, write CFR, CFR+ and Discounted CFR as one update that differs only in its
discounts. For seat ``i`` at iteration ``t``, against the opponent's strategy:

1. one fused counterfactual pass (:func:`~nashzoo.games.treemath.counterfactual_pass`) of the
   current strategy ``sigma_t`` gives ``q[I, a]``, ``v[I] = sum_a sigma_t q`` and the seat's
   realization plan ``x_t``;
2. regrets: ``R <- R + q - v`` on the seat's legal sequences; with ``floor`` every entry that is
   not positive becomes 0 (CFR+'s regret-matching+); then positive entries are multiplied by
   ``positive`` and the others by ``negative`` (DCFR's ``t^alpha / (t^alpha + 1)`` and
   ``t^beta / (t^beta + 1)``);
3. average: ``S <- (S + weight * x_t) * decay`` (CFR+'s linear weight ``t``, DCFR's
   ``(t / (t + 1))^gamma``);
4. ``sigma_{t+1} = regret_matching(R)`` (:class:`~nashzoo.games.treemath.RegretMatcher`), a new
   table: the previous one may be held by the opponent as an immutable policy.

A learner says how iteration ``t`` folds in with :class:`IterationWeights`; the arithmetic stays
here. With numba (:mod:`._jit`) the four steps are one compiled call, which is what makes a
small tree's iteration cheap (Kuhn: the numpy path is some 30 calls of under a microsecond of
work each); both paths give the same floats.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath import _jit
from nashzoo.games.treemath._cache import read_only_view
from nashzoo.games.treemath.matching import RegretMatcher
from nashzoo.games.treemath.scratch import shared_scratch
from nashzoo.games.treemath.sequence import counterfactual_pass, sequence_form

_FLOAT64 = np.dtype(np.float64)


class IterationWeights(NamedTuple):
    """How one iteration folds into a seat's tables (see the module docs).

    Attributes:
        positive: positive cumulative regrets are multiplied by this after the update.
        negative: the other cumulative regrets are multiplied by this.
        floor: set cumulative regrets that are not positive to zero first (CFR+).
        weight: the weight of this iteration's realization plan in the average.
        decay: the average-strategy accumulator is multiplied by this after adding.
    """

    positive: float = 1.0
    negative: float = 1.0
    floor: bool = False
    weight: float = 1.0
    decay: float = 1.0


class FullWidthStep:
    """One seat's full-width iteration over one tree (see the module docs); built once per
    learner, called once per step."""

    def __init__(self, tree: CompiledTree, player: int) -> None:
        self.tree = tree
        self.player = player
        self.matcher = RegretMatcher(tree.legal_mask)
        self._update_mask = tree.legal_mask & (tree.infoset_player == player)[:, None]
        self._compiled = _jit.ENABLED and tree.num_players == 2
        if self._compiled:
            index, weight = sequence_form(tree).kernel_arguments(player)
            self._arguments = (index, weight, self.matcher.legal, self.matcher.inverse_count)
            self._scratch = shared_scratch(tree)
            self._tables = _TableRecycler(tree.legal_mask.shape)

    def __call__(
        self,
        regrets: np.ndarray,
        strategy_sum: np.ndarray,
        current: np.ndarray,
        others: np.ndarray,
        weights: IterationWeights,
    ) -> tuple[np.ndarray, float]:
        """Update ``regrets`` and ``strategy_sum`` (C-contiguous float64 ``[I, A]`` tables, in
        place) by one iteration of ``current`` (the seat's strategy) against ``others`` (read
        for the other seat's rows); return the next current strategy (a new table) and the
        seat's expected return under ``current``."""
        if not (others.dtype == _FLOAT64 and others.flags.c_contiguous):
            others = np.ascontiguousarray(others, dtype=np.float64)
        if self._compiled:
            out = self._tables.take()
            scratch = self._scratch.take()
            try:
                # One signature whether or not the caller's tables are read-only (numba
                # compiles, and loads, one version per argument type; the learners' set-up
                # loads this one: see _jit.warm_up). The weights are floats as IterationWeights
                # declares them.
                value = _jit.full_width_step(
                    *self._arguments,
                    read_only_view(current),
                    read_only_view(others),
                    regrets,
                    strategy_sum,
                    out,
                    *scratch,
                    *weights,
                )
            finally:
                self._scratch.give_back(scratch)
            self._tables.handed_out(out)
            return out, value
        result = counterfactual_pass(self.tree, current, self.player, others=others)
        instant = result.q  # this pass's own array: updated in place (big trees, big tables)
        instant -= result.values[:, None]
        instant *= self._update_mask
        regrets += instant
        if weights.floor:
            np.maximum(regrets, 0.0, out=regrets)
        if weights.positive != 1.0 or weights.negative != 1.0:
            regrets *= np.where(regrets > 0.0, weights.positive, weights.negative)
        if weights.weight:
            plan = result.plan
            if weights.weight != 1.0:
                plan *= weights.weight
            strategy_sum += plan
        if weights.decay != 1.0:
            strategy_sum *= weights.decay
        return self.matcher(regrets), float(result.value)


class _TableRecycler:
    """The tables a seat's steps hand out, recycled once nobody else can see them.

    Every step returns a new strategy table, because the previous one may be held by the
    opponent or a user as an immutable policy. On a big tree a new table is fresh pages that
    the kernel must fault in and zero (Liar's dice with nine sides: 360 MB, twice per
    iteration). Most of the time, though, nothing holds the table of two steps ago any more
    (the learner and the trainer have moved on), and then its memory is reused for the next
    table. Whether anything else holds it is read from its reference count, compared with the
    count of a table held only here, taken by the same code (so the comparison does not depend
    on how the interpreter counts references). A table anything else refers to (a policy a
    user kept, a view, an array sharing its memory) is never reused. Peak memory is
    unchanged: the reused table stands in for the one that would have been allocated.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self._last: np.ndarray | None = None  # handed out by the last step (the seat's current)
        self._spare: np.ndarray | None = np.empty(0)
        self._alone = self._spare_references()  # the count of a table held only here
        self._spare = None  # handed out the step before last: reused if nobody holds it

    def _spare_references(self) -> int:
        spare = self._spare
        return sys.getrefcount(spare)

    def take(self) -> np.ndarray:
        """A table to write the next strategy into: the spare if nobody else holds it, else
        a new one."""
        # A table that does not own its memory (one unpickled from a learner's pickle is a
        # view of the pickle's bytes) cannot be made writeable again: a new one instead. (No
        # local name for the spare here: it would add a reference to the count.)
        if (
            self._spare is not None
            and self._spare.base is None
            and self._spare_references() == self._alone
        ):
            table, self._spare = self._spare, None
            table.setflags(write=True)  # made read-only when it was handed out as a policy
            return table
        self._spare = None
        return np.empty(self.shape)

    def handed_out(self, table: np.ndarray) -> None:
        """``table`` is the seat's new current strategy; the one before becomes the spare."""
        self._spare, self._last = self._last, table
