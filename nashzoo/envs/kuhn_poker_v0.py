"""Kuhn poker as a PettingZoo AEC environment: ``kuhn_poker_v0``.

Rules, card and action encoding are those of :mod:`nashzoo.games.kuhn` (the reference encoding
OpenSpiel uses): actions ``0 = pass`` (check/fold) and ``1 = bet`` (bet/call); the observation
is the 11-float information-state tensor documented there. The environment itself is the
generic :class:`nashzoo.envs.aec.GameAECEnv`.

Example::

    from nashzoo.envs import kuhn_poker_v0

    env = kuhn_poker_v0.env(render_mode="ansi")
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else int(obs["action_mask"].nonzero()[0][0])
        env.step(action)

Keyword arguments: ``render_mode`` (``None``, ``"ansi"``, ``"human"``), ``render_agent``
(whose cards ``render()`` shows; ``None`` shows all) and, for :func:`env` only,
``illegal_action`` (``"raise"``, the default, or ``"penalize"`` for PettingZoo's
terminate-with-penalty convention).
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from nashzoo.envs import _factory
from nashzoo.envs.aec import GameAECEnv, ObsDict

NAME = "kuhn_poker_v0"
GAME = "kuhn_poker"


def raw_env(**kwargs: Any) -> GameAECEnv:
    """The unwrapped env (illegal actions raise :class:`~nashzoo.games.IllegalActionError`)."""
    return _factory.make_raw_env(NAME, GAME, kwargs)


def env(**kwargs: Any) -> AECEnv[str, ObsDict, int]:
    """The env with PettingZoo's standard wrappers; accepts ``illegal_action=``."""
    return _factory.make_env(NAME, GAME, kwargs)
