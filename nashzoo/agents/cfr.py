"""Full-width counterfactual regret minimisation: vanilla CFR, CFR+ and Discounted CFR.

* ``cfr``: Zinkevich, Johanson, Bowling & Piccione (2007), "Regret Minimization in Games with
  Incomplete Information", NeurIPS.
* ``cfr_plus``: Tammelin (2014), "Solving Large Imperfect Information Games Using CFR+",
  arXiv:1407.5042 (regret-matching+ floor, linear averaging, alternating updates); the
  averaging delay is from Tammelin, Burch, Johanson & Bowling (2015), IJCAI.
* ``dcfr``: Brown & Sandholm (2019), "Solving Imperfect-Information Games via Discounted Regret
  Minimization", AAAI (alpha = 1.5, beta = 0, gamma = 2 by default).

Each learner owns one seat ``i`` and keeps a cumulative regret ``R[I, a]`` and an average-strategy
accumulator ``S[I, a]`` for ``i``'s information sets. One ``step(opponent)`` is one iteration
``t`` for that seat:

1. The current strategy is ``sigma_t = regret_matching(R)`` (the ONE shared function,
   :func:`nashzoo.games.treemath.regret_matching`; uniform where no regret is positive).
2. One fused sequence-form pass over the compiled tree
   (:func:`nashzoo.games.treemath.counterfactual_pass`) against the opponent's policy gives the
   counterfactual action values ``q[I, a]``, the infoset values ``v[I] = sum_a sigma_t q``, and
   the seat's realization plan ``x_t[I, a] = pi_i(I) sigma_t(I, a)``.
3. Regrets: ``R <- R + (q - v)`` (CFR), ``R <- max(R + q - v, 0)`` (CFR+), or ``R <- R + q - v``
   followed by multiplying positive entries by ``t^alpha / (t^alpha + 1)`` and negative ones by
   ``t^beta / (t^beta + 1)`` (DCFR).
4. Average: ``S <- S + x_t`` (CFR), ``S <- S + max(t - delay, 0) x_t`` (CFR+, linear averaging),
   ``S <- (S + x_t) (t / (t + 1))^gamma`` (DCFR, so iteration ``t`` weighs about ``t^gamma``).
   The average policy is ``S`` normalised per infoset: accumulating the reach-weighted ``x_t``
   makes it the behavioural equivalent of the averaged mixed strategy.

Steps 2-4 and the next step's regret matching are one call of
:class:`nashzoo.games.treemath.FullWidthStep` (one compiled kernel when numba is installed); a
variant only says how iteration ``t`` folds in, as a
:class:`~nashzoo.games.treemath.IterationWeights` (Brown & Sandholm's discounting family).

Alternation is the Trainer's job: it steps seat 0 against seat 1's current policy, then seat 1
against seat 0's new one (the schedule of CFR+ and of OpenSpiel's solvers). A step reports
``nodes_touched = num_nodes`` of the tree, the histories one full-width pass covers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nashzoo.agents.base import Learner, LearnerConfig
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.agents.registry import register
from nashzoo.games import treemath as tm
from nashzoo.games.base import is_finite_number, is_whole_number
from nashzoo.io import ArraySpec


@dataclass(frozen=True)
class CFRConfig(LearnerConfig):
    """Vanilla CFR has no parameters: uniform averaging, unfloored regrets."""


@dataclass(frozen=True)
class CFRPlusConfig(LearnerConfig):
    """CFR+ parameters.

    Attributes:
        averaging_delay: iteration ``t`` enters the average with weight ``max(t - delay, 0)``.
            Default 0: plain linear averaging, as in Tammelin (2014) and OpenSpiel's
            ``CFRPlusSolver``.
    """

    averaging_delay: int = 0

    def __post_init__(self) -> None:
        if not is_whole_number(self.averaging_delay):
            raise ValueError(
                f"averaging_delay must be a non-negative integer, got {self.averaging_delay!r}"
            )


@dataclass(frozen=True)
class DCFRConfig(LearnerConfig):
    """Discounted CFR parameters (defaults: the paper's recommended alpha 1.5, beta 0, gamma 2).

    Attributes:
        alpha: positive cumulative regrets are multiplied by ``t^alpha / (t^alpha + 1)``.
        beta: negative cumulative regrets are multiplied by ``t^beta / (t^beta + 1)``.
        gamma: the average-strategy accumulator is multiplied by ``(t / (t + 1))^gamma``.
    """

    alpha: float = 1.5
    beta: float = 0.0
    gamma: float = 2.0

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            value = getattr(self, name)
            if not is_finite_number(value):
                raise ValueError(f"DCFR {name} must be a finite number, got {value!r}")
        if self.gamma < 0:
            raise ValueError(f"DCFR gamma must be >= 0 (got {self.gamma}); 0 is uniform averaging")


_PLAIN = tm.IterationWeights()


class _FullWidthCFR(Learner):
    """Shared machinery of the full-width CFR family (one seat; see the module docs). A variant
    says how iteration ``t`` folds into the tables (:meth:`_iteration_weights`); the fused
    update itself is treemath's (:class:`~nashzoo.games.treemath.FullWidthStep`)."""

    kind = "tabular"

    def _setup(self) -> None:
        tree = self._tree = self.tree
        self._num_nodes = tree.num_nodes
        self._rows = np.flatnonzero(tree.infoset_player == self.seat)
        self._update = tm.FullWidthStep(tree, self.seat)
        shape = (tree.num_infosets, tree.num_actions)
        self._regrets = np.zeros(shape)
        self._strategy_sum = np.zeros(shape)
        # Regret matching over the whole table: other seats' regrets stay zero, so their rows
        # come out uniform (a valid policy) without a separate copy.
        self._set_current(self._update.matcher(self._regrets))

    # --- the algorithm -----------------------------------------------------------------------
    def _set_current(self, current: np.ndarray) -> None:
        self._current = current
        self._current_policy: TabularPolicy | None = None

    def _iteration_weights(self, iteration: int) -> tm.IterationWeights:
        """How iteration ``iteration`` (1, 2, ...) folds in: vanilla CFR adds regrets and plans
        as they are."""
        return _PLAIN

    def _step(self, opponent: Policy) -> dict[str, float]:
        current, value = self._update(
            self._regrets,
            self._strategy_sum,
            self._current,
            self.opponent_strategy(opponent),
            self._iteration_weights(self.iterations + 1),
        )
        self._set_current(current)
        return {"nodes_touched": self._num_nodes, "value": value}

    # --- policies and state ------------------------------------------------------------------
    def current_policy(self) -> TabularPolicy:
        """Regret matching on the cumulative regrets (immutable; other seats' rows uniform)."""
        if self._current_policy is None:
            self._current_policy = TabularPolicy.adopt(self.game, self._tree, self._current)
        return self._current_policy

    def average_policy(self) -> TabularPolicy:
        """The reach-weighted average strategy (a new immutable policy; other rows uniform)."""
        probs = tm.behaviour_strategy(self.tree, self._strategy_sum, rows=self._rows)
        return TabularPolicy.adopt(self.game, self.tree, probs)  # a fresh table: no copy

    def cumulative_regrets(self) -> np.ndarray:
        """A copy of the cumulative (floored, discounted: as the variant keeps them) regrets."""
        return self._regrets.copy()

    def strategy_sum(self) -> np.ndarray:
        """A copy of the average-strategy accumulator ``S``."""
        return self._strategy_sum.copy()

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {
            "regrets": tm.read_only_view(self._regrets),
            "strategy_sum": tm.read_only_view(self._strategy_sum),
        }

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        tree = self._tree  # this seat's legal cells: where the tables may be non-zero
        own = tree.legal_mask & (tree.infoset_player == self.seat)[:, None]
        arrays = self.checked_state_arrays(
            arrays,
            {
                "regrets": ArraySpec(own.shape, support=own),
                "strategy_sum": ArraySpec(own.shape, nonnegative=True, support=own),
            },
        )
        self._regrets = np.ascontiguousarray(arrays["regrets"])
        self._strategy_sum = np.ascontiguousarray(arrays["strategy_sum"])
        self._set_current(self._update.matcher(self._regrets))


@register
class CFR(_FullWidthCFR):
    """Vanilla CFR (Zinkevich et al. 2007): cumulative regrets, uniform averaging."""

    name = "cfr"
    Config = CFRConfig


@register
class CFRPlus(_FullWidthCFR):
    """CFR+ (Tammelin 2014): regrets floored at zero every iteration, linear averaging."""

    name = "cfr_plus"
    Config = CFRPlusConfig
    config: CFRPlusConfig

    def _iteration_weights(self, iteration: int) -> tm.IterationWeights:
        # Positional (positive, negative, floor, weight, decay): a third of the keyword cost,
        # which shows on small trees, where this runs every few microseconds.
        return tm.IterationWeights(
            1.0, 1.0, True, float(max(iteration - self.config.averaging_delay, 0)), 1.0
        )


@register
class DCFR(_FullWidthCFR):
    """Discounted CFR (Brown & Sandholm 2019) with discount exponents alpha, beta, gamma."""

    name = "dcfr"
    Config = DCFRConfig
    config: DCFRConfig

    def _iteration_weights(self, iteration: int) -> tm.IterationWeights:
        t, config = float(iteration), self.config
        decay = (iteration / (iteration + 1.0)) ** config.gamma
        return tm.IterationWeights(
            _discount(t, config.alpha), _discount(t, config.beta), False, 1.0, decay
        )


def _discount(t: float, exponent: float) -> float:
    """DCFR's ``t^e / (t^e + 1)``; 1 where ``t^e`` is past the largest float (a large exponent
    after a few hundred iterations), which is the ratio's value there to the last bit."""
    try:
        power = t**exponent
    except OverflowError:
        return 1.0
    return power / (power + 1.0)
