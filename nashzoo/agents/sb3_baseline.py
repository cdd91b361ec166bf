"""Plain reinforcement learning baselines on Stable-Baselines3: registry names ``"ppo"`` (the
default RL baseline) and ``"dqn"``.

PPO: Schulman, J., Wolski, F., Dhariwal, P., Radford, A. and Klimov, O. (2017). *Proximal Policy
Optimization Algorithms.* arXiv:1707.06347. Invalid-action masking (sb3-contrib's MaskablePPO):
Huang, S. and Ontañón, S. (2022). *A Closer Look at Invalid Action Masking in Policy Gradient
Algorithms.* FLAIRS-35. DQN: Mnih, V. et al. (2015). *Human-level control through deep
reinforcement learning.* Nature 518. Implementations: Raffin, A. et al. (2021),
*Stable-Baselines3: Reliable Reinforcement Learning Implementations*, JMLR 22(268).

These learners answer an honest question: does a plain single-agent RL learner, which treats the
opponent as part of the environment, approach a Nash equilibrium? (In general it does not: it
learns a best response to whatever it faces, and in self-play it may cycle.) Their policies are
materialised over every information set, so their exploitability is exact.

One learner owns one seat and plays the :class:`~nashzoo.envs.single_agent.SingleAgentEnv`:

1. Opponent: in ``mode="opponent"`` (default) the Policy given to ``step()`` (a fixed policy,
   or the other seat's learner in the Trainer: independent learners). In ``mode="self_play"``
   it ignores that Policy and plays frozen snapshots of itself: every ``snapshot_every`` steps a
   copy of its policy joins a pool of the last ``snapshot_pool`` copies; each episode draws one,
   and the learner's seat is drawn at random per episode, so one network learns both seats.
2. One ``step()`` = one fixed chunk of ``steps_per_iteration`` learner decisions (env steps of
   the single-agent view): for PPO exactly one rollout of ``steps_per_iteration`` decisions
   (``n_steps`` from each of ``n_envs`` copies of the view) followed by its ``n_epochs`` of
   updates; for DQN that many environment steps with a gradient step every ``train_freq`` of
   them. Each chunk starts a fresh episode in every copy.
3. ``current_policy()`` is how it acts while training (PPO's stochastic policy; DQN's
   epsilon-greedy one); ``average_policy()`` is its output (PPO's policy; DQN's greedy policy):
   an RL learner has no average, so this is simply its final policy.

Determinism: Stable-Baselines3 draws from the *global* numpy, Python and torch generators. Every
call into it runs with those generators seeded from this learner's own ``np.random.Generator``
and restored afterwards, so the learner is deterministic for a given seed and leaves the
caller's global random state untouched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3 import DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.utils import ConstantSchedule, polyak_update
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper
from stable_baselines3.dqn.policies import DQNPolicy

from nashzoo.agents._torch_utils import (
    TrainingDivergedError,
    check_counts,
    check_flags,
    check_hidden_sizes,
    check_parameters,
    check_rates,
    pack_torch,
    resolve_device,
    unpack_torch,
)
from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.network_policy import NetworkPolicy, check_finite_on_legal
from nashzoo.agents.policy import Policy, policy_rows
from nashzoo.agents.registry import register
from nashzoo.agents.reward_scale import RewardScale, check_reward_scale, resolve_reward_scale
from nashzoo.agents.tree_play import SeatUnreached, unreached_step
from nashzoo.agents.tree_vec_env import TreeVecEnv, fits
from nashzoo.envs.single_agent import SingleAgentEnv, remap_illegal
from nashzoo.games import compile_tree
from nashzoo.games import treemath as tm
from nashzoo.io import ArraySpec

__all__ = ["DQNConfig", "DQNLearner", "PPOConfig", "PPOLearner", "SB3Policy"]

Mode = Literal["opponent", "self_play"]
_P = TypeVar("_P", bound=BasePolicy)
_KIND_MISMATCH = "SB3Policy's kind names another class of policy than the one it holds"


class ScaledRewards(VecEnvWrapper):
    """A VecEnv whose rewards are the wrapped one's divided by ``scale`` (the learner's reward
    scale): what the networks learn from. The envs' own episode totals, which the learner's
    metrics read, stay in the game's units."""

    def __init__(self, venv: VecEnv, scale: float) -> None:
        super().__init__(venv)
        self.scale = float(scale)

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards / self.scale, dones, infos


class SB3Config(LearnerConfig):
    """What every SB3 learner's config has and checks alike: ``steps_per_iteration``, ``mode``,
    the snapshot pool, ``net_arch``, ``learning_rate`` and ``gamma``. A subclass (a frozen
    dataclass declaring those fields) checks the rest of its fields in :meth:`_check_own`."""

    # The shared fields, for type checkers: each subclass declares them with its defaults (this
    # class is no dataclass, so these lines make no fields).
    steps_per_iteration: int
    mode: Mode
    snapshot_every: int
    snapshot_pool: int
    net_arch: tuple[int, ...]
    learning_rate: float
    gamma: float
    reward_scale: RewardScale
    device: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "net_arch", check_hidden_sizes(self.net_arch, "net_arch"))
        label = type(self).__name__
        check_counts(self, ("steps_per_iteration",))
        if self.mode not in ("opponent", "self_play"):
            raise ValueError(f"{label}.mode must be 'opponent' or 'self_play', got {self.mode!r}")
        check_counts(self, ("snapshot_every", "snapshot_pool"))
        check_rates(self, ("learning_rate",))
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"{label}.gamma must be in [0, 1], got {self.gamma!r}")
        check_reward_scale(self.reward_scale, f"{label}.reward_scale")
        self._check_own()

    def _check_own(self) -> None:
        """The subclass's own fields."""

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["net_arch"] = list(self.net_arch)
        return out


@dataclasses.dataclass(frozen=True)
class PPOConfig(SB3Config):
    """PPO settings (Stable-Baselines3's defaults unless noted).

    Attributes:
        steps_per_iteration: learner decisions per ``step()``, also PPO's ``n_steps`` (512;
            SB3's default is 2048, but a step must stay short, about a second on one core, so
            that equal wall-clock budgets in a race stay equal: the Trainer checks the budget
            only between steps).
        mode: ``"opponent"`` (play the Policy given to ``step``) or ``"self_play"`` (frozen
            snapshots of itself).
        snapshot_every: self-play: learner steps between two snapshots joining the pool.
        snapshot_pool: self-play: how many recent snapshots the opponent is drawn from.
        masked: use sb3-contrib's MaskablePPO with the env's action masks (default), so illegal
            actions get no probability; ``False`` uses plain PPO, whose illegal choices the env
            remaps to the lowest-numbered legal action.
        net_arch: hidden layers of the policy and value networks (SB3's default: 64, 64).
        learning_rate: Adam learning rate (3e-4).
        batch_size: minibatch size (64).
        n_epochs: passes over each rollout (10).
        gamma: discount; 1.0 here (episodes are a few moves long and only the final payoff
            counts; SB3's default is 0.99).
        gae_lambda: GAE parameter (0.95).
        clip_range: PPO clipping (0.2).
        ent_coef: entropy bonus (0.0).
        n_envs: copies of the single-agent view played side by side (1). Each rollout takes
            ``steps_per_iteration / n_envs`` decisions from every copy, so one forward pass of
            the network serves ``n_envs`` decisions: the same view, the same number of
            decisions per step, less torch overhead per decision (``steps_per_iteration`` must
            be a multiple of it).
        vec_env: how ``n_envs > 1`` copies are played: ``"auto"`` (default) plays them over the
            compiled tree (:class:`~nashzoo.agents.tree_vec_env.TreeVecEnv`, a few numpy calls
            per move of all copies) when the tree fits (``tree_vec_env.fits``: up to two
            million histories), else as ``"copies"``: ``SingleAgentEnv`` copies under
            Stable-Baselines3's ``DummyVecEnv`` (each move through the PettingZoo env);
            ``"tree"`` insists on the tree (even for one copy).
        reward_scale: the networks learn rewards divided by this. ``"auto"`` (default): the
            game's largest absolute payoff where that is below 0.01 or above 100, else 1
            (Kuhn, Leduc: 1); ``"game"``: always that payoff; or a number
            (:mod:`nashzoo.agents.reward_scale`). Unscaled, payoffs of 1e6 made the value loss
            swamp the policy's gradient under SB3's clipping: PPO stayed at uniform.
        device: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``.
    """

    steps_per_iteration: int = 512
    mode: Mode = "opponent"
    snapshot_every: int = 5
    snapshot_pool: int = 10
    masked: bool = True
    net_arch: tuple[int, ...] = (64, 64)
    learning_rate: float = 3e-4
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    n_envs: int = 1
    vec_env: Literal["auto", "tree", "copies"] = "auto"
    reward_scale: RewardScale = "auto"
    device: str = "cpu"

    def _check_own(self) -> None:
        label = type(self).__name__
        check_counts(self, ("batch_size", "n_epochs", "n_envs"))
        check_flags(self, ("masked",))
        if self.vec_env not in ("auto", "tree", "copies"):
            raise ValueError(
                f"{label}.vec_env must be 'auto', 'tree' or 'copies', got {self.vec_env!r}"
            )
        if self.steps_per_iteration < 2:
            raise ValueError(f"{label}.steps_per_iteration must be at least 2 (PPO's n_steps)")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(f"{label}.gae_lambda must be in [0, 1], got {self.gae_lambda!r}")
        if not self.clip_range > 0.0:
            raise ValueError(f"{label}.clip_range must be positive, got {self.clip_range!r}")
        if not self.ent_coef >= 0.0:
            raise ValueError(
                f"{label}.ent_coef must be >= 0 (a bonus for entropy), got {self.ent_coef!r}"
            )
        if self.steps_per_iteration % self.n_envs:
            raise ValueError(
                f"{label}.steps_per_iteration ({self.steps_per_iteration}) must be a multiple of "
                f"n_envs ({self.n_envs}): every copy of the env plays the same number of decisions"
            )
        left = self.steps_per_iteration % self.batch_size
        if self.masked and (self.batch_size == 1 or left == 1):
            raise ValueError(
                f"{label}.batch_size {self.batch_size} leaves a minibatch of one decision of the "
                f"{self.steps_per_iteration} a step collects, and MaskablePPO normalises each "
                "minibatch's advantages by their spread, which one sample has not (the network "
                "would become NaN); choose a batch_size of at least 2 that does not leave 1 "
                f"over (e.g. {_batch_without_a_single(self.steps_per_iteration, self.batch_size)})"
            )


def _batch_without_a_single(steps: int, batch: int) -> int:
    """The batch size nearest ``batch`` (at least 2) whose last minibatch of ``steps`` is not a
    single sample: what the refusal above suggests."""
    for distance in range(steps + batch):
        for candidate in (batch + distance, batch - distance):
            if candidate >= 2 and steps % candidate != 1:
                return candidate
    return steps


@dataclasses.dataclass(frozen=True)
class DQNConfig(SB3Config):
    """DQN settings.

    Attributes:
        steps_per_iteration: learner decisions per ``step()`` (500: short steps keep race
            budgets fair, see :class:`PPOConfig`).
        mode, snapshot_every, snapshot_pool: as in :class:`PPOConfig`.
        net_arch: hidden layers of the Q-network (SB3's default: 64, 64).
        learning_rate: Adam learning rate (SB3: 1e-4; 5e-4 here, these games are tiny).
        buffer_size: replay memory (SB3: 1e6; 50,000 here: the opponent changes).
        learning_starts: env steps before learning starts (1,000).
        batch_size: minibatch size (SB3: 32; 64 here).
        train_freq: env steps between gradient steps (4).
        target_update_interval: env steps between target-network refits (SB3: 1e4; 1,000).
        exploration_initial_eps, exploration_final_eps: epsilon-greedy range (1.0 -> 0.05).
        exploration_steps: env steps over which epsilon decays linearly (updated once per
            learner step).
        gamma: discount (1.0, see :class:`PPOConfig`).
        reward_scale: as in :class:`PPOConfig`.
        device: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``.
    """

    steps_per_iteration: int = 500
    mode: Mode = "opponent"
    snapshot_every: int = 5
    snapshot_pool: int = 10
    net_arch: tuple[int, ...] = (64, 64)
    learning_rate: float = 5e-4
    buffer_size: int = 50_000
    learning_starts: int = 1_000
    batch_size: int = 64
    train_freq: int = 4
    target_update_interval: int = 1_000
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    exploration_steps: int = 20_000
    gamma: float = 1.0
    reward_scale: RewardScale = "auto"
    device: str = "cpu"

    def _check_own(self) -> None:
        check_counts(
            self,
            (
                "buffer_size",
                "batch_size",
                "train_freq",
                "target_update_interval",
                "exploration_steps",
            ),
        )
        check_counts(self, ("learning_starts",), minimum=0)
        for name in ("exploration_initial_eps", "exploration_final_eps"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"DQNConfig.{name} must be in [0, 1], got {getattr(self, name)}")


def clone_sb3_policy(policy: _P) -> _P:
    """A CPU copy of a Stable-Baselines3 policy in evaluation mode.

    Rebuilt from the policy's own constructor parameters (what SB3's save/load does) and loaded
    with its state dict; the fresh initialisation runs under a forked torch generator, so the
    global one is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        clone = type(policy)(**policy._get_constructor_parameters())
    clone.load_state_dict({k: v.detach().cpu() for k, v in policy.state_dict().items()})
    clone.set_training_mode(False)
    return clone


def _categorical(dist: Distribution) -> torch.distributions.Categorical:
    """The torch distribution inside SB3's ``dist`` of a Discrete action space (SB3 types it
    for every action space: one distribution, or a list for MultiDiscrete)."""
    inner = dist.distribution
    assert isinstance(inner, torch.distributions.Categorical), "SB3Policy reads Discrete actions"
    return inner


class SB3Policy(NetworkPolicy):
    """A frozen CPU copy of a Stable-Baselines3 policy read as a nashzoo Policy.

    ``kind`` decides how the network becomes probabilities: ``"maskable"`` (MaskablePPO: the
    masked action distribution), ``"ppo"`` (the action distribution, with illegal mass remapped as
    the env does) or ``"dqn"`` (epsilon-greedy over every action around the greedy one, remapped
    as the env does; ``epsilon=0`` is the greedy policy).
    """

    def __init__(
        self,
        policy: BasePolicy,
        kind: Literal["maskable", "ppo", "dqn"],
        *,
        game_id: str,
        input_size: int,
        num_actions: int,
        seat: int | None,
        epsilon: float = 0.0,
    ) -> None:
        super().__init__(game_id, input_size, num_actions, seat)
        self.policy = clone_sb3_policy(policy)
        self.kind = kind
        self.epsilon = float(epsilon)

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        obs = torch.from_numpy(np.array(tensors, dtype=np.float32))
        policy = self.policy
        with torch.no_grad():
            if self.kind == "maskable":
                assert isinstance(policy, MaskableActorCriticPolicy), _KIND_MISMATCH
                dist = policy.get_distribution(obs, action_masks=np.array(masks))
                probs = _categorical(dist).probs.double().numpy()
                return np.where(masks, probs, 0.0) / np.where(masks, probs, 0.0).sum(
                    axis=1, keepdims=True
                )
            if self.kind == "ppo":
                assert isinstance(policy, ActorCriticPolicy), _KIND_MISMATCH
                probs = _categorical(policy.get_distribution(obs)).probs.double().numpy()
                # torch's float32 softmax sums to 1 only within ~1e-7, and numpy's sampler
                # refuses a sum off by more than ~1e-8: renormalise in float64 (the masked
                # branch above divides by its sum too).
                probs /= probs.sum(axis=1, keepdims=True)
                return remap_illegal(probs, masks)
            assert isinstance(policy, DQNPolicy), _KIND_MISMATCH
            q = policy.q_net(obs).numpy()
        check_finite_on_legal(q, masks, "the DQN's Q-network")
        probs = np.full(q.shape, self.epsilon / q.shape[1])
        probs[np.arange(q.shape[0]), np.argmax(q, axis=1)] += 1.0 - self.epsilon
        return remap_illegal(probs, masks)


class _SB3Learner(Learner):
    """Shared machinery of the Stable-Baselines3 learners (not registered itself)."""

    opponent_view: ClassVar[Literal["current", "average"]] = "current"
    kind: ClassVar[str] = "neural"
    reads_tensors: ClassVar[bool] = True
    # Checkpoints from before ``reward_scale`` (2026-11-27) learned unscaled rewards.
    settings_before_they_existed: ClassVar[dict[str, Any]] = {"reward_scale": 1.0}
    config: SB3Config
    model: BaseAlgorithm

    # --- hooks ------------------------------------------------------------------------------------
    def _make_model(self) -> BaseAlgorithm:
        raise NotImplementedError

    def _kind(self) -> Literal["maskable", "ppo", "dqn"]:
        raise NotImplementedError

    def _before_learn(self) -> None:
        """Per-chunk adjustments (DQN: this chunk's epsilon)."""

    def _after_learn(self) -> None:
        """Per-chunk bookkeeping once the chunk's updates are done (``mmd_ppo``: its moving
        average of the network)."""

    def _self_play_opponents(self) -> list[Policy]:
        """The pool self-play draws its opponents from (the frozen snapshots)."""
        return list(self._snapshots)

    def _extra_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {}

    def _extra_array_specs(self) -> dict[str, ArraySpec]:
        return {}

    def _load_extra_state(self, torch_state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        pass

    # --- setup ------------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        self.device = resolve_device(cfg.device)
        self.input_size = int(self.game.infoset_tensor_size)
        self.num_actions = int(self.game.num_actions)
        seat: int | Literal["random"] = "random" if cfg.mode == "self_play" else self.seat
        copies = getattr(cfg, "n_envs", 1)
        self.reward_scale = resolve_reward_scale(
            cfg.reward_scale, self.game, f"{type(cfg).__name__}.reward_scale"
        )
        self.vec_env = TreeVecEnv(self.game, copies, seat) if self._on_tree(copies) else None
        on_tree = self.vec_env is not None
        self.envs = [] if on_tree else [SingleAgentEnv(self.game, seat) for _ in range(copies)]
        self.env = self.envs[0] if self.envs else None
        with self._private_global_rng():
            self.model = self._make_model()
        # A logger of our own, with no outputs: without one, every learn() call (one per
        # step) makes Stable-Baselines3 create an empty SB3-<timestamp> folder in the
        # temporary directory, thousands of them over a ten-minute run.
        self.model.set_logger(Logger(folder=None, output_formats=[]))
        self._snapshots: list[SB3Policy] = []
        self._cache: dict[str, SB3Policy] = {}

    @contextlib.contextmanager
    def _private_global_rng(self) -> Iterator[None]:
        """Run Stable-Baselines3 with the global generators seeded from ``self.rng``, then put
        the caller's global generator states back."""
        np_state = np.random.get_state()
        py_state = random.getstate()
        seeds = self.rng.integers(0, 2**32 - 1, size=3)
        # torch.manual_seed would reseed every CUDA device's generator too, which fork_rng
        # puts back only for the devices it is given: seed and restore the CPU generator and,
        # for a learner on a GPU, that GPU's, and leave any other GPU's alone.
        cuda = [self._cuda_index()] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            np.random.seed(int(seeds[0]))
            random.seed(int(seeds[1]))
            torch.default_generator.manual_seed(int(seeds[2]))
            for index in cuda:
                torch.cuda.default_generators[index].manual_seed(int(seeds[2]))
            try:
                yield
            finally:
                np.random.set_state(np_state)
                random.setstate(py_state)

    def _cuda_index(self) -> int:
        """The index of the GPU this learner runs on (``"cuda"`` alone: the current one)."""
        index = self.device.index
        return torch.cuda.current_device() if index is None else index

    def _on_tree(self, copies: int) -> bool:
        """Whether the copies are played over the compiled tree (config ``vec_env``)."""
        choice = getattr(self.config, "vec_env", "copies")
        if choice == "tree":
            return True
        return choice == "auto" and copies > 1 and fits(self.game)

    def _training_env(self) -> SingleAgentEnv | VecEnv:
        """What Stable-Baselines3 trains on: the env itself, or the copies side by side, their
        rewards divided by the reward scale where it is not 1 (:class:`ScaledRewards`)."""
        env: SingleAgentEnv | VecEnv
        if self.vec_env is not None:
            env = self.vec_env
        elif len(self.envs) == 1 and self.reward_scale == 1.0:
            return self.envs[0]
        else:
            env = DummyVecEnv([functools.partial(Monitor, env) for env in self.envs])
        return env if self.reward_scale == 1.0 else ScaledRewards(env, self.reward_scale)

    def _env_totals(self) -> np.ndarray:
        """Moves, episodes and the sum of the learner's returns, over every copy of the env."""
        envs: list[Any] = [self.vec_env] if self.vec_env is not None else self.envs
        return np.array([[e.moves, e.episodes, e.return_sum] for e in envs]).sum(axis=0)

    # --- policies ---------------------------------------------------------------------------------
    def _policy(self, epsilon: float = 0.0, network: BasePolicy | None = None) -> SB3Policy:
        """A frozen copy of ``network`` (default: the network being trained) as a Policy."""
        return SB3Policy(
            self.model.policy if network is None else network,
            self._kind(),
            game_id=self.game.id,
            input_size=self.input_size,
            num_actions=self.num_actions,
            seat=None if self.config.mode == "self_play" else self.seat,
            epsilon=epsilon,
        )

    def current_policy(self) -> SB3Policy:
        """How the learner acts while training (a frozen copy)."""
        if "current" not in self._cache:
            self._cache["current"] = self._policy(self._behaviour_epsilon())
        return self._cache["current"]

    def network_policy(self) -> SB3Policy:
        """The network being trained, acting greedily for DQN (a frozen copy): what self-play
        snapshots are taken of."""
        if "network" not in self._cache:
            self._cache["network"] = self._policy(0.0)
        return self._cache["network"]

    def average_policy(self) -> SB3Policy:
        """The learner's output policy (a frozen copy; RL keeps no average, so this is
        :meth:`network_policy`)."""
        return self.network_policy()

    def _behaviour_epsilon(self) -> float:
        return 0.0

    # --- one step ---------------------------------------------------------------------------------
    def _step(self, opponent: Policy) -> dict[str, float]:
        cfg = self.config
        if cfg.mode == "self_play":
            if self.iterations % cfg.snapshot_every == 0:
                self._snapshots.append(self.network_policy())
                del self._snapshots[: -cfg.snapshot_pool]
            pool = self._self_play_opponents()
        else:
            pool = [opponent]
        for env in [self.vec_env] if self.vec_env is not None else self.envs:
            env.set_opponent(pool)
        for env in self.envs:  # asked only if an env draws many empty episodes in a row
            env.reach_check = functools.partial(self._reached_by, pool)
        before = self._env_totals()
        model_env = self.model.env
        assert model_env is not None, "_make_model gives the model its env"
        with self._private_global_rng():
            model_env.seed(int(self.rng.integers(2**31 - 1)))
            self.model.action_space.seed(int(self.rng.integers(2**31 - 1)))
            self.model.set_env(model_env, force_reset=True)  # each chunk starts fresh
            self._before_learn()
            try:
                self.model.learn(total_timesteps=cfg.steps_per_iteration, reset_num_timesteps=False)
            except SeatUnreached:  # the opponents end every game first: nothing to learn from
                self._cache.clear()
                moves, _, _ = self._env_totals() - before
                return unreached_step(int(moves), self.game)
            except ValueError as err:  # torch distributions refuse NaN logits
                self._cache.clear()
                self._check_finite(err)
                raise
            finally:
                self._release_last_distribution()
        self._cache.clear()
        self._check_finite()
        self._after_learn()
        moves, episodes, returns = self._env_totals() - before
        return {
            "env_steps": int(moves),
            "learner_steps": cfg.steps_per_iteration,
            "episodes": int(episodes),
            "mean_return": float(returns) / max(int(episodes), 1),
            "timesteps": self.model.num_timesteps,
        }

    def _release_last_distribution(self) -> None:
        """Drop the action distribution SB3's policy keeps from its last training minibatch:
        its logits carry that minibatch's autograd graph, so ``copy.deepcopy`` of a ``ppo``
        learner after a step failed ("Only Tensors created explicitly by the user ... support
        the deepcopy protocol"), and the graph's memory stayed held between steps. The next
        forward pass sets a new one."""
        action_dist = getattr(self.model.policy, "action_dist", None)
        if getattr(action_dist, "distribution", None) is not None:
            action_dist.distribution = None  # type: ignore[union-attr]

    def _reached_by(self, pool: Sequence[Policy]) -> bool:
        """Whether the env copies' seat gets to move against some policy of ``pool``: exact
        over the compiled tree where it fits (the envs would otherwise draw 100,000 empty
        episodes, about 20 s, and then stop the run); assumed where the game is too big to
        compile (the envs then step its states, and give up after those draws)."""
        if not fits(self.game):
            return True
        tree = compile_tree(self.game)
        seats = (0, 1) if self.config.mode == "self_play" else (self.seat,)
        return any(
            tm.reaches_player(tree, seat, functools.partial(policy_rows, tree, policy))
            for policy in pool
            for seat in seats
        )

    def _check_finite(self, cause: BaseException | None = None) -> None:
        """Raise :class:`TrainingDivergedError` if a parameter is NaN/inf."""
        for name, param in self.model.policy.named_parameters():
            if not bool(torch.isfinite(param).all()):
                raise TrainingDivergedError(
                    f"{self.name}: parameter {name} became NaN/inf during learner step "
                    f"{self.iterations + 1}; training stopped (any checkpoint written before is "
                    "kept). Lower the learning rate."
                ) from cause

    # --- checkpoints ------------------------------------------------------------------------------
    def save(self, path: Any) -> None:
        """Checkpoint (refused, keeping any previous file, if the network holds NaN/inf)."""
        check_parameters({"policy": self.model.policy}, learner=self.name)
        super().save(path)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        extra_torch, extra_arrays = self._extra_state()
        torch_state = {
            "input_size": self.input_size,
            "policy": {k: v.detach().cpu() for k, v in self.model.policy.state_dict().items()},
            "optimizer": self.model.policy.optimizer.state_dict(),
            "num_timesteps": int(self.model.num_timesteps),
            "snapshots": [
                {k: v.detach().cpu() for k, v in s.policy.state_dict().items()}
                for s in self._snapshots
            ],
            **extra_torch,
        }
        return {"torch_state": pack_torch(torch_state), **extra_arrays}

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        arrays = self.checked_state_arrays(
            arrays, {"torch_state": ArraySpec.blob(), **self._extra_array_specs()}
        )
        state = unpack_torch(arrays["torch_state"], self.device)
        if int(state["input_size"]) != self.input_size:
            raise CheckpointError(
                f"the checkpoint's network reads {state['input_size']} features but "
                f"{self.game.display_id} has information-set tensors of size {self.input_size}"
            )
        self.model.policy.load_state_dict(state["policy"])
        self.model.policy.optimizer.load_state_dict(state["optimizer"])
        self.model.num_timesteps = int(state["num_timesteps"])
        self._snapshots = []
        for sd in state["snapshots"]:
            snap = self._policy(0.0)
            snap.policy.load_state_dict(sd)
            self._snapshots.append(snap)
        self._load_extra_state(state, arrays)
        self._cache.clear()


@register
class PPOLearner(_SB3Learner):
    """PPO (sb3-contrib's MaskablePPO by default) on the single-agent view of one seat."""

    name: ClassVar[str] = "ppo"
    Config: ClassVar[type[LearnerConfig]] = PPOConfig
    config: PPOConfig

    def _kind(self) -> Literal["maskable", "ppo", "dqn"]:
        return "maskable" if self.config.masked else "ppo"

    def _make_model(self) -> BaseAlgorithm:
        algo = MaskablePPO if self.config.masked else PPO
        return algo(
            "MlpPolicy", self._training_env(), ent_coef=self.config.ent_coef, **self._ppo_kwargs()
        )

    def _ppo_kwargs(self) -> dict[str, Any]:
        """PPO's settings from the config (all but the policy and the entropy coefficient)."""
        cfg = self.config
        return {
            "learning_rate": cfg.learning_rate,
            "n_steps": cfg.steps_per_iteration // cfg.n_envs,
            "batch_size": min(cfg.batch_size, cfg.steps_per_iteration),
            "n_epochs": cfg.n_epochs,
            "gamma": cfg.gamma,
            "gae_lambda": cfg.gae_lambda,
            "clip_range": cfg.clip_range,
            "policy_kwargs": {"net_arch": list(cfg.net_arch)},
            "device": self.device,
            "verbose": 0,
        }


class _TimestepClockDQN(DQN):
    """Stable-Baselines3's DQN whose target-network clock is the public ``num_timesteps``.

    SB3 times target refits with a private call counter that no public API can restore from a
    checkpoint. With one environment that counter always equals ``num_timesteps`` (both start at
    zero and grow by one per environment step, and the learner never resets the timestep count),
    so keying the refit on ``num_timesteps`` changes nothing in a run, and a resumed run refits
    at the same steps as an uninterrupted one. ``_on_step`` is SB3's documented hook for this.
    """

    def _on_step(self) -> None:
        interval = max(self.target_update_interval // self.n_envs, 1)
        if (self.num_timesteps // self.n_envs) % interval == 0:
            polyak_update(self.q_net.parameters(), self.q_net_target.parameters(), self.tau)
            polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)
        self.exploration_rate = self.exploration_schedule(self._current_progress_remaining)
        self.logger.record("rollout/exploration_rate", self.exploration_rate)


@register
class DQNLearner(_SB3Learner):
    """DQN (Stable-Baselines3) on the single-agent view of one seat."""

    name: ClassVar[str] = "dqn"
    Config: ClassVar[type[LearnerConfig]] = DQNConfig
    config: DQNConfig
    model: _TimestepClockDQN  # what _make_model builds

    def _kind(self) -> Literal["maskable", "ppo", "dqn"]:
        return "dqn"

    def _make_model(self) -> _TimestepClockDQN:
        cfg = self.config
        model = _TimestepClockDQN(
            "MlpPolicy",
            self._training_env(),  # DQN plays one env: self.env
            learning_rate=cfg.learning_rate,
            buffer_size=cfg.buffer_size,
            learning_starts=cfg.learning_starts,
            batch_size=cfg.batch_size,
            gamma=cfg.gamma,
            train_freq=cfg.train_freq,
            target_update_interval=cfg.target_update_interval,
            exploration_initial_eps=cfg.exploration_initial_eps,
            exploration_final_eps=cfg.exploration_final_eps,
            policy_kwargs={"net_arch": list(cfg.net_arch)},
            device=self.device,
            verbose=0,
        )
        return model

    def _epsilon(self) -> float:
        cfg = self.config
        frac = min(1.0, self.model.num_timesteps / cfg.exploration_steps)
        return cfg.exploration_initial_eps + frac * (
            cfg.exploration_final_eps - cfg.exploration_initial_eps
        )

    def _behaviour_epsilon(self) -> float:
        return self._epsilon()

    def _before_learn(self) -> None:
        # SB3 derives epsilon from the progress of the current learn() call, which restarts at
        # every chunk; use a schedule over all env steps instead (constant within a chunk).
        epsilon = self._epsilon()
        self.model.exploration_schedule = ConstantSchedule(epsilon)
        self.model.exploration_rate = epsilon

    _BUFFER_FIELDS = (
        "observations",
        "next_observations",
        "actions",
        "rewards",
        "dones",
        "timeouts",
    )

    def _replay_buffer(self) -> ReplayBuffer:
        buf = self.model.replay_buffer
        assert buf is not None, "SB3's DQN makes its replay buffer in its constructor"
        return buf

    def _extra_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        buf = self._replay_buffer()
        size = buf.buffer_size if buf.full else buf.pos
        arrays = {f"replay/{f}": np.asarray(getattr(buf, f)[:size]) for f in self._BUFFER_FIELDS}
        torch_state = {
            "replay_pos": int(buf.pos),
            "replay_full": bool(buf.full),
        }
        return torch_state, arrays

    def _extra_array_specs(self) -> dict[str, ArraySpec]:
        buf = self._replay_buffer()
        return {
            f"replay/{f}": ArraySpec.of((None, *getattr(buf, f).shape[1:]), getattr(buf, f).dtype)
            for f in self._BUFFER_FIELDS
        }

    def _load_extra_state(self, torch_state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        buf = self._replay_buffer()
        for f in self._BUFFER_FIELDS:
            stored = arrays[f"replay/{f}"]
            target = getattr(buf, f)
            if stored.shape[1:] != target.shape[1:] or stored.shape[0] > target.shape[0]:
                raise CheckpointError(
                    f"replay field {f} has shape {stored.shape}, the buffer holds "
                    f"{target.shape}: a checkpoint of another game or configuration"
                )
            target[: stored.shape[0]] = stored
        buf.pos = int(torch_state["replay_pos"])
        buf.full = bool(torch_state["replay_full"])
