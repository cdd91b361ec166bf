"""``load_game(name, **params)``: the one way to get a game by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nashzoo.games.base import Game
from nashzoo.games.kuhn import KuhnPokerGame
from nashzoo.games.leduc import LeducPokerGame
from nashzoo.games.matrix import PRESETS, MatrixGame


def _rps(**params: Any) -> Game:
    if params:
        raise ValueError(
            f"rps takes no parameters, got {sorted(params)}; for other payoffs use "
            "load_game('matrix', row_payoffs=...)"
        )
    return MatrixGame(preset="rps", name="rps")


def _no_params(cls: Callable[[], Game], name: str) -> Callable[..., Game]:
    def make(**params: Any) -> Game:
        if params:
            raise ValueError(f"{name} takes no parameters, got {sorted(params)}")
        return cls()

    return make


def _matrix(**params: Any) -> Game:
    allowed = {"preset", "row_payoffs", "col_payoffs", "action_names"}
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(
            f"unknown matrix parameters {sorted(unknown)}; valid: {sorted(allowed)} "
            f"(presets: {', '.join(PRESETS)})"
        )
    return MatrixGame(**params)


GAMES: dict[str, Callable[..., Game]] = {
    "rps": _rps,
    "matrix": _matrix,
    "kuhn_poker": _no_params(KuhnPokerGame, "kuhn_poker"),
    "leduc_poker": _no_params(LeducPokerGame, "leduc_poker"),
}

_ALIASES = {"kuhn": "kuhn_poker", "leduc": "leduc_poker", "leduc_holdem": "leduc_poker"}


def game_names() -> list[str]:
    """Names accepted by :func:`load_game`."""
    return list(GAMES)


def load_game(name: str | Game, **params: Any) -> Game:
    """Load a game by name.

    Args:
        name: ``"rps"``, ``"matrix"``, ``"kuhn_poker"`` or ``"leduc_poker"`` (``"kuhn"`` and
            ``"leduc"`` are accepted too, and ``"matrix:PRESET"`` is short for
            ``load_game("matrix", preset=PRESET)``). A ``Game`` instance is returned as it is.
        **params: game parameters, e.g. ``load_game("matrix", preset="matching_pennies")``.

    Raises:
        ValueError: unknown name or bad parameters; the message lists what is valid.
    """
    if isinstance(name, Game):
        if params:
            raise ValueError("parameters cannot be applied to an already loaded game")
        return name
    if not isinstance(name, str):
        raise ValueError(
            f"game name must be a string, got {name!r} ({type(name).__name__}); "
            f"valid games: {', '.join(GAMES)}"
        )
    if name.startswith("matrix:"):
        if params:
            raise ValueError("'matrix:PRESET' takes no further parameters")
        return _matrix(preset=name.split(":", 1)[1])
    key = _ALIASES.get(name, name)
    if key not in GAMES:
        raise ValueError(f"unknown game {name!r}; valid games: {', '.join(GAMES)}")
    try:
        return GAMES[key](**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for {key}: {err}") from None
