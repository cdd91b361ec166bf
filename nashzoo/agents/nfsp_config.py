"""NFSP's settings: :class:`NFSPConfig`, what each ``"auto"`` setting is per memory, and
where every default comes from (the learner itself: :mod:`nashzoo.agents.nfsp`).

Defaults and where they come from (figures only):

=========================  =========  ==========================================================
field                      default    source / reason
=========================  =========  ==========================================================
memory                     auto       tuned here (2026-11-26): ``"infoset"`` wherever play is
                                      over the tree. Leduc, 600 s, 3 seeds (with the "auto"
                                      settings below): 0.191 [0.183-0.194] (0.228 with 128
                                      episodes a step) against 0.263 [0.249-0.303] for
                                      ``"samples"`` (BENCHMARKS.md, "NFSP's memories per
                                      information set"; those runs had numpy's busy BLAS
                                      threads; with one thread per run, 0.132 [0.130-0.134])
anticipatory               auto       0.2 with ``memory="infoset"``, tuned here (2026-11-26); 0.1
                                      with ``"samples"``, the paper's (Leduc) and OpenSpiel's
                                      Kuhn example. On Leduc with ``memory="infoset"``, one
                                      thread and ``sl_every`` 4 (600 s, seed 0): 0.03 0.152,
                                      0.05 0.138, 0.2 0.118, 0.3 0.132, against 0.123 for 0.1;
                                      0.2 over 3 seeds 0.120 [0.118-0.121] against 0.125
                                      [0.123-0.127]. The three settings of 2026-11-26 together
                                      (this, ``sl_every`` 4 and the 10% window) against the
                                      earlier defaults, one process each: Kuhn at 60 s 0.0115
                                      [0.0103-0.0138] against 0.0091 [0.0068-0.0095] (3
                                      seeds: a little worse), Liar's dice at 120 s 0.117
                                      against 0.149 (seed 0), Leduc at 600 s in the levels
                                      table (BENCHMARKS.md, "A replay window as long as the
                                      play")
reservoir_capacity         2,000,000  paper and OpenSpiel (Kuhn example: 2e6)
epsilon_start / _end       0.06/0.001 OpenSpiel Kuhn example (paper: 0.06 decaying to 0)
hidden_sizes               (64,)      paper (Leduc: one hidden layer of 64 ReLUs);
                                      OpenSpiel's Kuhn example uses 128. Leduc, 600 s, seed 0:
                                      (32,) 0.452, (128,) 0.347 and (64, 64) 0.450 against
                                      0.30-0.36 for (64,); with ``memory="infoset"``, one
                                      thread and ``sl_every`` 4, (128,) 0.140 after 7,663
                                      iterations against 0.121-0.124 for (64,) at the same
                                      iterations
target_update_every        300        paper (target network refit every 300 updates)
replay_capacity            auto       5,000,000 with ``memory="infoset"`` (12 bytes a
                                      transition, and a window of any length costs the same
                                      to refresh: only the transitions entering and leaving
                                      it are counted, ``InfosetReplay``); 200,000 with
                                      ``"samples"``, the paper's and OpenSpiel's. The most the
                                      window below can grow to
replay_fraction            auto       0.1 with ``memory="infoset"``, tuned here (2026-11-26):
                                      the Q-network learns from the most recent 10% of this
                                      learner's own transitions. Leduc, two processes, with
                                      ``sl_every`` 4 and anticipatory 0.2: 0.071
                                      [0.071-0.077] at 600 s over 3 seeds, <= 0.10 from 270 s
                                      on, against 0.111 [0.110-0.113] (2 seeds) with the
                                      earlier 5% up to 200,000, a window that stopped growing
                                      after about three minutes of play, after which the
                                      greedy Q-policies stayed 0.03-0.17 chips short of exact
                                      best responses (BENCHMARKS.md, "A replay window as long
                                      as the play"). Alone (without the other two settings)
                                      the 10% window is worse on Kuhn at 60 s (0.0100 against
                                      0.0091) and on Liar's dice at 120 s (0.270 against
                                      0.149, seed 0). 0.02 with ``"samples"``, tuned here:
                                      the Q-network's minibatches come from the most recent 2%
                                      of this learner's own transitions (at least
                                      ``replay_window_min``, 2,000): a short window while the
                                      average policy (most of what the opponent plays) moves
                                      fast, a longer one once it moves slowly. Against a fixed
                                      window of the last 15,000 transitions (the default until
                                      2026-11-25; BENCHMARKS.md, "NFSP on Leduc: what holds it
                                      back" and "Neural learners: levels held"): Leduc 0.256
                                      against 0.297 at 600 s and 0.353 against 0.501 held from
                                      300 s (3 and 2 seeds, median); Kuhn 0.034 against 0.048
                                      at 60 s (3 seeds); Liar's dice lower at every checkpoint
                                      of two 120-s seeds. ``None``: the whole replay memory
                                      (200,000 transitions are minutes of play, so the Q-network
                                      learns a best response to a stale opponent: with batch
                                      128 and 1 update per 64 steps Kuhn stalled near 0.15
                                      here, as OpenSpiel's does)
episodes_per_step          auto       512 with ``memory="infoset"``: a step's episodes are played
                                      together, so more of them share each numpy call of play
                                      (Leduc, 600 s, seed 0: 0.191 against 0.255 with 128);
                                      128 with ``"samples"``, whose time is in the updates
learn_every (infoset)      auto: 64   with ``memory="infoset"`` an update costs the same however
                                      much data its memories hold, so more play per update
                                      buys more samples per information set. Leduc, 150 s, seed
                                      0: one update per 8 own transitions 0.556, per 32 0.356,
                                      per 128 0.695; at 600 s per 64 (window 5%) 0.255
batch_size / learn_every   512 / 8    (``learn_every`` 8 is ``"auto"`` with ``memory="samples"``;
                                      with ``"infoset"``, ``batch_size`` caps the information
                                      sets of one update) tuned here (paper: 2 updates of 128
                                      per 128 steps; OpenSpiel: 1 of 128 per 64): rarely played
                                      actions need many passes to get accurate Q-values
optimizer / learning rates adam, 1e-3 tuned here with Adam (paper: plain SGD, 0.1 RL and 0.005
                                      SL; OpenSpiel: SGD 0.01 / 0.01); ``optimizer="sgd"``
                                      is available. With ``memory="infoset"``, one thread and
                                      ``sl_every`` 4 (Leduc, seed 0): a Q rate of 3e-3 0.132
                                      after 8,510 iterations, 5e-4 0.126 after 8,248, against
                                      0.121-0.124 for 1e-3 at those iterations
q_targets                  one_step   paper (DQN). Screened on Leduc with the replay window
                                      (150 s, seed 0; BENCHMARKS.md, "NFSP on Leduc", round 3):
                                      ``"greedy_return"`` 0.569 and ``"monte_carlo"`` 0.710
                                      at 150 s against 0.542
double_q                   False      Double DQN's bootstrap, Leduc, 600 s, seeds 0 and 1: 0.302
                                      and 0.279 against the defaults' 0.303 and 0.263 (no
                                      better: the max's upward bias is not what holds the
                                      Q-networks back)
reward_scale               auto       1 on Kuhn, Leduc and Liar's dice; 13 (Leduc's largest
                                      payoff) with the window held 0.298 at 600 s against
                                      0.256 without (3 seeds, median): worse
rl_/sl_lr_decay_updates    None       a Q rate falling from 5,000 updates: 0.725 at 150 s
                                      (worse); the average network's: 0.538 (no different);
                                      the Q rate from 50,000: 0.268 at 600 s on seed 0
                                      against 0.247 (no better)
sl_every                   auto       4 with ``memory="infoset"``, tuned here (2026-11-26); 1
                                      with ``"samples"`` (2: 0.244 at 600 s on seed 0 against
                                      0.247, with 11% more iterations: no better). With
                                      ``memory="infoset"`` and one thread, 4: 0.125
                                      [0.123-0.127] against 0.132 [0.130-0.134] at 600 s on
                                      Leduc (3 seeds), 45% more iterations; with the 10% window,
                                      Kuhn at 60 s 0.0132 against 0.0100 without it, Liar's
                                      dice at 120 s 0.208 against 0.270 (seed 0)
average_weight_power       0          the paper's uniform average. Leduc, 600 s, seed 0: 1 (later
                                      play weighted linearly) 0.137 against 0.130 side by side
                                      (ahead until about 300 s, level after); with the busy BLAS
                                      threads of earlier runs, 0.184 and 0.177 (seeds 0, 1) and
                                      2 0.200, against 0.191 (seed 0)
greedy_sl_targets          True       the reservoir stores the greedy action, not the explored
                                      one, so exploration noise stays out of the average (a
                                      JSAI 2018 paper, "Excluding the Data with Exploration
                                      from Supervised Learning Improves NFSP", reports this)
=========================  =========  ==========================================================

"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

from nashzoo.agents._torch_utils import check_counts, check_flags, check_hidden_sizes, check_rates
from nashzoo.agents.base import LearnerConfig
from nashzoo.agents.reward_scale import RewardScale, check_reward_scale
from nashzoo.games.base import is_finite_number, is_whole_number

__all__ = ["AUTO_SETTINGS", "NFSPConfig", "needs_samples"]


# What each ``"auto"`` setting is, per memory (this module's docstring says why).
# ``replay_capacity``: the paper's 200,000 sampled rows (up to 256 bytes each on Leduc);
# transitions kept as ids cost 12 bytes, and the window over them costs nothing to refresh
# however long it is, so it may grow to 5,000,000 (60 MB).
AUTO_SETTINGS: dict[str, dict[str, Any]] = {
    "infoset": {
        "episodes_per_step": 512,
        "learn_every": 64,
        "replay_fraction": 0.1,
        "replay_capacity": 5_000_000,
        "sl_every": 4,
        "anticipatory": 0.2,
    },
    "samples": {
        "episodes_per_step": 128,
        "learn_every": 8,
        "replay_fraction": 0.02,
        "replay_capacity": 200_000,
        "sl_every": 1,
        "anticipatory": 0.1,
    },
}


@dataclasses.dataclass(frozen=True)
class NFSPConfig(LearnerConfig):
    """NFSP settings (this module's docstring says where each default comes from).

    Attributes:
        hidden_sizes: hidden layer widths of both the Q-network and the average network.
        anticipatory: ``eta``, probability that an episode is played in best-response mode;
            ``"auto"``: 0.2 with ``memory="infoset"``, 0.1 (the paper's) with ``"samples"``.
        episodes_per_step: episodes one ``step()`` plays (the learner's native unit of work);
            ``"auto"``: 512 with ``memory="infoset"``, 128 with ``"samples"``.
        lanes: envs stepped in lock step (episodes in flight at once) when play is over envs;
            more lanes than ``episodes_per_step`` play as ``episodes_per_step`` of them.
        replay_capacity: circular replay memory size (transitions) for the Q-network;
            ``"auto"``: 5,000,000 with ``memory="infoset"``, 200,000 with ``"samples"``.
        replay_fraction: a fraction ``f`` (``"auto"``: 0.1 with ``memory="infoset"``, 0.02
            with ``"samples"``): the Q-network's minibatches (or, with ``"infoset"``, its loss) come
            from the most recent ``f`` times this learner's own transitions so far, clipped to
            ``[replay_window_min, replay_capacity]``: a window that grows as the average policy
            (most of what the opponent plays) changes more slowly. ``None``: from the whole
            replay memory. See :attr:`NFSP.replay_window`.
        replay_window_min: the smallest window when ``replay_fraction`` is set.
        reservoir_capacity: reservoir memory size (state-action pairs) for the average net.
        batch_size: minibatch size of both networks' updates.
        learn_every: own transitions per update of each network.
        sl_every: Q-network updates per update of the average network (1: every update trains
            both; ``"auto"``: 4 with ``memory="infoset"``, 1 with ``"samples"``). The average
            network only has to follow the reservoir's average, which
            moves like ``1/t``; skipping its updates leaves more time for play and Q updates
            (its forward and backward passes and its minibatch are part of every joint update).
        min_buffer_to_learn: updates start once the replay memory holds this many transitions.
        rl_learning_rate: Q-network learning rate.
        sl_learning_rate: average network learning rate.
        optimizer: ``"adam"`` or ``"sgd"`` (the paper and OpenSpiel use SGD).
        target_update_every: Q-network updates between hard refits of the target network.
        epsilon_start: exploration rate of the epsilon-greedy best response at the start.
        epsilon_end: exploration rate after ``epsilon_decay_steps`` own transitions (linear).
        epsilon_decay_steps: own transitions over which epsilon decays.
        discount: discount factor of the Q-learning targets (1 for these episodic games).
        q_targets: what the Q-network regresses on. ``"one_step"`` (default, DQN): the reward
            plus the target network's best value at this seat's next decision.
            ``"greedy_return"`` (Watkins's Q(lambda=1)): follow the episode on while this seat's
            later actions were the Q-network's greedy ones when played, and bootstrap from the
            target network only at the first later decision where they were not (the episode's
            return when there is none): fewer bootstrapped, stale targets in these short
            episodes and still a target for the greedy policy. ``"monte_carlo"``: the episode's
            (undiscounted) return from every decision, an estimate of the value of the policy
            that was played (mostly the average policy), not of a best response.
        double_q: Double DQN's bootstrap (van Hasselt, Guez and Silver 2016): the next
            decision's action is the Q-network's greedy one and its value the target
            network's, instead of the target network's largest value (whose maximum over noisy
            estimates is biased upwards).
        reward_scale: the Q-network learns rewards divided by this (its outputs are values in
            these units); greedy actions do not change, but the targets' size relative to
            Adam's step sizes does. ``"auto"`` (default): the game's largest absolute payoff
            where that is below 0.01 or above 100, else 1; ``"game"``: always that payoff (13
            chips in Leduc, 2 in Kuhn); both read it from the compiled tree
            (:mod:`nashzoo.agents.reward_scale`).
        rl_lr_decay_updates: ``None`` (default): a constant Q-network learning rate. ``T``: the
            rate is ``rl_learning_rate * sqrt(T / max(T, updates))``, falling like
            ``1/sqrt(updates)`` after ``T`` updates (with a growing replay window, the
            Q-network's targets get more numerous and less noisy as play goes on).
        sl_lr_decay_updates: the same schedule for the average network's learning rate.
        rl_loss: ``"mse"`` (OpenSpiel's default) or ``"huber"`` (on Leduc, 600 s, seed 0: 0.694
            against 0.30-0.36 for ``"mse"``: with payoffs of up to 13 chips its clipped
            gradients learn the values slowly).
        greedy_sl_targets: store the Q-network's greedy action (not the explored one) in the
            reservoir memory, so exploration noise does not leak into the average policy.
        average_weight_power: ``p``: the best-response play of this learner's step ``t`` enters
            the average network's loss with weight ``t ** p``. ``0`` (the paper's): every
            best-response decision counts the same, fictitious play's ``1/t`` average. ``1``:
            later play counts linearly more (the average's step after step ``t`` is about
            ``2/t``, as in linear CFR's averages); early best responses, played against an
            opponent far from the current one, fade faster. Generalised weakened fictitious
            play (Leslie and Collins 2006) converges with any such step sizes that fall to zero
            and sum to infinity. Needs ``memory="infoset"`` (a reservoir keeps a uniform sample).
        max_grad_norm: gradient-norm clipping for both networks (``None``: no clipping).
        play: how episodes are played. ``"tree"``: all of a step's episodes at once over the
            game's compiled tree (:class:`~nashzoo.agents.tree_play.TreePlay`: a few numpy
            calls per move of every episode; ``lanes`` does not apply). ``"env"``: ``lanes``
            PettingZoo envs in lock step. ``"auto"`` (default): the tree where it fits
            (:func:`~nashzoo.agents.tree_play.fits`: up to two million histories, Liar's dice
            included), else the envs: a game too big to tabulate is never compiled to be
            played. Both play the same game; only the random draws differ.
        memory: what the networks learn from. ``"samples"`` (the paper's): rows of sampled
            transitions and best-response decisions, minibatches of ``batch_size`` drawn from
            them. ``"infoset"``: the same data kept as information-set ids
            (:class:`~nashzoo.agents.replay_memory.InfosetReplay` for the replay,
            :class:`~nashzoo.agents.replay_memory.InfosetMemory` for the best-response play,
            all of it, as a reservoir of unbounded capacity would hold), and every update
            takes the exact gradient of each network's loss over its whole memory (the
            Q-network's squared error over every transition of the replay window, the average
            network's cross-entropy over every best-response decision), at the cost of one
            pass over the memory's distinct information sets (over ``batch_size`` of them,
            drawn in proportion to their data, where there are more). Needs play over the
            compiled tree (the ids come from it; the networks still see only the
            information-set tensors and learn only from sampled play), and the squared error
            (no ``double_q``, no Huber loss). ``"auto"`` (default): ``"infoset"`` where the
            episodes are played over the tree and those options are off, else ``"samples"``.
        device: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``. Small MLPs are fastest on CPU.
    """

    hidden_sizes: tuple[int, ...] = (64,)
    anticipatory: float | Literal["auto"] = "auto"
    episodes_per_step: int | Literal["auto"] = "auto"
    lanes: int = 32
    replay_capacity: int | Literal["auto"] = "auto"
    replay_fraction: float | Literal["auto"] | None = "auto"
    replay_window_min: int = 2_000
    reservoir_capacity: int = 2_000_000
    batch_size: int = 512
    learn_every: int | Literal["auto"] = "auto"
    sl_every: int | Literal["auto"] = "auto"
    min_buffer_to_learn: int = 1_000
    rl_learning_rate: float = 1e-3
    sl_learning_rate: float = 1e-3
    optimizer: Literal["adam", "sgd"] = "adam"
    target_update_every: int = 300
    epsilon_start: float = 0.06
    epsilon_end: float = 0.001
    epsilon_decay_steps: int = 2_000_000
    discount: float = 1.0
    rl_loss: Literal["mse", "huber"] = "mse"
    q_targets: Literal["one_step", "greedy_return", "monte_carlo"] = "one_step"
    double_q: bool = False
    reward_scale: RewardScale = "auto"
    rl_lr_decay_updates: int | None = None
    sl_lr_decay_updates: int | None = None
    greedy_sl_targets: bool = True
    average_weight_power: float = 0.0
    max_grad_norm: float | None = None
    play: Literal["auto", "tree", "env"] = "auto"
    memory: Literal["auto", "infoset", "samples"] = "auto"
    device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "hidden_sizes", check_hidden_sizes(self.hidden_sizes, "hidden_sizes")
        )
        check_flags(self, ("double_q", "greedy_sl_targets"))  # before anything reads them
        check_counts(
            self,
            (
                "lanes",
                "replay_window_min",
                "reservoir_capacity",
                "batch_size",
                "target_update_every",
                "epsilon_decay_steps",
            ),
        )
        _check_memory_options(self)
        # With an "auto" capacity the bound depends on the memory, which the learner settles
        # (it checks again then): here, the largest that "auto" can be.
        capacity = (
            max(auto["replay_capacity"] for auto in AUTO_SETTINGS.values())
            if self.replay_capacity == "auto"
            else self.replay_capacity
        )
        if not isinstance(self.min_buffer_to_learn, (int, np.integer)) or not (
            0 <= self.min_buffer_to_learn <= capacity
        ):
            raise ValueError(
                "NFSPConfig.min_buffer_to_learn must be an integer in [0, replay_capacity] "
                f"({capacity:,}), got {self.min_buffer_to_learn!r}"
            )
        fraction = self.replay_fraction
        if (
            fraction is not None
            and fraction != "auto"
            and not (is_finite_number(fraction) and 0.0 < fraction <= 1.0)
        ):
            raise ValueError(
                "NFSPConfig.replay_fraction must be in (0, 1], 'auto' or None (a fixed window "
                f"of replay_capacity), got {self.replay_fraction!r}"
            )
        eta = self.anticipatory
        if eta != "auto" and not (is_finite_number(eta) and 0.0 <= eta <= 1.0):
            raise ValueError(f"NFSPConfig.anticipatory must be in [0, 1] or 'auto', got {eta!r}")
        for name in ("epsilon_start", "epsilon_end", "discount"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"NFSPConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        check_rates(self, ("rl_learning_rate", "sl_learning_rate"))
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(
                f"NFSPConfig.optimizer must be 'adam' or 'sgd', got {self.optimizer!r}"
            )
        if self.rl_loss not in ("mse", "huber"):
            raise ValueError(f"NFSPConfig.rl_loss must be 'mse' or 'huber', got {self.rl_loss!r}")
        _check_q_target_options(self)
        if self.play not in ("auto", "tree", "env"):
            raise ValueError(f"NFSPConfig.play must be 'auto', 'tree' or 'env', got {self.play!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(
                f"NFSPConfig.max_grad_norm must be positive or None, got {self.max_grad_norm!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["hidden_sizes"] = list(self.hidden_sizes)
        return out


def _check_memory_options(cfg: NFSPConfig) -> None:
    """``memory`` and the settings whose ``"auto"`` depends on it."""
    for name in ("learn_every", "episodes_per_step", "replay_capacity", "sl_every"):
        if getattr(cfg, name) != "auto":
            check_counts(cfg, (name,), note=" or 'auto'")
    if cfg.memory not in ("auto", "infoset", "samples"):
        raise ValueError(
            f"NFSPConfig.memory must be 'auto', 'infoset' or 'samples', got {cfg.memory!r}"
        )
    power = cfg.average_weight_power
    if not (is_finite_number(power) and 0.0 <= power <= 8.0):
        raise ValueError(
            f"NFSPConfig.average_weight_power must be a number in [0, 8], got {power!r}"
        )
    if power and cfg.memory == "samples":
        raise ValueError(
            "NFSPConfig.average_weight_power weights the best-response play by when it was "
            "played, which a reservoir's uniform sample cannot; use memory='infoset' (or "
            "average_weight_power=0)"
        )
    if cfg.memory == "infoset" and needs_samples(cfg):
        raise ValueError(
            "NFSPConfig.memory='infoset' computes the squared error from sums per information "
            "set, so it cannot use double_q or the Huber loss; use memory='samples' for those"
        )


def needs_samples(cfg: NFSPConfig) -> bool:
    """Whether ``cfg`` asks for a Q loss that needs sampled rows (``memory="samples"``): Double
    DQN's per-update online argmax and the Huber loss are not sums of counts and targets."""
    return cfg.double_q or cfg.rl_loss != "mse"


def _check_q_target_options(cfg: NFSPConfig) -> None:
    """Validate the Q-target options (``q_targets``, ``reward_scale``, the
    learning-rate schedules) of an :class:`NFSPConfig`."""
    if cfg.q_targets not in ("one_step", "greedy_return", "monte_carlo"):
        raise ValueError(
            "NFSPConfig.q_targets must be 'one_step', 'greedy_return' or 'monte_carlo', got "
            f"{cfg.q_targets!r}"
        )
    check_reward_scale(cfg.reward_scale, "NFSPConfig.reward_scale")
    for name in ("rl_lr_decay_updates", "sl_lr_decay_updates"):
        value = getattr(cfg, name)
        if value is not None and not is_whole_number(value, 1):
            raise ValueError(
                f"NFSPConfig.{name} must be a positive integer (updates) or None (a "
                f"constant learning rate), got {value!r}"
            )
