"""PettingZoo wrappers around :class:`~nashzoo.envs.aec.GameAECEnv`: order checks, the
terminate-with-penalty convention for illegal moves, and the validating parallel view.

They use the env only through its public surface (``step``, ``observe``, ``agents``,
``agent_selection``, ``terminations``, ``truncations``, ``infos``, ``action_space``,
:meth:`~nashzoo.envs.aec.GameAECEnv.is_legal`,
:meth:`~nashzoo.envs.aec.GameAECEnv.end_with_penalty`) plus PettingZoo's ``AECEnv`` reward
accumulator ``_cumulative_rewards`` that ``AECEnv.last`` itself reads. ``nashzoo.envs.aec``
re-exports everything here.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import aec_to_parallel_wrapper
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from nashzoo.envs.aec import GameAECEnv, ObsDict
from nashzoo.games import IllegalActionError
from nashzoo.games.base import action_index, legal_actions_text

ILLEGAL_ACTION_MODES = ("raise", "penalize")


class _ValidatingParallelEnv(aec_to_parallel_wrapper):
    """PettingZoo's ``aec_to_parallel_wrapper`` that checks every action before applying any.

    The plain wrapper steps the agents one by one, so an illegal action of the second agent
    would surface after the first agent's move was applied. Here every action is checked
    against the agent's current action mask first, so an illegal joint action raises
    :class:`~nashzoo.games.IllegalActionError` and changes nothing.
    """

    def __repr__(self) -> str:
        return f"<parallel env of {self.aec_env!r}>"

    def step(self, actions: dict[str, int]) -> Any:
        if not self.aec_env.agents:
            raise RuntimeError("the episode is over; call reset() to start a new one")
        unknown = sorted(set(actions) - set(self.aec_env.agents), key=str)
        if unknown:
            raise ValueError(
                f"step() got actions for {unknown}, which are not live agents "
                f"{self.aec_env.agents}; pass one action per live agent"
            )
        for agent in self.aec_env.agents:
            if agent not in actions:
                raise ValueError(
                    f"step() needs an action for every live agent {self.aec_env.agents}; "
                    f"missing {agent!r}"
                )
            mask = self.aec_env.observe(agent)["action_mask"]
            a = action_index(actions[agent])
            if a is None or not 0 <= a < len(mask) or not mask[a]:
                legal = np.flatnonzero(mask).tolist()
                names = legal_actions_text(legal, self.unwrapped.game.action_name)
                raise IllegalActionError(
                    f"action {actions[agent]!r} is not legal for {agent}; "
                    f"legal actions are: {names}"
                )
        return super().step(actions)


def _forwarded(name: str) -> property:
    def get(self: OrderEnforcingWrapper) -> Any:
        if not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self.env, name)

    def put(self: OrderEnforcingWrapper, value: Any) -> None:
        # PettingZoo < 1.25's BaseWrapper copies these from the wrapped env after every reset
        # and step; writing through keeps the one copy that the getter reads.
        setattr(self.env, name, value)

    return property(get, put, doc=f"``{name}`` of the wrapped env (only after ``reset``).")


class _AgentIterator(AECOrderEnforcingIterator):
    """PettingZoo's ``agent_iter`` iterator (the same stop rule and the same
    "need to call step() or reset()" check), reading the raw env's attributes directly."""

    def __init__(self, env: OrderEnforcingWrapper, max_iter: int) -> None:
        super().__init__(env, max_iter)
        self._raw = env.env

    def __next__(self) -> str:
        raw = self._raw
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        env = self.env
        assert env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        env._has_updated = False
        return raw.agent_selection


class _AgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _AgentIterator:
        return _AgentIterator(self.env, self.max_iter)


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with the per-step attributes forwarded directly.

    The base class reaches ``agent_selection``, ``terminations``, ``rewards`` and the like
    through ``__getattr__``, which Python only calls after a failed ordinary lookup: in a random
    play-out that fallback was a third of the run time. Here those attributes are properties,
    ``last()`` and ``step()`` go to the raw env in one call, and ``agent_iter`` reads the raw
    env's ``agents`` and ``agent_selection`` directly. The checks and errors are PettingZoo's
    own (accessing them before ``reset`` raises ``AttributeError``; stepping or observing before
    ``reset`` raises through ``EnvLogger``), and ``agent_iter`` still enforces ``step``/``reset``
    between iterations; ``tests/test_envs.py`` checks both.
    """

    agent_selection = _forwarded("agent_selection")
    agents = _forwarded("agents")
    rewards = _forwarded("rewards")
    terminations = _forwarded("terminations")
    truncations = _forwarded("truncations")
    infos = _forwarded("infos")

    @overload
    def last(self, observe: Literal[True] = True) -> tuple[ObsDict, float, bool, bool, dict]: ...
    @overload
    def last(self, observe: bool) -> tuple[ObsDict | None, float, bool, bool, dict]: ...
    def last(self, observe: bool = True) -> tuple[ObsDict | None, float, bool, bool, dict]:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)  # the raw env's, in this one call

    def step(self, action: int | None) -> None:
        # PettingZoo's checks, then the raw env's step directly (not through BaseWrapper.step).
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> _AgentIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _AgentIterable(self, max_iter)

    def __str__(self) -> str:
        return str(self.env)  # as PettingZoo's: the wrapper does not show in the name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.env!r}>"


class PenalizeIllegalWrapper(OrderEnforcingWrapper):
    """PettingZoo's terminate-with-penalty convention for illegal moves, in one wrapper.

    Observably the same as PettingZoo's classic stack ``OrderEnforcingWrapper(
    AssertOutOfBoundsWrapper(TerminateIllegalWrapper(env, illegal_reward)))``
    (``tests/test_envs.py`` plays both side by side, illegal moves included) at the cost of a
    single wrapper, so the ``"penalize"`` mode is as fast as the default:

    * an action outside the agent's action space (not an integer id, or out of range) raises
      ``AssertionError("action is not in action space ...")``, as ``AssertOutOfBoundsWrapper``
      does;
    * a legal action is played by the env;
    * an in-space illegal action (masked out) ends the game: PettingZoo's
      ``"[WARNING]: Illegal move made, ..."`` is logged through its ``EnvLogger``, the offender
      gets ``illegal_reward`` (default -1), every other agent 0, every agent is marked
      terminated and truncated (as ``TerminateIllegalWrapper`` marks them) and is then stepped
      with ``None`` to leave; the game state itself is left as it was before the move.

    The order checks are those of :class:`OrderEnforcingWrapper` (PettingZoo's).
    """

    def __init__(self, env: GameAECEnv, illegal_reward: float = -1.0) -> None:
        if not isinstance(env, GameAECEnv):
            raise TypeError(f"PenalizeIllegalWrapper wraps a GameAECEnv, got {env!r}")
        super().__init__(env)
        self.illegal_reward = float(illegal_reward)
        self._raw = env
        self._sizes = {a: env.action_space(a).n for a in env.possible_agents}

    def step(self, action: int | None) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        raw = self._raw
        if not raw.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
            return
        self._has_updated = True
        agent = raw.agent_selection
        dead = raw.terminations[agent] or raw.truncations[agent]
        if action is None and dead:
            raw.step(None)
            return
        a = action_index(action)
        if a is None or not 0 <= a < self._sizes[agent]:
            raise AssertionError(
                f"action is not in action space: {action!r} for {agent}, whose action space is "
                f"Discrete({self._sizes[agent]}) (illegal_action='penalize' penalises only "
                "masked-out ids inside the space)"
            )
        if dead:
            raw.step(action)  # PettingZoo's "when an agent is dead, the only valid action is None"
            return
        if raw.is_legal(a):
            raw.step(a)
            return
        # Terminate with penalty, exactly as PettingZoo's TerminateIllegalWrapper does.
        EnvLogger.warn_on_illegal_move()
        raw.end_with_penalty(agent, self.illegal_reward)


def check_illegal_action(illegal_action: str) -> str:
    if illegal_action not in ILLEGAL_ACTION_MODES:
        raise ValueError(
            f"illegal_action must be one of {list(ILLEGAL_ACTION_MODES)}, got {illegal_action!r}"
        )
    return illegal_action


def wrap_env(raw: GameAECEnv, illegal_action: str = "raise") -> AECEnv[str, ObsDict, int]:
    """Apply PettingZoo's standard wrappers to a raw env.

    ``illegal_action="raise"`` (default): ``OrderEnforcingWrapper`` only (PettingZoo's, with
    faster attribute forwarding: see :class:`OrderEnforcingWrapper`); the raw env itself
    rejects illegal and out-of-range actions with :class:`~nashzoo.games.IllegalActionError`
    and leaves the game unchanged.

    ``illegal_action="penalize"``: :class:`PenalizeIllegalWrapper` only, PettingZoo's
    terminate-with-penalty convention (what its classic stack ``TerminateIllegalWrapper`` +
    ``AssertOutOfBoundsWrapper`` + ``OrderEnforcingWrapper`` does: the offender gets -1, the
    other agents 0, and the game ends), the convention RL libraries expect, in one wrapper.
    """
    check_illegal_action(illegal_action)
    if illegal_action == "penalize":
        return PenalizeIllegalWrapper(raw, illegal_reward=-1.0)
    return OrderEnforcingWrapper(raw)


def to_parallel(aec_env: AECEnv[str, ObsDict, int]) -> aec_to_parallel_wrapper:
    """Parallel view of a (wrapped) env whose metadata says it is parallelizable."""
    if not aec_env.metadata.get("is_parallelizable", False):
        raise ValueError(
            f"{aec_env.metadata.get('name')} is turn-based; only simultaneous-move games "
            "(rps_v0, matrix_game_v0) have a parallel_env"
        )
    return _ValidatingParallelEnv(aec_env)


__all__ = [
    "ILLEGAL_ACTION_MODES",
    "OrderEnforcingWrapper",
    "PenalizeIllegalWrapper",
    "check_illegal_action",
    "to_parallel",
    "wrap_env",
]
