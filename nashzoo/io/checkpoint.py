"""Checkpoint file formats: one learner (``nashzoo.Learner/1``) and a trainer
(``nashzoo.Trainer/1``: the trainer state plus one learner checkpoint per seat).

Both are ``.npz`` archives read with ``allow_pickle=False`` (a crafted file cannot run code).
The readers validate everything before anyone uses it: the metadata's fields (type, range), the
game it rebuilds, and, through :func:`check_arrays`, the state arrays' names, shapes, dtypes,
finiteness and signs; any problem is a :class:`CheckpointError` naming the file and the field.
Learners declare what their arrays must look like with :class:`ArraySpec`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from nashzoo.games import Game
from nashzoo.io.fields import (
    FileFormatError,
    cause,
    check_format,
    field,
    game_of,
    number,
    parse_json,
    string_list,
)

LEARNER_FORMAT = "nashzoo.Learner/1"
TRAINER_FORMAT = "nashzoo.Trainer/1"
META_KEY = "__meta__"
TRAINER_KEY = "__trainer__"
"""The entry of a trainer checkpoint ``.npz`` that holds the trainer state (JSON)."""
WORK_KEYS = ("iterations", "nodes_touched", "env_steps")


class CheckpointError(FileFormatError):
    """A checkpoint that cannot be loaded: corrupt, or for another learner or game."""


# --- state arrays -------------------------------------------------------------------------------
ArrayKind = Literal["real", "integer", "bool", "blob", "text"]
_DTYPE_KINDS: dict[str, str] = {"real": "iuf", "integer": "iu", "bool": "b", "text": "U"}
_CAST: dict[str, Any] = {"integer": np.int64, "bool": np.bool_}


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """What one stored state array must be.

    Attributes:
        shape: the exact shape; ``None`` in a dimension allows any length there (buffers that
            fill up), ``shape=None`` any shape at all.
        kind: ``"real"`` (finite numbers, loaded as ``dtype``), ``"integer"`` (``int64``),
            ``"bool"``, ``"blob"`` (a 1-D ``uint8`` byte string: a serialised network) or
            ``"text"`` (a string, e.g. JSON).
        nonnegative: every entry ``>= 0`` (average-strategy sums, counters).
        support: boolean mask of ``shape``; entries outside it must be exactly zero (e.g. the
            opponent's information sets, illegal actions).
        dtype: the float type a ``"real"`` array is loaded as, whatever the file holds:
            ``float64`` (default: the tabular learners' tables, which a file shrunk to float32
            would otherwise have carried on in float32, and whose kernels refuse float16 or
            longdouble deep inside), or a replay buffer's own ``float32``.
    """

    shape: tuple[int | None, ...] | None = None
    kind: ArrayKind = "real"
    nonnegative: bool = False
    support: np.ndarray | None = None
    dtype: Any = np.float64

    @classmethod
    def blob(cls) -> ArraySpec:
        """A byte string of any length."""
        return cls((None,), "blob")

    @classmethod
    def of(cls, shape: tuple[int | None, ...], dtype: Any) -> ArraySpec:
        """The spec of an array with ``dtype`` (bool, integer or real) and ``shape``."""
        kind = np.dtype(dtype).kind
        if kind == "f":
            return cls(shape, "real", dtype=np.dtype(dtype).type)
        return cls(shape, "bool" if kind == "b" else "integer" if kind in "iu" else "real")


def check_arrays(
    arrays: Mapping[str, np.ndarray], specs: Mapping[str, ArraySpec], source: str
) -> dict[str, np.ndarray]:
    """``arrays`` checked against ``specs`` (exactly those names), as writable copies of the
    spec's kind. CheckpointError names the first problem."""
    missing = sorted(set(specs) - set(arrays))
    extra = sorted(set(arrays) - set(specs))
    if missing or extra:
        raise CheckpointError(
            f"{source}: expected the arrays {sorted(specs)}, found {sorted(arrays)}"
            + (f" (missing {missing})" if missing else "")
            + (f" (unexpected {extra})" if extra else "")
        )
    return {
        name: _check_array(np.asarray(arrays[name]), spec, f"{source}: array {name!r}")
        for name, spec in specs.items()
    }


def _check_array(value: np.ndarray, spec: ArraySpec, where: str) -> np.ndarray:
    if spec.kind == "blob":
        ok = value.dtype == np.uint8
    else:
        ok = value.dtype.kind in _DTYPE_KINDS[spec.kind]
    if not ok:
        raise CheckpointError(f"{where} must hold {spec.kind} values, got dtype {value.dtype}")
    if spec.shape is not None and (
        value.ndim != len(spec.shape)
        or any(
            want is not None and got != want
            for got, want in zip(value.shape, spec.shape, strict=True)
        )
    ):
        wanted = tuple("any" if n is None else n for n in spec.shape)
        raise CheckpointError(f"{where} has shape {value.shape}, expected {wanted}")
    load_as = spec.dtype if spec.kind == "real" else _CAST.get(spec.kind)
    with np.errstate(over="ignore"):  # a value past the type's range becomes inf: refused below
        out = np.array(value, dtype=load_as, copy=True)
    if spec.kind == "real":
        bad = ~np.isfinite(out)
        if bad.any():
            raise CheckpointError(
                f"{where} holds {int(bad.sum())} non-finite value(s) (NaN or infinity), first "
                f"at index {_first(bad)}; the file is corrupt"
            )
    if spec.nonnegative and (out < 0).any():
        raise CheckpointError(
            f"{where} must be non-negative but holds {out.min():g} at index {_first(out < 0)}; "
            "the file is corrupt"
        )
    if spec.support is not None and (out[~spec.support] != 0).any():
        raise CheckpointError(
            f"{where} is non-zero where it must be zero (another seat's information sets or an "
            f"illegal action), first at index {_first((out != 0) & ~spec.support)}"
        )
    return out


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


# --- learner checkpoints ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LearnerCheckpoint:
    """A validated learner checkpoint: its metadata (fields checked), game and raw arrays."""

    meta: dict[str, Any]
    game: Game
    arrays: dict[str, np.ndarray]

    @property
    def learner(self) -> str:
        """The registry name of the learner that wrote the checkpoint."""
        return self.meta["learner"]


def learner_checkpoint_bytes(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """A learner checkpoint file's contents (the metadata must carry ``format``)."""
    buffer = io.BytesIO()
    write_learner_checkpoint(buffer, meta, arrays)
    return buffer.getvalue()


def write_learner_checkpoint(
    handle: BinaryIO, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> None:
    """Write a learner checkpoint (:func:`learner_checkpoint_bytes`) to an open binary file:
    into :func:`~nashzoo.io.atomic.atomic_file`, the file is never held whole in memory."""
    if META_KEY in arrays:
        raise ValueError(f"a learner's state array may not be named {META_KEY!r} (the metadata's)")
    named: dict[str, Any] = {META_KEY: np.array(json.dumps(meta)), **arrays}
    np.savez(handle, **named)


def _npz(source: str | os.PathLike[str] | bytes, name: str) -> dict[str, np.ndarray]:
    """Every entry of an ``.npz`` file or byte string; CheckpointError when unreadable."""
    try:
        data = np.load(
            io.BytesIO(source) if isinstance(source, bytes) else Path(source), allow_pickle=False
        )
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise CheckpointError(f"{name} holds a single .npy array, not a nashzoo checkpoint")
        with data:
            return {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {name}") from None
    except CheckpointError:
        raise
    except Exception as err:  # zip, npy and decompression errors all mean "corrupt"
        raise CheckpointError(
            f"{name} is not a readable nashzoo checkpoint ({cause(err)}); "
            "it may be truncated or from another program"
        ) from None


def _json_entry(entries: dict[str, np.ndarray], key: str, name: str) -> dict[str, Any]:
    raw = entries.pop(key)
    if raw.dtype.kind not in "US" or raw.shape != ():
        raise CheckpointError(f"{name}: entry {key!r} must be a JSON string")
    try:
        value = parse_json(str(raw))
    except (ValueError, RecursionError) as err:
        raise CheckpointError(f"{name}: entry {key!r} is not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{name}: entry {key!r} must be a JSON object")
    return value


def read_learner_checkpoint(
    source: str | os.PathLike[str] | bytes, name: str | None = None
) -> LearnerCheckpoint:
    """Read and validate a learner checkpoint (a path, or the bytes of one)."""
    name = name or str(source)
    entries = _npz(source, name)
    if META_KEY not in entries:
        hint = (
            "; it is a trainer checkpoint (load it with nashzoo.train.Trainer.load)"
            if TRAINER_KEY in entries
            else "; a checkpoint cut short can read like this (a zip inside it, such as a "
            "Stable-Baselines3 model, is found in place of the whole)"
        )
        raise CheckpointError(f"{name} is not a nashzoo learner checkpoint (no metadata){hint}")
    meta = _json_entry(entries, META_KEY, name)
    refusal = f"{name} is not a nashzoo learner checkpoint (format tag)"
    check_format(meta, LEARNER_FORMAT, name, refusal, CheckpointError)
    learner = field(meta, "learner", str, name, CheckpointError)
    if not learner:
        raise CheckpointError(f"{name}: field 'learner' is empty")
    game = game_of(meta, name, CheckpointError)
    seat = number(meta, "seat", name, CheckpointError, integer=True, minimum=0)
    if seat >= game.num_players:
        raise CheckpointError(f"{name}: seat {seat} does not exist in {game.display_id}")
    number(meta, "seed", name, CheckpointError, integer=True)
    field(meta, "config", dict, name, CheckpointError)
    field(meta, "rng_state", dict, name, CheckpointError)
    work = field(meta, "work", dict, name, CheckpointError)
    for key in WORK_KEYS:
        number(work, key, f"{name}: work", CheckpointError, integer=True, minimum=0)
    return LearnerCheckpoint(meta, game, entries)


# --- trainer checkpoints ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TrainerCheckpoint:
    """A validated trainer checkpoint: the trainer state and one learner checkpoint per seat."""

    state: dict[str, Any]
    game: Game
    seats: tuple[LearnerCheckpoint, ...]


def trainer_checkpoint_bytes(state: Mapping[str, Any], seat_files: Sequence[bytes]) -> bytes:
    """A trainer checkpoint file's contents: ``state`` and each seat's learner checkpoint."""
    buffer = io.BytesIO()
    write_trainer_checkpoint(buffer, state, seat_files)
    return buffer.getvalue()


SeatFile = bytes | bytearray | memoryview | np.ndarray | BinaryIO
"""A seat's learner checkpoint: its bytes (or any bytes-like object), or a binary file holding
it (read from where it stands to its end)."""


def write_trainer_checkpoint(
    handle: BinaryIO, state: Mapping[str, Any], seat_files: Iterable[SeatFile]
) -> None:
    """Write a trainer checkpoint (:func:`trainer_checkpoint_bytes`) to an open binary file:
    into :func:`~nashzoo.io.atomic.atomic_file`, the file is never held whole in memory (a
    trainer's 1.4 GB checkpoint took another 2.8 GB as bytes), nor is a seat given as a file
    (copied across 16 MB at a time). The seats are taken one at a time, in order, each when
    the one before is written: a generator can make each seat's file just then, and drop it.

    The layout is ``np.savez``'s, which the reader loads: an uncompressed zip of ``.npy``
    entries, the state as a string array and each seat's file as a ``uint8`` array."""
    with zipfile.ZipFile(handle, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        with zf.open(f"{TRAINER_KEY}.npy", "w", force_zip64=True) as entry:
            np.lib.format.write_array(entry, np.array(json.dumps(state)), allow_pickle=False)
        for p, data in enumerate(seat_files):
            source = _readable(data)
            start = source.tell()
            size = source.seek(0, os.SEEK_END) - start
            source.seek(start)
            header = {"descr": "|u1", "fortran_order": False, "shape": (size,)}
            with zf.open(f"seat{p}.npy", "w", force_zip64=True) as entry:
                np.lib.format.write_array_header_1_0(entry, header)
                shutil.copyfileobj(source, entry, _COPY_CHUNK)


_COPY_CHUNK = 16 << 20


def _readable(data: SeatFile) -> BinaryIO:
    """A seat's checkpoint as a file to read: a file as it is, bytes without a copy, any other
    bytes-like object (a plugin's ``checkpoint_bytes`` may return a memoryview or an array)
    as its bytes."""
    if isinstance(data, bytes):
        return io.BytesIO(data)
    if isinstance(data, (bytearray, memoryview)):
        return io.BytesIO(bytes(data))
    if isinstance(data, np.ndarray):
        return io.BytesIO(data.tobytes())
    return data


def is_trainer_checkpoint(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is an ``.npz`` holding a trainer state (CheckpointError if corrupt)."""
    return TRAINER_KEY in _npz(path, str(path))


def read_trainer_checkpoint(path: str | os.PathLike[str]) -> TrainerCheckpoint:
    """Read and validate a trainer checkpoint: its state's fields, its game, and both seats'
    learner checkpoints (each for its own seat, of the same game, named as the state says)."""
    name = str(path)
    entries = _npz(path, name)
    if TRAINER_KEY not in entries:
        raise CheckpointError(
            f"{name} is not a nashzoo Trainer checkpoint (no trainer state); a single "
            "learner's checkpoint loads with nashzoo.agents.load_learner"
        )
    state = _json_entry(entries, TRAINER_KEY, name)
    refusal = f"{name} is not a nashzoo Trainer checkpoint (format tag)"
    check_format(state, TRAINER_FORMAT, name, refusal, CheckpointError)
    game = game_of(state, name, CheckpointError)
    names = string_list(state, "learners", name, CheckpointError)
    if len(names) != game.num_players:
        raise CheckpointError(f"{name}: 'learners' needs one name per seat, got {names}")
    number(state, "seed", name, CheckpointError, integer=True)
    field(state, "schedule", str, name, CheckpointError)
    field(state, "eval_schedule", dict, name, CheckpointError)
    for key in ("evaluate_seats", "final_eval"):
        field(state, key, bool, name, CheckpointError)
    number(state, "iteration", name, CheckpointError, integer=True, minimum=0)
    for key in ("train_seconds", "eval_seconds", "last_eval_train_seconds"):
        number(state, key, name, CheckpointError, minimum=0)
    history = field(state, "history", list, name, CheckpointError)
    for k, row in enumerate(history):
        _check_record(row, f"{name}: history[{k}]")
    seats = []
    for p in range(game.num_players):
        key = f"seat{p}"
        if key not in entries:
            raise CheckpointError(f"{name}: the checkpoint of seat {p} is missing")
        blob = entries[key]
        if blob.dtype != np.uint8 or blob.ndim != 1:
            raise CheckpointError(f"{name}: entry {key!r} must be a 1-D uint8 byte string")
        seat = read_learner_checkpoint(blob.tobytes(), f"{name}, seat {p}")
        if seat.meta["seat"] != p or seat.game.id != game.id or seat.learner != names[p]:
            raise CheckpointError(
                f"{name}: the trainer state names learners {names} on {game.display_id}, but seat "
                f"{p} "
                f"holds {seat.learner!r} for seat {seat.meta['seat']} of {seat.game.display_id}; "
                "the checkpoint was edited or mixed up"
            )
        seats.append(seat)
    return TrainerCheckpoint(state, game, tuple(seats))


def _check_record(row: Any, where: str) -> None:
    """One evaluation record: a mapping of numbers (``None`` where a seat was not measured)."""
    if not isinstance(row, dict):
        raise CheckpointError(f"{where} must be a mapping, got {type(row).__name__}")
    number(row, "iteration", where, CheckpointError, integer=True, minimum=0)
    for key in ("train_seconds", "eval_seconds"):
        number(row, key, where, CheckpointError, minimum=0)
    for key in ("nash_conv", "exploitability"):
        number(row, key, where, CheckpointError)
    for key, value in row.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise CheckpointError(f"{where}: field {key!r} must be a number, got {value!r}")
