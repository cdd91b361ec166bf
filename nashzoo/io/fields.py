"""Reading JSON files and checking their fields: one-line errors that name the file and field.

Every reader in :mod:`nashzoo.io` (and the race's and the command line's own files) goes
through these checks before it trusts a value: its type, its range, its finiteness. A value of
the wrong kind never reaches the code that uses it, so a bad file gives a
:class:`FileFormatError` (or the reader's own subclass of it), never a traceback.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nashzoo.games import Game, load_game
from nashzoo.games.base import display_id, is_finite_number, one_line, short_repr


class FileFormatError(ValueError):
    """A file nashzoo reads is missing, unreadable or holds a wrong value (the message names
    the file and the field)."""


def cause(err: BaseException) -> str:
    """``"TypeName: message"`` of an error a reader wraps, on one line (a message can hold a
    newline, e.g. Python 3.10's for a keyword argument named ``"\\n"`` in a damaged file, and
    other control characters, which are shown escaped)."""
    return f"{type(err).__name__}: {one_line(' '.join(str(err).split()))}"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` that refuses ``NaN`` and ``Infinity`` (Python writes them, JSON has none)
    and a key written twice in one object (plain ``json`` keeps the last silently, so a
    hand-edited file could say two things and mean one)."""
    return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)


def strict_decoder() -> json.JSONDecoder:
    """The decoder :func:`parse_json` parses with, for a reader that parses a file a piece at a
    time (``raw_decode`` of one value in a longer text)."""
    return json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def read_json(
    path: str | os.PathLike[str], what: str, error: type[FileFormatError] = FileFormatError
) -> Any:
    """The JSON value stored at ``path``; ``error`` naming the file on anything wrong."""
    try:
        return parse_json(Path(path).read_bytes())
    except FileNotFoundError:
        raise error(f"no {what} at {path}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise error(f"{path} is not a readable {what} ({cause(err)})") from None


VERSION_KEY = "nashzoo"
"""The field every file nashzoo writes holds the writing nashzoo's version in (files from
before 2026-11-28 lack it)."""


def version_stamp() -> dict[str, str]:
    """``{"nashzoo": VERSION}``: what every writer puts beside its format tag, so that a reader
    can say which nashzoo wrote a file it cannot read."""
    from nashzoo import __version__

    return {VERSION_KEY: __version__}


def check_format(
    payload: Any,
    expected: str,
    source: str,
    refusal: str,
    error: type[FileFormatError] = FileFormatError,
) -> None:
    """Refuse ``payload`` unless its ``format`` tag is ``expected`` (``"nashzoo.Kind/N"``).

    A tag of the same kind with another number was written by a nashzoo that stores that kind
    differently: the message names both formats and the writer's version, and says to upgrade
    (the file is newer) or to read it with the nashzoo that wrote it (older), rather than
    failing later on a field this code does not know. Anything else gets ``refusal``."""
    found = payload.get("format") if isinstance(payload, dict) else None
    if found == expected:
        return
    kind, _, ours = expected.rpartition("/")
    theirs = found.rpartition("/")[2] if isinstance(found, str) else ""
    same_kind = isinstance(found, str) and found.startswith(kind + "/")
    if not (same_kind and _ASCII_NUMBER.fullmatch(theirs)) or int(theirs) == int(ours):
        raise error(refusal)
    from nashzoo import __version__

    writer = _writer(payload)
    by = f" by nashzoo {writer}" if writer else ""
    newer = int(theirs) > int(ours)
    pin = f" (pip install nashzoo=={writer})" if writer else ""
    fix = "upgrade nashzoo to read it" if newer else f"read it with the nashzoo that wrote it{pin}"
    raise error(
        f"{source} was written{by} in format {found!r}, {'newer' if newer else 'older'} than "
        f"the {expected!r} this nashzoo ({__version__}) reads; {fix}"
    )


def newer_writer_note(payload: Mapping[str, Any]) -> str:
    """``"; it was written by nashzoo X, newer than this one (Y): ..."`` when ``payload`` names
    a writer version above this nashzoo's (a newer nashzoo may store a setting or field this one
    does not know, in the same format), else ``""``: what a reader adds to a refusal."""
    from nashzoo import __version__

    writer = _writer(payload)
    if not writer or _release(writer) <= _release(__version__):
        return ""
    return (
        f"; it was written by nashzoo {writer}, newer than this one ({__version__}): "
        "upgrade nashzoo to read it"
    )


_ASCII_NUMBER = re.compile(r"[0-9]{1,9}")
_VERSION = re.compile(r"[0-9A-Za-z.+!_-]{1,40}")


def _writer(payload: Mapping[str, Any]) -> str | None:
    """The writer version a file records, if it reads as one (a damaged field is left out of
    the messages rather than shown: it could hold line breaks or a megabyte)."""
    writer = payload.get(VERSION_KEY)
    return writer if isinstance(writer, str) and _VERSION.fullmatch(writer) else None


def _release(version: str) -> tuple[int, ...]:
    """The numbers of a version's release part (``"0.10.2rc1"`` -> ``(0, 10, 2)``)."""
    numbers = []
    for part in version.split("+")[0].split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:
            break
    return tuple(numbers)


def field(
    payload: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    source: str,
    error: type[FileFormatError] = FileFormatError,
    *,
    optional: bool = False,
) -> Any:
    """``payload[key]`` if it is a ``kind`` (bools are not numbers); ``error`` otherwise."""
    if key not in payload:
        if optional:
            return None
        raise error(f"{source}: field {key!r} is missing")
    value = payload[key]
    if optional and value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    numeric = all(k in (int, float) for k in kinds)
    if not isinstance(value, kinds) or (numeric and isinstance(value, bool)):
        names = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise error(f"{source}: field {key!r} must be {names}, got {short_repr(value)}")
    return value


_KIND_NAMES = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
}


def number(
    payload: Mapping[str, Any],
    key: str,
    source: str,
    error: type[FileFormatError] = FileFormatError,
    *,
    integer: bool = False,
    minimum: float | None = None,
    optional: bool = False,
) -> Any:
    """A finite number (an integer when ``integer``) at least ``minimum``."""
    value = field(payload, key, int if integer else (int, float), source, error, optional=optional)
    if value is None:
        return None
    # is_finite_number: an int too large for a float is not (math.isfinite raised on it)
    if not is_finite_number(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise error(f"{source}: field {key!r} must be a finite number{bound}, got {value!r}")
    return value


def game_of(
    payload: Mapping[str, Any],
    source: str,
    error: type[FileFormatError] = FileFormatError,
) -> Game:
    """The game a file was written for, rebuilt from its ``game`` name and ``game_params``; if
    the file also stores a ``game_id`` it must be the rebuilt game's."""
    name = field(payload, "game", str, source, error)
    params = field(payload, "game_params", dict, source, error)
    try:
        game = load_game(name, **params)
    except Exception as err:  # a game's constructor may refuse its parameters in any way
        raise error(f"{source}: cannot rebuild its game {name!r} ({err})") from None
    stored_id = field(payload, "game_id", str, source, error, optional=True)
    if stored_id is not None and stored_id != game.id and _game_id_of(stored_id) != game.id:
        raise error(
            f"{source}: 'game_id' says {display_id(stored_id)} but its game rebuilds as "
            f"{game.display_id}"
        )
    return game


def string_list(
    payload: Mapping[str, Any],
    key: str,
    source: str,
    error: type[FileFormatError] = FileFormatError,
) -> list[str]:
    """A list of strings."""
    value = field(payload, key, list, source, error)
    if not all(isinstance(item, str) for item in value):
        raise error(f"{source}: field {key!r} must be a list of strings, got {short_repr(value)}")
    return value


def _game_id_of(spec: str) -> str | None:
    """The id of the game ``spec`` loads (a hand-written spelling of a game id, such as
    integer payoffs where the id writes floats), or None when it does not load."""
    try:
        return load_game(spec).id
    except Exception:  # not a game: the caller reports the mismatch as it stands
        return None
