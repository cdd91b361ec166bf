"""What nashzoo's games are, for ``nashzoo games``: each registered game's parameters, players
and size, and which of OpenSpiel's games the bridge takes.

Sizes come from the compiled tree (:func:`~nashzoo.games.compile_tree`: histories, information
sets, terminal histories), but only where it is quick to make: a game that counts its histories
by formula (:meth:`Game.num_histories`, Liar's dice) is not compiled past :data:`COUNT_CAP`
histories (its count is still shown), and any other game's walk gives up past it or after
:data:`COUNT_SECONDS` (:func:`~nashzoo.games.limits.history_cap`), so the listing never hangs
on a big game: it says :data:`TOO_BIG` instead. The OpenSpiel list is decided from each game's
type alone (:func:`openspiel_catalog`), without loading any.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from nashzoo.games import limits
from nashzoo.games.base import Game, GameTooLarge, error_text
from nashzoo.games.registry import factory_of, game_names, load_game
from nashzoo.games.tree import compile_tree

COUNT_CAP = 1_000_000
"""The most histories a game is compiled with to count its information sets: built-in games
(Liar's dice's 294,883 histories included) compile in well under a second, and a game walked
state by state (a plugin's, a bridged OpenSpiel game) takes a few microseconds a history."""

COUNT_SECONDS = 5.0
"""The longest a walk may run to count a game (a deep game's histories are slow to make: a
million of OpenSpiel's chess took nearly a minute)."""

TOO_BIG = "too big to count quickly"
"""What the listing says for a count it did not make."""


@dataclasses.dataclass(frozen=True)
class GameParameter:
    """One parameter a game's factory takes: its name and default (``required``: none)."""

    name: str
    default: Any = None
    required: bool = False

    def __str__(self) -> str:
        return self.name if self.required else f"{self.name}={self.default!r}"


@dataclasses.dataclass(frozen=True)
class GameSize:
    """The size of one game's tree, or why it was not counted.

    Attributes:
        histories: every history, chance and terminal ones included (``None``: not counted);
            a game that counts itself by formula gives this even when it is not compiled.
        infosets: information sets of all players (``None``: not counted).
        terminals: terminal histories, what the value LP's size follows (``None``: not counted).
        note: why a count is missing (:data:`TOO_BIG`, or the game's own one-line error), or
            ``None``.
    """

    histories: int | None
    infosets: int | None
    terminals: int | None
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class GameFacts:
    """One game as ``nashzoo games`` shows it.

    Attributes:
        name: the registered name (or, for a game given by spec, the game's own name).
        game_id: the id of the game counted (its defaults, or the spec given); ``None`` when
            it cannot be loaded without parameters.
        parameters: what its factory takes, with defaults; ``None`` where the factory does not
            say (a function taking ``**params``).
        players: its number of players (``None``: not loaded).
        size: its :class:`GameSize`.
    """

    name: str
    game_id: str | None
    parameters: tuple[GameParameter, ...] | None
    players: int | None
    size: GameSize

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: parameters as ``{name: default}`` (``null`` default and
        ``"required": [...]`` for those without one)."""
        parameters = None
        if self.parameters is not None:
            parameters = {p.name: None if p.required else p.default for p in self.parameters}
        required = [p.name for p in self.parameters or () if p.required]
        return {
            "name": self.name,
            "game_id": self.game_id,
            "parameters": parameters,
            "required_parameters": required,
            "players": self.players,
            **dataclasses.asdict(self.size),
        }


def factory_parameters(factory: Any) -> tuple[GameParameter, ...] | None:
    """The parameters a game factory takes (:func:`inspect.signature`), or ``None`` where it
    does not say (it takes ``**params``). A ``Game`` subclass that keeps ``Game.__init__`` takes
    none."""
    if (
        isinstance(factory, type)
        and issubclass(factory, Game)
        and factory.__init__ is Game.__init__
    ):
        return ()
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    found = []
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue  # load_game passes keywords only: these cannot be set by a spec
        required = parameter.default is inspect.Parameter.empty
        found.append(
            GameParameter(parameter.name, None if required else parameter.default, required)
        )
    return tuple(found)


def game_size(game: Game, cap: int = COUNT_CAP) -> GameSize:
    """The size of ``game``'s tree, compiled only where that is quick (see the module docs):
    past ``cap`` histories or :data:`COUNT_SECONDS` of walking, :data:`TOO_BIG`. A game whose
    compile is refused (it breaks perfect recall, it is too big for the machine, its code
    fails) gets that reason as its note."""
    try:
        counted = game.num_histories()
    except Exception:  # a plugin's formula that fails: the walk below counts, or says why
        counted = None
    if counted is not None and counted > cap:
        return GameSize(counted, None, None, TOO_BIG)
    try:
        with limits.history_cap(cap, COUNT_SECONDS):
            tree = compile_tree(game)
    except GameTooLarge:
        return GameSize(counted, None, None, TOO_BIG)
    except Exception as err:  # one game that cannot be compiled must not end the listing
        return GameSize(counted, None, None, f"cannot be compiled: {_reason(err)}")
    return GameSize(tree.num_nodes, tree.num_infosets, int(tree.terminal_nodes.size))


def game_parameters(game: Game) -> tuple[GameParameter, ...] | None:
    """The parameters of this loaded game: its factory's, each with the value the game was
    loaded with (its default where none was given); a bridged OpenSpiel game's are OpenSpiel's
    own, all of them. ``None`` where the factory does not say what it takes and the game
    was loaded with none."""
    openspiel = getattr(game, "openspiel_game", None)
    if openspiel is not None:
        values = dict(openspiel.get_parameters())
        inner = values.get("game")
        if set(values) == {"game"} and isinstance(inner, dict):  # a turn-based conversion
            values = {k: v for k, v in inner.items() if k != "name"}
        return tuple(GameParameter(k, v) for k, v in sorted(values.items()))
    factory = factory_of(game.id)
    declared = None if factory is None else factory_parameters(factory)
    given = game.params
    if declared is None:
        return tuple(GameParameter(k, v) for k, v in given.items()) or None
    return tuple(GameParameter(p.name, given[p.name]) if p.name in given else p for p in declared)


def game_facts(game: Game, cap: int = COUNT_CAP) -> GameFacts:
    """The facts of a loaded game: its parameters (:func:`game_parameters`), players and
    size."""
    return GameFacts(
        game.name, game.id, game_parameters(game), game.num_players, game_size(game, cap)
    )


def registered_game_facts(name: str, cap: int = COUNT_CAP) -> GameFacts:
    """The facts of a registered (or built-in) game loaded with its defaults; a game that
    cannot be loaded without parameters (``matrix``) or at all (a broken plugin) has no size,
    and its note says why."""
    factory = factory_of(name)
    parameters = None if factory is None else factory_parameters(factory)
    try:
        game = load_game(name)
    except Exception as err:  # one game that cannot be loaded must not end the listing
        note = f"cannot be loaded with its defaults: {_reason(err)}"
        return GameFacts(name, None, parameters, None, GameSize(None, None, None, note))
    return GameFacts(name, game.id, parameters, game.num_players, game_size(game, cap))


def game_catalog(cap: int = COUNT_CAP) -> list[GameFacts]:
    """Every game :func:`~nashzoo.games.registry.game_names` lists (built-in, then registered:
    plugins and installed packages), with its defaults."""
    return [registered_game_facts(name, cap) for name in game_names()]


def _reason(err: BaseException) -> str:
    """Why a game could not be listed: a ValueError's message (the game's own refusal), any
    other error with its type."""
    text = error_text(err)
    return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"


# --- OpenSpiel ---------------------------------------------------------------------------------
OPENSPIEL_LOAD_CHECKS = (
    "parameters out of range (negative counts, and universal_poker's deck and lists, refused "
    "before OpenSpiel reads them; the rest checked on the game's first path)",
    "perfect recall of its information states, and a tree small enough for this machine "
    "(checked when it is compiled)",
)
"""What the bridge checks only when a game is loaded or compiled, not from its type."""


@dataclasses.dataclass(frozen=True)
class OpenSpielEntry:
    """One of OpenSpiel's registered games that the bridge takes as a two-player game.

    Attributes:
        name: OpenSpiel's short name (load it as ``openspiel:NAME``).
        players: ``""`` when it has two players by default, else the parameter to set
            (``players=2``).
        dynamics: ``"turn-based"`` or ``"simultaneous"`` (played turn by turn, through
            OpenSpiel's ``convert_to_turn_based``).
        information: ``"perfect"``, ``"imperfect"`` or ``"one-shot"``.
        chance: ``"none"`` or ``"explicit"``.
        utility: ``"zero-sum"``, ``"constant-sum"``, ``"general-sum"`` or ``"identical"``
            (``nashzoo solve`` takes the first two).
        default_loadable: whether it loads without parameters.
    """

    name: str
    players: str
    dynamics: str
    information: str
    chance: str
    utility: str
    default_loadable: bool

    @property
    def spec(self) -> str:
        """The game spec that loads it with two players."""
        return f"openspiel:{self.name}" + (f"({self.players})" if self.players else "")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "spec": self.spec}


_PLAYER_PARAMETERS = ("players", "num_players", "numPlayers")


def openspiel_catalog() -> list[OpenSpielEntry]:
    """OpenSpiel's registered games the bridge can load as two-player games, decided from each
    game's type (``pyspiel.registered_games()``) without loading any, by the bridge's own
    checks (:class:`~nashzoo.games.openspiel.OpenSpielGame`): turn-based or simultaneous-move
    dynamics, information-state strings, chance outcomes that are listed rather than only
    sampled, and two players (by default or through its player-count parameter). The checks
    made only at load or compile are :data:`OPENSPIEL_LOAD_CHECKS`. ImportError naming the
    extra without open_spiel."""
    from nashzoo.games.openspiel import import_pyspiel

    pyspiel = import_pyspiel()
    kinds = pyspiel.GameType
    entries = []
    for kind in sorted(pyspiel.registered_games(), key=lambda k: k.short_name):
        if kind.dynamics not in (kinds.Dynamics.SEQUENTIAL, kinds.Dynamics.SIMULTANEOUS):
            continue
        if not kind.provides_information_state_string:
            continue
        if kind.chance_mode == kinds.ChanceMode.SAMPLED_STOCHASTIC:
            continue
        players = _two_players(kind)
        if players is None:
            continue
        entries.append(
            OpenSpielEntry(
                kind.short_name,
                players,
                "simultaneous" if kind.dynamics == kinds.Dynamics.SIMULTANEOUS else "turn-based",
                kind.information.name.lower().removesuffix("_information").replace("_", "-"),
                "none" if kind.chance_mode == kinds.ChanceMode.DETERMINISTIC else "explicit",
                kind.utility.name.lower().replace("_", "-"),
                bool(kind.default_loadable),
            )
        )
    return entries


def _two_players(kind: Any) -> str | None:
    """``""`` when the game of ``kind`` has two players by default, the parameter that makes
    it two (``players=2``) when it has another count by default, ``None`` when it cannot be
    played by two."""
    if not kind.min_num_players <= 2 <= kind.max_num_players:
        return None
    specification = kind.parameter_specification
    parameter = next((p for p in _PLAYER_PARAMETERS if p in specification), None)
    if parameter is None:
        return "" if kind.min_num_players == kind.max_num_players == 2 else None
    return "" if specification[parameter] == 2 else f"{parameter}=2"


__all__ = [
    "COUNT_CAP",
    "COUNT_SECONDS",
    "OPENSPIEL_LOAD_CHECKS",
    "TOO_BIG",
    "GameFacts",
    "GameParameter",
    "GameSize",
    "OpenSpielEntry",
    "factory_parameters",
    "game_catalog",
    "game_facts",
    "game_parameters",
    "game_size",
    "openspiel_catalog",
    "registered_game_facts",
]
