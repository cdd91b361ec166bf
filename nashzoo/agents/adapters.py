"""Other libraries' trained agents as nashzoo Policies, one call each, for exact evaluation
(:func:`nashzoo.eval.evaluate`, ``TabularPolicy.from_policy``) and tournaments.

* :func:`from_sb3`: a Stable-Baselines3 / sb3-contrib model (PPO, A2C, MaskablePPO, DQN) or
  the path of its saved ``.zip``;
* :func:`from_tianshou`: a Tianshou 2 policy (or the algorithm holding it);
* :func:`from_rllib`: an RLlib ``RLModule`` or an ``Algorithm`` (new API stack), with or without
  RLlib's action-masking observation layout;
* :func:`from_network`: any ``torch.nn.Module`` or plain callable from a batch of
  information-set tensors (and optionally the legal-action masks) to logits or probabilities.

Every adapter is queried with the game's information-set tensors, the observation the nashzoo
environments give (``obs["observation"]`` in the PettingZoo envs, the whole observation of the
Gymnasium single-agent view), and a batch of ``[n, num_actions]`` legal masks; all of them
evaluate every information set of a game in one forward pass, so materialising the policy over
the whole tree (which is what exact exploitability needs) is one call. Probability a network puts
on illegal actions is handled as its own library acts: masked libraries (MaskablePPO, Tianshou's
Q-learning with ``mask``, RLlib's masking module, :func:`from_network` logits) never choose an
illegal action; an unmasked SB3 policy has its illegal mass moved to the lowest legal action, as
:class:`~nashzoo.envs.single_agent.SingleAgentEnv` plays it.

Only :func:`from_sb3` copies the network (Stable-Baselines3 models keep training in place); the
others read the network live, so materialise with ``TabularPolicy.from_policy(game, policy)``
to freeze one. Needs torch (the ``neural`` extra) and the library in question.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import gymnasium
import numpy as np

from nashzoo.extras import MissingExtra
from nashzoo.games.base import display_id

try:
    import torch
    from torch import nn
except ImportError as err:
    raise MissingExtra(
        f"nashzoo.agents.adapters needs torch: pip install 'nashzoo[neural]' ({err})"
    ) from None

import nashzoo.agents._torch_utils  # noqa: F401 (its fork hook: a wrapped model runs torch here)
from nashzoo.agents.network_policy import NetworkPolicy, check_finite_on_legal, masked_softmax_np
from nashzoo.agents.policy import PolicyError
from nashzoo.games import Game, load_game
from nashzoo.games.base import is_finite_number, is_whole_number

if TYPE_CHECKING:  # imported where they are used: Stable-Baselines3 is an optional extra
    from stable_baselines3.common.base_class import BaseAlgorithm

    from nashzoo.agents.sb3_baseline import SB3Policy

__all__ = [
    "NetworkAdapterPolicy",
    "from_network",
    "from_rllib",
    "from_sb3",
    "from_tianshou",
    "load_sb3",
]

Output = Literal["logits", "probs", "greedy"]


def _game_sizes(game: Game | str) -> tuple[Game, int, int]:
    game = load_game(game)
    size = int(getattr(game, "infoset_tensor_size", 0))
    if size <= 0:
        raise ValueError(
            f"{game.display_id} defines no information-set tensors for a network to read"
        )
    return game, size, int(game.num_actions)


def _as_numpy(values: Any, source: str = "the network") -> np.ndarray:
    if isinstance(values, tuple):  # an actor-critic's (logits, value), say
        raise PolicyError(
            f"{source} returned a tuple of {len(values)}; return the action outputs alone, one "
            "row per information set (e.g. lambda x: net(x)[0] for a net returning (logits, "
            "value))"
        )
    if isinstance(values, torch.Tensor):
        values = values.detach().to(torch.float64).cpu().numpy()  # bfloat16 has no numpy twin
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise PolicyError(
            f"{source} returned {type(values).__name__}, not an array of numbers ({err}); return "
            "one row of action outputs per information set"
        ) from None


def greedy(values: Any, masks: np.ndarray, source: str = "the network") -> np.ndarray:
    """One-hot rows on the legal action with the largest value (the lowest id on ties);
    :class:`PolicyError` for NaN/inf values on a legal action."""
    values = _as_numpy(values)
    check_finite_on_legal(values, masks, source)
    q = np.where(masks, values, -np.inf)
    out = np.zeros(masks.shape)
    out[np.arange(len(q)), np.argmax(q, axis=1)] = 1.0
    return out


def to_probabilities(values: Any, masks: np.ndarray, output: Output, source: str) -> np.ndarray:
    """``[n, num_actions]`` network outputs as probabilities over the legal actions.

    ``output="logits"``: a softmax over the legal entries; ``"probs"``: the legal entries,
    renormalised; ``"greedy"`` (action values, e.g. a Q-network): all mass on the legal action
    with the largest value. Raises :class:`~nashzoo.agents.policy.PolicyError` (naming
    ``source``) for a wrong shape, non-finite values, or probabilities with no mass on a legal
    action.
    """
    values = _as_numpy(values, source)
    if values.shape != masks.shape:
        raise PolicyError(
            f"{source} returned shape {values.shape}; expected {masks.shape}: one row per "
            "information set, one entry per action of the game"
        )
    if output in ("logits", "greedy"):
        # -inf is a logit's way to say probability 0: allowed while a legal action is left
        zero_prob = np.isneginf(values) if output == "logits" else np.zeros(values.shape, bool)
        check_finite_on_legal(np.where(zero_prob, 0.0, values), masks, f"{source} ({output})")
        dead = ~(masks & ~zero_prob).any(axis=1)
        if dead.any():
            raise PolicyError(
                f"{source} (logits) gives -inf to every legal action in {int(dead.sum())} row(s)",
                row=int(np.argmax(dead)),
            )
        return masked_softmax_np(values, masks) if output == "logits" else greedy(values, masks)
    legal = np.where(masks, values, 0.0)
    bad = ~np.isfinite(legal).all(axis=1) | (legal < 0).any(axis=1)
    if bad.any():
        raise PolicyError(
            f"{source} returned negative or non-finite probabilities in {int(bad.sum())} row(s)",
            row=int(np.argmax(bad)),
        )
    empty = legal.sum(axis=1) <= 0
    if empty.any():
        raise PolicyError(
            f"{source} gives no probability to any legal action in {int(empty.sum())} row(s)",
            row=int(np.argmax(empty)),
        )
    return legal / legal.sum(axis=1, keepdims=True)


def _check_seat(game: Game, seat: Any) -> None:
    """``seat`` is ``None`` or one of the game's players (it labels the policy)."""
    if seat is not None and not (is_whole_number(seat) and seat < game.num_players):
        raise ValueError(
            f"seat must be None (the policy plays every seat) or a player of {game.display_id} "
            f"(0 to {game.num_players - 1}), got {seat!r}"
        )


class NetworkAdapterPolicy(NetworkPolicy):
    """A Policy whose probabilities come from ``probabilities(tensors, masks)`` (a function of
    float32 ``[n, D]`` tensors and boolean ``[n, num_actions]`` masks); what every adapter here
    returns except :func:`from_sb3`."""

    def __init__(
        self,
        game: Game | str,
        probabilities: Callable[[np.ndarray, np.ndarray], np.ndarray],
        *,
        seat: int | None = None,
        label: str = "network",
    ) -> None:
        self.game, size, num_actions = _game_sizes(game)
        _check_seat(self.game, seat)
        super().__init__(self.game.id, size, num_actions, seat)
        self._fn = probabilities
        self.label = label

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self._fn(tensors, masks)

    def __repr__(self) -> str:
        seat = "" if self.seat is None else f", seat {self.seat}"
        return f"{type(self).__name__}({self.label}, {display_id(self.game_id)}{seat})"


def _evaluating(module: nn.Module, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with ``module`` in evaluation mode and without gradients, then restore it."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return fn()
    finally:
        module.train(was_training)


# --- any network ---------------------------------------------------------------------------
def from_network(
    network: nn.Module | Callable[..., Any],
    game: Game | str,
    *,
    output: Output = "logits",
    with_mask: bool = False,
    seat: int | None = None,
) -> NetworkAdapterPolicy:
    """Any network or callable as a Policy.

    Args:
        network: a ``torch.nn.Module`` (called with float32 torch tensors ``[n, D]``, in eval
            mode and without gradients) or any callable (called with numpy arrays).
        game: the game whose information-set tensors it reads.
        output: what it returns per row: ``"logits"`` (softmax over the legal actions),
            ``"probs"`` (illegal entries dropped, the rest renormalised) or ``"greedy"`` (action
            values such as a Q-network's: the legal action with the largest one).
        with_mask: call it as ``network(tensors, masks)`` with the boolean legal-action masks.
        seat: the seat it was trained for (``None``: it plays both). Exact evaluation then
            asks it only about that seat's information sets, and the other seat plays
            uniformly, as in a learner's own policy.
    """
    if output not in ("logits", "probs", "greedy"):
        raise ValueError(f"output must be 'logits', 'probs' or 'greedy', got {output!r}")
    if not callable(network):
        raise TypeError(f"network must be a torch.nn.Module or a callable, got {network!r}")
    label = type(network).__name__

    def probabilities(tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if isinstance(network, nn.Module):
            # On the module's device and in its dtype (a network trained on a GPU, or kept in
            # float64 or bfloat16, stays as it is).
            weight = next(network.parameters(), torch.empty(0))
            dtype = weight.dtype if weight.is_floating_point() else torch.float32
            args: tuple[torch.Tensor, ...] = (
                torch.tensor(tensors, device=weight.device, dtype=dtype),
            )
            if with_mask:
                args = (*args, torch.tensor(masks, device=weight.device))
            out = _evaluating(network, lambda: network(*args))
        else:
            out = network(tensors, masks) if with_mask else network(tensors)
        return to_probabilities(out, masks, output, label)

    return NetworkAdapterPolicy(game, probabilities, seat=seat, label=label)


# --- Stable-Baselines3 ---------------------------------------------------------------------
def _refuse_recurrent(policy_class: type, what: str) -> None:
    """sb3-contrib's recurrent policies (RecurrentPPO) act on a memory of the episode, not on
    the information set alone: there is no table of them to evaluate."""
    if any("Recurrent" in c.__name__ for c in policy_class.__mro__):
        raise PolicyError(
            f"{what} holds a {policy_class.__name__}: a recurrent policy acts on its memory of "
            "the episode, not on the information set alone, so it has no one distribution per "
            "information set to evaluate; train a feed-forward PPO, MaskablePPO or DQN on the "
            "information-set tensors (they already hold everything the player has seen)"
        )


def _is_maskable(policy_class: type) -> bool:
    """sb3-contrib's MaskableActorCriticPolicy (checked by name: sb3-contrib may be absent)."""
    return any(c.__name__ == "MaskableActorCriticPolicy" for c in policy_class.__mro__)


def load_sb3(path: str | os.PathLike[str]) -> BaseAlgorithm:
    """Load a Stable-Baselines3 / sb3-contrib ``.zip`` on the CPU, picking the algorithm class
    from the policy class stored in it (MaskablePPO, PPO, A2C or DQN)."""
    from stable_baselines3 import A2C, DQN, PPO
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.save_util import load_from_zip_file
    from stable_baselines3.dqn.policies import DQNPolicy

    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        data, _, _ = load_from_zip_file(file, device="cpu", load_data=True)
    except Exception as err:
        raise PolicyError(
            f"{path} is not a readable Stable-Baselines3 model ({type(err).__name__}: {err})"
        ) from None
    data = data or {}
    policy_class = data.get("policy_class")
    if not isinstance(policy_class, type):
        raise PolicyError(f"{path} names no policy class: not a Stable-Baselines3 model")
    _refuse_recurrent(policy_class, str(path))
    if issubclass(policy_class, DQNPolicy):
        algo: Any = DQN
    elif _is_maskable(policy_class):
        from sb3_contrib import MaskablePPO

        algo = MaskablePPO
    elif issubclass(policy_class, ActorCriticPolicy):
        algo = PPO if "clip_range" in data else A2C
    else:
        raise PolicyError(
            f"{path} holds a {policy_class.__name__}; nashzoo reads PPO, A2C, MaskablePPO and DQN "
            "models (discrete actions)"
        )
    model: BaseAlgorithm = algo.load(file, device="cpu")
    return model


def from_sb3(
    model: Any,
    game: Game | str,
    *,
    seat: int | None = None,
    epsilon: float = 0.0,
) -> SB3Policy:
    """A Stable-Baselines3 model, or the path of its ``.zip``, as a Policy (a frozen CPU copy:
    :class:`~nashzoo.agents.sb3_baseline.SB3Policy`).

    The model must have been trained on the game's information-set tensors (the Gymnasium view
    ``gymnasium.make("nashzoo/KuhnPoker-v0")`` or ``SingleAgentEnv``) with ``Discrete(
    num_actions)``. MaskablePPO gives its masked distribution; PPO and A2C their action
    distribution with illegal mass moved as the env moves it; DQN is greedy, or epsilon-greedy
    with ``epsilon``.
    """
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy

    from nashzoo.agents.sb3_baseline import SB3Policy

    if isinstance(model, (str, os.PathLike)):
        model = load_sb3(model)
    if not isinstance(model, BaseAlgorithm):
        raise TypeError(f"from_sb3 needs a Stable-Baselines3 model or a .zip path, got {model!r}")
    game, size, num_actions = _game_sizes(game)
    obs_shape = getattr(model.observation_space, "shape", None)
    n = getattr(model.action_space, "n", None)
    if obs_shape != (size,) or n != num_actions:
        raise PolicyError(
            f"the model reads observations of shape {obs_shape} and has {n} actions; "
            f"{game.display_id} has information-set tensors of shape {(size,)} and {num_actions} "
            "actions"
        )
    policy = model.policy
    _refuse_recurrent(type(policy), f"the {type(model).__name__} model")
    if isinstance(policy, DQNPolicy):
        kind: Literal["maskable", "ppo", "dqn"] = "dqn"
    elif _is_maskable(type(policy)):
        kind = "maskable"
    elif isinstance(policy, ActorCriticPolicy):
        kind = "ppo"
    else:
        raise PolicyError(f"unsupported Stable-Baselines3 policy {type(policy).__name__}")
    if not (is_finite_number(epsilon) and 0.0 <= epsilon <= 1.0):
        raise ValueError(f"epsilon must be a number in [0, 1], got {epsilon!r}")
    if epsilon and kind != "dqn":
        raise ValueError(
            f"epsilon applies to DQN's greedy policy only; this is a {type(model).__name__} "
            "model, whose policy is already a distribution (leave epsilon at 0)"
        )
    _check_seat(game, seat)
    return SB3Policy(
        policy,
        kind,
        game_id=game.id,
        input_size=size,
        num_actions=num_actions,
        seat=seat,
        epsilon=epsilon,
    )


# --- Tianshou ------------------------------------------------------------------------------
def from_tianshou(
    policy: Any, game: Game | str, *, seat: int | None = None
) -> NetworkAdapterPolicy:
    """A Tianshou 2 policy (or an algorithm: its ``.policy``) as a Policy.

    Q-learning policies (DQN and relatives) are asked as they are in a PettingZoo env:
    ``Batch(obs=Batch(obs=tensors, mask=masks))``, and give their greedy legal action, mixed
    with ``eps_inference`` of uniform legal exploration as Tianshou acts at evaluation; actor
    policies (PPO, A2C, REINFORCE, discrete SAC) are asked with the tensors and give their
    action distribution over the legal actions.
    """
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.data import Batch

    policy = getattr(policy, "policy", policy)
    if not isinstance(policy, nn.Module) or not hasattr(policy, "action_space"):
        raise TypeError(f"from_tianshou needs a Tianshou policy or algorithm, got {policy!r}")
    label = type(policy).__name__
    q_learning = isinstance(policy, DiscreteQLearningPolicy)

    def probabilities(tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        tensors = np.array(tensors)  # a writable copy: Tianshou hands it to torch as it is
        if q_learning:
            batch = Batch(obs=Batch(obs=tensors, mask=masks), info=Batch())
            out = _evaluating(policy, lambda: policy(batch))
            eps = float(getattr(policy, "eps_inference", 0.0) or 0.0)
            uniform = masks / masks.sum(axis=1, keepdims=True)
            return (1.0 - eps) * greedy(out.logits, masks) + eps * uniform
        out = _evaluating(policy, lambda: policy(Batch(obs=tensors, info=Batch())))
        dist = getattr(out, "dist", None)
        if dist is not None and hasattr(dist, "probs"):
            return to_probabilities(dist.probs, masks, "probs", label)
        return to_probabilities(out.logits, masks, "logits", label)

    return NetworkAdapterPolicy(game, probabilities, seat=seat, label=label)


# --- RLlib ---------------------------------------------------------------------------------
def from_rllib(
    module: Any,
    game: Game | str,
    *,
    module_id: str | None = None,
    seat: int | None = None,
    deterministic: bool = False,
    obs_key: str = "observations",
    mask_key: str = "action_mask",
) -> NetworkAdapterPolicy:
    """An RLlib ``RLModule`` (torch), or an ``Algorithm`` of the new API stack (its module
    ``module_id``, default the single-agent one), as a Policy.

    The module is run with ``forward_inference({"obs": ...})``. If its observation space is a
    ``Dict`` holding ``mask_key`` (RLlib's action-masking module), the observation is passed as
    ``{obs_key: tensors, mask_key: masks}``, the layout that module reads; otherwise as the
    tensors. The ``action_dist_inputs`` it returns are logits: the Policy is their softmax over
    the legal actions (what RLlib samples from when exploring) or, with ``deterministic=True``,
    the greedy legal action (what it plays at evaluation).
    """
    if hasattr(module, "get_module"):
        module = module.get_module(module_id) if module_id else module.get_module()
    if not hasattr(module, "forward_inference"):
        raise TypeError(f"from_rllib needs an RLModule or an RLlib Algorithm, got {module!r}")
    # RLlib's masking module keeps the Dict space (mask included) apart from the one it reads.
    space = getattr(module, "observation_space_with_mask", None)
    space = space if space is not None else getattr(module, "observation_space", None)
    masked = isinstance(space, gymnasium.spaces.Dict) and mask_key in space.spaces
    label = type(module).__name__

    def probabilities(tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        obs: Any = torch.tensor(tensors)
        if masked:
            obs = {obs_key: obs, mask_key: torch.tensor(masks, dtype=torch.float32)}
        with torch.no_grad():
            logits = module.forward_inference({"obs": obs})["action_dist_inputs"]
        if deterministic:
            return greedy(logits, masks)
        return to_probabilities(logits, masks, "logits", label)

    return NetworkAdapterPolicy(game, probabilities, seat=seat, label=label)
