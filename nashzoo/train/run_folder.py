"""A training run's folder (``nashzoo train`` / ``duel --out``): starting, resuming, finishing.

The folder holds ``train_config.json`` (what the run is: game, learners and their settings,
seed, evaluation points, budgets, checkpointing; written before any work, so a run killed before
its first checkpoint is started over as it was started), ``checkpoint.npz`` (written every
``checkpoint_every`` iterations and at the end), then ``average_policy.json``, ``history.csv``
and ``result.json``. The rules that keep a run from being lost or silently changed:

* the folder is validated (a folder, writable) before any work, and locked while a run writes
  it (:func:`~nashzoo.io.folder_lock`);
* a folder that already holds a run is refused unless the run is resumed (``resume``) or
  replaced (``force``);
* budgets are TOTALS: a resumed run ends where the uninterrupted one would have; a larger budget
  trains further;
* on resume, the options that define the run (game, learners, seed, evaluation points, the
  ``--plugin`` modules) come from the folder: typing them again is allowed, typing other values
  is refused with the difference named. The stored plugins are imported before anything reads
  the run, as a race's are (:func:`~nashzoo.agents.registry.stored_plugins`). Budgets and
  ``checkpoint_every`` typed on resume replace the stored ones.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nashzoo.agents.registry import import_plugins, same_plugins, stored_plugins
from nashzoo.games import load_game
from nashzoo.io import FileFormatError, atomic_write_bytes, read_json
from nashzoo.io.fields import (
    check_format,
    field,
    newer_writer_note,
    number,
    string_list,
    version_stamp,
)
from nashzoo.io.folder_kinds import refuse_other_kinds
from nashzoo.train.loggers import logger_kinds, remove_logger_output
from nashzoo.train.trainer import Trainer

RUN_FORMAT = "nashzoo.TrainRun/1"
CONFIG_FILE = "train_config.json"
CHECKPOINT_FILE = "checkpoint.npz"
OUTPUT_FILES = ("average_policy.json", "history.csv", "result.json")
RUN_FILES = (CONFIG_FILE, CHECKPOINT_FILE, *OUTPUT_FILES)
IDENTITY = ("plugins", "game", "learners", "settings", "seed", "eval_every")
"""The fields that define a run (a resume may not change them; the learners' settings are
compared only where some are typed: a learner typed by its name alone keeps the run's)."""
_OPTION_NAMES = {
    "game": "--game",
    "learners": "the learners",
    "settings": "the learners' settings",
    "seed": "--seed",
    "eval_every": "--eval-every",
    "plugins": "--plugin",
}


class RunFolderError(FileFormatError):
    """A run folder that cannot be used as asked (the message says why and what to do)."""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What a training run is; budgets are totals.

    Attributes:
        game: the game as typed (``"kuhn_poker"``, ``"matrix:rps"``).
        learners: learner name per seat.
        seed: trainer seed.
        eval_every: ``"log"``, ``"none"`` or a positive integer (as text).
        iterations, seconds, work: total budgets (at least one).
        checkpoint_every: iterations between checkpoints (``None``: only at the end).
        settings: each seat's config fields set at the start (``--config``, ``--set``,
            ``NAME(FIELD=VALUE)``; the rest are defaults). A checkpoint holds them too; these
            are what a run resumed before its first checkpoint starts over with (a resume
            with ``--device`` stores that device in them, once it is known to go on).
        plugins: the modules the run was started with (``nashzoo --plugin MODULE``), which
            register its learners or game; a resume imports them. ``None``: not recorded (a
            run folder of a nashzoo from before they were stored).
        loggers: the trackers the run logs to (``--logger``; :mod:`nashzoo.train.loggers`), which
            a resume keeps unless ``--logger`` is typed again (then those replace them).
    """

    game: str
    learners: tuple[str, str]
    seed: int = 0
    eval_every: str = "log"
    iterations: int | None = None
    seconds: float | None = None
    work: int | None = None
    checkpoint_every: int | None = None
    settings: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    plugins: tuple[str, ...] | None = ()
    loggers: tuple[str, ...] = ()

    def budget_text(self) -> str:
        parts = []
        if self.iterations is not None:
            parts.append(f"{self.iterations} iterations")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s of training")
        if self.work is not None:
            parts.append(f"{self.work} work")
        return " or ".join(parts) + " in total"

    def remaining(self, trainer: Trainer) -> dict[str, Any]:
        """The budgets left for ``trainer`` (``iterations=0`` when any is used up)."""
        left: dict[str, Any] = {}
        if self.iterations is not None:
            left["iterations"] = self.iterations - trainer.iteration
        if self.seconds is not None:
            left["seconds"] = self.seconds - trainer.train_seconds
        if self.work is not None:
            left["work"] = self.work - trainer.work_done()
        if any(value <= 0 for value in left.values()):
            return {"iterations": 0}
        return left

    def write(self, folder: Path) -> None:
        payload: dict[str, Any] = {"format": RUN_FORMAT, **version_stamp()}
        payload.update(dataclasses.asdict(self))
        payload["settings"] = [_plain(seat) for seat in self.settings]
        if self.plugins is None:  # not recorded: a later resume still takes the typed ones
            del payload["plugins"]
        atomic_write_bytes(folder / CONFIG_FILE, json.dumps(payload, indent=1).encode())

    @classmethod
    def read(cls, folder: Path) -> RunConfig | None:
        """The stored config (``None`` when the folder has none); RunFolderError if invalid."""
        path = folder / CONFIG_FILE
        if not path.exists():
            return None
        name = str(path)
        payload = read_json(path, "training run config", RunFolderError)
        refusal = f"{name} is not a nashzoo training run config (format tag)"
        check_format(payload, RUN_FORMAT, name, refusal, RunFolderError)
        learners = string_list(payload, "learners", name, RunFolderError)
        if len(learners) != 2:
            raise RunFolderError(f"{name}: 'learners' needs two names, got {learners}")
        config = cls(
            game=field(payload, "game", str, name, RunFolderError),
            learners=(learners[0], learners[1]),
            seed=number(payload, "seed", name, RunFolderError, integer=True),
            eval_every=field(payload, "eval_every", str, name, RunFolderError),
            iterations=_budget(payload, "iterations", name, integer=True),
            seconds=_budget(payload, "seconds", name, integer=False),
            work=_budget(payload, "work", name, integer=True),
            checkpoint_every=_budget(payload, "checkpoint_every", name, integer=True),
            settings=_settings(payload, name),
            plugins=_plugins(payload, name),
            loggers=_loggers(payload, name),
        )
        if config.iterations is None and config.seconds is None and config.work is None:
            raise RunFolderError(f"{name}: no budget (iterations, seconds or work) is stored")
        return config


def _settings(payload: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stored per-seat settings: two objects of field names (none in files written before
    they were stored: defaults)."""
    settings = payload.get("settings", [{}, {}])
    if (
        not isinstance(settings, list)
        or len(settings) != 2
        or not all(isinstance(s, dict) and all(isinstance(k, str) for k in s) for s in settings)
    ):
        raise RunFolderError(
            f"{name}: field 'settings' must be two objects of config fields, got {settings!r}"
        )
    return settings[0], settings[1]


def _plugins(payload: dict[str, Any], name: str) -> tuple[str, ...] | None:
    """The stored ``--plugin`` modules (``None`` in files written before they were stored)."""
    if "plugins" not in payload:
        return None
    try:
        return stored_plugins(payload["plugins"], name)
    except ValueError as err:
        text = str(err)
        raise RunFolderError(text if text.startswith(name) else f"{name}: {text}") from None


def _loggers(payload: dict[str, Any], name: str) -> tuple[str, ...]:
    """The stored ``--logger`` kinds (none in files written before they were stored)."""
    if "loggers" not in payload:
        return ()
    try:
        return logger_kinds(string_list(payload, "loggers", name, RunFolderError))
    except RunFolderError:
        raise
    except ValueError as err:  # a logger of a newer nashzoo, maybe
        note = newer_writer_note(payload)
        raise RunFolderError(f"{name}: field 'loggers': {err}{note}") from None


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists and numpy scalars as numbers (JSON)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") and not isinstance(value, str) else value


def _budget(payload: dict[str, Any], key: str, name: str, *, integer: bool) -> Any:
    value = number(payload, key, name, RunFolderError, integer=integer, optional=True)
    if value is not None and value <= 0:
        raise RunFolderError(f"{name}: field {key!r} must be positive, got {value}")
    return value


def existing_run_files(folder: Path) -> list[str]:
    """The run files already in ``folder``."""
    return [name for name in RUN_FILES if (folder / name).exists()]


def start(folder: Path, config: RunConfig, *, force: bool) -> None:
    """Begin a new run in ``folder`` (held locked by the caller): refuse to overwrite an existing
    run unless ``force`` (then its files are removed), and store ``config``. A folder that
    holds a race or a tournament is refused even then: the kinds of output would be mixed."""
    refuse_other_kinds(folder, "training run", RunFolderError)
    existing = existing_run_files(folder)
    if existing and not force:
        raise RunFolderError(
            f"{folder} already holds a run ({', '.join(existing)}); continue it with --resume, "
            "replace it with --force, or choose another --out"
        )
    for name in existing:
        (folder / name).unlink()
    if force:  # the replaced run's logger output too: a new run must not be merged into it
        remove_logger_output(folder)
    config.write(folder)


def resume(folder: Path, typed: dict[str, Any]) -> RunConfig:
    """The config to continue the run in ``folder`` with, given the options typed now (only the
    ones the user typed): identity options must match the stored ones, budgets and
    ``checkpoint_every`` replace them. The merged config is not stored here: the caller stores
    it once the run's checkpoint has been read (a damaged one must leave the folder as it was,
    the stored budget included)."""
    stored = RunConfig.read(folder)
    if stored is None:
        raise RunFolderError(
            f"no run to resume in {folder} (no {CONFIG_FILE}, which nashzoo train writes before "
            "it starts); start the run without --resume"
        )
    if stored.plugins is None:  # a folder from before plugins were stored: take the typed ones
        stored = dataclasses.replace(stored, plugins=tuple(typed.get("plugins", ())))
    _refuse_changes(folder, typed, stored, ["plugins"])
    _import_stored_plugins(folder, stored.plugins)  # the stored game and learners may be theirs
    _refuse_changes(folder, typed, stored, [key for key in IDENTITY if key != "plugins"])
    changes: dict[str, Any] = {
        k: typed[k]
        for k in ("iterations", "seconds", "work", "checkpoint_every", "loggers")
        if k in typed
    }
    if any(k in changes for k in ("iterations", "seconds", "work")):
        changes = {"iterations": None, "seconds": None, "work": None, **changes}
    return dataclasses.replace(stored, **changes)


def _refuse_changes(
    folder: Path, typed: dict[str, Any], stored: RunConfig, keys: list[str]
) -> None:
    """Refuse options typed with ``--resume`` (among ``keys``) that differ from the run's."""
    differences = [
        f"{_OPTION_NAMES[key]} {_show(key, typed[key], stored.learners)} (the run has "
        f"{_show(key, getattr(stored, key), stored.learners)})"
        for key in keys
        if key in typed and not _same(key, typed[key], getattr(stored, key))
    ]
    if differences:
        raise RunFolderError(
            f"--resume continues the run in {folder} as it was started, but you typed "
            + "; ".join(differences)
            + ": leave these options out, or start a new run (--force or another --out)"
        )


def _import_stored_plugins(folder: Path, plugins: Any) -> None:
    """Import the modules the run in ``folder`` was started with (``--plugin``), naming the
    run when one cannot be imported."""
    try:
        import_plugins(plugins or ())
    except ImportError as err:
        raise ImportError(
            f"the run in {folder} was started with --plugin {','.join(plugins)}: {err}; or "
            "resume it from the folder it was started in"
        ) from None


def _same(key: str, typed: Any, stored: Any) -> bool:
    if key == "game":
        return load_game(typed).id == load_game(stored).id
    if key == "plugins":  # the same modules, in any order (the stored order is imported)
        return same_plugins(typed, stored or ())
    if key == "learners":
        return tuple(typed) == tuple(stored or ())
    if key == "settings":
        return bool(_plain(list(typed)) == _plain(list(stored)))
    return typed == stored


def _show(key: str, value: Any, learners: Sequence[str] = ("", "")) -> str:
    if key == "learners":
        return " vs ".join(value)
    if key == "settings":  # as NAME(FIELD=VALUE) types them
        return " vs ".join(
            name + (f"({', '.join(f'{k}={v!r}' for k, v in _plain(seat).items())})" if seat else "")
            for name, seat in zip(learners, value, strict=True)
        )
    if key == "plugins":
        return ",".join(value) if value else "no --plugin"
    return str(value)


def check_checkpoint(trainer: Trainer, config: RunConfig, folder: Path) -> None:
    """Refuse a checkpoint that is not the run its folder's config describes."""
    found = (trainer.game.id, tuple(lr.name for lr in trainer.learners), trainer.seed)
    wanted = (load_game(config.game).id, tuple(config.learners), config.seed)
    if found != wanted:
        raise RunFolderError(
            f"{folder / CHECKPOINT_FILE} holds {found[1][0]} vs {found[1][1]} on {found[0]} "
            f"with seed {found[2]}, but {folder / CONFIG_FILE} describes {wanted[1][0]} vs "
            f"{wanted[1][1]} on {wanted[0]} with seed {wanted[2]}; the folder was mixed up"
        )
