"""Any two-player matrix game as a PettingZoo environment: ``matrix_game_v0`` (AEC and parallel).

Game parameters go to ``load_game("matrix", ...)`` (:mod:`nashzoo.games.matrix`):
``preset`` (``rps``, ``biased_rps``, ``matching_pennies``, ``prisoners_dilemma``) or
``row_payoffs`` (and optionally ``col_payoffs`` for general-sum games), plus ``action_names``.
Player 0 picks a row, player 1 a column without seeing the row; both are paid when both have
moved. With ``m`` rows and ``n`` columns, ``player_0`` has the action space ``Discrete(m)`` and
``player_1`` ``Discrete(n)``, each with an action mask of its own length; the observation
tensor is ``2 + max(m, n)`` floats for both (see :mod:`nashzoo.games.matrix`).
``pad_actions=True`` gives both agents identical spaces instead (``Discrete(max(m, n))``, masks
of that length with the extra ids masked out), which Tianshou and SuperSuit's vector envs
require.

Example::

    from nashzoo.envs import matrix_game_v0

    env = matrix_game_v0.parallel_env(row_payoffs=[[3, 0], [5, 1]], col_payoffs=[[3, 5], [0, 1]])
    observations, infos = env.reset(seed=0)
    observations, rewards, terminations, truncations, infos = env.step(
        {"player_0": 1, "player_1": 1}
    )  # rewards == {"player_0": 1.0, "player_1": 1.0}

Keyword arguments besides the game parameters: ``render_mode`` (``None``, ``"ansi"``,
``"human"``), ``render_agent``, ``pad_actions`` and ``illegal_action``: ``"raise"`` (the
default) or, for :func:`env` only, ``"penalize"`` (PettingZoo's terminate-with-penalty convention);
:func:`parallel_env` accepts only ``"raise"``.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from nashzoo.envs import _factory
from nashzoo.envs.aec import GameAECEnv, ObsDict

NAME = "matrix_game_v0"
GAME = "matrix"
GAME_PARAMS = ("preset", "row_payoffs", "col_payoffs", "action_names")


def raw_env(**kwargs: Any) -> GameAECEnv:
    """The unwrapped AEC env (illegal actions raise :class:`~nashzoo.games.IllegalActionError`)."""
    return _factory.make_raw_env(NAME, GAME, kwargs, game_params=GAME_PARAMS, parallelizable=True)


def env(**kwargs: Any) -> AECEnv[str, ObsDict, int]:
    """The AEC env with PettingZoo's standard wrappers; accepts ``illegal_action=``."""
    return _factory.make_env(NAME, GAME, kwargs, game_params=GAME_PARAMS, parallelizable=True)


def parallel_env(**kwargs: Any) -> ParallelEnv[str, ObsDict, int]:
    """The simultaneous-move view (both agents act in one ``step``)."""
    return _factory.make_parallel_env(NAME, GAME, kwargs, game_params=GAME_PARAMS)
