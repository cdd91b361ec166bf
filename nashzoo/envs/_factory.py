"""Shared plumbing of the thin per-game modules (``kuhn_poker_v0`` and friends).

Each per-game module only names its game, its versioned env name and which keyword arguments
are game parameters; building, checking keyword arguments and wrapping happen here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import aec_to_parallel_wrapper

from nashzoo.envs.aec import (
    GameAECEnv,
    ObsDict,
    check_illegal_action,
    check_kwargs,
    to_parallel,
    wrap_env,
)

ENV_KWARGS = ("render_mode", "render_agent", "tabulate", "pad_actions")
"""Keyword arguments every ``raw_env`` accepts; ``env`` also takes ``illegal_action``."""


def make_raw_env(
    env_name: str,
    game_name: str,
    kwargs: dict[str, Any],
    *,
    game_params: Sequence[str] = (),
    parallelizable: bool = False,
) -> GameAECEnv:
    """Build the raw env of one per-game module, with clear errors for bad keyword arguments."""
    if "illegal_action" in kwargs:
        raise ValueError(
            f"{env_name}.raw_env() always raises on illegal actions; illegal_action= is an "
            f"option of {env_name}.env()"
        )
    check_kwargs(f"{env_name}.raw_env()", kwargs, [*ENV_KWARGS, *game_params])
    env_kwargs = {k: v for k, v in kwargs.items() if k in ENV_KWARGS}
    params = {k: v for k, v in kwargs.items() if k not in ENV_KWARGS}
    return GameAECEnv(
        game_name, name=env_name, parallelizable=parallelizable, **env_kwargs, **params
    )


def make_env(
    env_name: str,
    game_name: str,
    kwargs: dict[str, Any],
    *,
    game_params: Sequence[str] = (),
    parallelizable: bool = False,
) -> AECEnv[str, ObsDict, int]:
    """Raw env plus PettingZoo's standard wrappers (see :func:`nashzoo.envs.aec.wrap_env`)."""
    check_kwargs(f"{env_name}.env()", kwargs, [*ENV_KWARGS, *game_params, "illegal_action"])
    kwargs = dict(kwargs)
    illegal_action = check_illegal_action(kwargs.pop("illegal_action", "raise"))
    raw = make_raw_env(
        env_name, game_name, kwargs, game_params=game_params, parallelizable=parallelizable
    )
    return wrap_env(raw, illegal_action)


def make_parallel_env(
    env_name: str,
    game_name: str,
    kwargs: dict[str, Any],
    *,
    game_params: Sequence[str] = (),
) -> aec_to_parallel_wrapper:
    """Parallel (simultaneous-move) view of a wrapped env, via PettingZoo's conversion.

    Only ``illegal_action="raise"``: PettingZoo's AEC-to-parallel conversion cannot carry the
    mid-cycle termination of the terminate-with-penalty convention (it asserts), so a penalty
    mode would be broken there. Illegal joint actions raise before anything is applied.
    """
    if kwargs.get("illegal_action", "raise") != "raise":
        check_illegal_action(kwargs["illegal_action"])
        raise ValueError(
            f"{env_name}.parallel_env() supports only illegal_action='raise'; "
            f"use {env_name}.env(illegal_action='penalize') for the terminate-with-penalty mode"
        )
    wrapped = make_env(env_name, game_name, kwargs, game_params=game_params, parallelizable=True)
    return to_parallel(wrapped)
