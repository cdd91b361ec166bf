"""``load_game(spec, **params)`` and ``register_game(name, factory)``: where games come from.

Three doors, one shape. Whatever door a game comes in by, the result is a :class:`Game`, and
nothing past :func:`~nashzoo.games.compile_tree` knows which door it was:

* **built-in games**: ``rps``, ``matrix``, ``kuhn_poker``, ``leduc_poker``, ``liars_dice`` (and
  the games added beside them in this package);
* **registered games**: a user's own ``Game`` subclass, registered at import time with
  :func:`register_game`, or by an installed package through the ``nashzoo.games`` entry-point
  group (``[project.entry-points."nashzoo.games"] my_game = "my_pkg.games:MyGame"``), which is
  read the first time a name is not found;
* **OpenSpiel's games** through the bridge (``"openspiel:<game string>"``), when the optional
  ``openspiel`` extra is installed.

A spec string may carry parameters the way :attr:`Game.id` writes them, so
``load_game(game.id)`` always gives the game back: ``load_game("liars_dice(dice_sides=4)")`` is
``load_game("liars_dice", dice_sides=4)``. Values are Python literals (numbers, strings, lists).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Callable
from importlib import metadata
from typing import Any

from nashzoo._locks import ForkSafeLock
from nashzoo.games.base import Game
from nashzoo.games.kuhn import KuhnPokerGame
from nashzoo.games.leduc import LeducPokerGame
from nashzoo.games.liars_dice import LiarsDiceGame
from nashzoo.games.matrix import PRESETS, MatrixGame
from nashzoo.games.openspiel import PREFIX as OPENSPIEL_PREFIX
from nashzoo.games.openspiel import is_pyspiel_game, load_openspiel

GameFactory = Callable[..., Game]
"""``factory(**params) -> Game``: a ``Game`` subclass itself, or any function returning one."""

ENTRY_POINT_GROUP = "nashzoo.games"
"""The package entry-point group read for games installed by other packages."""


def _rps(**params: Any) -> Game:
    if params:
        raise ValueError(
            f"rps takes no parameters, got {sorted(params)}; for other payoffs use the matrix "
            'game: --game "matrix(row_payoffs=[[...]])" on the command line, '
            "load_game('matrix', row_payoffs=[[...]]) in Python"
        )
    return MatrixGame(preset="rps", name="rps")


def _declare(factory: Callable[..., Game], *parameters: str) -> None:
    """Give ``factory``, which takes ``**params`` and checks them itself (to name what is
    valid), the signature :func:`inspect.signature` reports: keyword-only ``parameters``, each
    defaulting to ``None``; none for a game without parameters. A listing of the games
    (``nashzoo games``) shows what each one takes."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature([inspect.Parameter(p, keyword, default=None) for p in parameters])
    vars(factory)["__signature__"] = signature  # the attribute inspect reads on a function


_declare(_rps)


def _no_params(cls: Callable[[], Game], name: str) -> GameFactory:
    def make(**params: Any) -> Game:
        if params:
            raise ValueError(f"{name} takes no parameters, got {sorted(params)}")
        return cls()

    _declare(make)
    return make


_MATRIX_PARAMETERS = ("preset", "row_payoffs", "col_payoffs", "action_names")


def _matrix(**params: Any) -> Game:
    unknown = set(params) - set(_MATRIX_PARAMETERS)
    if unknown:
        raise ValueError(
            f"unknown matrix parameters {sorted(unknown)}; valid: {sorted(_MATRIX_PARAMETERS)} "
            f"(presets: {', '.join(PRESETS)})"
        )
    return MatrixGame(**params)


_declare(_matrix, *_MATRIX_PARAMETERS)

BUILTIN_GAMES: dict[str, GameFactory] = {
    "rps": _rps,
    "matrix": _matrix,
    "kuhn_poker": _no_params(KuhnPokerGame, "kuhn_poker"),
    "leduc_poker": _no_params(LeducPokerGame, "leduc_poker"),
    "liars_dice": LiarsDiceGame,
}
"""The games nashzoo ships, by name. User games go through :func:`register_game`."""

_ALIASES = {"kuhn": "kuhn_poker", "leduc": "leduc_poker", "leduc_holdem": "leduc_poker"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")

_REGISTERED: dict[str, GameFactory] = {}
_LOCK = ForkSafeLock()
_ENTRY_POINTS_READ = False
_BROKEN_ENTRY_POINTS: dict[str, str] = {}
"""Entry points that could not be registered, by name: the error, raised when that name is
asked for (a broken third-party package must not break the lookup of any other game)."""


def register_game(name: str, factory: GameFactory, *, replace: bool = False) -> GameFactory:
    """Make ``load_game(name, **params)`` return ``factory(**params)``.

    Call it at import time of the module that defines the game; ``nashzoo --plugin MODULE``
    imports that module in the command and in every race worker. Registering the same factory
    again, or the same-named factory of the same module (a reloaded module), replaces it
    silently, so re-importing a module is harmless.

    Args:
        name: letters, digits, ``_``, ``.`` and ``-``, starting with a letter or ``_``; the
            games it makes must report this same ``name`` (it is what checkpoints, policy files
            and race workers load the game by).
        factory: a ``Game`` subclass or a function ``(**params) -> Game``.
        replace: allow replacing another factory registered under ``name`` (never a built-in).

    Returns:
        ``factory``, unchanged.

    Raises:
        ValueError: a malformed name, a built-in name, a name taken by another factory
            (without ``replace=True``), or a factory that is not callable.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"game name must be letters, digits, '_', '.' or '-' starting with a letter, got "
            f"{name!r}"
        )
    if name in BUILTIN_GAMES or name in _ALIASES or name.startswith(("openspiel", "matrix:")):
        raise ValueError(f"{name!r} is a built-in game name; register your game under another")
    if not callable(factory):
        raise ValueError(f"factory for game {name!r} must be callable, got {factory!r}")
    with _LOCK:
        current = _REGISTERED.get(name)
        if current is not None and _same_definition(current, factory):
            replace = True  # the defining module was imported again (a reload, a notebook cell)
        if current is not None and current is not factory and not replace:
            raise ValueError(
                f"game {name!r} is already registered (by {_describe(current)}); pass "
                "replace=True to replace it, or pick another name"
            )
        _REGISTERED[name] = factory
    return factory


def unregister_game(name: str) -> None:
    """Remove a game added with :func:`register_game` (KeyError naming it if there is none)."""
    with _LOCK:
        if name not in _REGISTERED:
            raise KeyError(f"no registered game {name!r}; registered: {sorted(_REGISTERED)}")
        del _REGISTERED[name]


def _same_definition(old: GameFactory, new: GameFactory) -> bool:
    """Whether ``new`` is ``old`` defined again by the same module under the same name."""
    return all(
        getattr(old, attr, None) is not None and getattr(old, attr) == getattr(new, attr, None)
        for attr in ("__module__", "__qualname__")
    )


def _describe(factory: GameFactory) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', factory)}"


def _read_entry_points() -> None:
    """Register the games of installed packages' ``nashzoo.games`` entry points (once)."""
    global _ENTRY_POINTS_READ
    if _ENTRY_POINTS_READ:
        return
    _ENTRY_POINTS_READ = True
    _BROKEN_ENTRY_POINTS.clear()
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in _REGISTERED:
            continue
        try:
            register_game(entry.name, entry.load())
        except Exception as err:  # a broken third-party package must not break nashzoo
            package = getattr(entry.dist, "name", None) or "the package that declares it"
            _BROKEN_ENTRY_POINTS[entry.name] = (
                f"the {ENTRY_POINT_GROUP!r} entry point {entry.name!r} = {entry.value!r} of "
                f"{package} cannot be used ({type(err).__name__}: {err}); fix or uninstall it"
            )


def game_names() -> list[str]:
    """Names accepted by :func:`load_game`: built-in, then registered games."""
    _read_entry_points()
    return [*BUILTIN_GAMES, *sorted(_REGISTERED)]


def _factory(name: str) -> GameFactory | None:
    key = _ALIASES.get(name, name)
    found = BUILTIN_GAMES.get(key) or _REGISTERED.get(key)
    if found is None:
        _read_entry_points()
        found = _REGISTERED.get(key)
    return found


def factory_of(spec: Any) -> GameFactory | None:
    """The registered (or built-in) factory a game name or spec loads through; ``None`` for
    OpenSpiel games, ``Game`` objects and unknown names."""
    if not isinstance(spec, str) or spec.startswith((OPENSPIEL_PREFIX, "matrix:")):
        return None
    try:
        key, _ = parse_game_spec(spec)
    except ValueError:
        return None
    return _factory(key)


def parse_game_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name(k=v, ...)"`` into ``("name", {k: v})`` (values are Python literals).

    This is the format :attr:`Game.id` writes, so ids read back as the same game.
    """
    spec = spec.strip()
    if "(" not in spec:
        return spec, {}
    name, _, rest = spec.partition("(")
    name = name.strip()
    if not rest.endswith(")"):
        raise ValueError(f"game spec {spec!r} has no closing ')'; write e.g. 'name(k=1, s=\"x\")'")
    fast = _id_params_as_json(rest[:-1])
    if fast is not None:
        return name, fast
    try:
        call = ast.parse(f"f({rest}", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            raise SyntaxError("positional arguments")
        params: dict[str, Any] = {}
        for kw in call.keywords:
            if kw.arg is None:
                raise SyntaxError("**")
            params[kw.arg] = ast.literal_eval(kw.value)
    except (SyntaxError, ValueError, TypeError):
        quoted = _quoted_openspiel_style(name, rest[:-1])
        hint = f"; strings in quotes, as in {quoted!r}" if quoted else ""
        raise ValueError(
            f"cannot read the parameters of game spec {spec!r}: write them as "
            f"name(key=value, ...) with Python literal values (numbers, 'strings', [lists]){hint}"
        ) from None
    return name, params


_TOP_KEY = re.compile(r"(^|,)([A-Za-z_][A-Za-z0-9_]*)=")


def _id_params_as_json(inside: str) -> dict[str, Any] | None:
    """The parameters ``k=v,...`` of a long game id read as JSON, where every value is JSON
    (numbers and lists of them: a matrix game's payoffs), or ``None``. Python's parser took
    19 s for a 1000x1000 matrix game's id (7 MB of text, which race workers and checkpoints
    load the game by); JSON reads it in a fraction of a second. Taken only where the result
    written back as :attr:`Game.id` writes parameters is the text itself, so it never reads
    anything the parser would read otherwise; short specs always go to the parser."""
    if len(inside) < 10_000:
        return None
    try:
        params = json.loads("{" + _TOP_KEY.sub(r'\1"\2":', inside) + "}")
    except ValueError:
        return None
    if not isinstance(params, dict):
        return None
    written = ",".join(f"{key}={params[key]!r}" for key in sorted(params))
    return params if written == inside else None


def _quoted_openspiel_style(name: str, inside: str) -> str | None:
    """``inside`` (``k=v,...``) read as OpenSpiel writes its game strings, with bare strings
    (``bidding_rule=reset-quantity``), written back with those strings quoted; ``None`` when it
    is not that (nested brackets, or nothing left bare)."""
    if any(c in inside for c in "()[]{}'\""):
        return None
    parts = []
    changed = False
    for item in inside.split(","):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or not key.isidentifier() or not value:
            return None
        try:
            ast.literal_eval(value)
        except (SyntaxError, ValueError):
            value, changed = repr(value), True
        parts.append(f"{key}={value}")
    return f"{name}({','.join(parts)})" if changed else None


def load_game(name: Any, **params: Any) -> Game:
    """Load a game.

    Args:
        name: a game name (:func:`game_names`; ``"kuhn"`` and ``"leduc"`` are accepted too), a
            spec with parameters as :attr:`Game.id` writes them (``"matrix(preset='rps')"``),
            ``"matrix:PRESET"`` (short for ``load_game("matrix", preset=PRESET)``), an OpenSpiel
            game string ``"openspiel:<game string>"`` or a loaded ``pyspiel.Game`` (both through
            the bridge, :mod:`nashzoo.games.openspiel`), or a ``Game`` (returned as it is).
        **params: game parameters, e.g. ``load_game("matrix", preset="matching_pennies")``.

    Raises:
        ValueError: unknown name, malformed spec, or bad parameters; the message says what is
            valid.
        ImportError: an OpenSpiel game without open_spiel installed (the message names the
            extra to install).
    """
    if isinstance(name, Game):
        if params:
            raise ValueError("parameters cannot be applied to an already loaded game")
        return name
    # The OpenSpiel bridge: its own game strings, parsed by OpenSpiel (pyspiel imported lazily).
    if (isinstance(name, str) and name.startswith(OPENSPIEL_PREFIX)) or is_pyspiel_game(name):
        return load_openspiel(name, **params)
    if not isinstance(name, str):
        raise ValueError(
            f"game must be a name string or a Game, got {name!r} ({type(name).__name__}); "
            f"valid games: {', '.join(game_names())}"
        )
    if name.startswith("matrix:"):
        if params:
            raise ValueError("'matrix:PRESET' takes no further parameters")
        return _matrix(preset=name.split(":", 1)[1])
    key, spec_params = parse_game_spec(name)
    clash = sorted(set(spec_params) & set(params))
    if clash:
        raise ValueError(f"parameters {clash} given both in {name!r} and as keywords")
    return _build_named(key, {**spec_params, **params})


def _build_named(key: str, params: dict[str, Any]) -> Game:
    """The game the factory registered (or built in) under ``key`` makes from ``params``,
    checked to be a :class:`Game` carrying the name it was registered under."""
    factory = _factory(key)
    if factory is None and key in _BROKEN_ENTRY_POINTS:
        raise ValueError(_BROKEN_ENTRY_POINTS[key])
    if factory is None:
        raise ValueError(
            f"unknown game {key!r}; valid games: {', '.join(game_names())} (a game of your own: "
            "nashzoo.games.register_game, or --plugin MODULE on the command line)"
        )
    try:
        game = factory(**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for {key}: {err}") from None
    if not isinstance(game, Game):
        raise ValueError(
            f"the factory registered for {key!r} returned {type(game).__name__}, not a "
            "nashzoo.games.Game"
        )
    expected = _ALIASES.get(key, key)
    if game.name != expected:
        raise ValueError(
            f"the factory registered as {expected!r} made a game named {game.name!r}; set the "
            f"class attribute name = {expected!r} (checkpoints and race workers load games by it)"
        )
    return game
