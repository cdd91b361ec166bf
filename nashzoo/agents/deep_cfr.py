"""Deep CFR, registry name ``"deep_cfr"``.

Brown, N., Lerer, A., Gross, S. and Sandholm, T. (2019). *Deep Counterfactual Regret
Minimization.* ICML 2019, arXiv:1811.00164. Linear weighting from Brown and Sandholm (2019),
*Solving Imperfect-Information Games via Discounted Regret Minimization*, AAAI 2019.

One learner owns one seat ``i``; one ``step()`` is one CFR iteration ``t`` for that seat:

1. Strategy of this iteration: ``sigma_t = regret_matching(advantage_net(I))`` on every own
   information set (uniform before the first training); the opponent plays the Policy given to
   ``step()``, materialised over the tree (Deep CFR is model-based).
2. ``traversals`` external-sampling traversals with ``i`` as the traverser: at own nodes every
   legal action is explored, opponent and chance nodes sample one action. At each visited own
   node store ``(I, t, r(I, .))`` in the advantage memory, where
   ``r(I, a) = v(I, a) - v(I)`` is the sampled instantaneous regret.
3. ``strategy_traversals`` traversals with the roles swapped (the opponent explores, ``i`` samples
   from ``sigma_t``), as Deep CFR collects strategy samples during the opponent's traversals: at
   each visited own node store ``(I, t, sigma_t(I))`` in the strategy memory. Visit
   frequencies are then proportional to ``i``'s own reach, which is how the average strategy
   must be weighted.
4. Train the advantage network on its memory, loss weighted by ``t`` (linear CFR).
5. Train the strategy network on the strategy memory (cross-entropy against ``sigma_t``,
   weighted by ``t``); it is the learner's output, :meth:`DeepCFR.average_policy`.

The traversals are :class:`nashzoo.games.treemath.SampledWalks` (the tree-arithmetic home):
all ``K`` traversals advance together, one tree depth at a time, as arrays of
``(traversal, node)`` pairs, and values are backed up with ``np.bincount``; no Python call per
node.

Memories: the paper keeps reservoirs of raw samples and regresses on minibatches of them
(``memory="reservoir"``). By default each memory here keeps, per information set, the
``t``-weighted sums of the targets (:class:`~nashzoo.agents.replay_memory.InfosetMemory`): the
same weighted loss as a memory that never drops a sample, over the distinct inputs only, so a
minibatch of up to ``batch_size`` visited information sets is the exact loss rather than a
noisy estimate of it. This, with three hidden layers of 64 instead of one, is what moved Leduc
off its plateau near 0.23: it now holds 0.083 from 300 training seconds on (3 seeds; see
``DeepCFRConfig.memory`` and BENCHMARKS.md). The defaults are the same for every game.

Known pitfalls on small games such as Kuhn, and the defaults that avoid them:

* **Re-initialising the advantage network every iteration** (the paper's choice, OpenSpiel's
  ``reinitialize_advantage_networks=True``) throws away what was learned and needs thousands of
  SGD steps per iteration to refit the whole memory; with a few hundred steps the regrets are
  under-fitted and NashConv stalls. Default here: warm start (``reinitialize_advantage=False``),
  so each iteration only has to absorb the new samples.
* **Too few traversals**: with tens of traversals per iteration most information sets get no
  fresh regret samples and the regret estimates are dominated by noise. Default: 1,000.
* **Clipping gradient norms at 1** (the paper) caps the size of each regression step on regret
  targets that are far larger than 1, so each iteration absorbs its new samples slowly: off by
  default (``max_grad_norm=None``), which reached Kuhn NashConv 0.05 about three times sooner.
* **Training the strategy network only at the end** (OpenSpiel) leaves no output before it; here
  it is trained a little every iteration (warm start), so ``average_policy()`` is always current.
* Regret matching is :func:`nashzoo.games.treemath.regret_matching`, the one shared
  implementation: rows without positive predicted advantage play uniformly.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from nashzoo.agents._torch_utils import (
    TrainingDivergedError,
    as_tensors,
    check_counts,
    check_flags,
    check_hidden_sizes,
    check_loss,
    check_rates,
    optimizer_step,
)
from nashzoo.agents.base import LearnerConfig
from nashzoo.agents.network_policy import NetworkPolicy, check_finite_on_legal
from nashzoo.agents.neural_base import NeuralLearner
from nashzoo.agents.policy import Policy
from nashzoo.agents.registry import register
from nashzoo.agents.replay_memory import InfosetMemory, ReservoirBuffer
from nashzoo.agents.reward_scale import RewardScale, check_reward_scale, resolve_reward_scale
from nashzoo.agents.torch_networks import (
    ManualMLP,
    NumpyMLP,
    SoftmaxPolicy,
    build_mlp,
    reinitialise,
)
from nashzoo.games.base import display_id
from nashzoo.games.treemath import regret_matching, sampled_walks
from nashzoo.io import ArraySpec

__all__ = ["DeepCFR", "DeepCFRConfig", "RegretMatchingPolicy", "TrainingDivergedError"]


@dataclasses.dataclass(frozen=True)
class DeepCFRConfig(LearnerConfig):
    """Deep CFR settings.

    Attributes:
        advantage_hidden: hidden layer widths of the advantage network: three layers of 64,
            as in the Leduc runs of Steinberger's Single Deep CFR paper (2019). OpenSpiel's
            example uses one layer of 64, which on Leduc fits its targets visibly worse: after
            40 iterations it was at exploitability 0.32 against 0.19 for three layers, both
            with the infoset memory (BENCHMARKS.md, "Deep CFR on Leduc: what held it back").
        strategy_hidden: hidden layer widths of the strategy network (three layers of 64).
        traversals: external-sampling traversals per iteration (OpenSpiel's Kuhn example:
            375; more, vectorised, is cheap here and steadies the regret estimates).
        strategy_traversals: traversals per iteration that collect strategy samples.
        advantage_memory: reservoir size of the advantage memory (entries;
            ``memory="reservoir"`` only).
        strategy_memory: reservoir size of the strategy memory (entries;
            ``memory="reservoir"`` only).
        advantage_steps: SGD steps on the advantage network per iteration (128: on Leduc
            128 beat 64 per iteration and per second here; on Kuhn both reach NashConv 0.05 in
            about 20 iterations).
        strategy_steps: SGD steps on the strategy network per iteration.
        batch_size: minibatch size of both networks (OpenSpiel's example: 256).
        learning_rate: Adam learning rate of both networks (paper and OpenSpiel: 1e-3).
        reinitialize_advantage: re-draw the advantage network (and reset its optimiser) at
            every iteration, as in the paper; off by default (see the module docstring).
        max_grad_norm: gradient-norm clipping; ``None`` (default) turns it off. The paper clips
            at 1; here that slowed Kuhn to NashConv 0.05 about threefold (20-36 s against
            7-12 s over three seeds, single thread) and was no better on Leduc.
        memory: ``"infoset"`` (default): both memories keep, per information set, the
            iteration-weighted sums of every sample's target (:class:`InfosetMemory`): the
            same loss as a memory that keeps every sample, computed over the distinct inputs,
            so nothing is dropped and a minibatch of up to ``batch_size`` visited information
            sets is the exact loss. ``"reservoir"``: the paper's reservoir of raw samples,
            minibatches of ``batch_size`` samples. On Leduc, after 40 iterations, the
            reservoir was at exploitability 0.61 with one layer of 64 (0.37 with three), the
            infoset memory at 0.32 (0.19 with three), and tabular external sampling with the
            same walks, the level the sampling allows, at 0.14: the networks' fit of their
            memory, not the sampling, was what held Deep CFR back (a plateau near 0.23).
        reward_scale: the advantage network learns regrets divided by this (regret matching
            reads them alike). ``"auto"`` (default): the game's largest absolute payoff where
            that is below 0.01 or above 100, else 1 (Kuhn, Leduc: 1); ``"game"``: always that
            payoff; or a number (:mod:`nashzoo.agents.reward_scale`). Unscaled, Kuhn with
            payoffs times 1e6 was at NashConv/1e6 0.61 after 10 iterations, against 0.08.
        device: ``"cpu"`` (default), ``"cuda"`` or ``"auto"``.
    """

    advantage_hidden: tuple[int, ...] = (64, 64, 64)
    strategy_hidden: tuple[int, ...] = (64, 64, 64)
    traversals: int = 1_000
    strategy_traversals: int = 250
    advantage_memory: int = 1_000_000
    strategy_memory: int = 1_000_000
    advantage_steps: int = 128
    strategy_steps: int = 64
    batch_size: int = 512
    learning_rate: float = 1e-3
    reinitialize_advantage: bool = False
    max_grad_norm: float | None = None
    memory: Literal["infoset", "reservoir"] = "infoset"
    reward_scale: RewardScale = "auto"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_reward_scale(self.reward_scale, "DeepCFRConfig.reward_scale")
        if self.memory not in ("infoset", "reservoir"):
            raise ValueError(
                f"DeepCFRConfig.memory must be 'infoset' or 'reservoir', got {self.memory!r}"
            )
        for name in ("advantage_hidden", "strategy_hidden"):
            object.__setattr__(self, name, check_hidden_sizes(getattr(self, name), name))
        check_counts(
            self,
            (
                "traversals",
                "strategy_traversals",
                "advantage_memory",
                "strategy_memory",
                "advantage_steps",
                "strategy_steps",
                "batch_size",
            ),
        )
        check_rates(self, ["learning_rate"])
        check_flags(self, ("reinitialize_advantage",))
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(
                f"DeepCFRConfig.max_grad_norm must be positive or None, got {self.max_grad_norm!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["advantage_hidden"] = list(self.advantage_hidden)
        out["strategy_hidden"] = list(self.strategy_hidden)
        return out


class RegretMatchingPolicy(NetworkPolicy):
    """Regret matching on an advantage network's outputs (Deep CFR's current strategy).

    ``net=None`` is the untrained state: uniform over legal actions.
    """

    def __init__(
        self, net: nn.Module | None, game_id: str, input_size: int, num_actions: int, seat: int
    ) -> None:
        super().__init__(game_id, input_size, num_actions, seat)
        self.net = None if net is None else NumpyMLP(net)

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.net is None:
            return regret_matching(np.zeros(masks.shape), masks)
        advantages = self.net(tensors).astype(np.float64)
        check_finite_on_legal(
            advantages, masks, f"deep_cfr's advantage network ({display_id(self.game_id)})"
        )
        return regret_matching(advantages, masks)


@register
class DeepCFR(NeuralLearner):
    """Deep CFR for one seat (see the module docstring)."""

    name: ClassVar[str] = "deep_cfr"
    Config: ClassVar[type[LearnerConfig]] = DeepCFRConfig
    opponent_view: ClassVar[Literal["current", "average"]] = "current"
    # Checkpoints from before ``reward_scale`` (2026-11-27) learned unscaled regrets.
    settings_before_they_existed: ClassVar[dict[str, Any]] = {"reward_scale": 1.0}
    config: DeepCFRConfig

    def _setup(self) -> None:
        cfg = self.config
        self._setup_device()
        self.reward_scale = resolve_reward_scale(
            cfg.reward_scale, self.game, "DeepCFRConfig.reward_scale"
        )
        self._init_rng = np.random.default_rng([self.seed, 0x64636672])  # "dcfr": init stream
        self.advantage_net = build_mlp(
            self.input_size, cfg.advantage_hidden, self.num_actions, self._init_rng
        ).to(self.device)
        self.strategy_net = build_mlp(
            self.input_size, cfg.strategy_hidden, self.num_actions, self._init_rng
        ).to(self.device)
        self.advantage_optimizer = self._adam(self.advantage_net)
        self.strategy_optimizer = self._adam(self.strategy_net)
        self.advantage_buffer = self._memory(cfg.advantage_memory)
        self.strategy_buffer = self._memory(cfg.strategy_memory)
        self.advantage_trained = False
        self._snapshots: dict[str, NetworkPolicy] = {}
        self._own_rows = self.tree.infosets_of(self.seat)

    def _memory(self, capacity: int) -> InfosetMemory | ReservoirBuffer:
        if self.config.memory == "infoset":
            return InfosetMemory(self.tree.num_infosets, self.num_actions)
        d, a = self.input_size, self.num_actions
        fields: dict[str, tuple[tuple[int, ...], Any]] = {
            "s": ((d,), np.float32),
            "mask": ((a,), np.bool_),
        }
        fields.update({"target": ((a,), np.float32), "t": ((), np.float32)})
        return ReservoirBuffer(capacity, fields)

    def _adam(self, net: nn.Module) -> torch.optim.Optimizer:
        fused = self.device.type in ("cpu", "cuda")
        return torch.optim.Adam(net.parameters(), lr=self.config.learning_rate, fused=fused)

    @property
    def memory_bytes_per_entry(self) -> dict[str, int]:
        """Bytes one entry of each memory takes."""
        return {
            "advantage": self.advantage_buffer.bytes_per_entry,
            "strategy": self.strategy_buffer.bytes_per_entry,
        }

    # --- policies --------------------------------------------------------------------------------
    def current_policy(self) -> RegretMatchingPolicy:
        """Regret matching on the advantage network (a frozen copy): ``sigma_t``."""
        policy = self._snapshots.get("current")
        if not isinstance(policy, RegretMatchingPolicy):  # none since the networks last changed
            policy = self._snapshots["current"] = RegretMatchingPolicy(
                self.advantage_net if self.advantage_trained else None,
                self.game.id,
                self.input_size,
                self.num_actions,
                self.seat,
            )
        return policy

    def average_policy(self) -> SoftmaxPolicy | RegretMatchingPolicy:
        """The strategy network (a frozen copy): Deep CFR's output.

        Before the first step it is uniform (the average of no iterations is undefined; uniform
        is what iteration one plays).
        """
        policy = self._snapshots.get("average")
        if not isinstance(policy, (SoftmaxPolicy, RegretMatchingPolicy)):  # none since a change
            if len(self.strategy_buffer) == 0:
                policy = RegretMatchingPolicy(
                    None, self.game.id, self.input_size, self.num_actions, self.seat
                )
            else:
                policy = SoftmaxPolicy(
                    self.strategy_net, self.game.id, self.input_size, self.num_actions, self.seat
                )
            self._snapshots["average"] = policy
        return policy

    # --- one iteration ---------------------------------------------------------------------------
    def _step(self, opponent: Policy) -> dict[str, float]:
        cfg, tree, seat = self.config, self.tree, self.seat
        t = float(self.iterations + 1)
        strategy = np.array(self.opponent_strategy(opponent), dtype=np.float64)
        own = self.current_policy().action_probabilities_batch(
            tree.infoset_player[self._own_rows],
            tree.infoset_tensors[self._own_rows],
            tree.legal_mask[self._own_rows],
        )
        strategy[self._own_rows] = own
        walker = sampled_walks(tree)
        # 2. advantage samples: this seat explores
        levels = walker.walk(seat, strategy, cfg.traversals, self.rng)
        isets, regrets = walker.sampled_regrets(levels, seat)
        if self.reward_scale != 1.0:
            regrets = regrets / self.reward_scale
        nodes = sum(level.node.size for level in levels)
        self._remember(self.advantage_buffer, isets, regrets, t)
        # 3. strategy samples: the opponent explores, this seat samples from sigma_t
        opponent_seat = 1 - seat
        levels = walker.walk(opponent_seat, strategy, cfg.strategy_traversals, self.rng)
        visited = walker.visited_infosets(levels, seat)
        nodes += sum(level.node.size for level in levels)
        self._remember(self.strategy_buffer, visited, strategy[visited], t)
        # 4-5. train
        if cfg.reinitialize_advantage:
            reinitialise(self.advantage_net, self._init_rng)
            self.advantage_optimizer = self._adam(self.advantage_net)
        adv_loss = self._train(
            self.advantage_net, self.advantage_optimizer, self.advantage_buffer, "advantage"
        )
        strat_loss = self._train(
            self.strategy_net, self.strategy_optimizer, self.strategy_buffer, "strategy"
        )
        self.advantage_trained = True
        self._snapshots.clear()
        return {
            "nodes_touched": nodes,
            "advantage_samples": int(isets.size),
            "strategy_samples": int(visited.size),
            "advantage_loss": adv_loss,
            "strategy_loss": strat_loss,
            "advantage_memory": len(self.advantage_buffer),
            "strategy_memory": len(self.strategy_buffer),
        }

    def _remember(
        self,
        memory: InfosetMemory | ReservoirBuffer,
        isets: np.ndarray,
        targets: np.ndarray,
        t: float,
    ) -> None:
        """Samples of iteration ``t`` (weight ``t``: linear CFR) into ``memory``."""
        if isinstance(memory, InfosetMemory):
            memory.add(isets, targets, t)
            return
        tree = self.tree
        entries = {
            "s": tree.infoset_tensors[isets],
            "mask": tree.legal_mask[isets],
            "target": np.asarray(targets, dtype=np.float32),
            "t": np.full(isets.size, t, dtype=np.float32),
        }
        memory.add(entries, self.rng)

    def _batch(self, memory: InfosetMemory | ReservoirBuffer) -> dict[str, torch.Tensor]:
        """One minibatch: inputs, legal masks, targets and loss weights summing to one."""
        if isinstance(memory, InfosetMemory):
            rows, targets, weights = memory.batch(self.config.batch_size, self.rng)
            arrays = {  # ``take``: numpy's fancy indexing of rows costs several times more
                "s": self.tree.infoset_tensors.take(rows, axis=0).astype(np.float32, copy=False),
                "mask": self.tree.legal_mask.take(rows, axis=0),
                "target": targets.astype(np.float32),
                "weight": weights.astype(np.float32),
            }
        else:
            arrays = memory.sample(self.config.batch_size, self.rng)
            t = arrays.pop("t")
            arrays["weight"] = t / t.sum()
        return as_tensors(arrays, self.device)

    def _train(
        self,
        net: nn.Module,
        optimizer: torch.optim.Optimizer,
        buffer: InfosetMemory | ReservoirBuffer,
        kind: str,
    ) -> float:
        """``*_steps`` minibatch updates, each sample weighted by its iteration (linear CFR).

        The gradients come from :class:`ManualMLP` (no autograd graph; checked against
        autograd's in ``tests/test_deep_cfr.py``); optimiser and clipping are torch's, the Adam
        step through :func:`optimizer_step` (the same step without ``torch.optim``'s per-call
        bookkeeping).
        """
        cfg = self.config
        steps = cfg.advantage_steps if kind == "advantage" else cfg.strategy_steps
        if len(buffer) == 0:
            return 0.0
        losses = []
        manual = ManualMLP(net)
        for _ in range(steps):
            b = self._batch(buffer)
            optimizer.zero_grad(set_to_none=True)
            with torch.no_grad():
                out, inputs = manual.forward(b["s"])
                weight = b["weight"].unsqueeze(1)
                if kind == "advantage":  # sum_i w_i sum_a mask (out - target)^2
                    err = (out - b["target"]).mul_(b["mask"])
                    loss = (b["weight"] * err.square().sum(dim=1)).sum()
                    grad = err.mul_(weight * 2.0)
                else:  # -sum_i w_i sum_a target log softmax(masked out)
                    logp = torch.log_softmax(out.masked_fill_(~b["mask"], -1e9), dim=1)
                    loss = -(b["weight"] * (b["target"] * logp).sum(dim=1)).sum()
                    total = b["target"].sum(dim=1, keepdim=True)
                    grad = (logp.exp_().mul_(total) - b["target"]).mul_(weight)
                losses.append(
                    check_loss(loss, learner=self.name, iteration=self.iterations, what=f"{kind}")
                )
                manual.backward(inputs, grad)
            if cfg.max_grad_norm is not None:
                nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            optimizer_step(optimizer)
        return float(np.mean(losses))

    # --- checkpoints -----------------------------------------------------------------------------
    def _networks(self) -> dict[str, nn.Module]:
        return {"advantage_net": self.advantage_net, "strategy_net": self.strategy_net}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {
            "advantage_optimizer": self.advantage_optimizer,
            "strategy_optimizer": self.strategy_optimizer,
        }

    def _state_arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "torch_state": self._pack_networks(self._optimizers()),
            "advantage_trained": np.array(self.advantage_trained),
            "init_rng_state": np.array(json.dumps(self._init_rng.bit_generator.state)),
        }
        arrays.update(self.advantage_buffer.state_arrays("advantage/"))
        arrays.update(self.strategy_buffer.state_arrays("strategy/"))
        return arrays

    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        arrays = self.checked_state_arrays(
            arrays,
            {
                "torch_state": ArraySpec.blob(),
                "advantage_trained": ArraySpec((), "bool"),
                "init_rng_state": ArraySpec((), "text"),
                **self.advantage_buffer.array_specs("advantage/"),
                **self.strategy_buffer.array_specs("strategy/"),
            },
        )
        self._unpack_networks(arrays["torch_state"], self._optimizers())
        self.advantage_trained = bool(arrays["advantage_trained"])
        self._init_rng.bit_generator.state = json.loads(str(arrays["init_rng_state"]))
        self.advantage_buffer.load_state_arrays(arrays, "advantage/")
        self.strategy_buffer.load_state_arrays(arrays, "strategy/")
        self._snapshots.clear()
