"""Checks of a game's rules, run once per history while :func:`compile_tree` enumerates it.

A user's game (or a bridged one) can be wrong in ways that raise nothing and silently make
every number computed on it wrong: chance probabilities that do not sum to one, an action id
past ``num_actions`` (it would land in another information set's row), a decision node with no
legal action, a terminal without a payoff per player, or imperfect recall (two histories with
the same information-set key but different legal actions or different own pasts, which breaks
the sequence form every solver and the evaluator rely on). Each check raises a one-line
:class:`~nashzoo.games.base.GameDefinitionError` naming the game, the history and the fix.

The checks cost a few comparisons per history. The walks run them on every game without a
vectorised builder (a user's game, a bridged one); the built-in games, compiled by their
builders, pass them too: the tests compare each builder with the checking walk on every
history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL, Game, GameDefinitionError, State

CHANCE_TOLERANCE = 1e-9
"""How far the chance probabilities at a node may sum from one (float rounding)."""


def fail(game: Game, state: State, problem: str, fix: str) -> GameDefinitionError:
    """The error for ``problem`` at ``state`` (to be raised by the caller)."""
    try:
        where = f"history {state.history()}"
    except Exception:  # the history itself may be what is broken
        where = f"state {type(state).__name__}"
    return GameDefinitionError(f"{game.id}: {problem} at {where}; {fix}")


def check_player(game: Game, state: State, who: Any) -> int:
    """``current_player()`` is a player id, ``CHANCE`` or ``TERMINAL``."""
    if isinstance(who, (int, np.integer)) and not isinstance(who, bool):
        who = int(who)
        if who in (CHANCE, TERMINAL) or 0 <= who < game.num_players:
            return who
    raise fail(
        game,
        state,
        f"current_player() returned {who!r}",
        f"return a player in [0, {game.num_players}), CHANCE ({CHANCE}) or TERMINAL ({TERMINAL})",
    )


def check_chance(game: Game, state: State, outcomes: Any) -> list[tuple[int, float]]:
    """Chance outcomes are distinct non-negative ids with probabilities summing to one."""
    try:
        pairs = [(int(o), float(p)) for o, p in outcomes]
    except (TypeError, ValueError):
        raise fail(
            game,
            state,
            f"chance_outcomes() returned {outcomes!r}",
            "return a list of (outcome id, probability) pairs",
        ) from None
    if not pairs:
        raise fail(game, state, "a chance node has no outcomes", "return at least one outcome")
    ids = [o for o, _ in pairs]
    if min(ids) < 0 or len(set(ids)) != len(ids):
        raise fail(
            game,
            state,
            f"chance outcome ids {ids} are negative or repeated",
            "give each outcome its own non-negative id",
        )
    probs = [p for _, p in pairs]
    total = math.fsum(probs)
    if not all(math.isfinite(p) and p >= 0.0 for p in probs) or (
        abs(total - 1.0) > CHANCE_TOLERANCE
    ):
        raise fail(
            game,
            state,
            f"chance probabilities {probs} sum to {total!r}, not 1",
            "make them non-negative and sum to one",
        )
    return pairs


def check_legal(game: Game, state: State, player: int, legal: Sequence[int]) -> list[int]:
    """A decision node has at least one legal action, each a distinct id below num_actions."""
    actions = [int(a) for a in legal]
    if not actions:
        raise fail(
            game,
            state,
            f"player {player} has no legal action",
            "a history where nobody can move must be terminal (current_player() == TERMINAL)",
        )
    if min(actions) < 0 or max(actions) >= game.num_actions or len(set(actions)) != len(actions):
        raise fail(
            game,
            state,
            f"legal actions {actions} are not distinct ids in [0, {game.num_actions})",
            "use action ids below the game's num_actions, each once",
        )
    return actions


def check_returns(game: Game, state: State, returns: Any) -> np.ndarray:
    """A terminal has one finite payoff per player."""
    try:
        values = np.asarray(returns, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.shape != (game.num_players,) or not np.isfinite(values).all():
        raise fail(
            game,
            state,
            f"returns() gave {returns!r} at a terminal",
            f"return {game.num_players} finite payoffs, one per player",
        )
    return values


def check_recall(
    game: Game,
    state: State,
    key: str,
    seen: tuple[int, int, tuple[int, ...], int],
    now: tuple[int, int, tuple[int, ...], int],
) -> None:
    """Two histories sharing an information-set key agree on everything the key stands for.

    ``seen`` and ``now`` are ``(player, own moves so far, legal actions, own previous
    sequence)`` at the first history with ``key`` and at this one.
    """
    if seen[0] != now[0]:
        raise fail(
            game,
            state,
            f"information set {key!r} belongs to player {seen[0]} and to player {now[0]}",
            "keys must be unique across players: put the acting player into infoset_key()",
        )
    labels = ("acting player", "number of own moves before it", "legal actions", "own past moves")
    for label, first, here in zip(labels, seen, now, strict=True):
        if first != here:
            raise fail(
                game,
                state,
                f"information set {key!r} is reached with another {label} ({here!r}, earlier "
                f"{first!r}): the game does not have perfect recall",
                "put everything the acting player has seen and done into infoset_key()",
            )
