"""Leduc hold'em as a PettingZoo AEC environment: ``leduc_holdem_v0``.

Rules, card and action encoding are those of :mod:`nashzoo.games.leduc` (the reference encoding
OpenSpiel's ``leduc_poker`` uses): cards ``0..5`` with rank ``card // 2``, actions ``0 = fold``,
``1 = call/check``, ``2 = raise``; the observation is the 30-float information-state tensor
documented there. Note that PettingZoo's own ``leduc_holdem_v4`` (RLCard) uses a different
action order and observation; this one matches OpenSpiel and the literature, so policies and
numbers compare with published results. The environment itself is the generic
:class:`nashzoo.envs.aec.GameAECEnv`.

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

NAME = "leduc_holdem_v0"
GAME = "leduc_poker"


def raw_env(**kwargs: Any) -> GameAECEnv:
    """The unwrapped env (illegal actions raise :class:`~nashzoo.games.IllegalActionError`)."""
    return _factory.make_raw_env(NAME, GAME, kwargs)


def env(**kwargs: Any) -> AECEnv[str, ObsDict, int]:
    """The env with PettingZoo's standard wrappers; accepts ``illegal_action=``."""
    return _factory.make_env(NAME, GAME, kwargs)
