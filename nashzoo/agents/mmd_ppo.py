"""Magnetic Mirror Descent on Stable-Baselines3's PPO, registry name ``"mmd_ppo"``.

Sokota, S., D'Orazio, R., Kolter, J. Z., Loizou, N., Lanctot, M., Mitliagkas, I., Brown, N. and
Kroer, C. (2023). *A Unified Approach to Reinforcement Learning, Quantal Response Equilibria, and
Two-Player Zero-Sum Games.* ICLR 2023, arXiv:2206.05825.

Plain PPO in self-play is a best-response dynamic: it chases the opponent and, in a zero-sum game
with a mixed equilibrium, cycles instead of converging (``ppo`` stays flat on Kuhn). MMD changes
the objective, not the machinery. Each update maximises, at every state of the rollout,

    E_pi[A] - alpha * KL(pi || rho) + ent_coef * H(pi)

under PPO's clipped trust region (the proximal term of mirror descent, ``KL(pi, pi_old) / eta``,
enforced the way PPO enforces it). ``rho`` is the *magnet*: the reverse KL pulls the policy
toward it, which makes the regularised game strongly monotone; its solution is a quantal
response equilibrium (QRE), and MMD's last iterate converges to it linearly. To reach
a Nash equilibrium rather than a QRE, the paper either moves the magnet toward the current policy
(``rho <- rho^(1 - eta_m) pi^eta_m``) or keeps the uniform magnet and anneals ``alpha`` toward
zero. By default this learner does the latter, with the paper's schedule: learner step ``t``
uses ``alpha_t = alpha * sqrt(d / (d + t))`` (``d = alpha_decay``) and the learning rate scaled
alike, the ``1 / sqrt(t)`` temperature and step size of the paper's annealed-temperature runs
(its guarantee needs a step size proportional to ``alpha``: ``eta <= alpha / L^2``, rate
``1 / (1 + eta * alpha)`` per step). The moving magnet is available as a refresh to a frozen
copy of the current policy every ``magnet_every`` learner steps (the geometric step with
``eta_m = 1``, taken every ``magnet_every`` steps); on Leduc it did no better in screening.
The entropy bonus is the pull toward the uniform policy (``H(pi) = log|A| - KL(pi || uniform)``).

How it is built on Stable-Baselines3 (sb3-contrib's MaskablePPO, with action masks):
:class:`MagnetPolicy` returns, in the slot where PPO's loss reads the action entropy, the
regulariser ``ent_coef * H(pi) - alpha * KL(pi || rho)`` computed exactly from the masked action
distributions, and :class:`MMDPPO` runs PPO with an entropy coefficient of one, so PPO's own
``loss = policy_loss - mean(regulariser) + vf_coef * value_loss`` is MMD's. Advantages are not
normalised (SB3's default normalises them), so ``alpha`` is in the units of the rewards the
networks learn: chips, the unit of the payoffs, unless ``reward_scale`` divides them (its
``"auto"`` default does only for a game whose largest payoff is below 0.01 or above 100, where
an ``alpha`` in chips would swamp the rewards or vanish beside them).

Self-play: one network plays both seats (the seat is drawn per episode) against a frozen copy of
itself taken at the start of each learner step (``snapshot_every=1``, ``snapshot_pool=1``),
i.e. simultaneous updates of both players against the current policy, as MMD prescribes. The
rollout of a learner step is ``n_envs = 64`` copies of ``ppo``'s single-agent view played side
by side, 32 decisions each, so one forward pass of the network serves 64 decisions (over the
compiled tree, :class:`~nashzoo.agents.tree_vec_env.TreeVecEnv`, when it fits).

A moving average of the network (``ema_rate``): an exponential moving average of its
parameters, the *EMA network*, can serve as the magnet (``magnet="ema"``: EMAgnet, Maidment, T.,
Lanier, J. B. et al. 2026, *EMAgnet: Parameter-Space EMA Regularization for Policy Gradient
Self-Play in Large Games*, arXiv:2606.23995) and as the output (``output="ema"``): it averages
away the sampling noise that keeps the last iterate hovering. With ``ema_eta`` its rate decays
as ``(1 + eta) / (t + eta)``, polynomial-decay averaging (Shamir, O. and Zhang, T. 2013,
*Stochastic Gradient Descent for Non-smooth Optimization: Convergence Results and Optimal
Averaging Schemes*, ICML), an average over a window that grows with training.

Where it stands (BENCHMARKS.md, "Neural learners: levels held", 3 seeds x 600 s of training in
the Trainer on the shared 2-core machine): Kuhn with the defaults (last iterate) 0.061
[0.055-0.074] at 600 s; with ``ema_rate=0.02, magnet="ema", output="ema"`` 0.022 [0.007-0.048]
(goal 0.05; the networks it averages 0.05-0.07; plain ``ppo`` 0.31-0.33); with the defaults'
training and the polynomial-decay average as output (``ema_rate=0.002, ema_eta=3.0,
output="ema"``) 0.026 [0.026-0.030]. Leduc with
``alpha=2.0`` 0.53 [0.45-0.80] (last iterate, 3 seeds); with ``alpha=5.0, alpha_decay=2`` and
the polynomial-decay average as output (``ema_rate=0.002, ema_eta=3.0, output="ema"``) 0.229
[0.192-0.245] at 600 s (goal 0.25; uniform play 2.37; the networks it averages 0.28-0.72; a
constant ``ema_rate=0.01`` instead: 0.300 [0.265-0.308], flat from five minutes on). On Leduc
the EMA magnet diverges, so there the average is the output only. The screening figures
behind the defaults are in :class:`MMDPPOConfig`.

Which policy is evaluated: by default the **last iterate**. MMD is a last-iterate method (the
paper's results are all about the current policy), so :meth:`average_policy` returns the
current network, as for ``ppo``. With ``output="ema"`` it returns the EMA network instead (an
average of recent iterates in parameter space, EMAgnet's evaluated policy); the reports above
say which they measured. Self-play always plays the network being trained
(:meth:`network_policy`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.utils import ConstantSchedule, polyak_update

from nashzoo.agents._torch_utils import check_counts
from nashzoo.agents.base import CheckpointError, LearnerConfig
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.agents.registry import register
from nashzoo.agents.sb3_baseline import (
    Mode,
    PPOConfig,
    PPOLearner,
    SB3Policy,
    clone_sb3_policy,
)
from nashzoo.games.base import is_finite_number

__all__ = ["MMDPPO", "MMDPPOConfig", "MMDPPOLearner", "MagnetPolicy"]


class MagnetPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic whose "entropy" output is MMD's regulariser.

    ``evaluate_actions`` returns ``ent_coef * H(pi) - alpha * KL(pi || rho)`` per state instead of
    ``H(pi)``; ``rho`` is :attr:`magnet` (a frozen copy of this policy, or ``None`` for the
    uniform policy over the legal actions). Everything else is MaskablePPO's.
    """

    alpha: float = 0.0
    ent_coef: float = 0.0

    def set_magnet(self, magnet: MaskableActorCriticPolicy | None) -> None:
        """Pull toward ``magnet`` (a frozen policy; ``None``: uniform) from now on."""
        # Held in a tuple so that torch does not register it as a sub-module (it must not be
        # trained, saved with this policy's state dict or copied into snapshots).
        self._magnet = (magnet,)

    @property
    def magnet(self) -> MaskableActorCriticPolicy | None:
        return getattr(self, "_magnet", (None,))[0]

    def evaluate_actions(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        action_masks: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        legal = (
            # SB3 types a policy's action space as any Space; MaskablePPO's is Discrete.
            torch.ones((obs.shape[0], self.action_space.n), dtype=torch.bool, device=obs.device)  # type: ignore[attr-defined]
            if action_masks is None
            else torch.as_tensor(action_masks, dtype=torch.bool, device=obs.device).reshape(
                obs.shape[0], -1
            )
        )
        # One pass of each network (MaskablePPO's own evaluate_actions would run the actor a
        # second time, through its distribution object): the actor's masked log-probabilities
        # give both the taken action's and the regulariser's.
        features = self.extract_features(obs)
        if self.share_features_extractor:
            latent_pi, latent_vf = self.mlp_extractor(features)
        else:
            pi_features, vf_features = features  # one per network, as SB3's forward() reads them
            latent_pi = self.mlp_extractor.forward_actor(pi_features)
            latent_vf = self.mlp_extractor.forward_critic(vf_features)
        values = self.value_net(latent_vf)
        log_pi = torch.log_softmax(self.action_net(latent_pi).masked_fill(~legal, -1e9), dim=1)
        log_prob = log_pi.gather(1, actions.long().reshape(-1, 1)).squeeze(1)
        pi = log_pi.exp()
        magnet = self.magnet
        if magnet is None:
            log_rho = -torch.log(legal.sum(dim=1, keepdim=True).float()).expand_as(log_pi)
        else:
            with torch.no_grad():
                log_rho = self._masked_log_probs(magnet, obs, legal)
        zero = torch.zeros_like(log_pi)
        kl = torch.where(legal, pi * (log_pi - log_rho), zero).sum(dim=1)
        entropy = -torch.where(legal, pi * log_pi, zero).sum(dim=1)
        return values, log_prob, self.ent_coef * entropy - self.alpha * kl

    @staticmethod
    def _masked_log_probs(
        policy: MaskableActorCriticPolicy, obs: torch.Tensor, legal: torch.Tensor
    ) -> torch.Tensor:
        features = policy.extract_features(obs, policy.pi_features_extractor)
        # SB3 types extract_features for both of its uses; given one extractor it is one tensor.
        assert isinstance(features, torch.Tensor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        return torch.log_softmax(logits.masked_fill(~legal, -1e9), dim=1)


class MMDPPO(MaskablePPO):
    """MaskablePPO with the MMD objective (see the module docstring).

    ``alpha`` weighs the reverse KL toward the magnet, ``ent_coef`` the entropy; PPO's own entropy
    coefficient is fixed at one because :class:`MagnetPolicy` hands it the whole regulariser.
    """

    policy: MagnetPolicy  # built from the policy class handed to MaskablePPO below

    def __init__(self, env: Any, *, alpha: float, ent_coef: float, **kwargs: Any) -> None:
        super().__init__(MagnetPolicy, env, ent_coef=1.0, normalize_advantage=False, **kwargs)
        self.set_temperatures(alpha, ent_coef)
        self.policy.set_magnet(None)

    def set_temperatures(self, alpha: float, ent_coef: float) -> None:
        """The weights of the magnet's reverse KL and of the entropy in the next updates."""
        self.policy.alpha = float(alpha)
        self.policy.ent_coef = float(ent_coef)

    def refresh_magnet(self) -> None:
        """Make a frozen copy of the current policy the magnet (on the policy's device: the
        copy is made on the CPU)."""
        magnet = clone_sb3_policy(self.policy).to(self.policy.device)
        self.policy.set_magnet(magnet)


@dataclasses.dataclass(frozen=True)
class MMDPPOConfig(PPOConfig):
    """MMD settings: :class:`~nashzoo.agents.sb3_baseline.PPOConfig`'s, with these changes.

    Attributes:
        mode: ``"self_play"`` (default; MMD is a self-play method) or ``"opponent"``.
        snapshot_every, snapshot_pool: 1 and 1: the opponent is the policy as it was at the
            start of the current learner step (simultaneous updates of both seats).
        alpha: weight of the reverse KL toward the magnet, in reward units (chips unless
            ``reward_scale`` divides the payoffs, see :class:`PPOConfig`), at the first learner step
            (1.0; where each default comes from: the table in ``MMDPPOConfig``'s docstring).
        alpha_decay: the annealing of ``alpha`` and of the learning rate: learner step ``t``
            (from 0) uses ``alpha * sqrt(alpha_decay / (alpha_decay + t))`` and the learning
            rate scaled alike, the ``1 / sqrt(t)`` schedule of the paper's annealed-temperature
            runs (10); 0 keeps both constant.
        lr_power: the learning rate follows the annealing of ``alpha`` to this power:
            ``learning_rate * (alpha_t / alpha) ** lr_power`` (1.0: the step size proportional
            to ``alpha``, as the paper's guarantee asks; 0.5 anneals it as ``t ** -1/4``, 0 keeps
            it constant).
        magnet_every: learner steps between two refreshes of the magnet to the current policy
            (the paper's moving magnet, taken as whole steps); 0 (default) keeps the uniform
            magnet, which with an annealed ``alpha`` is the paper's annealing-temperature
            variant (without annealing it converges to a QRE, not a Nash equilibrium).
        ema_rate: keep an exponential moving average of the network's parameters (the *EMA
            network*), moved this fraction of the way toward the network after every learner
            step, starting from the initial network; 0 (default) keeps none. It serves as the
            magnet (``magnet="ema"``), as the output (``output="ema"``), or both.
        ema_eta: polynomial-decay averaging (Shamir & Zhang 2013) when > 0: after learner step
            ``t`` (from 1) the EMA network moves ``max(ema_rate, (1 + ema_eta) / (t +
            ema_eta))`` of the way, an average over a window that grows with training (about
            the last ``t / (1 + ema_eta)`` steps) instead of a fixed one; ``ema_rate`` is then
            the floor of that rate. 0 (default): the constant ``ema_rate``.
        magnet: ``"uniform"`` (default; with ``magnet_every`` > 0, refreshed copies of the
            network instead) or ``"ema"``: the EMA network, EMAgnet's adaptive magnet (Maidment
            et al. 2026, arXiv:2606.23995; the parameter-space form of the paper's moving
            magnet). Needs ``ema_rate``; excludes ``magnet_every``.
        output: which policy :meth:`~MMDPPOLearner.average_policy` returns (what is evaluated):
            ``"last_iterate"`` (default; the network being trained, what MMD prescribes) or
            ``"ema"``: the EMA network, an average of recent iterates that smooths the
            sampling noise of the last one (EMAgnet reports its magnet less exploitable than
            its last iterate). Needs ``ema_rate``.
        ent_coef: weight of the entropy bonus (the pull toward uniform; 0.0).
        steps_per_iteration, n_envs, batch_size: 2048 decisions per learner step from 64 copies
            of the env side by side (one forward pass per 64 decisions: 3-4x the decisions per
            second of one env on Leduc), minibatches of 256.
        learning_rate: 3e-3 at the first step (annealed with ``alpha``).
        n_epochs: passes over each rollout (4; PPO's 10 were no better on Leduc).

    Defaults and where they come from. "Paper": the schedules of the paper's tabular Nash runs
    (annealed temperature: ``alpha_t = 1/sqrt(t)`` on Kuhn and ``5/sqrt(t)`` on Leduc with step
    size ``1/sqrt(t)`` and the uniform magnet; moving magnet: ``alpha = 1``, step size 0.1,
    magnet step 0.05 per iteration). Screening: ``benchmarks/bench_neural.py levels`` with
    ``--config``, one seed each, exploitability at 60/90/120 s (curves in
    ``docs/results/neural_levels/mmd_ppo_screening.json``, the table in BENCHMARKS.md, section
    "mmd_ppo: screening the schedule"); the defaults' own levels are in "Neural learners: levels
    held". One set of defaults, chosen on Kuhn, leaving training and output as MMD prescribes
    (uniform magnet, last iterate). Per game, the best settings found:

    * Kuhn-sized games: ``ema_rate=0.02, magnet="ema", output="ema"``: 0.022 [0.007-0.048] at
      600 s over 3 seeds (second-half medians 0.011-0.016), against 0.061 for the defaults;
      the defaults' training with the polynomial-decay average as output (``ema_rate=0.002,
      ema_eta=3.0, output="ema"``): 0.026 [0.026-0.030], below 0.05 from about 180 s on.
    * Leduc: ``alpha=5.0, alpha_decay=2, ema_rate=0.002, ema_eta=3.0, output="ema"`` (the
      paper's Leduc temperature is five times its Kuhn one; the output a polynomial-decay
      average of the network): 0.229 [0.192-0.245] at 600 s over 3 seeds (with
      ``ema_eta=1.0``, a window twice as long: 0.222 [0.215-0.244]); with a constant
      ``ema_rate=0.01`` instead 0.300 [0.265-0.308]; the last iterate with ``alpha=2.0`` ends at
      0.53 [0.45-0.80] over 3 seeds, with the defaults it wanders between 0.40 and 1.08. The
      EMA magnet rises to 0.9-1.5 on Leduc: keep the uniform magnet there.

    ====================  =========  =====================================================
    setting               default    source
    ====================  =========  =====================================================
    magnet and            uniform,   paper (annealed temperature, ``1/sqrt(t)``). Kuhn:
    ``alpha``,            1.0, 10    0.07-0.10 at 60-120 s with alpha 1, 0.11-0.15 with
    ``alpha_decay``                  alpha 2. Leduc at 60-120 s: 0.50-0.69 annealed against
                                     0.67-0.85 for a constant alpha 0.2-1.0 with the
                                     magnet refreshed every 10-50 steps (one seed each:
                                     barely apart); alpha 2 over 300 s: 0.45-0.61 from 90 s.
    ``learning_rate``     3e-3       Leduc 60-90 s (one env): 0.82-1.10, against about 1.6
                                     for 1e-3 (the earlier defaults' level row); 1e-2 with
                                     64 envs: 0.87-1.15 against 0.68-0.77 for 3e-3.
    ``n_envs``, steps,    64, 2048,  Leduc 60-120 s: 0.68-0.77, against 0.94-1.03 for 16
    ``batch_size``        256        envs x 32 decisions (minibatches of 64); decisions
                                     per second in BENCHMARKS.md's profile section.
    ``n_epochs``          4          10 epochs: 0.69-0.77 on Leduc, no better, 2.5x the SGD.
    ====================  =========  =====================================================
    """

    mode: Mode = "self_play"
    snapshot_every: int = 1
    snapshot_pool: int = 1
    alpha: float = 1.0
    alpha_decay: int = 10
    magnet_every: int = 0
    lr_power: float = 1.0
    ema_rate: float = 0.0
    ema_eta: float = 0.0
    magnet: Literal["uniform", "ema"] = "uniform"
    output: Literal["last_iterate", "ema"] = "last_iterate"
    steps_per_iteration: int = 2048
    n_envs: int = 64
    batch_size: int = 256
    learning_rate: float = 3e-3
    n_epochs: int = 4

    def _check_own(self) -> None:
        super()._check_own()
        if not is_finite_number(self.alpha):
            raise ValueError(f"MMDPPOConfig.alpha must be a finite number, got {self.alpha!r}")
        if self.alpha < 0 or self.ent_coef < 0:
            raise ValueError(
                f"MMDPPOConfig.alpha and ent_coef must be >= 0, got {self.alpha} and "
                f"{self.ent_coef}"
            )
        if not self.masked:
            raise ValueError(
                "MMDPPOConfig.masked must be True: the KL to the magnet is taken over the legal "
                "actions (leave masked at its default)"
            )
        check_counts(self, ("alpha_decay", "magnet_every"), minimum=0, note=" (0 turns it off)")
        if not (is_finite_number(self.lr_power) and 0.0 <= self.lr_power <= 2.0):
            raise ValueError(
                f"MMDPPOConfig.lr_power must be a number in [0, 2] (1: the learning rate "
                f"proportional to alpha), got {self.lr_power!r}"
            )
        if not (is_finite_number(self.ema_rate) and 0.0 <= self.ema_rate <= 1.0):
            raise ValueError(
                f"MMDPPOConfig.ema_rate must be a number in [0, 1] (0 keeps no moving average), "
                f"got {self.ema_rate!r}"
            )
        if not (is_finite_number(self.ema_eta) and self.ema_eta >= 0.0):
            raise ValueError(
                f"MMDPPOConfig.ema_eta must be a finite number >= 0 (0: the constant ema_rate), "
                f"got {self.ema_eta!r}"
            )
        if self.ema_eta and not self.ema_rate:
            raise ValueError(
                "MMDPPOConfig.ema_eta shapes the moving average's rate: set ema_rate too (the "
                "floor of that rate, e.g. 0.001)"
            )
        for field, allowed in (("magnet", ("uniform", "ema")), ("output", ("last_iterate", "ema"))):
            value = getattr(self, field)
            if value not in allowed:
                raise ValueError(f"MMDPPOConfig.{field} must be one of {allowed}, got {value!r}")
            if value == "ema" and not self.ema_rate:
                raise ValueError(
                    f"MMDPPOConfig.{field}='ema' needs the moving average: set ema_rate (e.g. "
                    "0.01, the fraction it moves toward the network per learner step)"
                )
        if self.magnet == "ema" and self.magnet_every:
            raise ValueError(
                "MMDPPOConfig: magnet='ema' and magnet_every are two ways to move the magnet; "
                f"set one of them (got magnet_every={self.magnet_every})"
            )


@register
class MMDPPOLearner(PPOLearner):
    """Magnetic Mirror Descent on MaskablePPO (see the module docstring)."""

    name: ClassVar[str] = "mmd_ppo"
    Config: ClassVar[type[LearnerConfig]] = MMDPPOConfig
    config: MMDPPOConfig
    model: MMDPPO  # what _make_model builds

    def _kind(self) -> Any:
        return "maskable"

    def _make_model(self) -> MMDPPO:
        cfg = self.config
        model = MMDPPO(
            self._training_env(), alpha=cfg.alpha, ent_coef=cfg.ent_coef, **self._ppo_kwargs()
        )
        # The EMA network starts as a copy of the initial one, on its device; as the magnet it
        # is the same module, so that moving the average moves the magnet.
        device = model.policy.device
        self.ema = clone_sb3_policy(model.policy).to(device) if cfg.ema_rate else None
        if cfg.magnet == "ema":
            model.policy.set_magnet(self.ema)
        return model

    def _after_learn(self) -> None:
        if self.ema is not None:
            polyak_update(self.model.policy.parameters(), self.ema.parameters(), self._ema_rate())

    def _ema_rate(self) -> float:
        """How far the EMA network moves after this learner step (``ema_rate``, or the
        polynomial-decay rate with ``ema_eta``)."""
        cfg = self.config
        if not cfg.ema_eta:
            return cfg.ema_rate
        t = self.iterations + 1  # this step, counted from 1
        return max(cfg.ema_rate, min(1.0, (1.0 + cfg.ema_eta) / (t + cfg.ema_eta)))

    def ema_policy(self) -> SB3Policy:
        """The EMA network as a Policy (a frozen copy); needs ``ema_rate``."""
        if self.ema is None:
            raise ValueError("this mmd_ppo learner keeps no moving average: set ema_rate")
        if "ema" not in self._cache:
            self._cache["ema"] = self._policy(0.0, self.ema)
        return self._cache["ema"]

    def average_policy(self) -> SB3Policy:
        """The output policy: the last iterate (default) or, with ``output="ema"``, the EMA
        network (a frozen copy)."""
        return self.network_policy() if self.config.output == "last_iterate" else self.ema_policy()

    def _self_play_opponents(self) -> list[Policy]:
        # The opponent is frozen for a whole learner step: materialise it once over every
        # information set (one batched forward pass) instead of one network call per move, which
        # took about a third of a step on Leduc.
        return [TabularPolicy.from_policy(self.game, snap) for snap in self._snapshots]

    def _alpha(self) -> float:
        cfg = self.config
        if not cfg.alpha_decay:
            return cfg.alpha
        return cfg.alpha * math.sqrt(cfg.alpha_decay / (cfg.alpha_decay + self.iterations))

    def _before_learn(self) -> None:
        cfg = self.config
        model = self.model
        if cfg.magnet_every and self.iterations % cfg.magnet_every == 0 and self.iterations:
            model.refresh_magnet()
        alpha = self._alpha()
        model.set_temperatures(alpha, cfg.ent_coef)
        if cfg.alpha:
            scale = (alpha / cfg.alpha) ** cfg.lr_power
            model.lr_schedule = ConstantSchedule(cfg.learning_rate * scale)

    def _extra_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        def weights(net: Any) -> dict[str, Any] | None:
            return None if net is None else {k: v.cpu() for k, v in net.state_dict().items()}

        # With magnet="ema" the magnet is the EMA network: stored once, as "ema".
        magnet = None if self.config.magnet == "ema" else self.model.policy.magnet
        return {"magnet": weights(magnet), "ema": weights(self.ema)}, {}

    def _load_extra_state(self, torch_state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        model = self.model
        if self.ema is not None:
            if torch_state.get("ema") is None:
                raise CheckpointError(
                    "this mmd_ppo checkpoint holds no moving average, but its config sets "
                    "ema_rate; it was not written by this learner"
                )
            self.ema.load_state_dict(torch_state["ema"])
        if self.config.magnet == "ema":
            return  # the magnet is the EMA network, loaded above
        if torch_state.get("magnet") is None:
            model.policy.set_magnet(None)
            return
        model.refresh_magnet()
        magnet = model.policy.magnet
        assert magnet is not None, "refresh_magnet sets one"
        magnet.load_state_dict(torch_state["magnet"])
