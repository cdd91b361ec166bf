"""What a race keeps in its folder and reads back: each finished run's ``result.json``
(checksummed, checked field by field before a resume trusts it), ``race_config.json`` and the
long-form rows of ``results.csv``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nashzoo.games.base import one_line
from nashzoo.io import (
    read_json,
)
from nashzoo.io.fields import FileFormatError, field, number
from nashzoo.train.race.config import RaceConfig, RaceJob


def _digest(payload: dict[str, Any]) -> str:
    """The checksum a run's ``result.json`` carries: SHA-256 of its other fields (canonical
    JSON), so an edited or damaged result is never taken for a finished run."""
    body = {k: v for k, v in payload.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _stored(out: str | os.PathLike[str], job: RaceJob) -> tuple[dict[str, Any] | None, str]:
    """The valid stored result in ``job``'s folder (of whatever job ran there), or ``None`` and
    why not (``""``: there is none)."""
    path = Path(out) / "runs" / job.run_id / "result.json"
    if not path.exists():
        return None, ""
    try:
        payload = read_json(path, "run result")
        _check_result(payload, str(path))
    except FileFormatError as err:
        return None, str(err)
    return payload, ""


def _check_result(payload: Any, where: str) -> None:
    """A finished run's result: its checksum, then every field the reports read."""
    if not isinstance(payload, dict) or payload.get("status") != "ok":
        raise FileFormatError(f"{where} is not the result of a finished run")
    if payload.get("checksum") != _digest(payload):
        raise FileFormatError(f"{where}: its checksum does not match its contents (edited?)")
    field(payload, "run_id", str, where)
    field(payload, "job", dict, where)
    if payload.get("mode") not in ("self", "cross"):
        raise FileFormatError(f"{where}: field 'mode' must be 'self' or 'cross'")
    number(payload, "iterations", where, integer=True, minimum=0)
    number(payload, "train_seconds", where, minimum=0)
    _check_placement(payload, where)
    history = field(payload, "history", list, where)
    if not history:
        raise FileFormatError(f"{where}: field 'history' is empty")
    for k, row in enumerate(history):
        at = f"{where}: history[{k}]"
        if not isinstance(row, dict):
            raise FileFormatError(f"{at} must be a mapping")
        number(row, "iteration", at, integer=True, minimum=0)
        for key in ("train_seconds", "nash_conv", "exploitability"):
            number(row, key, at)
        for p in range(2):
            for key in ("iterations", "nodes_touched", "env_steps"):
                number(row, f"seat{p}_{key}", at, integer=True, minimum=0)
            for key in (f"seat{p}_value", f"current_value_seat{p}"):
                number(row, key, at)
            number(row, f"seat{p}_exploitability", at, optional=True)


def _check_placement(payload: dict[str, Any], where: str) -> None:
    """How the run went beside others, which the report's budget line reads: two counts of at
    least one, or nothing (a run on Ray, or written before runs recorded it)."""
    placement = field(payload, "placement", dict, where, optional=True)
    if placement is not None:
        for key in ("runs_at_a_time", "usable_cpus"):
            number(placement, key, f"{where}: placement", integer=True, minimum=1)


def _job_dict(job: RaceJob) -> dict[str, Any]:
    """``job`` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(job)))


RACE_CONFIG_FILE = "race_config.json"


def stored_race_config(
    out: str | os.PathLike[str], config_file: str | None = None
) -> dict[str, Any] | None:
    """The :class:`RaceConfig` fields of the race last started in ``out`` (``None`` when
    there is none), so ``--resume`` can finish that race without repeating its options; every
    field is checked as :class:`RaceConfig` checks it (the error names the file).
    ``config_file``: a ``--config`` typed with the resume, checked in place of the stored one
    (which may have moved)."""
    path = Path(out) / RACE_CONFIG_FILE
    if not path.exists():
        return None
    stored = read_json(path, "race config")
    if not isinstance(stored, dict):
        raise FileFormatError(f"{path} is not a race config; remove it or start with --force")
    fields = {f.name for f in dataclasses.fields(RaceConfig)} - {"resume", "force"}
    config = {k: v for k, v in stored.items() if k in fields}
    for key in ("learners", "thresholds", "plugins", "sets"):
        if isinstance(config.get(key), list):
            config[key] = tuple(config[key])
    _check_config_file_there(config if config_file is None else {}, path, out)
    try:
        RaceConfig(**{**config, **({} if config_file is None else {"config_file": config_file})})
    except ImportError as err:
        plugins = ",".join(config.get("plugins") or ())
        if not plugins:  # an extra this machine lacks, say
            raise FileFormatError(f"{path}: {err}; fix it or start over with --force") from None
        raise ImportError(
            f"the race in {out} was started with --plugin {plugins}: {err}; resume it from the "
            "folder it was started in, or where that module can be imported"
        ) from None
    except (ValueError, TypeError) as err:
        raise FileFormatError(f"{path}: {err}; fix it or start over with --force") from None
    return config


def _check_config_file_there(config: dict[str, Any], path: Path, out: Any) -> None:
    """A stored race whose ``--config`` file is gone: the error says how to resume it (the
    file's new place typed with ``--resume``) instead of only that the file is missing."""
    file = config.get("config_file")
    if isinstance(file, str) and not Path(file).is_file():
        raise FileFormatError(
            f"{path}: the race's --config file {one_line(file)} is not there; give its new "
            f"place: nashzoo race --out {shlex.quote(str(out))} --resume --config FILE "
            "(or start over with --force)"
        )


def _rows(results: Sequence[dict[str, Any]], game: str) -> list[dict[str, Any]]:
    """Long-form rows: one per run, evaluation point and seat. ``game`` is what the ``game``
    column holds: the game's id, shortened when long (:func:`nashzoo.games.display_id`), as
    every row repeats it (a 200x300 matrix game's id is 1.2 MB)."""
    rows = []
    for res in results:
        job = res["job"]
        learners = job["learners"]
        for k, point in enumerate(res["history"]):
            seat_exploit = [point.get(f"seat{p}_exploitability") for p in range(2)]
            total = sum(
                int(point[f"seat{p}_nodes_touched"]) + int(point[f"seat{p}_env_steps"])
                for p in range(2)
            )
            for seat in range(2):
                rows.append(
                    {
                        "game": game,
                        "run_id": res["run_id"],
                        "mode": res["mode"],
                        "learner_seat0": learners[0],
                        "learner_seat1": learners[1],
                        "seat": seat,
                        "learner": learners[seat],
                        "opponent": learners[1 - seat],
                        "algorithm": (job.get("algorithms") or learners)[seat],
                        "config": json.dumps(res.get("configs", [{}, {}])[seat], sort_keys=True),
                        "seed": job["seed"],
                        "checkpoint": k,
                        "iteration": point["iteration"],
                        "wall_seconds": point["train_seconds"],
                        "iterations": point[f"seat{seat}_iterations"],
                        "nodes_touched": point[f"seat{seat}_nodes_touched"],
                        "env_steps": point[f"seat{seat}_env_steps"],
                        "total_work": total,
                        "nash_conv": point["nash_conv"],
                        "exploitability": point["exploitability"],
                        "seat_exploitability": seat_exploit[seat],
                        "seat_exploitability_seat0": seat_exploit[0],
                        "seat_exploitability_seat1": seat_exploit[1],
                        "value": point[f"seat{seat}_value"],
                        "current_value": point[f"current_value_seat{seat}"],
                        "current_value_seat0": point["current_value_seat0"],
                        "current_value_seat1": point["current_value_seat1"],
                    }
                )
    return rows
