"""The policy file format (``nashzoo.TabularPolicy/1``): JSON with the game (name, parameters,
action names) and ``{infoset_key: probabilities}``.

:func:`read_policy_file` checks the container (format tag, field types, the game it rebuilds,
its action names, the table's keys and rows being lists of numbers); that the rows are
probability distributions over the game's information sets is checked where the table becomes a
policy (:meth:`nashzoo.agents.TabularPolicy.load`). Errors are
:class:`~nashzoo.games.infoset.PolicyError` naming the file and the field.

Both directions stream. :func:`write_policy_file` writes a few hundred rows at a time, and
:func:`read_policy_table` reads a file whose game fields come before its ``"policy"`` (the
writer's layout, or any re-indented or reordered one that keeps them first) a quarter of a
megabyte at a time straight into the ``[infosets, actions]`` table, which is all it keeps
besides a few megabytes of text and rows in flight: parsed whole, a
506 MB policy of a 42-million-history Liar's dice took several GB (its text, then every row as
a Python list of floats). The stream only ever returns what the whole parse would, bit for bit;
on anything else (another layout, an error anywhere in the file) it declines, and the caller
reads the file with :func:`read_policy_file`, which names the problem as it always has.
"""

from __future__ import annotations

import codecs
import dataclasses
import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np

from nashzoo.games import CompiledTree, Game, compile_tree
from nashzoo.games.infoset import PolicyError
from nashzoo.io.atomic import atomic_write_bytes
from nashzoo.io.fields import (
    FileFormatError,
    check_format,
    field,
    game_of,
    parse_json,
    read_json,
    strict_decoder,
    string_list,
    version_stamp,
)

POLICY_FORMAT = "nashzoo.TabularPolicy/1"


class PolicyFileError(PolicyError, FileFormatError):
    """A policy file that cannot be used (both a PolicyError and a FileFormatError)."""


@dataclasses.dataclass(frozen=True)
class PolicyFile:
    """A validated policy file: its game and its table (rows not yet checked as distributions)."""

    game: Game
    table: dict[str, list[float]]


@dataclasses.dataclass(frozen=True)
class PolicyTable:
    """A policy file read straight into its game's table: ``probs`` is ``[infosets, actions]``
    float64 in the order of ``tree`` (``compile_tree(game)``), every row given, not yet checked
    as distributions."""

    game: Game
    tree: CompiledTree
    probs: np.ndarray


def write_policy_file(
    path: str | os.PathLike[str],
    game: Game,
    table: Mapping[str, Sequence[float]] | Iterable[tuple[str, Sequence[float]]],
) -> None:
    """Write ``table`` (a mapping, or ``(key, row)`` pairs) for ``game`` atomically.

    Streamed, a few hundred rows at a time, as ``json.dumps(payload, indent=1)`` would write
    it, byte for byte: the whole text at once, with the rows as Python lists before it, took
    five times the file's size in allocations (47 MB for Liar's dice's 8.6 MB), twelve in
    resident memory (a 506 MB policy of a 42-million-history Liar's dice raised the process by
    6 GB at the end of its run); streamed, 0.4 MB, and twice as fast."""
    rows = table.items() if isinstance(table, Mapping) else table
    atomic_write_bytes(path, _policy_chunks(game, rows))


_ROWS_PER_CHUNK = 512


def _policy_chunks(game: Game, rows: Iterable[tuple[str, Sequence[float]]]) -> Iterator[bytes]:
    header = {
        "format": POLICY_FORMAT,
        **version_stamp(),
        "game": game.name,
        "game_id": game.id,
        "game_params": game.params,
        "action_names": list(game.action_names),
        "policy": {},
    }
    text = json.dumps(header, indent=1)
    assert text.endswith('"policy": {}\n}'), "the policy is the last field"
    head, first = text[: -len("{}\n}")], True
    batch: list[str] = []
    for key, row in rows:
        if first:  # an empty table stays "{}", as json.dumps writes it
            batch.append(head + "{\n")
        numbers = json.dumps(list(row))  # one line: "[0.5, 0.25]"; no number holds ", "
        shown = "[]" if numbers == "[]" else f"[\n   {numbers[1:-1]}\n  ]".replace(", ", ",\n   ")
        batch.append(("" if first else ",\n") + f"  {json.dumps(key)}: {shown}")
        first = False
        if len(batch) >= _ROWS_PER_CHUNK:
            yield "".join(batch).encode()
            batch.clear()
    batch.append(text if first else "\n }\n}")
    yield "".join(batch).encode()


def read_policy_file(path: str | os.PathLike[str]) -> PolicyFile:
    """Read and validate a file written by :func:`write_policy_file`, parsed whole (see
    :func:`read_policy_table` for the streamed read, which declines wherever this one fails)."""
    name = str(path)
    payload = read_json(path, "policy JSON file", PolicyFileError)
    game = _game_of_fields(payload, name)
    table = field(payload, "policy", dict, name, PolicyFileError)
    if not lists_of_numbers(table.values()):  # row by row only to name the first bad one
        for key, row in table.items():
            if not isinstance(row, list) or not all(_is_number(v) for v in row):
                text = f"{name}: information set {key!r} must map to a list of numbers, got {row!r}"
                raise PolicyFileError(text[:300])
    return PolicyFile(game, table)


def _game_of_fields(payload: Any, name: str) -> Game:
    """The game a policy file's top-level fields name, once its format tag and its action
    names are checked (the table's field is not looked at)."""
    check_format(
        payload,
        POLICY_FORMAT,
        name,
        f"{name} is not a nashzoo TabularPolicy file (missing format tag)",
        PolicyFileError,
    )
    game = game_of(payload, name, PolicyFileError)
    names = string_list(payload, "action_names", name, PolicyFileError)
    if names != list(game.action_names):
        raise PolicyFileError(
            f"{name}: action names {names} do not match {game.display_id}'s "
            f"{list(game.action_names)}"
        )
    return game


_CHUNK_BYTES = 1 << 18
"""How much of a policy file :func:`read_policy_table` reads at a time (a thousand rows or so)."""

_SPAN_LIMIT = 4 << 20
"""The most text :func:`read_policy_table` holds that it cannot cut into runs of rows: looking
for the ``"policy"`` field (the fields before it take a few hundred bytes in any file nashzoo
writes), or from the last cut to the end of the file (the table's last rows and the fields
after it). Past it the stream declines and the file is read whole."""

_POLICY_FIELD = re.compile(r'"policy"[ \t\n\r]*:[ \t\n\r]*\{')  # JSON's whitespace: \s takes more
_COMMA = re.compile(r"[ \t\n\r]*,")
_OBJECT_END = re.compile(r"[ \t\n\r]*\}[ \t\n\r]*")


def read_policy_table(path: str | os.PathLike[str]) -> PolicyTable | None:
    """The policy file at ``path`` read a chunk at a time into its game's table, holding the
    table and a few megabytes of text and rows, or None where the stream declines: the file is
    laid out otherwise (a game field after the table, a text that is not plain UTF-8, not a
    regular file), or anything in it is wrong (unreadable, not JSON, a key written twice, a
    field or row that :func:`read_policy_file` or
    :meth:`~nashzoo.agents.TabularPolicy.from_dict` refuses, a row missing). The caller then
    reads it whole, which gives the table or names the problem: the stream returns a table only
    where that read would have returned the same one, bit for bit."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a pipe reads once: the whole read must have its bytes
        with open(path, "rb") as handle:
            return _streamed_table(_text_chunks(handle), str(path))
    except (OSError, ValueError, OverflowError, RecursionError):
        # ValueError: JSON's errors, UnicodeDecodeError and PolicyFileError are all ValueErrors.
        return None


def _text_chunks(handle: BinaryIO) -> Iterator[str]:
    """The file's text a chunk at a time, decoded as ``json.loads`` decodes its bytes (UTF-8,
    lone surrogates let through); ValueError for a file it would read as UTF-16 or UTF-32 or
    with a byte order mark, which the whole read reads."""
    chunk = handle.read(_CHUNK_BYTES)
    if json.detect_encoding(chunk) != "utf-8":  # it looks at the first four bytes only
        raise ValueError("not a plain UTF-8 file")
    decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    while chunk:
        yield decoder.decode(chunk)
        chunk = handle.read(_CHUNK_BYTES)
    yield decoder.decode(b"", final=True)


def _streamed_table(chunks: Iterator[str], name: str) -> PolicyTable | None:
    """:func:`read_policy_table`'s reading: the fields before the table and the game they
    name, then the rows run by run into the table, then the fields after it (checked with
    those before as one object: a field given on both sides is a key written twice)."""
    found = _fields_before_table(chunks)
    if found is None:
        return None
    before, window = found
    game = _game_of_fields(before, name)
    try:
        tree = compile_tree(game)
    except Exception:  # what refuses the game, the whole read meets after checking every byte
        return None
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    given = np.zeros(tree.num_infosets, dtype=bool)
    after = _stream_rows(chunks, window, lambda rows: _filled(tree, probs, given, rows))
    if after is None or not given.all() or after.keys() & {*before, "policy"}:
        return None
    if after:
        _game_of_fields({**before, **after}, name)  # e.g. a game_id after the table
    return PolicyTable(game, tree, probs)


def _fields_before_table(chunks: Iterator[str]) -> tuple[dict[str, Any], str] | None:
    """The top-level fields before ``"policy"`` and the text after the ``{`` that opens the
    table, or None when no such field comes first within :data:`_SPAN_LIMIT` characters."""
    text = ""
    for chunk in chunks:
        text += chunk
        for match in _POLICY_FIELD.finditer(text):
            before = _object_before(text[: match.start()])
            if before is not None:
                # A "policy" among them (not a mapping) is a key written twice.
                return None if "policy" in before else (before, text[match.end() :])
        if len(text) > _SPAN_LIMIT:
            return None
    return None


def _object_before(text: str) -> dict[str, Any] | None:
    """The fields of the top-level object when ``text`` is its ``{`` and whole fields, each
    followed by a comma, else None. Closed with one ``}`` in place of the last comma, it parses
    only if that comma was between two of its fields: anywhere else (in a string, in a nested
    value) the ``}`` would close a nested value or fall inside the string."""
    head = text.rstrip(" \t\n\r")
    if not head.endswith(","):
        return None
    try:
        fields = parse_json(head[:-1] + "}")
    except (ValueError, RecursionError):
        return None
    return fields if isinstance(fields, dict) else None


def _stream_rows(
    chunks: Iterator[str], window: str, fill: Callable[[dict[str, Any]], bool]
) -> dict[str, Any] | None:
    """Parse the table from ``window`` (the text after its ``{``) and the chunks after it,
    handing ``fill`` one run of rows at a time; return the top-level fields after the table
    (``{}`` when it is the last), or None when ``fill`` refuses a run or the text is not JSON.

    A run ends at the last end of a row read so far (a ``]`` and the comma after it). Parsed
    with ``{`` and ``}`` around it, a run is the table's own rows, cut between two of them; a
    cut anywhere else (a ``],`` in a key, in a nested value, past the table) does not parse,
    and the rest of the file is then parsed at once: the table ends there, or the file is
    wrong."""
    cut_before = False  # a run was cut at a comma: the table goes on after it
    for chunk in chunks:
        window += chunk
        cut = _last_row_end(window)
        if cut is None:
            if len(window) > _SPAN_LIMIT:
                return None
            continue
        try:
            rows = parse_json("{" + window[: cut[0]] + "}")
        except (ValueError, RecursionError):
            break
        if not fill(rows):
            return None
        window, cut_before = window[cut[1] :], True
    rest = _rest_of(window, chunks)
    if rest is None:
        return None
    text = "{" + rest
    rows, end = strict_decoder().raw_decode(text)
    if (cut_before and not rows) or not fill(rows):  # no row after a comma: "[0.5],}"
        return None
    return _fields_after(text[end:])


def _last_row_end(window: str) -> tuple[int, int] | None:
    """``(i, j)``: ``window[:i]`` ends with the last ``]`` that JSON's whitespace and a comma
    follow, which end at ``j``; None when there is none. A few are tried, from the end: the
    last ``]`` read may wait for its comma in the next chunk."""
    end = len(window)
    for _ in range(8):
        i = window.rfind("]", 0, end)
        if i < 0:
            return None
        comma = _COMMA.match(window, i + 1)
        if comma is not None:
            return i + 1, comma.end()
        end = i
    return None


def _rest_of(window: str, chunks: Iterator[str]) -> str | None:
    """``window`` and the chunks left, joined, or None past :data:`_SPAN_LIMIT` characters."""
    parts, size = [window], len(window)
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size > _SPAN_LIMIT:
            return None
    return "".join(parts)


def _fields_after(tail: str) -> dict[str, Any] | None:
    """The top-level fields after the table, from the text after its ``}``: ``{}`` when the
    file ends there (JSON's whitespace aside), None when the text is not the rest of an object
    (the parse raises ValueError for most of those, as the whole read does)."""
    if _OBJECT_END.fullmatch(tail):
        return {}
    comma = _COMMA.match(tail)
    if comma is None:
        return None
    fields = parse_json("{" + tail[comma.end() :])
    return fields if fields and isinstance(fields, dict) else None  # {}: "..., }"


def _filled(tree: CompiledTree, probs: np.ndarray, given: np.ndarray, rows: dict[str, Any]) -> bool:
    """Put a run of rows into ``probs`` and mark them in ``given``, as
    :meth:`~nashzoo.agents.TabularPolicy.from_dict` converts a file's table (one conversion
    for all its numbers, so every float has the same bits); False, leaving the rest of the
    reading to the whole read, for any run that it would refuse or convert otherwise: a row
    that is not a list of ``num_actions`` ints and floats, a key the game does not have, a key
    given in an earlier run, an integer too large for a float."""
    values = list(rows.values())
    if not lists_of_numbers(values) or not set(map(len, values)) <= {tree.num_actions}:
        return False
    index = tree.infoset_index
    if not rows.keys() <= index.keys():
        return False
    indices = np.fromiter(map(index.__getitem__, rows), dtype=np.int64, count=len(rows))
    if given[indices].any():
        return False
    try:
        whole = np.array(values, dtype=np.float64).reshape(len(values), tree.num_actions)
    except OverflowError:
        return False
    probs[indices] = whole
    given[indices] = True
    return True


def lists_of_numbers(rows: Iterable[Any]) -> bool:
    """Whether every row is a list of ints and floats (no bools, strings or None), asked of
    all the numbers at once: a policy file's millions of numbers are looked at in C, not one
    Python call each (the per-row check took half of loading a policy of Liar's dice)."""
    rows = list(rows)
    return set(map(type, rows)) <= {list} and set(
        map(type, itertools.chain.from_iterable(rows))
    ) <= {int, float}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
