"""Rock-Paper-Scissors as a PettingZoo environment: ``rps_v0`` (AEC and parallel).

The game is :mod:`nashzoo.games.matrix`'s ``rps``: player 0 moves, then player 1 moves without
seeing that move, which is strategically the simultaneous game. Actions ``0 = rock``,
``1 = paper``, ``2 = scissors``; win 1, lose -1, draw 0. :func:`parallel_env` gives the
simultaneous-move (``ParallelEnv``) view through PettingZoo's own AEC-to-parallel conversion;
a joint action with an illegal part raises before anything is applied.

Keyword arguments: ``render_mode`` (``None``, ``"ansi"``, ``"human"``), ``render_agent``
(whose move ``render()`` shows before the end; ``None`` shows all) and ``illegal_action``:
``"raise"`` (the default) or, for :func:`env` only, ``"penalize"`` (PettingZoo's
terminate-with-penalty convention); :func:`parallel_env` accepts only ``"raise"``.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from nashzoo.envs import _factory
from nashzoo.envs.aec import GameAECEnv, ObsDict

NAME = "rps_v0"
GAME = "rps"


def raw_env(**kwargs: Any) -> GameAECEnv:
    """The unwrapped AEC env (illegal actions raise :class:`~nashzoo.games.IllegalActionError`)."""
    return _factory.make_raw_env(NAME, GAME, kwargs, parallelizable=True)


def env(**kwargs: Any) -> AECEnv[str, ObsDict, int]:
    """The AEC env with PettingZoo's standard wrappers; accepts ``illegal_action=``."""
    return _factory.make_env(NAME, GAME, kwargs, parallelizable=True)


def parallel_env(**kwargs: Any) -> ParallelEnv[str, ObsDict, int]:
    """The simultaneous-move view (both agents act in one ``step``)."""
    return _factory.make_parallel_env(NAME, GAME, kwargs)
