"""Liar's dice as a PettingZoo AEC environment: ``liars_dice_v0``.

Rules, dice and action encoding are those of :mod:`nashzoo.games.liars_dice` (OpenSpiel's
``liars_dice`` encoding): with ``D = 2 * numdice`` dice of ``S = dice_sides`` faces, actions
``0 .. D*S - 1`` are bids from weakest to strongest (``q-f``: at least ``q`` dice show face
``f``; the highest face is wild) and ``D*S`` calls "Liar"; the observation is the
information-state tensor documented there. The environment itself is the generic
:class:`nashzoo.envs.aec.GameAECEnv`; the default game (294,883 histories) is too big for its
lookup tables under ``tabulate="auto"``, so it steps the game's states.

Example::

    from nashzoo.envs import liars_dice_v0

    env = liars_dice_v0.env(dice_sides=4, render_mode="ansi")
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else int(obs["action_mask"].nonzero()[0][-1])
        env.step(action)

Keyword arguments: the game's ``numdice`` (dice per player, default 1), ``dice_sides`` (default
6) and ``bidding_rule`` (``"reset-face"``, the default, or ``"reset-quantity"``);
``render_mode`` (``None``, ``"ansi"``, ``"human"``), ``render_agent`` (whose dice ``render()``
shows; ``None`` shows all), ``tabulate`` (``"auto"``, ``True``, ``False``: see
:class:`~nashzoo.envs.aec.GameAECEnv`) and, for :func:`env` only, ``illegal_action``
(``"raise"``, the default, or ``"penalize"`` for PettingZoo's terminate-with-penalty
convention).
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from nashzoo.envs import _factory
from nashzoo.envs.aec import GameAECEnv, ObsDict

NAME = "liars_dice_v0"
GAME = "liars_dice"
GAME_PARAMS = ("numdice", "dice_sides", "bidding_rule")


def raw_env(**kwargs: Any) -> GameAECEnv:
    """The unwrapped env (illegal actions raise :class:`~nashzoo.games.IllegalActionError`)."""
    return _factory.make_raw_env(NAME, GAME, kwargs, game_params=GAME_PARAMS)


def env(**kwargs: Any) -> AECEnv[str, ObsDict, int]:
    """The env with PettingZoo's standard wrappers; accepts ``illegal_action=``."""
    return _factory.make_env(NAME, GAME, kwargs, game_params=GAME_PARAMS)
