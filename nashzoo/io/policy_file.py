"""The policy file format (``nashzoo.TabularPolicy/1``): JSON with the game (name, parameters,
action names) and ``{infoset_key: probabilities}``.

:func:`read_policy_file` checks the container (format tag, field types, the game it rebuilds,
its action names, the table's keys and rows being lists of numbers); that the rows are
probability distributions over the game's information sets is checked where the table becomes a
policy (:meth:`nashzoo.agents.TabularPolicy.load`). Errors are
:class:`~nashzoo.games.infoset.PolicyError` naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from nashzoo.games import Game
from nashzoo.games.infoset import PolicyError
from nashzoo.io.atomic import atomic_write_bytes
from nashzoo.io.fields import (
    FileFormatError,
    check_format,
    field,
    game_of,
    read_json,
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
    """Read and validate a file written by :func:`write_policy_file`."""
    name = str(path)
    payload = read_json(path, "policy JSON file", PolicyFileError)
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
    table = field(payload, "policy", dict, name, PolicyFileError)
    if not lists_of_numbers(table.values()):  # row by row only to name the first bad one
        for key, row in table.items():
            if not isinstance(row, list) or not all(_is_number(v) for v in row):
                text = f"{name}: information set {key!r} must map to a list of numbers, got {row!r}"
                raise PolicyFileError(text[:300])
    return PolicyFile(game, table)


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
