"""Neural Fictitious Self-Play (NFSP), registry name ``"nfsp"``.

Heinrich, J. and Silver, D. (2016). *Deep Reinforcement Learning from Self-Play in
Imperfect-Information Games.* arXiv:1603.01121.

One learner owns one seat and learns only from the episodes it plays: sampled play, never a
value or probability read off the game tree (the episodes are played over the compiled tree
when it fits: the same game as the env's, with other random draws; ``play`` below):

1. At the start of every episode pick the mode: *best response* with probability ``eta``
   (the anticipatory parameter), otherwise *average policy*.
2. Play the episode: in best-response mode act epsilon-greedily on the Q-network, in
   average mode sample from the average-policy network. The opponent acts with the Policy
   given to :meth:`~nashzoo.agents.base.Learner.step`; chance is the env's.
3. Store every own transition ``(s, a, r, s', legal(s'), done)`` in a circular replay memory;
   in best-response mode also store ``(s, a)`` in a reservoir memory (a uniform sample of all
   best-response play so far).
4. Every ``learn_every`` own transitions: one DQN update of the Q-network on a replay
   minibatch (targets from a target network refit every ``target_update_every`` updates) and one
   supervised update of the average network (cross-entropy) on a reservoir minibatch.
5. The output (:meth:`NFSP.average_policy`) is the average network: by fictitious play, the
   average of the best responses approaches a Nash equilibrium.

Memories (``NFSPConfig.memory``). The paper keeps rows of sampled data and trains on minibatches
drawn from them (``"samples"``). Where the episodes are played over the compiled tree each
decision's information-set id is known, and the default (``"infoset"``) keeps the same data as
ids: the replay as (information set, action, reward, next information set) in a ring, the
best-response play as counts per information set and action (all of it, what a reservoir of
unbounded capacity would hold). A loss over every sample is then a loss over the distinct
information sets weighted by their samples, so each update takes the exact gradient of the
Q-network's squared error over the whole replay window and of the average network's
cross-entropy over all best-response play, for the cost of one pass over the memory's
information sets (``batch_size`` of them, drawn in proportion to their data, where there are
more), however many samples it holds. The networks still learn only from sampled play through
the information-set tensors; Deep CFR's ``memory="infoset"`` is the same idea.

Speed: each ``step()`` plays its ``episodes_per_step`` episodes all at once over the game's
compiled tree (:class:`~nashzoo.agents.tree_play.TreePlay`: every tick is one numpy forward
pass of each network, a frozen NumPy copy, for every episode where this seat is to move, and a
few numpy calls for chance and the opponent, whose Policy is asked once per step at each
information set play reaches). A game too big to compile (``play="env"``, or ``"auto"`` past
:func:`~nashzoo.agents.tree_play.fits`) is played in ``lanes`` raw
:class:`~nashzoo.envs.aec.GameAECEnv` s stepped in lock step instead, the opponent asked once per
information set per step. Play alone, 128 episodes (``bench_neural.py vec-env GAME nfsp``,
2026-11-25): Kuhn 1.5 ms over the tree against 4.9 in the envs, Leduc 3.0 against 12.4, Liar's
dice 4.7 against 27.2. The networks are fixed while a batch of episodes is played and trained
right after it. Each update computes both networks' gradients without autograd
(:class:`~nashzoo.agents.torch_networks.ManualMLP`: a few matrix products; 1.15x faster per
Leduc iteration than autograd, ``bench_neural.py autograd``) and takes one fused Adam step
without ``torch.optim``'s per-call bookkeeping (:func:`~nashzoo.agents._torch_utils.optimizer_step`,
the same update bit for bit); minibatches are gathered with ``take``. On Leduc the updates are
about 94% of the time; since these last changes (2026-11-25) a joint update costs 0.75-0.84x
what it did (BENCHMARKS.md, 'Neural learners: where the time goes') and the matrix products
are about 40% of it.

Settings, what each ``"auto"`` one is and where every default comes from:
:mod:`nashzoo.agents.nfsp_config`. How the learner plays during training, as a Policy:
:mod:`nashzoo.agents.nfsp_behaviour`.

Memory per entry (float32 tensors of size ``D``, ``A`` actions, int64 actions): replay
``8 D + A + 13`` bytes (``s``, ``s'``, legal mask of ``s'``, action, reward, done), reservoir
``4 D + A + 8`` bytes (``s``, legal mask, action); see :attr:`NFSP.memory_bytes_per_entry`. Kuhn
(``D = 11``): 103 and 54 bytes, so full default memories take about 21 MB and 108 MB per learner
(``np.zeros`` reserves them lazily: pages cost memory only once written); Leduc (``D = 30``):
256 and 131 bytes (51 MB and 262 MB full). With ``memory="infoset"``: 12 bytes a transition
(int32 ids; 60 MB for the full replay of 5,000,000, reached after 50,000,000 own transitions,
hours of play) and ``8 (A + 1)`` bytes an information set for the best-response play, whatever
its amount. A checkpoint keeps only the replay window's transitions (older ones are never read
again: the window's start only moves forward) and, with ``memory="samples"``, the whole
reservoir as far as it is filled (it is sampled from uniformly: up to the 108 MB above on Kuhn,
written at every checkpoint; a smaller ``reservoir_capacity`` makes both smaller), and a
learner sent to a worker process
(``Trainer(processes=2)``) carries only the transitions its ring holds, not the ring.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from nashzoo.agents._torch_utils import (
    TrainingDivergedError,
    as_tensors,
    check_loss,
    optimizer_step,
)
from nashzoo.agents.base import LearnerConfig
from nashzoo.agents.network_policy import NetworkPolicy, masked_softmax_np
from nashzoo.agents.neural_base import NeuralLearner
from nashzoo.agents.nfsp_behaviour import NFSPBehaviourPolicy, masked_argmax
from nashzoo.agents.nfsp_config import AUTO_SETTINGS, NFSPConfig, needs_samples
from nashzoo.agents.policy import BatchPolicy, Infoset, Policy, PolicyError
from nashzoo.agents.registry import register
from nashzoo.agents.replay_memory import (
    CircularBuffer,
    InfosetMemory,
    InfosetReplay,
    ReservoirBuffer,
)
from nashzoo.agents.reward_scale import resolve_reward_scale
from nashzoo.agents.torch_networks import ManualMLP, NumpyMLP, SoftmaxPolicy, build_mlp, hard_update
from nashzoo.agents.tree_play import SeatUnreached, TreePlay, fits, unreached_step
from nashzoo.envs.aec import GameAECEnv, agent_name
from nashzoo.games.infoset import widen_mask
from nashzoo.games.treemath import sample_cdf
from nashzoo.io import ArraySpec

__all__ = ["NFSP", "NFSPBehaviourPolicy", "NFSPConfig", "TrainingDivergedError"]


class _StagedDecisions:
    """The own decisions one :meth:`NFSP._play` call stages, one row each (tensor, mask, the
    action played, the greedy action, whether in best-response mode, its episode), linked per
    episode (``next_index``: decision -> the next own decision of its episode, -1 for none;
    ``last``, used while staging: episode -> its last own decision so far), plus every
    episode's return."""

    def __init__(self, episodes: int) -> None:
        self.s_rows: list[np.ndarray] = []
        self.m_rows: list[np.ndarray] = []
        self.actions: list[int] = []
        self.greedy_actions: list[int] = []
        self.br_rows: list[bool] = []
        self.episode_of: list[int] = []
        self.infosets: list[np.ndarray] = []
        self.next_index: list[int] = []
        self.last = [-1] * episodes
        self.returns = [0.0] * episodes

    def add(
        self,
        episodes: list[int],
        tensors: np.ndarray,
        masks: np.ndarray,
        chosen: list[int],
        greedy: list[int],
        br: list[bool],
        infosets: np.ndarray | None = None,
    ) -> None:
        """Stage one decision per entry of ``episodes`` (the episode each row belongs to)."""
        base = len(self.actions)
        last, next_index = self.last, self.next_index
        for i, e in enumerate(episodes):
            if last[e] >= 0:
                next_index[last[e]] = base + i
            last[e] = base + i
        next_index.extend([-1] * len(episodes))
        self.s_rows.append(tensors)
        self.m_rows.append(masks)
        self.actions.extend(chosen)
        self.greedy_actions.extend(greedy)
        self.br_rows.extend(br)
        self.episode_of.extend(episodes)
        if infosets is not None:
            self.infosets.append(infosets)

    def batch(self, input_size: int, num_actions: int, env_steps: int) -> dict[str, Any]:
        """The staged rows as arrays (what :meth:`NFSP._play` returns)."""
        s_rows, m_rows = self.s_rows, self.m_rows
        return {
            "s": np.concatenate(s_rows) if s_rows else np.zeros((0, input_size), np.float32),
            "mask": np.concatenate(m_rows) if m_rows else np.zeros((0, num_actions), bool),
            "a": np.asarray(self.actions, dtype=np.int64),
            "greedy": np.asarray(self.greedy_actions, dtype=np.int64),
            "br": np.asarray(self.br_rows, dtype=bool),
            "episode": np.asarray(self.episode_of, dtype=np.int64),
            "next": np.asarray(self.next_index, dtype=np.int64),
            "returns": np.asarray(self.returns, dtype=np.float32),
            "infosets": np.concatenate(self.infosets) if self.infosets else None,
            "env_steps": env_steps,
        }


@register
class NFSP(NeuralLearner):
    """Neural Fictitious Self-Play for one seat (see the module docstring)."""

    name: ClassVar[str] = "nfsp"
    Config: ClassVar[type[LearnerConfig]] = NFSPConfig
    opponent_view: ClassVar[Literal["current", "average"]] = "current"
    # Checkpoints from before these settings existed (``reward_scale`` 2026-11-23, ``memory``
    # 2026-11-26, ``play`` 2026-11-25) did not scale rewards, kept sampled rows and played in
    # PettingZoo envs.
    settings_before_they_existed: ClassVar[dict[str, Any]] = {
        "reward_scale": 1.0,
        "memory": "samples",
        "play": "env",
    }
    config: NFSPConfig

    # --- setup ---------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        self._setup_device()
        init_rng = np.random.default_rng([self.seed, 0x6E667370])  # "nfsp": init stream
        self.q_net = build_mlp(self.input_size, cfg.hidden_sizes, self.num_actions, init_rng)
        self.target_net = build_mlp(self.input_size, cfg.hidden_sizes, self.num_actions, init_rng)
        self.avg_net = build_mlp(self.input_size, cfg.hidden_sizes, self.num_actions, init_rng)
        hard_update(self.target_net, self.q_net)
        for net in (self.q_net, self.target_net, self.avg_net):
            net.to(self.device)
        self._q_pass = ManualMLP(self.q_net)
        self._target_pass = ManualMLP(self.target_net)
        self._avg_pass = ManualMLP(self.avg_net)
        # One optimiser, one parameter group per network: a joint update costs one optimiser
        # call instead of two, and per-parameter Adam/SGD states make it identical to two
        # separate optimisers.
        groups = [
            {"params": list(self.q_net.parameters()), "lr": cfg.rl_learning_rate},
            {"params": list(self.avg_net.parameters()), "lr": cfg.sl_learning_rate},
        ]
        if cfg.optimizer == "adam":
            fused = self.device.type in ("cpu", "cuda")
            self.optimizer: torch.optim.Optimizer = torch.optim.Adam(groups, fused=fused)
        else:
            self.optimizer = torch.optim.SGD(groups)
        on_tree = self._plays_on_tree()
        self.infoset_memory = cfg.memory == "infoset" or (
            cfg.memory == "auto" and on_tree and not needs_samples(cfg)
        )
        self.episodes_per_step = int(self._setting("episodes_per_step"))
        self._tree_play: TreePlay | None = None
        if on_tree:
            self._tree_play = TreePlay(self.game, self.episodes_per_step, self.seat, rng=self.rng)
        self._setup_memories()
        self.reward_scale = resolve_reward_scale(
            cfg.reward_scale, self.game, "NFSPConfig.reward_scale"
        )
        self.own_steps = 0  # own transitions so far (drives epsilon and the update schedule)
        self.rl_updates = 0
        self.sl_updates = 0
        self._update_credit = 0.0
        self._envs: list[GameAECEnv] = []
        if self._tree_play is None:
            self._envs = [
                GameAECEnv(self.game) for _ in range(min(cfg.lanes, self.episodes_per_step))
            ]
            self._agent = agent_name(self.seat)
            self._players = {agent_name(p): p for p in range(self.game.num_players)}
            probe = self._envs[0]
            probe.reset(seed=self.rng)
            self._env_takes_generator = probe.np_random is self.rng
        self._snapshots: dict[str, NetworkPolicy] = {}

    def _setting(self, name: str) -> Any:
        """Config field ``name``, its ``"auto"`` read from :data:`AUTO_SETTINGS` for this learner's
        memory."""
        value = getattr(self.config, name)
        if value != "auto":
            return value
        return AUTO_SETTINGS["infoset" if self.infoset_memory else "samples"][name]

    def _setup_memories(self) -> None:
        """The replay and the average network's memory: sampled rows (``memory="samples"``)
        or per-information-set ids and sums (``"infoset"``; see ``NFSPConfig.memory``)."""
        cfg = self.config
        d, a = self.input_size, self.num_actions
        self._targets_stale = True  # the replay's sums predate the target network
        self.learn_every = int(self._setting("learn_every"))
        fraction = self._setting("replay_fraction")
        self.replay_fraction: float | None = None if fraction is None else float(fraction)
        self.anticipatory = float(self._setting("anticipatory"))
        self.sl_every = int(self._setting("sl_every"))
        self.replay_capacity = int(self._setting("replay_capacity"))
        if cfg.min_buffer_to_learn > self.replay_capacity:
            memory = "infoset" if self.infoset_memory else "samples"
            raise ValueError(
                f"NFSPConfig.min_buffer_to_learn ({cfg.min_buffer_to_learn:,}) exceeds the replay "
                f"capacity ({self.replay_capacity:,}, 'auto' with memory={memory!r}): learning "
                "would never start; lower it or set replay_capacity"
            )
        if not self.infoset_memory:
            if cfg.average_weight_power:
                raise ValueError(
                    "NFSPConfig.average_weight_power needs memory='infoset', and this learner "
                    "keeps sampled rows (memory='samples': play in envs, double_q or the Huber "
                    "loss); set average_weight_power=0"
                )
            self.replay: CircularBuffer | InfosetReplay = CircularBuffer(
                self.replay_capacity,
                {
                    "s": ((d,), np.float32),
                    "a": ((), np.int64),
                    "r": ((), np.float32),
                    "s2": ((d,), np.float32),
                    "mask2": ((a,), np.bool_),
                    "done": ((), np.bool_),
                },
            )
            self.reservoir: ReservoirBuffer | InfosetMemory = ReservoirBuffer(
                cfg.reservoir_capacity,
                {"s": ((d,), np.float32), "mask": ((a,), np.bool_), "a": ((), np.int64)},
            )
            return
        if self._tree_play is None:
            raise ValueError(
                "NFSPConfig.memory='infoset' needs play over the compiled tree, and "
                f"{self.game.display_id} is played in envs (play={cfg.play!r}); use "
                "memory='samples'"
            )
        tree = self._tree_play.tree
        self.replay = InfosetReplay(self.replay_capacity, tree.num_infosets, a)
        self.reservoir = InfosetMemory(tree.num_infosets, a)
        self._all_inputs = torch.tensor(
            np.asarray(tree.infoset_tensors, dtype=np.float32), device=self.device
        )
        self._all_legal = torch.tensor(widen_mask(tree.legal_mask, a), device=self.device)
        self._one_hot = np.eye(a)
        self._batches: dict[str, tuple[Any, ...]] = {}

    def _plays_on_tree(self) -> bool:
        """Whether episodes are played over the compiled tree (``config.play``)."""
        choice = self.config.play
        if choice == "env":
            return False
        if self.game.num_players != 2:
            if choice == "tree":
                raise ValueError(
                    f"NFSPConfig.play='tree' needs a two-player game; {self.game.display_id} has "
                    f"{self.game.num_players} players (use play='env')"
                )
            return False
        return choice == "tree" or fits(self.game)

    @property
    def memory_bytes_per_entry(self) -> dict[str, int]:
        """Bytes one entry of each memory takes."""
        return {
            "replay": self.replay.bytes_per_entry,
            "reservoir": self.reservoir.bytes_per_entry,
        }

    @property
    def replay_window(self) -> int:
        """How many of the most recent transitions the Q-network's minibatches come from:
        ``replay_capacity``, or with ``replay_fraction`` set, that fraction of this learner's
        own transitions so far, clipped to ``[replay_window_min, replay_capacity]``."""
        cfg = self.config
        if self.replay_fraction is None:
            return self.replay_capacity
        grown = int(self.replay_fraction * self.own_steps)
        return min(self.replay_capacity, max(cfg.replay_window_min, grown))

    @property
    def _window_only(self) -> bool:
        """Whether only the replay window is ever read again (``memory="infoset"`` with a
        window that is a fraction of all play, whose start only moves forward)."""
        return isinstance(self.replay, InfosetReplay) and self.replay_fraction is not None

    def _replay_in_use(self) -> int:
        """Transitions the Q-network learns from: the window where only it is read again (a
        checkpoint keeps only it, so this is the same before and after a resume); else the
        whole replay memory."""
        if self._window_only:
            return min(self.replay_window, len(self.replay))
        return len(self.replay)

    @property
    def epsilon(self) -> float:
        """Current exploration rate (linear decay over own transitions)."""
        cfg = self.config
        frac = min(1.0, self.own_steps / cfg.epsilon_decay_steps)
        return cfg.epsilon_start + frac * (cfg.epsilon_end - cfg.epsilon_start)

    # --- policies ------------------------------------------------------------------------------
    def current_policy(self) -> NFSPBehaviourPolicy:
        """How this learner plays during training (a frozen copy; see NFSPBehaviourPolicy)."""
        policy = self._snapshots.get("current")
        if not isinstance(policy, NFSPBehaviourPolicy):  # none since the networks last changed
            policy = self._snapshots["current"] = NFSPBehaviourPolicy(
                self.q_net,
                self.avg_net,
                eta=self.anticipatory,
                epsilon=self.epsilon,
                game_id=self.game.id,
                input_size=self.input_size,
                num_actions=self.num_actions,
                seat=self.seat,
            )
        return policy

    def average_policy(self) -> SoftmaxPolicy:
        """The average-policy network (a frozen copy): NFSP's output."""
        policy = self._snapshots.get("average")
        if not isinstance(policy, SoftmaxPolicy):  # none since the networks last changed
            policy = self._snapshots["average"] = SoftmaxPolicy(
                self.avg_net, self.game.id, self.input_size, self.num_actions, self.seat
            )
        return policy

    # --- one step: play a batch of episodes, then learn -----------------------------------------

    def _step(self, opponent: Policy) -> dict[str, float]:
        moves_before = None if self._tree_play is None else self._tree_play.moves
        try:
            rollout = self._play(opponent)
        except SeatUnreached:  # the opponent's play ends every game first: nothing to learn
            assert self._tree_play is not None and moves_before is not None
            return unreached_step(self._tree_play.moves - moves_before, self.game)
        self._store(rollout)
        metrics = self._learn(len(rollout["a"]))
        self._snapshots.clear()
        metrics.update(
            env_steps=rollout["env_steps"],
            episodes=self.episodes_per_step,
            own_transitions=len(rollout["a"]),
            epsilon=self.epsilon,
            replay_size=self._replay_in_use(),
            reservoir_size=len(self.reservoir),
            mean_return=float(rollout["returns"].mean()),
        )
        return metrics

    def _play(self, opponent: Policy) -> dict[str, Any]:
        """Play ``episodes_per_step`` episodes, over the tree or in the envs (``config.play``)."""
        if self._tree_play is not None:
            return self._play_on_tree(opponent)
        return self._play_in_envs(opponent)

    def _play_on_tree(self, opponent: Policy) -> dict[str, Any]:
        """Play all ``episodes_per_step`` episodes at once over the compiled tree.

        The opponent's Policy is asked once per information set play reaches; each tick acts
        for every episode where this seat is to move (one numpy forward pass of each network),
        then chance and the opponent play on until this seat moves again or the game is over.
        Every draw comes from this learner's own Generator.
        """
        play = self._tree_play
        assert play is not None
        play.rng = self.rng
        play.set_opponent(opponent)
        total = self.episodes_per_step
        q_net, avg_net = NumpyMLP(self.q_net), NumpyMLP(self.avg_net)
        epsilon = self.epsilon
        modes = self.rng.random(total) < self.anticipatory  # per episode: BR mode?
        staged = _StagedDecisions(total)
        moves_before = play.moves
        active = np.arange(total)
        play.start(active)
        while active.size:
            tensors = play.observations(active)
            masks = widen_mask(play.masks(active), self.num_actions)
            br = modes[active].tolist()
            chosen, greedy = self._act(q_net, avg_net, tensors, masks, br, epsilon)
            episodes = active.tolist()
            staged.add(episodes, tensors, masks, chosen, greedy, br, play.infosets(active))
            over = play.move(active, np.asarray(chosen, dtype=np.int64))
            if over.any():
                ended = active[over]
                for e, value in zip(ended.tolist(), play.payoffs(ended).tolist(), strict=True):
                    staged.returns[e] = float(value)
                active = active[~over]
        return staged.batch(self.input_size, self.num_actions, play.moves - moves_before)

    def _play_in_envs(self, opponent: Policy) -> dict[str, Any]:
        """Play ``episodes_per_step`` episodes in ``lanes`` lock-stepped envs.

        Each tick asks the networks once for every env where this seat is to move and the
        opponent once per new information set; a lane whose episode ended starts the next one.
        Chance is drawn by the envs from this learner's own Generator (given to each env at
        its first reset of the step).
        """
        rng, me = self.rng, self._agent
        envs = self._envs
        total = self.episodes_per_step
        q_net, avg_net = NumpyMLP(self.q_net), NumpyMLP(self.avg_net)
        epsilon = self.epsilon
        batch_query = (
            opponent.action_probabilities_batch if isinstance(opponent, BatchPolicy) else None
        )
        cache: dict[tuple[int, str], np.ndarray] = {}
        modes = (rng.random(total) < self.anticipatory).tolist()  # per episode: BR mode?
        staged = _StagedDecisions(total)
        episode = list(range(len(envs)))  # lane -> episode it plays
        for env in envs:  # the first episode of every lane draws from a fresh generator state
            env.reset(seed=self._env_seed())
        started = len(envs)
        env_steps = 0
        active = list(range(len(envs)))
        while active:
            own, opp, started = self._next_movers(active, episode, started, total, staged)
            active = own + opp
            if own:
                obs = [envs[lane].observe(me) for lane in own]
                tensors = np.stack([o["observation"] for o in obs])
                masks = widen_mask(np.stack([o["action_mask"] for o in obs]), self.num_actions)
                br = [modes[episode[lane]] for lane in own]
                chosen, greedy = self._act(q_net, avg_net, tensors, masks, br, epsilon)
                staged.add([episode[lane] for lane in own], tensors, masks, chosen, greedy, br)
                for lane, a in zip(own, chosen, strict=True):
                    envs[lane].step(a)
                env_steps += len(own)
            if opp:
                self._opponent_moves(opp, opponent, batch_query, cache)
                env_steps += len(opp)
        return staged.batch(self.input_size, self.num_actions, env_steps)

    def _next_movers(
        self,
        active: list[int],
        episode: list[int],
        started: int,
        total: int,
        staged: _StagedDecisions,
    ) -> tuple[list[int], list[int], int]:
        """The active lanes split by who moves next (this seat, the opponent): a lane whose
        episode ended records its return and starts the next episode, or retires once
        ``total`` episodes have started. Returns the two lane lists and the new ``started``."""
        envs, me = self._envs, self._agent
        own: list[int] = []
        opp: list[int] = []
        for lane in active:
            env = envs[lane]
            agent = env.agent_selection
            if env.terminations[agent]:
                staged.returns[episode[lane]] = float(env.rewards[me])
                if started == total:
                    continue
                env.reset()
                episode[lane] = started
                started += 1
                agent = env.agent_selection
            (own if agent == me else opp).append(lane)
        return own, opp, started

    def _env_seed(self) -> Any:
        """What the lane envs are reset with: this learner's own Generator.

        ``GameAECEnv.reset(seed)`` builds its generator with ``np.random.default_rng(seed)``,
        which returns a Generator unchanged, so chance is drawn from ``self.rng`` itself and
        nothing but ``self.rng`` carries randomness from one step to the next (exact resume).
        If an env ever copied the generator instead, fall back to an integer seed drawn from it.
        """
        if self._env_takes_generator:
            return self.rng
        return int(self.rng.integers(2**63))

    def _opponent_moves(
        self,
        lanes: list[int],
        opponent: Policy,
        batch_query: Any,
        cache: dict[tuple[int, str], np.ndarray],
    ) -> None:
        """One move of the opponent's Policy in each of ``lanes`` (answers cached per infoset)."""
        envs = self._envs
        keys = []
        missing: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        for lane in lanes:
            env = envs[lane]
            agent = env.agent_selection
            key = (self._players[agent], env.infos[agent]["infoset_key"])
            keys.append(key)
            if key not in cache and key not in missing:
                obs = env.observe(agent)
                mask = widen_mask(obs["action_mask"], self.num_actions)
                missing[key] = (obs["observation"], mask)
        if missing:
            items = list(missing.items())
            if batch_query is not None:
                rows = np.asarray(
                    batch_query(
                        np.array([k[0] for k, _ in items]),
                        np.stack([t for _, (t, _) in items]),
                        np.stack([m for _, (_, m) in items]),
                    ),
                    dtype=np.float64,
                )
            else:
                rows = np.stack(
                    [
                        np.asarray(
                            opponent.action_probabilities(Infoset(k[0], k[1], t, m)),
                            dtype=np.float64,
                        )
                        for k, (t, m) in items
                    ]
                )
            for (key, (_, mask)), row in zip(items, rows, strict=True):
                cache[key] = _checked_cdf(row, mask, key)
        picks = sample_cdf(np.stack([cache[key] for key in keys]), self.rng.random(len(lanes)))
        for lane, action in zip(lanes, picks.tolist(), strict=True):
            envs[lane].step(action)

    def _act(
        self,
        q_net: NumpyMLP,
        avg_net: NumpyMLP,
        tensors: np.ndarray,
        masks: np.ndarray,
        br_list: list[bool],
        epsilon: float,
    ) -> tuple[list[int], list[int]]:
        """Actions for a batch of own decisions (BR rows: epsilon-greedy Q; others: average)."""
        rng = self.rng
        br = np.asarray(br_list, dtype=bool)
        n = len(tensors)
        chosen = np.empty(n, dtype=np.int64)
        greedy = np.full(n, -1, dtype=np.int64)
        uniforms = rng.random(n)
        if br.any():
            rows = np.flatnonzero(br)
            g = masked_argmax(q_net(tensors[rows]), masks[rows])
            greedy[rows] = g
            picks = g.copy()
            explore = rng.random(rows.size) < epsilon
            if explore.any():
                legal = masks[rows[explore]].astype(np.float64)
                picks[explore] = sample_cdf(np.cumsum(legal, axis=1), uniforms[rows[explore]])
            chosen[rows] = picks
        if not br.all():
            rows = np.flatnonzero(~br)
            probs = masked_softmax_np(avg_net(tensors[rows]), masks[rows])
            chosen[rows] = sample_cdf(np.cumsum(probs, axis=1), uniforms[rows])
            if self.config.q_targets == "greedy_return":  # where the greedy chain breaks
                greedy[rows] = masked_argmax(q_net(tensors[rows]), masks[rows])
        return chosen.tolist(), greedy.tolist()

    def _store(self, rollout: dict[str, Any]) -> None:
        """Turn staged decisions into replay transitions and reservoir entries."""
        a = rollout["a"]
        n = len(a)
        if n == 0:
            return
        s, masks = rollout["s"], rollout["mask"]
        nxt = self._bootstrap_rows(rollout)
        done = nxt < 0
        r = np.zeros(n, dtype=np.float32)
        r[done] = rollout["returns"][rollout["episode"][done]] / self.reward_scale
        br = rollout["br"]
        targets = rollout["greedy"] if self.config.greedy_sl_targets else a
        if isinstance(self.replay, InfosetReplay):
            assert isinstance(self.reservoir, InfosetMemory)  # memory="infoset": both are sums
            ids = rollout["infosets"]
            self.replay.add(ids, a, r, np.where(done, -1, ids[np.maximum(nxt, 0)]))
            if br.any():
                weight = float(self.iterations + 1) ** self.config.average_weight_power
                self.reservoir.add(ids[br], self._one_hot[targets[br]], weight)
            self._batches.clear()
            self.own_steps += n
            return
        assert isinstance(self.reservoir, ReservoirBuffer)  # memory="samples": both keep rows
        s2 = np.zeros_like(s)
        mask2 = np.ones_like(masks)
        s2[~done] = s[nxt[~done]]
        mask2[~done] = masks[nxt[~done]]
        self.replay.add({"s": s, "a": a, "r": r, "s2": s2, "mask2": mask2, "done": done})
        if br.any():
            self.reservoir.add({"s": s[br], "mask": masks[br], "a": targets[br]}, self.rng)
        self.own_steps += n

    def _bootstrap_rows(self, rollout: dict[str, Any]) -> np.ndarray:
        """Per staged decision, the later own decision its Q-target bootstraps from (-1: the
        target is the episode's return), as ``config.q_targets`` says."""
        nxt = rollout["next"]
        mode = self.config.q_targets
        if mode == "one_step":
            return nxt
        if mode == "monte_carlo":
            return np.full_like(nxt, -1)
        # greedy_return: skip later decisions that played the greedy action, following every
        # chain one link per pass (as many passes as an episode has own decisions at most).
        greedy_played = rollout["a"] == rollout["greedy"]
        out = nxt.copy()
        while (follow := (out >= 0) & greedy_played[np.maximum(out, 0)]).any():
            out[follow] = nxt[out[follow]]
        return out

    def _learning_rates(self) -> None:
        """Apply the learning-rate schedules (``*_lr_decay_updates``) before an update."""
        cfg = self.config
        schedules = (
            (cfg.rl_learning_rate, cfg.rl_lr_decay_updates, self.rl_updates),
            (cfg.sl_learning_rate, cfg.sl_lr_decay_updates, self.sl_updates),
        )
        for group, (rate, horizon, done) in zip(
            self.optimizer.param_groups, schedules, strict=True
        ):
            if horizon is not None:
                group["lr"] = rate * float(np.sqrt(horizon / max(horizon, done)))

    def _learn(self, new_transitions: int) -> dict[str, float]:
        """``new_transitions / learn_every`` joint updates (fractions carry over)."""
        cfg = self.config
        metrics: dict[str, float] = {}
        if len(self.replay) < max(cfg.min_buffer_to_learn, 1):
            return metrics
        self._update_credit += new_transitions / self.learn_every
        updates = int(self._update_credit)
        self._update_credit -= updates
        rl_losses, sl_losses = [], []
        for _ in range(updates):
            rl, sl = self._update()
            rl_losses.append(rl)
            if sl is not None:
                sl_losses.append(sl)
        if rl_losses:
            metrics["rl_loss"] = float(np.mean(rl_losses))
        if sl_losses:
            metrics["sl_loss"] = float(np.mean(sl_losses))
        metrics["updates"] = updates
        return metrics

    def _batch(self, sample: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        return as_tensors(sample, self.device)

    def _update(self) -> tuple[float, float | None]:
        """One DQN update of the Q-network and one supervised update of the average network.

        The losses' gradients are computed by :class:`ManualMLP` (a few matrix products, no
        autograd graph), over minibatches of sampled rows (``memory="samples"``) or from the
        memories' sums per information set (``"infoset"``); the optimiser, clipping and
        checkpoints are torch's as usual.
        """
        cfg = self.config
        train_average = len(self.reservoir) > 0 and self.rl_updates % self.sl_every == 0
        self._learning_rates()
        self.optimizer.zero_grad(set_to_none=True)
        sl: float | None = None
        with torch.no_grad():
            if isinstance(self.replay, InfosetReplay):
                assert isinstance(self.reservoir, InfosetMemory)
                rl = self._infoset_q_gradients(self.replay)
                if train_average:
                    sl = self._infoset_average_gradients(self.reservoir)
            else:
                assert isinstance(self.reservoir, ReservoirBuffer)
                if self.replay_fraction is None:
                    sample = self.replay.sample(cfg.batch_size, self.rng)
                else:
                    sample = self.replay.sample_recent(cfg.batch_size, self.replay_window, self.rng)
                rl = self._q_gradients(self._batch(sample))
                if train_average:
                    sl = self._average_gradients(
                        self._batch(self.reservoir.sample(cfg.batch_size, self.rng))
                    )
        if cfg.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self.q_net.parameters(), cfg.max_grad_norm)
            nn.utils.clip_grad_norm_(self.avg_net.parameters(), cfg.max_grad_norm)
        optimizer_step(self.optimizer)
        self.rl_updates += 1
        if sl is not None:
            self.sl_updates += 1
        if self.rl_updates % cfg.target_update_every == 0:
            hard_update(self.target_net, self.q_net)
            self._targets_stale = True
        return rl, sl

    def _q_gradients(self, b: dict[str, torch.Tensor]) -> float:
        """The Q-network's DQN loss on batch ``b`` (checked finite) and its gradients."""
        cfg = self.config
        q_all, inputs = self._q_pass.forward(b["s"])
        rows = torch.arange(q_all.shape[0], device=q_all.device)
        q_next = self._target_pass(b["s2"])
        if cfg.double_q:  # the online network picks, the target network values
            pick = self._q_pass(b["s2"]).masked_fill_(~b["mask2"], -torch.inf).argmax(dim=1)
            q2 = q_next[rows, pick]
        else:
            q2 = q_next.masked_fill_(~b["mask2"], -torch.inf).amax(dim=1)
        target = b["r"] + cfg.discount * q2.masked_fill_(b["done"], 0.0)
        error = q_all[rows, b["a"]] - target
        n = error.shape[0]
        if cfg.rl_loss == "mse":
            loss = error.square().mean()
            slope = error * (2.0 / n)
        else:  # Huber (smooth L1, beta 1): quadratic inside [-1, 1], linear outside
            size = error.abs()
            loss = torch.where(size < 1.0, 0.5 * error.square(), size - 0.5).mean()
            slope = error.clamp(-1.0, 1.0) / n
        rl = check_loss(loss, learner=self.name, iteration=self.iterations, what="Q-network")
        grad = torch.zeros_like(q_all)
        grad[rows, b["a"]] = slope
        self._q_pass.backward(inputs, grad)
        return rl

    def _average_gradients(self, b: dict[str, torch.Tensor]) -> float:
        """The average network's cross-entropy on batch ``b`` (checked finite) and its
        gradients."""
        logits, inputs = self._avg_pass.forward(b["s"])
        log_probs = torch.log_softmax(logits.masked_fill_(~b["mask"], -1e9), dim=1)
        rows = torch.arange(logits.shape[0], device=logits.device)
        loss = -log_probs[rows, b["a"]].mean()
        sl = check_loss(loss, learner=self.name, iteration=self.iterations, what="average-network")
        grad = log_probs.exp_()
        grad[rows, b["a"]] -= 1.0
        self._avg_pass.backward(inputs, grad.mul_(1.0 / logits.shape[0]))
        return sl

    def _infoset_q_gradients(self, replay: InfosetReplay) -> float:
        """The Q-network's squared error over the replay window (checked finite) and its
        gradients; the window's sums are refreshed first when play or the target network
        changed since they were made."""
        cfg = self.config
        if replay.stale or self._targets_stale:
            values = self._target_pass(self._all_inputs).masked_fill_(~self._all_legal, -torch.inf)
            replay.refresh(self.replay_window, values.amax(dim=1).cpu().numpy(), cfg.discount)
            self._targets_stale = False
            self._batches.pop("q", None)
        x, counts, sums, weights, constant = self._infoset_batch("q", replay)
        q, inputs = self._q_pass.forward(x)
        loss = (weights * (counts * q - 2.0 * sums) * q).sum() + constant
        rl = check_loss(loss, learner=self.name, iteration=self.iterations, what="Q-network")
        self._q_pass.backward(inputs, (counts * q).sub_(sums).mul_(2.0 * weights))
        return rl

    def _infoset_average_gradients(self, memory: InfosetMemory) -> float:
        """The average network's cross-entropy against the best-response actions' frequencies
        per information set (checked finite), and its gradients."""
        x, legal, targets, weights = self._infoset_batch("average", memory)
        logits, inputs = self._avg_pass.forward(x)
        log_probs = torch.log_softmax(logits.masked_fill_(~legal, -1e9), dim=1)
        loss = -(weights * targets * log_probs).sum()
        sl = check_loss(loss, learner=self.name, iteration=self.iterations, what="average-network")
        self._avg_pass.backward(inputs, log_probs.exp_().sub_(targets).mul_(weights))
        return sl

    def _infoset_batch(self, name: str, memory: InfosetReplay | InfosetMemory) -> tuple[Any, ...]:
        """A memory's batch as tensors (the rows' inputs first; weights as a column). A batch
        of all the memory's rows is the same until the memory changes, so it is kept in
        :attr:`_batches` until then (``_store`` and a refresh of the replay's sums drop it)."""
        if name in self._batches:
            return self._batches[name]
        rows, *columns = memory.batch(self.config.batch_size, self.rng)
        as_tensor = lambda x: torch.as_tensor(x, dtype=torch.float32, device=self.device)  # noqa: E731
        rows_t = torch.as_tensor(rows, device=self.device)
        if name == "q":
            counts, sums, weights, constant = columns
            out: tuple[Any, ...] = (
                self._all_inputs[rows_t],
                as_tensor(counts),
                as_tensor(sums),
                as_tensor(weights[:, None]),
                constant,
            )
        else:
            targets, weights = columns
            out = (
                self._all_inputs[rows_t],
                self._all_legal[rows_t],
                as_tensor(targets),
                as_tensor(weights[:, None]),
            )
        held = memory.num_rows if isinstance(memory, InfosetReplay) else len(memory)
        if len(rows) == held:  # every row: the exact loss, nothing drawn
            self._batches[name] = out
        return out

    # --- checkpoints -----------------------------------------------------------------------------
    def _networks(self) -> dict[str, nn.Module]:
        return {"q_net": self.q_net, "target_net": self.target_net, "avg_net": self.avg_net}

    def _state_arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "torch_state": self._pack_networks({"optimizer": self.optimizer}),
            "counters": np.array([self.own_steps, self.rl_updates, self.sl_updates], np.int64),
            "update_credit": np.array(self._update_credit, dtype=np.float64),
        }
        if self._window_only:
            # A checkpoint keeps the window (and at least what learning waits for), not the
            # whole ring.
            assert isinstance(self.replay, InfosetReplay)  # what _window_only asks first
            keep = max(self.replay_window, self.config.min_buffer_to_learn)
            arrays.update(self.replay.state_arrays("replay/", last=keep))
        else:
            arrays.update(self.replay.state_arrays("replay/"))
        arrays.update(self.reservoir.state_arrays("reservoir/"))
        return arrays

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        arrays = self.checked_state_arrays(
            arrays,
            {
                "torch_state": ArraySpec.blob(),
                "counters": ArraySpec((3,), "integer", nonnegative=True),
                "update_credit": ArraySpec(()),
                **self.replay.array_specs("replay/"),
                **self.reservoir.array_specs("reservoir/"),
            },
        )
        self._unpack_networks(arrays["torch_state"], {"optimizer": self.optimizer})
        self.own_steps, self.rl_updates, self.sl_updates = (int(x) for x in arrays["counters"])
        self._update_credit = float(arrays["update_credit"])
        self.replay.load_state_arrays(arrays, "replay/")
        self.reservoir.load_state_arrays(arrays, "reservoir/")
        self._targets_stale = True
        if self.infoset_memory:
            self._batches.clear()
        self._snapshots.clear()


def _checked_cdf(row: np.ndarray, mask: np.ndarray, key: tuple[int, str]) -> np.ndarray:
    """Validate an opponent's answer and return its cumulative distribution."""
    row = np.asarray(row, dtype=np.float64)
    if row.shape != mask.shape:
        raise PolicyError(
            f"the opponent policy returned shape {row.shape} at information set {key[1]!r}; "
            f"expected {mask.shape}"
        )
    if not np.all(np.isfinite(row)) or (row < -1e-9).any() or row[~mask].sum() > 1e-6:
        raise PolicyError(
            f"the opponent policy returned {row.tolist()} at information set {key[1]!r} of "
            f"player {key[0]}: probabilities must be finite, non-negative and zero on illegal "
            f"actions (legal: {np.flatnonzero(mask).tolist()})"
        )
    total = row.sum()
    if total <= 0:
        raise PolicyError(f"the opponent policy gives no probability at {key[1]!r}")
    return np.cumsum(np.where(mask, np.maximum(row, 0.0), 0.0) / total)
