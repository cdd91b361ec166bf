"""The Game/State API every nashzoo game implements.

Names follow OpenSpiel so researchers feel at home: ``game.new_initial_state()``,
``state.current_player()``, ``state.child(action)``, ``state.returns()`` and so on.
States are immutable values: ``child`` returns a new state and never touches its parent,
which is what lets the environments, the exact solvers and the evaluator share one set of
rules without sharing (and corrupting) each other's positions.
"""

from __future__ import annotations

import ast
import hashlib
import math
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

CHANCE: int = -1
"""``current_player()`` at a chance node."""
TERMINAL: int = -4
"""``current_player()`` at a terminal node (the value OpenSpiel uses)."""


class IllegalActionError(ValueError):
    """An action that is not legal in the current state; the state is left unchanged."""


class GameDefinitionError(ValueError):
    """A game whose rules would make every number computed on it wrong.

    Raised by :func:`~nashzoo.games.compile_tree` (where every game, built-in, registered or
    bridged, is checked once), naming the game, the history and what to fix.
    """


class GameTooLarge(ValueError):
    """A game whose tree is too big to compile on this machine (or past the cap set by
    ``NASHZOO_MAX_HISTORIES``), raised before or during the compile instead of running the
    machine out of memory (see :mod:`nashzoo.games.limits`)."""


class Game(ABC):
    """Static description of a game: players, actions, parameters and the initial state."""

    name: str
    num_players: int = 2
    num_actions: int
    action_names: tuple[str, ...]
    infoset_tensor_size: int
    infoset_tensor_bounds: tuple[float, float] = (0.0, 1.0)
    """The range every information-set tensor entry lies in: the envs' observation bounds,
    checked on every tensor they show. Scale features into it (a chip count divided by the
    most chips); OpenSpiel's games, whose tensors nashzoo cannot rescale, declare none
    (``(-inf, inf)``)."""
    recall_fix: str | None = None
    """What an imperfect-recall refusal tells the user to do (``None``: fix ``infoset_key``);
    a game whose keys are not the user's to fix (OpenSpiel's) says what can be done instead."""

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self._params = dict(params or {})
        for key, value in self._params.items():
            if not _reads_back(value):
                raise ValueError(
                    f"{getattr(self, 'name', type(self).__name__)}: parameter "
                    f"{key}={short_repr(value)} "
                    "is not a Python literal (a number, string, bool or None, or a list, tuple "
                    "or dict of them), so the game's id could not be read back into the game "
                    "(checkpoints, policy files and race workers load games by it); store a "
                    "literal, e.g. array.tolist()"
                )

    @property
    def params(self) -> dict[str, Any]:
        """The parameters the game was loaded with (a copy)."""
        return dict(self._params)

    @property
    def id(self) -> str:
        """Canonical identifier: the name plus any non-default parameters.

        Two games with the same ``id`` have the same rules; checkpoints and policy files record
        it so that loading one for another game is refused. Written once, on the first read
        (a game is immutable, and the id of a big matrix game is megabytes of text that every
        cache look-up reads).
        """
        cached = self.__dict__.get("_id")
        if cached is None:
            cached = self.__dict__["_id"] = self._write_id()
        return cached

    def _write_id(self) -> str:
        if not self._params:
            return self.name
        inner = ",".join(f"{k}={self._params[k]!r}" for k in sorted(self._params))
        return f"{self.name}({inner})"

    @property
    def display_id(self) -> str:
        """:attr:`id` as messages and tables show it: whole up to 120 characters, else
        shortened (see :func:`display_id`)."""
        cached = self.__dict__.get("_display_id")
        if cached is None:
            cached = self.__dict__["_display_id"] = display_id(self.id)
        return cached

    def num_actions_of(self, player: int) -> int:
        """How many action ids ``player`` uses: its legal actions are always below this.

        ``num_actions`` for every player unless a game says otherwise (a non-square matrix
        game gives the row and column players their own counts); the environments size each
        agent's action space and action mask with it.
        """
        check_player(self, player)
        return self.num_actions

    def num_histories(self) -> int | None:
        """Number of histories (tree nodes, chance and terminal ones included), or ``None``.

        Optional: a game that can count its tree without enumerating it says so here (Liar's
        dice does, by formula). The environments use it to decide whether to tabulate the tree;
        for ``None`` they count lazily, stopping at their limit.
        """
        return None

    @abstractmethod
    def new_initial_state(self) -> State:
        """The root of the game tree (a chance node for the card games)."""

    def action_name(self, action: int) -> str:
        """Readable name of a player action."""
        return self.action_names[action]

    def __repr__(self) -> str:
        return f"<Game {self.display_id}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Game) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


class State(ABC):
    """A history of the game. Immutable: every transition returns a new state."""

    def __init__(self, game: Game) -> None:
        self.game = game

    # --- who moves -----------------------------------------------------------------------
    @abstractmethod
    def current_player(self) -> int:
        """Player to move, ``CHANCE`` at chance nodes, ``TERMINAL`` when the game is over."""

    def is_terminal(self) -> bool:
        """Whether the game is over here (``current_player() == TERMINAL``)."""
        return self.current_player() == TERMINAL

    def is_chance_node(self) -> bool:
        """Whether chance moves next here (``current_player() == CHANCE``)."""
        return self.current_player() == CHANCE

    # --- moves ---------------------------------------------------------------------------
    @abstractmethod
    def legal_actions(self) -> list[int]:
        """Legal player actions (sorted), or the chance outcomes at a chance node."""

    def legal_actions_mask(self) -> np.ndarray:
        """int8 vector of length ``game.num_actions``: 1 where the action is legal."""
        mask = np.zeros(self.game.num_actions, dtype=np.int8)
        if not self.is_terminal() and not self.is_chance_node():
            mask[self.legal_actions()] = 1
        return mask

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """``[(outcome, probability)]`` at a chance node; probabilities sum to one."""
        raise ValueError(f"chance_outcomes() called at a non-chance node {self}")

    def child(self, action: int) -> State:
        """The state after ``action``; the parent is untouched.

        ``action`` is an integer id: a Python or numpy integer (``operator.index`` semantics).
        Floats, strings and bools are refused rather than converted, so ``1.9`` or ``"0"``
        cannot silently play another move.

        Raises:
            IllegalActionError: if ``action`` is not an integer id or not legal here (the
                message names the legal actions).
        """
        if self.is_terminal():
            raise IllegalActionError(
                f"the game is over; no action (got {action!r}) can be applied to {self}"
            )
        legal = self.legal_actions()
        a = action_index(action)
        if a is None or a not in legal:
            who = "chance" if self.is_chance_node() else f"player {self.current_player()}"
            why = "is not legal" if a is not None else "is not an integer action id"
            names = legal_actions_text(legal, self.action_to_string)
            raise IllegalActionError(
                f"action {action!r} {why} for {who} at history {self.history()}; "
                f"legal actions are: {names}"
            )
        return self._child(a)

    @abstractmethod
    def _child(self, action: int) -> State:
        """``child`` without the legality check (callers have checked)."""

    def action_to_string(self, action: int) -> str:
        """Readable name of ``action`` in this state (a card name at chance nodes)."""
        return self.game.action_name(action)

    # --- outcome and information ---------------------------------------------------------
    @abstractmethod
    def returns(self) -> np.ndarray:
        """Payoff of every player (float64); zeros before the end of the game."""

    @abstractmethod
    def history(self) -> list[int]:
        """All actions so far, chance outcomes included."""

    @abstractmethod
    def infoset_key(self, player: int) -> str:
        """Readable, unique string of what ``player`` knows here (their information set)."""

    @abstractmethod
    def infoset_tensor(self, player: int) -> np.ndarray:
        """float32 vector encoding ``infoset_key(player)`` (layout documented per game)."""

    @abstractmethod
    def describe(self, player: int | None = None) -> str:
        """Text for a person: what ``player`` may see (everything if ``None``)."""

    def __str__(self) -> str:
        return f"{self.game.name}{self.history()}"

    __repr__ = __str__


def action_index(action: Any) -> int | None:
    """``action`` as a Python int if it is an integer id, else ``None``.

    Integer ids are what ``operator.index`` accepts (``int``, numpy integers, 0-d integer
    arrays) except bools: ``True`` is not action 1. Floats (even ``1.0``), strings and
    ``None`` give ``None``; callers raise :class:`IllegalActionError` naming the legal actions.
    """
    if isinstance(action, (bool, np.bool_)):
        return None
    try:
        return operator.index(action)
    except TypeError:
        return None


LEGAL_LIST_MAX = 20
"""Error messages list at most this many legal actions in full (:func:`legal_actions_text`)."""


def legal_actions_text(legal: Sequence[int], name: Callable[[int], str] | None = None) -> str:
    """The legal action ids ``legal`` for an error message, each followed by ``(name(a))`` when
    ``name`` is given: all of them up to :data:`LEGAL_LIST_MAX`, else the first ten, the last
    five and how many there are (Liar's dice can have 100,000 legal bids, a message of
    megabytes listed in full)."""

    def one(a: int) -> str:
        return f"{a} ({name(a)})" if name is not None else str(a)

    if len(legal) <= LEGAL_LIST_MAX:
        return ", ".join(map(one, legal))
    head, tail = ", ".join(map(one, legal[:10])), ", ".join(map(one, legal[-5:]))
    return f"{head}, ..., {tail} ({len(legal):,} in all)"


def is_finite_number(value: Any) -> bool:
    """Whether ``value`` is a finite real number (Python's or numpy's int or float, never a bool
    or a string): the one test behind every rate, budget and weight check, which then compares
    it with its own bounds. An integer too large for a float is not (every such value is used
    as a float somewhere; ``math.isfinite`` raised ``OverflowError`` on it)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _reads_back(value: Any) -> bool:
    """Whether ``repr(value)`` is a Python literal that evaluates back to ``value``: at once for
    plain numbers, strings, bools and None in lists, tuples and dicts (whose ``repr`` always
    reads back; a 1000x1000 matrix game's payoffs took 7 s and 1 GB through the parser),
    through ``ast.literal_eval`` for anything else."""
    if _plain_literal(value):
        return True
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


_NUMBERS = {int, float, bool}


def _plain_literal(value: Any) -> bool:
    """Whether ``value`` is built only of ints, finite floats, strings, bools and None, in
    lists, tuples and dicts (exact types: a subclass may ``repr`` itself otherwise)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):  # repr "inf" / "nan" is no literal
                return False
        elif kind in (list, tuple):
            if set(map(type, item)) <= _NUMBERS:  # a row of numbers, checked at C speed
                try:
                    if not all(map(math.isfinite, item)):
                        return False
                    continue
                except OverflowError:  # an int too big for a float: finite, read one by one
                    pass
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind not in (int, str, bool, type(None)):
            return False
    return True


def checked_seed(seed: Any) -> int:
    """``seed`` as a plain int, or a ValueError naming it: a seed is a non-negative whole
    number (numpy's generators take no other), never a bool, a float or a string."""
    if not is_whole_number(seed):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def is_whole_number(value: Any, minimum: int = 0) -> TypeGuard[int | np.integer]:
    """Whether ``value`` is an integer (Python's or numpy's, never a bool, which Python counts
    as one) of at least ``minimum``: the one test behind every count, seed and index check."""
    return bool(
        not isinstance(value, (bool, np.bool_))
        and isinstance(value, (int, np.integer))
        and value >= minimum
    )


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters, for a message."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def brief_repr(obj: Any) -> str:
    """A dataclass's repr of one short line, for the results users print in a notebook: a
    ``game_id`` as :func:`display_id` shows it (a 300x300 matrix game's id is 670,000
    characters), arrays of up to 8 numbers as lists and larger ones by shape, anything else
    through :func:`short_repr`."""
    import dataclasses

    import numpy as np

    parts = []
    for field in dataclasses.fields(obj):
        if not field.repr:
            continue
        value = getattr(obj, field.name)
        if field.name == "game_id" and isinstance(value, str):
            shown = display_id(value)
        elif isinstance(value, np.ndarray):
            shown = (
                short_repr(value.tolist(), 80)
                if value.size <= 8
                else f"<array {'x'.join(map(str, value.shape))} {value.dtype}>"
            )
        elif isinstance(value, (list, tuple)) and len(value) > 8:
            shown = f"<{type(value).__name__} of {len(value)}>"
        else:
            shown = short_repr(value, 80)
        parts.append(f"{field.name}={shown}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def one_line(text: str) -> str:
    """``text`` with each control character (a line break, a tab, an escape sequence's
    start) written as its escape (``\\n``): a string read from a file or typed, shown in a
    one-line message, cannot break the line or drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def error_text(err: BaseException) -> str:
    """An error's message for a one-line report: a ``KeyError``'s without the quotes its
    ``str`` adds, runs of whitespace (line breaks) as one space, control characters escaped
    (:func:`one_line`); the error's type name where it has no message."""
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return one_line(" ".join(text.split())) or type(err).__name__


DISPLAY_ID_LIMIT = 120
"""Game ids up to this many characters are shown whole; longer ones are shortened."""


def display_id(game_id: str) -> str:
    """A game id short enough for a message, a table or a title: the id itself up to
    :data:`DISPLAY_ID_LIMIT` characters, else its first 80 characters, ``...#`` and the first
    10 hex digits of its SHA-256, which tell two long ids apart. A 200x300 matrix game's id is
    1.2 MB of payoffs; files that must give the game back store the whole id (or the
    parameters it is written from)."""
    if len(game_id) <= DISPLAY_ID_LIMIT:
        return one_line(game_id)
    digest = hashlib.sha256(game_id.encode()).hexdigest()[:10]
    return f"{one_line(game_id[:80])}...#{digest}"


def display_ids_apart(first: str, second: str) -> tuple[str, str]:
    """Two game ids as a message that contrasts them shows them: :func:`display_id` of each,
    unless that cuts them to the same first 80 characters, where only their hashes would differ
    (two universal_poker games apart in a parameter near the end of their ids); each is then
    shown around the first character where they part."""
    shown = display_id(first), display_id(second)
    cut = max(len(first), len(second)) > DISPLAY_ID_LIMIT
    if first == second or not cut or first[:80] != second[:80]:
        return shown
    parted = next(
        (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
        min(len(first), len(second)),
    )
    start = parted - 30

    def around(game_id: str) -> str:
        tail = "..." if len(game_id) > parted + 60 else ""
        return f"{one_line(game_id[:40])}...{one_line(game_id[start : parted + 60])}{tail}"

    return around(first), around(second)


def check_player(game: Game, player: int) -> int:
    """Validate a player index and return it as an int."""
    if not is_whole_number(player) or not int(player) < game.num_players:
        raise ValueError(
            f"player must be an integer in [0, {game.num_players}) for {game.display_id}, got "
            f"{player!r}"
        )
    return int(player)


def one_hot(size: int, index: int | None) -> list[float]:
    """A one-hot list (all zeros when ``index`` is None)."""
    out = [0.0] * size
    if index is not None:
        out[index] = 1.0
    return out


def as_tensor(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
