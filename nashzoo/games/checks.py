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

CHANCE_TOLERANCE = 1e-6
"""How far the chance probabilities at a node may sum from one: float rounding, float32
included (three float32 thirds sum to 1 + 3e-8). Probabilities within it are divided by their
sum, so the compiled tree's sum to one as exactly as float64 allows."""


MAX_DEPTH = 1_000_000
"""The most moves a history may have. A game whose rules never reach a terminal (a cycle) has
an infinite tree; the walk names it here instead of filling memory."""


def too_deep(game: Game, state: State) -> GameDefinitionError:
    """The error for a history past :data:`MAX_DEPTH` moves (the walk compares the depth
    itself: a function call per history would cost more than the comparison)."""
    return GameDefinitionError(
        f"{game.display_id}: a history has more than {MAX_DEPTH:,} moves, at "
        f"{type(state).__name__}; "
        "does the game end? rules that never reach TERMINAL (a cycle) make the tree infinite"
    )


def fail(game: Game, state: State, problem: str, fix: str) -> GameDefinitionError:
    """The error for ``problem`` at ``state`` (to be raised by the caller)."""
    try:
        where = f"history {state.history()}"
    except Exception:  # the history itself may be what is broken
        where = f"state {type(state).__name__}"
    return GameDefinitionError(f"{game.display_id}: {problem} at {where}; {fix}")


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
    if not all(math.isfinite(p) and p >= 0.0 for p in probs):
        raise fail(
            game,
            state,
            f"chance probabilities {probs} include a negative or non-finite one",
            "make every probability a non-negative number, the whole summing to one",
        )
    if abs(total - 1.0) > CHANCE_TOLERANCE:
        raise fail(
            game,
            state,
            f"chance probabilities {probs} sum to {total!r}, not 1",
            "make them sum to one",
        )
    if total != 1.0:
        pairs = [(o, p / total) for o, p in pairs]
    return pairs


def check_legal(game: Game, state: State, player: int, legal: Sequence[int]) -> list[int]:
    """A decision node has at least one legal action, each a distinct id below the player's
    ``num_actions_of(player)`` (the size of its action space in the envs)."""
    actions = [int(a) for a in legal]
    if not actions:
        raise fail(
            game,
            state,
            f"player {player} has no legal action",
            "a history where nobody can move must be terminal (current_player() == TERMINAL)",
        )
    limit = game.num_actions_of(player)
    if min(actions) < 0 or max(actions) >= limit or len(set(actions)) != len(actions):
        which = "num_actions" if limit == game.num_actions else f"num_actions_of({player})"
        raise fail(
            game,
            state,
            f"legal actions {actions} of player {player} are not distinct ids in [0, {limit})",
            f"use action ids below the game's {which}, each once",
        )
    return actions


def check_key(game: Game, state: State, player: int, key: Any) -> str:
    """An information-set key is a string (policy files, checkpoints and the envs store it)."""
    if not isinstance(key, str):
        raise fail(
            game,
            state,
            f"infoset_key({player}) returned {key!r} ({type(key).__name__})",
            "return a str that tells apart what the player can tell apart",
        )
    return key


def check_tensor(
    game: Game, state: State, player: int, tensor: Any, *, unit: bool = False
) -> np.ndarray:
    """An information-set tensor is ``infoset_tensor_size`` finite numbers (float64 here);
    with ``unit``, each within ``game.infoset_tensor_bounds`` (by default [0, 1]), the range
    the envs declare for observations."""
    size = game.infoset_tensor_size
    try:
        values = np.asarray(tensor, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.shape != (size,) or not np.isfinite(values).all():
        if values is None:
            shown = "values that are not numbers"
        elif values.shape != (size,):
            shown = f"shape {values.shape}"
        else:
            shown = "a value that is not finite"
        raise fail(
            game,
            state,
            f"infoset_tensor({player}) gave {shown}",
            f"return {size} finite numbers (the game's infoset_tensor_size)",
        )
    low, high = game.infoset_tensor_bounds
    if unit and values.size and (values.min() < low or values.max() > high):
        raise fail(
            game,
            state,
            f"infoset_tensor({player}) has values in [{values.min():g}, {values.max():g}], "
            f"outside the [{low:g}, {high:g}] the envs declare for observations",
            f"scale each feature into [{low:g}, {high:g}] (a chip count divided by the most "
            "chips, say), or declare the range as the game's infoset_tensor_bounds",
        )
    return values


VIEW_FIX = (
    "the envs show every agent its view at every history, chance and terminal ones too, also "
    "while another player moves: answer infoset_key and infoset_tensor for any player there"
)


def view_key(game: Game, state: State, player: int) -> str:
    """``state.infoset_key(player)`` as an env asks it (of any player, at any history), checked;
    an exception the game raises is named as what the env needs."""
    return check_key(game, state, player, _asked(game, state, "infoset_key", player))


def view_tensor(game: Game, state: State, player: int) -> np.ndarray:
    """``state.infoset_tensor(player)`` as an env shows it: checked to hold finite numbers in
    [0, 1] (the observation space's bounds), as float32."""
    tensor = _asked(game, state, "infoset_tensor", player)
    if tensor.__class__ is np.ndarray and tensor.shape == (game.infoset_tensor_size,):
        shown = tensor.astype(np.float32)  # the common case; Python's min and max of a short
        values = shown.tolist()  # list cost less than numpy's reductions
        total = sum(values)  # NaN or inf anywhere makes it not finite
        low, high = game.infoset_tensor_bounds
        if math.isfinite(total) and (not values or (min(values) >= low and max(values) <= high)):
            return shown
    return check_tensor(game, state, player, tensor, unit=True).astype(np.float32)


def _asked(game: Game, state: State, method: str, player: int) -> Any:
    """``state.<method>(player)``; what it raises becomes the error naming what envs need."""
    try:
        return getattr(state, method)(player)
    except Exception as err:
        raise fail(
            game,
            state,
            f"{method}({player}) raised {type(err).__name__}: {' '.join(str(err).split())}",
            VIEW_FIX,
        ) from err


def check_facts(game: Game) -> None:
    """The static facts a walked game declares agree with each other: one action name per
    action id (the envs and ``play`` print them)."""
    names = getattr(game, "action_names", None)
    if names is not None and len(names) != game.num_actions:
        raise GameDefinitionError(
            f"{game.display_id}: action_names has {len(names)} names for {game.num_actions} "
            "actions; give one name per action id"
        )


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
    keys: Sequence[str] = (),
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
            game.recall_fix
            or "keys must be unique across players: put the acting player into infoset_key()",
        )
    if seen[2] != now[2] and sorted(seen[2]) == sorted(now[2]):
        raise fail(
            game,
            state,
            f"information set {key!r} lists its legal actions in another order ({list(now[2])}, "
            f"earlier {list(seen[2])})",
            "return legal_actions() sorted, as the State API asks",
        )
    labels = ("acting player", "number of own moves before it", "legal actions", "last own move")
    for i, label in enumerate(labels):
        if seen[i] != now[i]:
            first, here = repr(seen[i]), repr(now[i])
            if i == 3:  # a sequence id: say which move it stands for
                first, here = _sequence(game, keys, seen[3]), _sequence(game, keys, now[3])
            raise fail(
                game,
                state,
                f"information set {key!r} is reached with another {label} ({here}, earlier "
                f"{first}): the game does not have perfect recall",
                game.recall_fix
                or "put everything the acting player has seen and done into infoset_key()",
            )


def _sequence(game: Game, keys: Sequence[str], sequence: int) -> str:
    """A sequence id (``infoset * num_actions + action``; -1: none) in the user's terms."""
    if sequence < 0:
        return "none"
    infoset, action = divmod(sequence, game.num_actions)
    if infoset >= len(keys):
        return repr(sequence)
    return f"action {action} at {keys[infoset]!r}"


def check_seat_moves(game: Game, infoset_player: np.ndarray, seat: int | str) -> None:
    """Refuse to learn by playing seat ``seat`` (``"random"``: either) of ``game`` when the
    compiled tree (its ``infoset_player``) gives that seat no decision: every episode would end
    before it moves, and an env that draws episodes until it does would draw for ever."""
    movers = set(np.asarray(infoset_player).tolist())
    for s in (0, 1) if seat == "random" else (seat,):
        if s not in movers and (seat != "random" or not movers):
            raise ValueError(
                f"seat {s} of {game.display_id} never moves (the game has no information set "
                f"of player {s}): there is nothing to learn by playing it"
            )
