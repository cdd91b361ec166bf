"""Every two-player OpenSpiel game as a nashzoo :class:`~nashzoo.games.Game` (the bridge).

``load_game("openspiel:liars_dice(dice_sides=4)")`` (any OpenSpiel game string) and
``load_game(pyspiel_game)`` give an :class:`OpenSpielGame`; from there the game goes through
``compile_tree``, the envs, every learner, the exact evaluator, ``race`` and the CLI like a
built-in one. Needs the optional extra: ``pip install 'nashzoo[openspiel]'``; ``pyspiel`` is
imported only when an OpenSpiel game is asked for, never by the rest of nashzoo.

What maps to what:

* information-set keys are OpenSpiel's ``information_state_string(player)`` and tensors its
  ``information_state_tensor(player)``, so policies move between the two libraries by key with
  no translation (``nashzoo.eval.openspiel``);
* action ids, chance outcomes (``chance_outcomes()``), players (``-1`` chance, ``-4``
  terminal) and returns are OpenSpiel's own;
* simultaneous-move games are played through OpenSpiel's ``convert_to_turn_based``: players
  commit their moves one after the other and nobody sees the others' moves of the same round;
* ``game.name`` (and ``game.id``) is ``"openspiel:"`` plus OpenSpiel's canonical game string,
  so ``load_game(game.id)`` rebuilds the same game (checkpoints and policy files rely on it).
  A number written for a string parameter (universal_poker's ``firstPlayer=1``) is read as
  that string, which OpenSpiel's own parser refuses.

Refused when loaded, each with a one-line ``ValueError`` naming why: games with other than two
players (a player count in the game string is refused before OpenSpiel loads it: some counts
crash OpenSpiel), games without information-state strings (nashzoo keys information sets by
them), mean-field games, games whose chance outcomes are only sampled (the tree must be
enumerable), and parameters OpenSpiel loads but cannot play: an integer parameter below its
range is refused before OpenSpiel loads the game (``liars_dice(numdice=0)``, with its range,
:data:`PARAMETER_MINIMUMS`; a negative count of any game: some write outside their memory), any
other game's error on its first path.
Refused when compiled, by ``compile_tree``'s checks of every game: information
states that break perfect recall (``liars_dice_ir``, ``repeated_leduc_poker``) or that two
players share (``phantom_ttt``'s empty board), and a game too big for the machine
(:mod:`nashzoo.games.limits`). A perfect-information game without information-state tensors
(``tic_tac_toe``, ``mnk``, ``hex``) takes its observation tensor (the position) as the tensor;
any other game without them has ``infoset_tensor_size == 0``: the environments and the
learners that need tensors refuse it with one line.

Speed: ``compile_tree`` walks raw ``pyspiel`` states with the fast walk (``games/fast_walk.py``),
no wrapper per history: per history one call for the player to move, one for the
information-state string and the legal actions at a decision, the returns at a terminal, and
one clone-and-apply per child except the last, which is applied to the parent in place. The
envs and everything else see :class:`OpenSpielState` wrappers, which ask OpenSpiel once for the
player to move (at construction) and once for the legal actions (on first use).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from nashzoo.games import checks, fast_walk
from nashzoo.games.base import CHANCE, TERMINAL, Game, State, check_player
from nashzoo.games.compiled import CompiledTree
from nashzoo.games.tree import compile_checked

PREFIX = "openspiel:"
"""Game names starting with this are OpenSpiel game strings (``load_game`` hands them here)."""

INSTALL_HINT = "pip install 'nashzoo[openspiel]'"


def import_pyspiel() -> Any:
    """The ``pyspiel`` module, or an ImportError naming the extra that installs it."""
    try:
        import pyspiel
    except ImportError as err:
        raise ImportError(f"OpenSpiel support needs open_spiel: {INSTALL_HINT} ({err})") from None
    return pyspiel


def is_pyspiel_game(obj: Any) -> bool:
    """Whether ``obj`` is a loaded ``pyspiel.Game`` (without importing pyspiel if it is absent)."""
    module = type(obj).__module__ or ""
    if not module.startswith("pyspiel"):
        return False
    return isinstance(obj, import_pyspiel().Game)


def load_openspiel(game: Any, **params: Any) -> OpenSpielGame:
    """An :class:`OpenSpielGame` from an OpenSpiel game string or a loaded ``pyspiel.Game``.

    Args:
        game: ``"liars_dice(dice_sides=4)"`` (with or without the ``"openspiel:"`` prefix) or a
            ``pyspiel.Game``.
        **params: OpenSpiel parameters for a bare game name, e.g.
            ``load_openspiel("goofspiel", num_cards=3, imp_info=True)``.

    Raises:
        ValueError: the game string does not load, or the game cannot be bridged (see the
            module docstring); the message says why and what to do.
        ImportError: open_spiel is not installed (the message names the extra).
    """
    pyspiel = import_pyspiel()
    if isinstance(game, str):
        spec = game.removeprefix(PREFIX).strip()
        if params and "(" in spec:
            raise ValueError(
                f"pass OpenSpiel parameters either in the game string or as keywords, not both "
                f"(got {spec!r} and {sorted(params)})"
            )
        return OpenSpielGame(_load(pyspiel, spec, params), None if params else spec)
    if params:
        raise ValueError("parameters cannot be applied to an already loaded OpenSpiel game")
    if not is_pyspiel_game(game):
        raise ValueError(
            f"expected an OpenSpiel game string or a pyspiel.Game, got {type(game).__name__}"
        )
    return OpenSpielGame(game)


def _load(pyspiel: Any, spec: str, params: dict[str, Any]) -> Any:
    """``pyspiel.load_game``, reading a number written for a string parameter as that string.

    OpenSpiel's own parser reads ``firstPlayer=1`` as the number 1 and then refuses it, because
    universal_poker's ``firstPlayer`` is a string ("1" or "1 1"); here every value given for a
    parameter whose default is a string is passed as a string.
    """
    if not params and "(" not in spec:
        _refuse_without_file(spec, {})
        return _openspiel_call(spec, pyspiel.load_game, spec)
    given = (
        dict(params) if params else _openspiel_call(spec, pyspiel.game_parameters_from_string, spec)
    )
    name = given.pop("name", spec)
    kinds = {kind.short_name: kind for kind in pyspiel.registered_games()}
    defaults = kinds[name].parameter_specification if name in kinds else {}
    for key, value in given.items():
        if isinstance(defaults.get(key), str) and not isinstance(value, (str, dict)):
            given[key] = str(value)
    if name in kinds:
        _refuse_other_than_two(kinds[name], given)
        _refuse_out_of_range(kinds[name], given)
    return _openspiel_call(spec, pyspiel.load_game, name, given)


def _openspiel_call(spec: str, function: Any, *args: Any) -> Any:
    """``function(*args)``, one of OpenSpiel's loading calls for ``spec``, with what it prints
    held back and any error it raises turned into :func:`_load_error`'s one line: its
    ``SpielError``, a C++ error as ``ValueError`` (``universal_poker(blind=x)``: ``stoi``) or
    ``RuntimeError``, or a message pybind could not decode (:func:`_error_text`)."""
    written: list[str] = []
    try:
        with _stderr_held_back(written):
            return function(*args)
    except Exception as err:
        raise ValueError(_load_error(spec, _error_text(err, written))) from None


def _refuse_other_than_two(kind: Any, given: dict[str, Any]) -> None:
    """Refuse a player count other than two before OpenSpiel loads the game: nashzoo plays
    two-player games only, and OpenSpiel crashes the process (a segmentation fault) on some
    counts it does not check (``universal_poker(numPlayers=3)`` with its two-player default
    blinds, ``first_sealed_auction(players=0)``)."""
    for parameter in ("players", "num_players", "numPlayers"):
        value = given.get(parameter)
        if parameter in kind.parameter_specification and value is not None and value != 2:
            raise ValueError(
                f"OpenSpiel's {kind.short_name} with {parameter}={value} has {value} players "
                f"and nashzoo's games have exactly two: {_two(kind)}"
            )


@contextlib.contextmanager
def _stderr_held_back(written: list[str] | None = None) -> Iterator[None]:
    """Hold back what is written to the process's stderr (file descriptor 2) inside the block.

    OpenSpiel prints every error to stderr itself before raising it (for an unknown game,
    the names of all its games: over a hundred lines) and then raises the same text, which
    :func:`_load_error` turns into one line; this keeps the first copy off the terminal. When
    the block raises, what it wrote is appended to ``written`` (as text, undecodable bytes
    replaced) and, unless the error is OpenSpiel's (:func:`_is_openspiel_error`), passed on."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable stderr: nothing to hold back
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException as err:
            os.dup2(saved, 2)
            held.seek(0)
            text = held.read()
            if written is not None:
                written.append(text.decode("utf-8", errors="replace"))
            if not _is_openspiel_error(err):
                os.write(2, text)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _is_openspiel_error(err: BaseException) -> bool:
    """OpenSpiel's ``SpielError``, or the ``UnicodeDecodeError`` pybind raises instead when
    that error's message is not UTF-8 (``universal_poker(boardCards=-1)`` prints a rank as a
    raw byte); in both, OpenSpiel has printed the message to stderr first."""
    return type(err).__name__ == "SpielError" or isinstance(err, UnicodeDecodeError)


_CONVERSIONS = ("stoi", "stol", "stoll", "stoul", "stod", "stof")
"""C++'s text-to-number functions: their error's whole message is the function's name."""


def _error_text(err: Exception, written: list[str]) -> str:
    """The message of an error OpenSpiel raised, for one line: a message pybind could not
    decode is read from what OpenSpiel printed to stderr (:func:`_stderr_held_back`), and a
    C++ error that is not OpenSpiel's own says its type (``stoi (ValueError: a parameter
    that must be a number is not one)``)."""
    if isinstance(err, UnicodeDecodeError):
        printed = "".join(written).strip().removeprefix("OpenSpiel exception:").strip()
        return printed or "an error whose message is not UTF-8 text"
    text = str(err).strip() or type(err).__name__
    if type(err).__name__ == "SpielError":
        return text
    if text in _CONVERSIONS:
        return f"{text} ({type(err).__name__}: a parameter that must be a number is not one)"
    return f"{text} ({type(err).__name__})"


def _load_error(spec: str, message: str) -> str:
    """A one-line reason why OpenSpiel refused ``spec``, with what to do about it."""
    first = message.strip().splitlines()[0].rstrip(":. ") if message.strip() else "unknown error"
    if first.startswith("Unknown game"):
        first = first.removesuffix(". Available games are")
        hint = "pyspiel.registered_names() lists OpenSpiel's games"
    else:
        hint = "check the game string against the game's parameters in OpenSpiel's docs"
    return f"OpenSpiel cannot load {spec!r}: {first}; {hint}"


def _two(kind: Any) -> str:
    """How to load the game of ``kind`` (a ``pyspiel.GameType``) with two players: its own
    parameter (``players``, ``num_players`` or universal_poker's ``numPlayers``) set to 2, or
    that it cannot be."""
    if not kind.min_num_players <= 2 <= kind.max_num_players:
        return "it cannot be played by two, pick another game"
    parameter = next(
        (n for n in ("players", "num_players", "numPlayers") if n in kind.parameter_specification),
        None,
    )
    return "load it with two players" if parameter is None else f"load it with {parameter}=2"


def game_string(pyspiel_game: Any) -> str:
    """OpenSpiel's canonical string of ``pyspiel_game`` (``str(game)``), which
    :func:`load_openspiel` reads back as the same game; a trailing ``()`` is dropped
    (``"kuhn_poker"``, not ``"kuhn_poker()"``)."""
    return str(pyspiel_game).removesuffix("()")


def _reloadable_string(pyspiel: Any, pyspiel_game: Any, spec: str | None) -> str:
    """The game string nashzoo keeps as the game's id: OpenSpiel's own (:func:`game_string`)
    where it loads back as the same game, else ``spec``, the string the user loaded it by
    (``restricted_nash_response(game=kuhn_poker())`` calls itself ``rnr_kuhn_poker``, which
    OpenSpiel cannot load). Files, checkpoints and race workers load the game by its id."""
    own = game_string(pyspiel_game)
    for candidate in (own, spec):
        if candidate is None:
            continue
        try:
            loaded = _load(pyspiel, candidate, {})
        except ValueError:  # OpenSpiel's refusal, in one line
            continue
        if loaded.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
            loaded = pyspiel.convert_to_turn_based(loaded)
        if str(loaded) == str(pyspiel_game):
            return candidate
    raise ValueError(
        f"OpenSpiel's name of this game, {own!r}, does not load back as the same game, so "
        "nashzoo could not find it again (in files, checkpoints, race workers); load it by a "
        "game string that OpenSpiel reads, e.g. load_game('openspiel:"
        "restricted_nash_response(game=kuhn_poker())')"
    )


class OpenSpielGame(Game):
    """A two-player OpenSpiel game seen through nashzoo's Game/State API.

    Attributes:
        openspiel_game: the ``pyspiel.Game`` that is played (the turn-based conversion for a
            simultaneous-move game); policies converted with ``nashzoo.eval.openspiel`` are
            for this game.
    """

    num_players = 2
    infoset_tensor_bounds = (-math.inf, math.inf)  # OpenSpiel's tensors may hold chip counts
    recall_fix = (
        "these are OpenSpiel's own information_state_string()s, so this game (with these "
        "parameters) cannot be compiled by nashzoo, which needs perfect recall; where the game "
        "has a parameter that keeps more in the information state, set it (goofspiel: "
        "imp_info=True), or pick another game"
    )

    def __init__(self, pyspiel_game: Any, spec: str | None = None) -> None:
        super().__init__()
        pyspiel = import_pyspiel()
        kind = pyspiel_game.get_type()
        label = f"OpenSpiel's {kind.short_name}"
        given = _given_parameters(pyspiel_game)  # before a conversion wraps them
        _refuse_out_of_range(kind, given)  # run by _load already for a game string
        if kind.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
            pyspiel_game = pyspiel.convert_to_turn_based(pyspiel_game)
            kind = pyspiel_game.get_type()
        elif kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
            raise ValueError(
                f"{label} has {kind.dynamics.name.lower()} dynamics; the bridge takes "
                "turn-based and simultaneous-move games only"
            )
        if not kind.provides_information_state_string:
            raise ValueError(
                f"{label} provides no information-state strings (perfect-recall information "
                "states), which nashzoo's information sets are keyed by; pick a game that has "
                "them (pyspiel.registered_games() lists provides_information_state_string)"
            )
        if pyspiel_game.num_players() != 2:
            raise ValueError(
                f"{label} is loaded with {pyspiel_game.num_players()} players and nashzoo's "
                f"games have exactly two: {_two(kind)}"
            )
        if kind.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
            raise ValueError(
                f"{label} only samples its chance outcomes, so its tree cannot be enumerated; "
                "nashzoo needs explicit chance probabilities"
            )
        _check_playable(given, pyspiel_game, label)
        self.openspiel_game = pyspiel_game
        self.name = PREFIX + _reloadable_string(pyspiel, pyspiel_game, spec)
        self.num_actions = pyspiel_game.num_distinct_actions()
        # The tensors: information-state tensors; in a perfect-information game without them
        # (tic_tac_toe, mnk, hex), the observation tensor, which there shows everything a
        # player knows that matters (the position); otherwise none.
        perfect = kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        self.tensor_source: str | None = None
        if kind.provides_information_state_tensor:
            self.tensor_source = "information_state_tensor"
            shape = pyspiel_game.information_state_tensor_shape()
        elif perfect and kind.provides_observation_tensor:
            self.tensor_source = "observation_tensor"
            shape = pyspiel_game.observation_tensor_shape()
        self.infoset_tensor_size = 0 if self.tensor_source is None else int(np.prod(shape))
        self.has_observation_strings = bool(kind.provides_observation_string)
        self._action_names: tuple[str, ...] | None = None

    # Game.action_names is a plain attribute; here it is read-only and computed on first use.
    @property
    def action_names(self) -> tuple[str, ...]:  # type: ignore[override]
        """OpenSpiel's names of the actions, as the first player to move reads them."""
        if self._action_names is None:
            state = self.openspiel_game.new_initial_state()
            while state.is_chance_node():
                state = state.child(state.legal_actions()[0])
            player = state.current_player()
            names = []
            for action in range(self.num_actions):
                try:  # its refusal is printed to stderr before it raises: hold that back
                    with _stderr_held_back():
                        names.append(state.action_to_string(player, action))
                except Exception:  # OpenSpiel refuses to name some actions out of context
                    names.append(f"action {action}")
            if len(set(names)) < len(names):
                names = [f"{a}:{name}" for a, name in enumerate(names)]
            self._action_names = tuple(names)
        return self._action_names

    def new_initial_state(self) -> OpenSpielState:
        return OpenSpielState(self, self.openspiel_game.new_initial_state())

    def compile_arrays(self) -> CompiledTree:
        """The compiled tree by the fast walk over raw ``pyspiel`` states: no wrapper object per
        history, and a node's last child is the node itself advanced in place (one clone fewer
        per node). A malformed game is explained by the checking walk over
        :class:`OpenSpielState`, as for any game."""
        return compile_checked(
            self,
            lambda: fast_walk.walk(self, self.openspiel_game.new_initial_state(), _raw_ops(self)),
        )

    def __reduce__(self) -> tuple:
        return (load_openspiel, (self.name,))


PARAMETER_MINIMUMS: dict[str, dict[str, tuple[int, str]]] = {
    "liars_dice": {"numdice": (1, "the dice each player rolls")},
    "universal_poker": {
        "numRanks": (1, "the ranks in the deck"),
        "numSuits": (1, "the suits in the deck"),
        "numRounds": (1, "the betting rounds"),
        "numHoleCards": (1, "the cards each player is dealt"),
    },
    "connect_four": {"rows": (1, "the board's rows")},
}
"""Parameters that OpenSpiel loads below their range and then fails on, deep inside (its
``liars_dice(numdice=0)`` fails when the first die is rolled, ``numdice=-1`` asks for a
negative-sized vector; ``universal_poker`` with any of these at 0 and ``connect_four(rows=0)``
end the process with a segmentation fault): ``{game: {parameter: (minimum, what it counts)}}``,
checked before OpenSpiel loads the game so the message names the parameter and its range.
Every other integer parameter whose default is not negative must be at least 0
(:func:`_refuse_below_minimum`); any other game OpenSpiel cannot play is caught by
:func:`_check_playable`'s first path."""

SIGNED_PARAMETER_WORDS = ("bonus",)
"""Integer parameters named with one of these are scores a game may well take negative
(``gin_rummy``'s ``gin_bonus``), not counts: :func:`_refuse_below_minimum` lets them be."""


def _refuse_out_of_range(kind: Any, given: dict[str, Any]) -> None:
    """Refuse, before OpenSpiel loads or plays the game, the parameters known to take OpenSpiel
    outside its memory: integers below their range (:func:`_refuse_below_minimum`), and
    universal_poker's lists out of shape or range (:func:`_refuse_bad_poker_lists`) or a deck
    short of the cards it deals (:func:`_refuse_a_short_deck`)."""
    _refuse_below_minimum(kind, given)
    _refuse_without_file(kind.short_name, given)
    if kind.short_name == "universal_poker":
        _refuse_bad_poker_lists(kind, given)
        _refuse_a_short_deck(kind, given)


GAMES_FROM_FILES = {"efg_game": ".efg", "nfg_game": ".nfg"}
"""OpenSpiel games read from a file named by ``filename`` (without it: OpenSpiel's
``file.cc CHECK_TRUE(fd_)``, or ``map::at``)."""


def _refuse_without_file(name: str, given: dict[str, Any]) -> None:
    """Refuse a game of :data:`GAMES_FROM_FILES` loaded without its file."""
    if name in GAMES_FROM_FILES and not given.get("filename"):
        suffix = GAMES_FROM_FILES[name]
        raise ValueError(
            f"OpenSpiel's {name} reads its game from a file: give filename=PATH (a Gambit "
            f"{suffix} file), e.g. openspiel:{name}(filename=/path/to/game{suffix})"
        )


POKER_LISTS: dict[str, tuple[str, int, int | None, str]] = {
    "blind": ("player", 0, None, "the chips each player puts in before the cards"),
    "stack": ("player", 1, None, "each player's chips, more than their blind"),
    "numBoardCards": ("round", 0, None, "the board cards dealt in each round"),
    "firstPlayer": ("round", 1, 2, "who acts first in each round, counted from 1"),
    "raiseSize": ("round", 0, None, "the size of each round's raises"),
}
"""universal_poker's parameters that are lists of whole numbers in one string, one per player
or per round: ``{parameter: (per what, minimum, maximum, meaning)}``. OpenSpiel reads them
unchecked, and a short list or a value out of range ended the process (a segmentation fault:
``numBoardCards=0`` with two rounds, ``numBoardCards=-1``, ``firstPlayer=1 3``, ``blind=100``,
``stack=1200``, ``stack=99 1200`` under a blind of 100, limit betting's ``raiseSize=2`` or
``-1``; ``stack=100 100``, a stack equal to its blind, hung). ``raiseSize`` is read only by
limit betting, and checked only there."""


def _refuse_bad_poker_lists(kind: Any, given: dict[str, Any]) -> None:
    """Refuse universal_poker's list parameters (:data:`POKER_LISTS`) that are not whole
    numbers separated by spaces, are shorter than its players (2) or rounds, or hold a value
    out of range, before OpenSpiel reads them; and a stack not above its blind."""
    spec = kind.parameter_specification
    try:
        rounds = int(given.get("numRounds", spec["numRounds"]))
    except (KeyError, TypeError, ValueError):
        return
    betting = str(given.get("betting", spec.get("betting", "")))
    lists: dict[str, list[int]] = {}
    for name, (per, minimum, maximum, meaning) in POKER_LISTS.items():
        if name not in spec or (name == "raiseSize" and betting != "limit"):
            continue
        text = str(given.get(name, spec[name]))
        count = 2 if per == "player" else rounds
        example = " ".join([str(max(minimum, 1))] * count)
        fix = f"e.g. openspiel:universal_poker({name}={example})"
        try:
            values = [int(v) for v in text.split()]
        except ValueError:
            raise ValueError(
                f"OpenSpiel's universal_poker: {name} ({meaning}) must be whole numbers "
                f"separated by spaces, got {text!r}; {fix}"
            ) from None
        if len(values) < count:
            raise ValueError(
                f"OpenSpiel's universal_poker: {name} ({meaning}) needs a number for each of "
                f"the {count} {per}s, got {text!r} (OpenSpiel reads past a short list: it "
                f"ended the process on several); {fix}"
            )
        wrong = [v for v in values[:count] if v < minimum or (maximum is not None and v > maximum)]
        if wrong:
            bounds = (
                f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
            )
            raise ValueError(
                f"OpenSpiel's universal_poker: {name} ({meaning}) must be {bounds}, got "
                f"{text!r} (OpenSpiel does not check it, and ended the process on such "
                f"values); {fix}"
            )
        lists[name] = values
    if "stack" in lists and "blind" in lists:
        for seat, (stack, blind) in enumerate(zip(lists["stack"], lists["blind"], strict=False)):
            if stack <= blind:
                raise ValueError(
                    f"OpenSpiel's universal_poker: player {seat + 1}'s stack ({stack}) must be "
                    f"more than their blind ({blind}), or OpenSpiel ends the process (or, with "
                    "the two equal, never returns); e.g. openspiel:universal_poker(stack="
                    f"{' '.join(str(b * 12) for b in lists['blind'][:2])})"
                )


def _refuse_a_short_deck(kind: Any, given: dict[str, Any]) -> None:
    """universal_poker's deck must hold every card dealt: both players' hole cards and the
    board cards of its rounds. OpenSpiel does not check it and ends the process with a
    segmentation fault (decks of 2 to 5 cards tried, one child process each: every deck short
    of the cards dealt crashed, every deck holding them played, a deck of exactly the cards
    dealt included). Unreadable values are left to OpenSpiel's own checks."""
    spec = kind.parameter_specification
    try:
        ranks, suits, hole, rounds = (
            int(given.get(key, spec[key]))
            for key in ("numRanks", "numSuits", "numHoleCards", "numRounds")
        )
        boards = str(given.get("numBoardCards", spec["numBoardCards"])).split()[:rounds]
        board = sum(int(n) for n in boards)
    except (KeyError, TypeError, ValueError):
        return
    needed = 2 * hole + board
    if ranks * suits < needed:
        raise ValueError(
            f"OpenSpiel's universal_poker: a deck of numRanks x numSuits = {ranks} x {suits} "
            f"= {ranks * suits} cards cannot deal {2 * hole} hole cards and {board} board "
            f"card(s) ({needed} cards), and OpenSpiel would end the process; give more ranks "
            f"or suits, e.g. openspiel:universal_poker(numRanks={-(-needed // suits)},"
            f"numSuits={suits})"
        )


def _refuse_below_minimum(kind: Any, given: dict[str, Any]) -> None:
    """Refuse an integer parameter below its range before OpenSpiel loads the game or plays it:
    the minimum of :data:`PARAMETER_MINIMUMS` where the game has one, else 0 for a parameter
    whose default is not negative (a count, a size, a seat or a seed; those that default to
    -1 use it for 'not set', goofspiel's ``num_turns``). OpenSpiel checks few of them, and some
    of its games write outside their memory with a negative one (``goofspiel(num_cards=-1)``
    wrote past a buffer in its first state, then raised ``vector::reserve``: the process could
    abort at any later moment), so playing the game to see is no check."""
    name = kind.short_name
    minimums = PARAMETER_MINIMUMS.get(name, {})
    for parameter, value in given.items():
        default = kind.parameter_specification.get(parameter)
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if parameter in minimums:
            minimum, meaning = minimums[parameter]
            what = f"{parameter} ({meaning})"
        elif (
            isinstance(default, int)
            and not isinstance(default, bool)
            and default >= 0
            and not any(word in parameter.lower() for word in SIGNED_PARAMETER_WORDS)
        ):
            minimum, what = 0, parameter
        else:
            continue
        if value < minimum:
            example = minimum if parameter in minimums else default
            raise ValueError(
                f"OpenSpiel's {name}: {what} must be at least {minimum}, got {value}; "
                f"e.g. openspiel:{name}({parameter}={example})"
            )


FIRST_PATH_MOVES = 1_000
"""Moves of the first path through a game that loading plays (:func:`_check_playable`)."""


def _given_parameters(pyspiel_game: Any) -> dict[str, Any]:
    """The parameters ``pyspiel_game`` was loaded with that differ from its defaults."""
    defaults = pyspiel_game.get_type().parameter_specification
    return {k: v for k, v in pyspiel_game.get_parameters().items() if defaults.get(k) != v}


def _check_playable(given: dict[str, Any], pyspiel_game: Any, label: str) -> None:
    """Refuse a game that OpenSpiel loads but cannot play, in one line at load, not as a
    ``SpielError`` or a C++ length error from ``compile_tree``, the envs or a learner later:
    the game's first path (the first chance outcome and the first legal action at every node,
    up to :data:`FIRST_PATH_MOVES` moves: microseconds a move), which OpenSpiel must play
    without an error, once :func:`_refuse_out_of_range` has passed the parameters. A legal
    degenerate game (``liars_dice(dice_sides=1)``) plays it."""
    problem = _first_path_error(pyspiel_game)
    if problem is not None:
        if not given:
            raise ValueError(
                f"{label} loads but OpenSpiel cannot play it: {problem}; the error is inside "
                "OpenSpiel's game (loaded with its defaults), pick another game"
            )
        shown = ",".join(f"{k}={v}" for k, v in sorted(given.items()))
        raise ValueError(
            f"{label} loads with {shown} but OpenSpiel cannot play it: {problem}; one of these "
            "parameters is outside the range the game plays: check them against the game's "
            "parameters in OpenSpiel's docs"
        )


def _first_path_error(pyspiel_game: Any) -> str | None:
    """OpenSpiel's error, on one line, when it plays the first path of ``pyspiel_game`` (see
    :func:`_check_playable`); ``None`` when it plays it (or the first path is longer than
    :data:`FIRST_PATH_MOVES`: a long game is not played out at every load)."""
    written: list[str] = []
    try:
        with _stderr_held_back(written):  # OpenSpiel prints its error before raising it
            state = pyspiel_game.new_initial_state()
            for _ in range(FIRST_PATH_MOVES):
                if state.is_terminal():
                    return None
                if state.is_chance_node():
                    actions = [a for a, _ in state.chance_outcomes()]
                else:
                    actions = state.legal_actions()
                if not actions:  # compile_tree's checks name this one, with the history
                    return None
                state.apply_action(actions[0])
    except Exception as err:  # SpielError, a C++ error as ValueError or RuntimeError, ...
        text = _error_text(err, written).splitlines()[0]  # a C++ error's type is in it
        return f"{text} (SpielError)" if _is_openspiel_error(err) else text
    return None


def _raw_ops(game: OpenSpielGame) -> fast_walk.StateOps:
    """What the fast walk asks a raw ``pyspiel`` state, as unbound C++ methods where OpenSpiel
    answers directly (the information sets' tensors are asked later, through
    :class:`OpenSpielState`, as the envs see them)."""
    state_type = import_pyspiel().State

    def advanced(state: Any, action: int) -> Any:
        state.apply_action(action)
        return state

    return fast_walk.StateOps(
        player=state_type.current_player,
        returns=state_type.returns,
        outcomes=lambda state: checks.check_chance(game, state, state.chance_outcomes()),
        key=state_type.information_state_string,
        legal=state_type.legal_actions,
        child=state_type.child,
        last_child=advanced,
    )


class OpenSpielState(State):
    """An OpenSpiel state, immutable: ``child`` clones and applies, the parent is untouched."""

    game: OpenSpielGame

    def __init__(self, game: OpenSpielGame, state: Any) -> None:
        # No super().__init__(): this runs once per history when the tree is compiled.
        self.game = game
        self._state = state
        self._player = state.current_player()
        self._legal: list[int] | None = None

    def current_player(self) -> int:
        return self._player

    def is_terminal(self) -> bool:
        return self._player == TERMINAL

    def is_chance_node(self) -> bool:
        return self._player == CHANCE

    def legal_actions(self) -> list[int]:
        if self._legal is None:
            self._legal = [] if self._player == TERMINAL else self._state.legal_actions()
        return list(self._legal)

    def legal_actions_mask(self) -> np.ndarray:
        mask = np.zeros(self.game.num_actions, dtype=np.int8)
        if self._player >= 0:
            if self._legal is None:
                self._legal = self._state.legal_actions()
            mask[self._legal] = 1
        return mask

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._player != CHANCE:
            return super().chance_outcomes()
        return self._state.chance_outcomes()

    def _child(self, action: int) -> OpenSpielState:
        return OpenSpielState(self.game, self._state.child(action))

    def action_to_string(self, action: int) -> str:
        if self._player == TERMINAL:
            return self.game.action_name(action)
        return self._state.action_to_string(self._player, action)

    def returns(self) -> np.ndarray:
        if self._player != TERMINAL:
            return np.zeros(2)
        return np.asarray(self._state.returns(), dtype=np.float64)

    def history(self) -> list[int]:
        return self._state.history()

    def infoset_key(self, player: int) -> str:
        if player.__class__ is not int or not 0 <= player < 2:  # fast path: compile's calls
            player = check_player(self.game, player)
        return self._state.information_state_string(player)

    def infoset_tensor(self, player: int) -> np.ndarray:
        player = check_player(self.game, player)
        source = self.game.tensor_source
        if source is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(getattr(self._state, source)(player), dtype=np.float32)

    def describe(self, player: int | None = None) -> str:
        if player is None:
            lines = ["the whole state, in OpenSpiel's words:", str(self._state)]
        else:
            player = check_player(self.game, player)
            view = (
                self._state.observation_string(player)
                if self.game.has_observation_strings
                else self._state.information_state_string(player)
            )
            lines = [f"what player {player} sees, in OpenSpiel's words:", view]
        lines = [line.rstrip() for line in lines]
        if self.is_terminal():
            r = self.returns()
            lines.append(f"result: player 0 {r[0]:+g}, player 1 {r[1]:+g}")
        elif not self.is_chance_node():
            lines.append(f"to move: player {self._player}")
        return "\n".join(lines)
