"""PettingZoo environments for every nashzoo game.

One generic AEC environment (:class:`~nashzoo.envs.aec.GameAECEnv`) plays any nashzoo
``Game``; the per-game modules are thin, PettingZoo-classic style (``raw_env``, ``env`` with the
standard wrappers, ``parallel_env`` for the simultaneous-move games):

=====================  ===============  ==============
module                 game             parallel_env
=====================  ===============  ==============
``rps_v0``             ``rps``          yes
``matrix_game_v0``     ``matrix``       yes
``kuhn_poker_v0``      ``kuhn_poker``   no
``leduc_holdem_v0``    ``leduc_poker``  no
``liars_dice_v0``      ``liars_dice``   no
=====================  ===============  ==============

Registration: PettingZoo 1.27 has a Gymnasium-style registry (``pettingzoo.register`` /
``pettingzoo.make``) but no plugin discovery, so importing this package registers the envs under
the ``nashzoo`` namespace (older PettingZoo, 1.24 to 1.26, has no registry: there the envs are
used through their modules or :func:`make_env`, and :data:`PETTINGZOO_REGISTRY` is ``False``)::

    import pettingzoo
    import nashzoo.envs  # registers nashzoo/kuhn_poker-v0, nashzoo/rps-v0, ...

    env = pettingzoo.make("aec", "nashzoo/kuhn_poker-v0")
    par = pettingzoo.make("parallel", "nashzoo/rps-v0")

:class:`~nashzoo.envs.single_agent.SingleAgentEnv` is the Gymnasium single-agent view: one seat
learns, the opponent's Policy moves inside ``step()`` (what Stable-Baselines3 trains on). Importing
this package registers it with Gymnasium for every game, under the CamelCase of the PettingZoo
name (:data:`GYMNASIUM_IDS`); the seat, the opponent Policy (default uniform), ``illegal_action``,
``render_mode`` and the game parameters are ``make`` keyword arguments::

    import gymnasium
    import nashzoo.envs

    env = gymnasium.make("nashzoo/LeducHoldem-v0", seat="random", opponent=policy)
    env = gymnasium.make("nashzoo.envs:nashzoo/KuhnPoker-v0")  # imports nashzoo.envs itself
    env = gymnasium.make("nashzoo/Game-v0", game="my_game")  # any game: registered, a Game

:func:`make_env` does the same by versioned module name without touching the registry:
``make_env("kuhn_poker_v0", render_mode="ansi")``. :func:`env` makes one for ANY game,
a ``Game`` object or anything ``load_game`` accepts (a registered user game, an OpenSpiel game
string): ``nashzoo.envs.env("openspiel:liars_dice(dice_sides=4)")``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal, overload

import gymnasium
import pettingzoo
from pettingzoo import AECEnv, ParallelEnv

from nashzoo.envs import kuhn_poker_v0, leduc_holdem_v0, liars_dice_v0, matrix_game_v0, rps_v0
from nashzoo.envs.aec import GameAECEnv, ObsDict, agent_name, check_illegal_action, wrap_env
from nashzoo.envs.single_agent import SingleAgentEnv
from nashzoo.games import Game

ENV_MODULES: dict[str, ModuleType] = {
    m.NAME: m for m in (rps_v0, matrix_game_v0, kuhn_poker_v0, leduc_holdem_v0, liars_dice_v0)
}
"""Versioned env name -> per-game module."""

NAMESPACE = "nashzoo"

PETTINGZOO_REGISTRY: bool = hasattr(pettingzoo, "aec_registry")
"""Whether this PettingZoo has the env registry (1.27+) the envs were registered in."""


def env_names() -> list[str]:
    """Versioned names accepted by :func:`make_env`."""
    return list(ENV_MODULES)


@overload
def make_env(
    name: str, *, parallel: Literal[False] = False, **kwargs: Any
) -> AECEnv[str, ObsDict, int]: ...
@overload
def make_env(
    name: str, *, parallel: Literal[True], **kwargs: Any
) -> ParallelEnv[str, ObsDict, int]: ...
@overload
def make_env(
    name: str, *, parallel: bool, **kwargs: Any
) -> AECEnv[str, ObsDict, int] | ParallelEnv[str, ObsDict, int]: ...
def make_env(
    name: str, *, parallel: bool = False, **kwargs: Any
) -> AECEnv[str, ObsDict, int] | ParallelEnv[str, ObsDict, int]:
    """Create a wrapped env by versioned name (``"kuhn_poker_v0"``; ``"nashzoo/kuhn_poker-v0"``
    works too).

    Args:
        name: one of :func:`env_names`.
        parallel: return the ``ParallelEnv`` view (only for ``rps_v0`` and ``matrix_game_v0``).
        **kwargs: passed to the module's ``env()`` / ``parallel_env()``.

    Raises:
        ValueError: unknown name (the message lists the valid ones), a turn-based game with
            ``parallel=True``, or bad keyword arguments.
    """
    key = name.removeprefix(f"{NAMESPACE}/").replace("-v", "_v") if isinstance(name, str) else ""
    module = ENV_MODULES.get(key)
    if module is None:
        raise ValueError(f"unknown env {name!r}; valid envs: {', '.join(ENV_MODULES)}")
    if parallel:
        if not hasattr(module, "parallel_env"):
            raise ValueError(
                f"{key} is turn-based and has no parallel_env; parallel envs: "
                f"{', '.join(n for n, m in ENV_MODULES.items() if hasattr(m, 'parallel_env'))}"
            )
        return module.parallel_env(**kwargs)
    return module.env(**kwargs)


def env(
    game: Game | str, *, illegal_action: str = "raise", **kwargs: Any
) -> AECEnv[str, ObsDict, int]:
    """A wrapped PettingZoo AEC env over ANY game: built-in, registered, or OpenSpiel's.

    ``nashzoo.envs.env("kuhn_poker")`` is ``kuhn_poker_v0.env()``; ``env(MyGame())``,
    ``env("my_game", size=3)`` and ``env("openspiel:liars_dice(dice_sides=4)")`` work the same
    way, with the same observation/action conventions (see :mod:`nashzoo.envs.aec`).

    Args:
        game: a ``Game`` or anything :func:`nashzoo.games.load_game` accepts.
        illegal_action: ``"raise"`` (default: an illegal action raises and changes nothing) or
            ``"penalize"`` (PettingZoo's terminate-with-penalty convention).
        **kwargs: ``render_mode``, ``render_agent`` and the game's parameters (when ``game`` is
            a name), as :class:`~nashzoo.envs.aec.GameAECEnv` takes them.
    """
    check_illegal_action(illegal_action)
    return wrap_env(raw_env(game, **kwargs), illegal_action)


def raw_env(game: Game | str, **kwargs: Any) -> GameAECEnv:
    """The unwrapped env of :func:`env` (illegal actions raise and change nothing)."""
    return GameAECEnv(game, **kwargs)


def registry_id(name: str) -> str:
    """Registry id of a versioned env name: ``kuhn_poker_v0`` -> ``nashzoo/kuhn_poker-v0``."""
    base, _, version = name.rpartition("_v")
    return f"{NAMESPACE}/{base}-v{version}"


def env_ids() -> dict[str, str]:
    """Game name -> the PettingZoo registry id of its own env (``kuhn_poker`` ->
    ``nashzoo/kuhn_poker-v0``), for the built-in games that have one; every other game (a
    plugin's, OpenSpiel's) plays through :func:`env`."""
    return {module.GAME: registry_id(name) for name, module in ENV_MODULES.items()}


_ACRONYMS = {"rps": "RPS"}


def gymnasium_id(name: str) -> str:
    """Gymnasium id of the single-agent view of a versioned env name:
    ``kuhn_poker_v0`` -> ``nashzoo/KuhnPoker-v0``, ``rps_v0`` -> ``nashzoo/RPS-v0``."""
    base, _, version = name.rpartition("_v")
    camel = "".join(_ACRONYMS.get(part, part.capitalize()) for part in base.split("_"))
    return f"{NAMESPACE}/{camel}-v{version}"


GYMNASIUM_IDS: dict[str, str] = {gymnasium_id(name): m.GAME for name, m in ENV_MODULES.items()}
"""Gymnasium id of the single-agent view of each built-in game -> nashzoo game name."""

GYMNASIUM_ANY_GAME = f"{NAMESPACE}/Game-v0"
"""Gymnasium id of the single-agent view of any game, given as ``game=`` (any name
:func:`~nashzoo.games.load_game` accepts, or a ``Game``):
``gymnasium.make("nashzoo/Game-v0", game="my_game")``."""


def _register() -> None:
    entry_point = "nashzoo.envs.single_agent:SingleAgentEnv"
    for env_id, game in GYMNASIUM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=entry_point, kwargs={"game": game})
    if GYMNASIUM_ANY_GAME not in gymnasium.registry:
        gymnasium.register(GYMNASIUM_ANY_GAME, entry_point=entry_point)
    if not PETTINGZOO_REGISTRY:
        return  # PettingZoo < 1.27: no registry to register in (see the module docstring)
    for name, module in ENV_MODULES.items():
        env_id = registry_id(name)
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point=f"{module.__name__}:env")
        if hasattr(module, "parallel_env") and env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"{module.__name__}:parallel_env")


_register()

__all__ = [
    "ENV_MODULES",
    "GYMNASIUM_ANY_GAME",
    "GYMNASIUM_IDS",
    "PETTINGZOO_REGISTRY",
    "GameAECEnv",
    "SingleAgentEnv",
    "agent_name",
    "env",
    "env_ids",
    "env_names",
    "gymnasium_id",
    "kuhn_poker_v0",
    "leduc_holdem_v0",
    "liars_dice_v0",
    "make_env",
    "matrix_game_v0",
    "raw_env",
    "registry_id",
    "rps_v0",
]
