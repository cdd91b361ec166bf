"""Full-width extensive-form fictitious play (XFP).

Heinrich, Lanctot & Silver (2015), "Fictitious Self-Play in Extensive-Form Games", ICML
(Algorithm 1, full-width XFP), building on Brown (1951) and Robinson (1951) fictitious play.

The learner owns one seat ``i`` and keeps its average strategy as a *realization plan*
``x[I, a] = pi_i(I) * sigma(I, a)``, starting from the uniform strategy (``x_0``). One
``step(opponent)`` with the opponent's AVERAGE policy (``opponent_view = "average"``) is one
iteration ``t = 1, 2, ...``:

1. ``b_t``: the exact best response to the opponent's average policy
   (:func:`nashzoo.games.treemath.best_response`, a pure strategy; ties go to the lowest action).
2. ``x_b``: its realization plan (:func:`nashzoo.games.treemath.realization_plan`).
3. Mix in sequence form with step size ``alpha_t = 1 / (t + 1)``:
   ``x <- (1 - alpha_t) x + alpha_t x_b``, so ``x = (x_0 + b_1 + ... + b_t) / (t + 1)``, the
   uniform mixture of the strategies played. Mixing plans, not action probabilities, is the
   realization-weighted update of the paper: the behaviour strategy
   ``sigma(I, a) = x[I, a] / sum_b x[I, b]`` is exactly equivalent to the mixed average.
4. The current policy (what a ``"current"``-view opponent faces) becomes ``b_t``.

A step reports ``nodes_touched = num_nodes`` (one full-width best-response pass) and
``br_value``, the best response's value against the opponent's average.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.policy import Policy, PolicyError, TabularPolicy, check_distributions
from nashzoo.agents.registry import register
from nashzoo.games import treemath as tm
from nashzoo.io import ArraySpec


@dataclass(frozen=True)
class XFPConfig(LearnerConfig):
    """XFP has no parameters: step size ``1 / (t + 1)`` from a uniform start (as in the paper's
    convergence result for fictitious play)."""


@register
class XFP(Learner):
    """Full-width extensive-form fictitious play on one seat (see the module docs)."""

    name = "xfp"
    kind = "tabular"
    Config = XFPConfig
    opponent_view = "average"

    def _setup(self) -> None:
        tree = self.tree
        self._rows = tree.infosets_of(self.seat)
        uniform = tm.uniform_strategy(tree)
        self._plan = tm.realization_plan(tree, uniform, self.seat)
        self._current = uniform
        self._current_policy: TabularPolicy | None = None

    def _step(self, opponent: Policy) -> dict[str, float]:
        t = self.iterations + 1
        tree = self.tree
        value, best = tm.best_response(tree, self.opponent_strategy(opponent), self.seat)
        alpha = 1.0 / (t + 1.0)
        self._plan *= 1.0 - alpha
        self._plan += alpha * tm.realization_plan(tree, best, self.seat)
        current = tm.uniform_strategy(tree)
        current[self._rows] = best[self._rows]
        self._current = current
        self._current_policy = None
        return {"nodes_touched": tree.num_nodes, "br_value": value}

    def current_policy(self) -> TabularPolicy:
        """The latest best response (uniform before the first step; other rows uniform)."""
        if self._current_policy is None:
            self._current_policy = TabularPolicy(self.game, self._current, validate=False)
        return self._current_policy

    def average_policy(self) -> TabularPolicy:
        """The behaviour strategy of the averaged realization plan (other rows uniform)."""
        probs = tm.behaviour_strategy(self.tree, self._plan, rows=self._rows)
        return TabularPolicy.adopt(self.game, self.tree, probs)  # a fresh table: no copy

    def realization_plan(self) -> np.ndarray:
        """A copy of the averaged realization plan ``x`` (``[num_infosets, num_actions]``)."""
        return self._plan.copy()

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"plan": tm.read_only_view(self._plan), "current": tm.read_only_view(self._current)}

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        legal = self.tree.legal_mask
        arrays = self.checked_state_arrays(
            arrays,
            {
                "plan": ArraySpec(legal.shape, nonnegative=True, support=legal),
                "current": ArraySpec(legal.shape, nonnegative=True, support=legal),
            },
        )
        try:
            check_distributions(self.tree, arrays["current"])
        except PolicyError as err:
            raise CheckpointError(f"array 'current' is not a policy: {err}") from None
        self._plan = arrays["plan"]
        self._current = arrays["current"]
        self._current_policy = None
