"""Regret matching for matrix games, full-width or sampled.

Hart & Mas-Colell (2000), "A Simple Adaptive Procedure Leading to Correlated Equilibrium",
Econometrica 68(5); the sampled form is the one taught for Rock-Paper-Scissors in Neller &
Lanctot (2013), "An Introduction to Counterfactual Regret Minimization".

The learner owns one seat of a two-player matrix game (``rps``, ``matrix``), where that seat has
exactly one information set. It keeps a cumulative regret ``R[a]`` per own action and the sum
``S`` of its strategies. One ``step(opponent)`` is one round ``t``:

1. Play ``sigma_t = regret_matching(R)`` (the ONE shared function,
   :func:`nashzoo.games.treemath.regret_matching`; uniform while no regret is positive).
2. Read the opponent's mixed strategy ``y_t`` from its Policy.
3. ``mode="full"``: expected payoffs ``u = U y_t`` of every own action; regrets
   ``R <- R + u - sigma_t . u``.
   ``mode="sampled"``: draw the opponent's action ``b_t ~ y_t`` with the learner's own
   Generator; regrets ``R[a] <- R[a] + U[a, b_t] - sigma_t . U[:, b_t]``. With
   ``sample_own=True`` the own action ``a_t ~ sigma_t`` is drawn too and the baseline is the
   realised payoff, ``R[a] <- R[a] + U[a, b_t] - U[a_t, b_t]`` (Hart & Mas-Colell's procedure,
   Neller & Lanctot's RPS trainer).
4. ``S <- S + sigma_t``; the average strategy is ``S / t``.

Work: a full step weighs every history of the tree (``nodes_touched = num_nodes``); a sampled
step the root, the own moves and their terminals against one opponent action
(``1 + 2 * num_own_actions`` nodes; 3 with ``sample_own``). Step metrics: ``payoff`` (exact
expected payoff of ``sigma_t`` against ``y_t``), its running mean ``mean_payoff``; in sampled
mode also ``realised_payoff`` (the payoff against the sampled action: ``sigma_t . U[:, b_t]``, or
``U[a_t, b_t]`` with ``sample_own``) and its running mean ``mean_realised_payoff``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nashzoo.agents.base import Learner, LearnerConfig
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.agents.registry import imported_learner_classes, register
from nashzoo.games import Game
from nashzoo.games import treemath as tm
from nashzoo.games.matrix import MatrixGame
from nashzoo.io import ArraySpec

_MODES = ("full", "sampled")


@dataclass(frozen=True)
class RegretMatchingConfig(LearnerConfig):
    """Regret-matching parameters.

    Attributes:
        mode: ``"full"`` (default) uses the expected regret against the opponent's current mixed
            strategy; ``"sampled"`` uses the regret of the sampled own action against the
            sampled opponent action (drawn with the learner's own Generator).
        sample_own: in sampled mode, also draw the own action and measure regrets against the
            realised payoff instead of the expected one (default ``False``; more variance).
        initial_regrets: starting regrets, one per own action (default ``None``: zeros, so the
            first strategy is uniform). Positive entries set the first strategy, e.g.
            ``(1, 0, 0)`` starts Rock-Paper-Scissors from pure rock.
    """

    mode: Literal["full", "sampled"] = "full"
    sample_own: bool = False
    initial_regrets: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ValueError(
                f"regret_matching mode must be one of {_MODES}, got {self.mode!r}: use 'full' "
                "for expected regrets or 'sampled' for regrets of sampled actions"
            )
        if not isinstance(self.sample_own, (bool, np.bool_)):
            raise ValueError(f"sample_own must be True or False, got {self.sample_own!r}")
        if self.sample_own and self.mode != "sampled":
            raise ValueError("sample_own=True needs mode='sampled'")
        if self.initial_regrets is not None:
            try:
                values = tuple(float(v) for v in self.initial_regrets)
                if isinstance(self.initial_regrets, (str, bytes)):
                    raise TypeError("a string")
            except (TypeError, ValueError):
                raise ValueError(
                    "initial_regrets must be a list of numbers, one per own action, got "
                    f"{self.initial_regrets!r}"
                ) from None
            if not all(np.isfinite(values)):
                raise ValueError(f"initial_regrets must be finite numbers, got {values}")
            object.__setattr__(self, "initial_regrets", values)


@register
class RegretMatching(Learner):
    """Regret matching on one seat of a two-player matrix game (see the module docs)."""

    name = "regret_matching"
    kind = "tabular"
    Config = RegretMatchingConfig
    config: RegretMatchingConfig

    @classmethod
    def check_game(cls, game: Game) -> None:
        if game.num_players != 2:
            raise ValueError(
                f"regret_matching plays two-player matrix games; {game.display_id} has "
                f"{game.num_players} players (every nashzoo learner plays two-player games)"
            )
        if not isinstance(game, MatrixGame):
            bridged_matrix = game.id.startswith(
                "openspiel:turn_based_simultaneous_game(game=matrix"
            )
            why = " (an OpenSpiel matrix game is played turn by turn)" if bridged_matrix else ""
            raise ValueError(
                f"regret_matching plays two-player matrix games (load_game('rps') or "
                f"load_game('matrix', ...)); {game.display_id} is not a nashzoo matrix game{why}: "
                f"use {_table_learners()} instead, which play any game"
            )

    def _setup(self) -> None:
        game = self.game
        assert isinstance(game, MatrixGame), "check_game refuses any other game"
        tree = self.tree
        (self._infoset,) = tree.infosets_of(self.seat)
        (self._opponent_infoset,) = tree.infosets_of(1 - self.seat)
        row, col = game.payoff_matrices()
        # payoff[a, b]: this seat's payoff for own action a against opponent action b.
        self._payoff = row if self.seat == 0 else col.T
        self._num_own, self._num_opponent = self._payoff.shape
        self._legal = tree.legal_mask[self._infoset, : self._num_own]
        self._regrets = np.zeros(self._num_own)
        if self.config.initial_regrets is not None:
            if len(self.config.initial_regrets) != self._num_own:
                raise ValueError(
                    f"initial_regrets has {len(self.config.initial_regrets)} entries but seat "
                    f"{self.seat} of {game.display_id} has {self._num_own} actions"
                )
            self._regrets[:] = self.config.initial_regrets
        self._strategy_sum = np.zeros(self._num_own)
        self._payoff_sum = np.zeros(2)  # [expected, realised]
        self._refresh()

    def _refresh(self) -> None:
        self._strategy = tm.regret_matching(self._regrets, self._legal)
        self._current_policy: TabularPolicy | None = None

    def current_strategy(self) -> np.ndarray:
        """``sigma_t`` over this seat's actions (a copy)."""
        return self._strategy.copy()

    def _sample(self, probs: np.ndarray) -> int:
        """Inverse-CDF draw with the learner's Generator (one uniform number per draw)."""
        return int(tm.sample_cdf(np.cumsum(probs)[None], self.rng.random(1))[0])

    def _step(self, opponent: Policy) -> dict[str, float]:
        strategy = self._strategy
        y = self.opponent_strategy(opponent)[self._opponent_infoset, : self._num_opponent]
        expected = self._payoff @ y
        payoff = float(strategy @ expected)
        metrics: dict[str, float] = {"payoff": payoff}
        if self.config.mode == "full":
            self._regrets += expected - payoff
            metrics["nodes_touched"] = self.tree.num_nodes  # every history, weighted exactly
        else:
            other = self._sample(y)
            column = self._payoff[:, other]
            if self.config.sample_own:
                realised = float(column[self._sample(strategy)])
                self._regrets += column - realised
            else:
                realised = float(strategy @ column)
                self._regrets += column - realised
            self._payoff_sum[1] += realised
            metrics["realised_payoff"] = float(realised)
            metrics["nodes_touched"] = 3 if self.config.sample_own else 1 + 2 * self._num_own
        self._strategy_sum += strategy
        self._payoff_sum[0] += payoff
        self._refresh()
        t = self.iterations + 1
        metrics["mean_payoff"] = float(self._payoff_sum[0] / t)
        if self.config.mode == "sampled":
            metrics["mean_realised_payoff"] = float(self._payoff_sum[1] / t)
        return metrics

    def _policy(self, strategy: np.ndarray) -> TabularPolicy:
        probs = tm.uniform_strategy(self.tree)
        probs[self._infoset] = 0.0
        probs[self._infoset, : self._num_own] = strategy
        return TabularPolicy.adopt(self.game, self.tree, probs)  # a fresh table: no copy

    def current_policy(self) -> TabularPolicy:
        """Regret matching on the current regrets (immutable; other seat's rows uniform)."""
        if self._current_policy is None:
            self._current_policy = self._policy(self._strategy)
        return self._current_policy

    def average_strategy(self) -> np.ndarray:
        """``S / t`` over this seat's actions (uniform before the first step)."""
        total = self._strategy_sum.sum()
        if total <= 0.0:
            return self._legal / self._legal.sum()
        return self._strategy_sum / total

    def average_policy(self) -> TabularPolicy:
        """The average of the strategies played so far (other seat's rows uniform)."""
        return self._policy(self.average_strategy())

    def cumulative_regrets(self) -> np.ndarray:
        """A copy of the cumulative regrets, one per own action."""
        return self._regrets.copy()

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {
            "regrets": self._regrets.copy(),
            "strategy_sum": self._strategy_sum.copy(),
            "payoff_sum": self._payoff_sum.copy(),
        }

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        arrays = self.checked_state_arrays(
            arrays,
            {
                "regrets": ArraySpec(self._regrets.shape),
                "strategy_sum": ArraySpec(self._strategy_sum.shape, nonnegative=True),
                "payoff_sum": ArraySpec(self._payoff_sum.shape),
            },
        )
        self._regrets = arrays["regrets"]
        self._strategy_sum = arrays["strategy_sum"]
        self._payoff_sum = arrays["payoff_sum"]
        self._refresh()


def _table_learners() -> str:
    """The registered learners with a table per information set that play any game (the
    tabular and sampling ones), as an error names them: a new one is named without an edit."""
    names = [
        repr(name)
        for name, cls in imported_learner_classes().items()
        if getattr(cls, "kind", "") in ("tabular", "sampling") and name != RegretMatching.name
    ]
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)
