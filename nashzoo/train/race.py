"""``nashzoo race``: which learners converge, and how fast? The project's main job.

A race is a set of independent runs (jobs). Each run trains one pair of learners with the
:class:`~nashzoo.train.Trainer` under the same budget (wall-clock seconds of training, and/or
iterations, and/or work) and records the exact exploitability of the joint average policy and
each seat's exploitability at log-spaced points (evaluation time is kept off the clock).

* **Self-play**: the same algorithm on both seats, for every learner and seed. Does it reach
  equilibrium, and how fast?
* **Cross-play** (``cross_play=True``): every ordered pair of different algorithms, so each
  algorithm holds each seat. Which side gets closer to equilibrium, and what does each side
  earn while learning?

Runner: local process pool (``backend="process"``, ``workers`` processes, one run each, so
with ``workers <= cores`` every run gets a core to itself), in-process (``backend="serial"``),
or a Ray cluster (``backend="ray"``, ``address=``). Each finished run is written atomically to
``OUT/runs/<run_id>/`` (``result.json`` last, as the "done" marker), so an interrupted race
keeps every finished run and ``resume=True`` skips them (a ``result.json`` carries a checksum of
its contents; an edited or damaged one is run again). A failing run is recorded with its error
in ``OUT/runs/<run_id>/error.json`` and does not sink the others. ``OUT`` is locked while a race
writes it; one that already holds a race is refused unless resumed or forced (``force=True``
deletes it first). Pool workers exit when the race process dies, even by ``kill -9``.

Outputs in ``OUT``: ``results.csv`` (long form: one row per run, evaluation point and seat),
``summary.json`` and ``summary.md`` (leaderboard, plain-words answers, cross-play matrix),
``exploitability_vs_time.png``, ``exploitability_vs_work.png`` and ``crossplay_heatmap.png``;
per run: the final joint average policy (``average_policy.json``, re-checkable with
``nashzoo eval``) and the trainer checkpoint (``checkpoint.npz``).

Work: a run's work is nodes touched plus env steps summed over both seats (an env step touches
one history), so model-based and model-free learners share one axis.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from nashzoo.agents import import_plugins, learner_class, learning_learner_names
from nashzoo.agents.registry import check_module_name
from nashzoo.eval import expected_returns
from nashzoo.eval.report import (
    DEFAULT_THRESHOLDS,
    cross_play,
    leaderboard,
    markdown_summary,
)
from nashzoo.games import load_game
from nashzoo.io import (
    atomic_write_bytes,
    check_output_folder,
    exit_with_parent,
    folder_lock,
    read_json,
    remove_stale_temp_files,
)
from nashzoo.io.fields import FileFormatError, field, number
from nashzoo.train.callbacks import Callback
from nashzoo.train.loggers import LOGGERS, make_logger
from nashzoo.train.result import EvalRecord, write_csv
from nashzoo.train.schedule import EvalSchedule
from nashzoo.train.settings import LearnerSetting, parse_learner_spec, resolve_settings
from nashzoo.train.trainer import Trainer

BACKENDS = ("process", "serial", "ray")


@dataclasses.dataclass(frozen=True)
class RaceConfig:
    """What to race and how.

    Attributes:
        game: game name (default ``"kuhn_poker"``).
        learners: learner specs: names, or labelled settings such as
            ``"nfsp_small=nfsp(hidden_sizes=[32])"`` (:mod:`nashzoo.train.settings`), so one
            algorithm can race under several configs; ``None`` (default) means every
            registered learner that can play the game and whose optional extra is installed
            (non-learning ``uniform`` and ``fixed`` excluded).
        seeds: number of seeds per pairing (default 3), seeds ``0..seeds-1``.
        budget_seconds: training seconds per run (default 10.0); ``None`` for no time limit.
        budget_iterations: trainer iterations per run (default ``None``).
        budget_work: work per run, nodes touched + env steps over both seats (default ``None``).
        cross_play: also race every ordered pair of different learners (default False).
        self_play: race each learner against itself (default True).
        out: output folder (default ``"runs/race"``).
        workers: parallel runs (default: ``min(cpu cores, runs)``).
        backend: ``"process"`` (default), ``"serial"`` or ``"ray"``.
        address: Ray cluster address (``None``: start a local Ray instance).
        resume: skip runs whose results are already in ``out`` (default False: re-run them).
        thresholds: exploitability levels for the time-to-threshold columns.
        evals_per_decade: log-spaced evaluation points per decade of iterations (default 8).
        plots: write PNG plots (default True; needs matplotlib).
        plugins: modules to import (in this process and in every worker) before the race:
            they register learners defined outside nashzoo (default none).
        force: start over in an ``out`` that already holds a race, deleting its runs (default
            False: such a folder is refused unless ``resume``).
        config_file: a YAML/TOML file of learner settings (``--config``), read when the race
            is planned (and again on ``--resume``: runs whose settings changed are re-run).
        sets: ``LABEL.FIELD=VALUE`` overrides (``--set``), applied last.
        logger: ``"tensorboard"``, ``"wandb"`` (offline) or ``"csv"``: each run also logs its
            metrics in its folder ``out/runs/RUN_ID`` (:mod:`nashzoo.train.loggers`).
    """

    game: str = "kuhn_poker"
    learners: tuple[str, ...] | None = None
    seeds: int = 3
    budget_seconds: float | None = 10.0
    budget_iterations: int | None = None
    budget_work: int | None = None
    cross_play: bool = False
    self_play: bool = True
    out: str = "runs/race"
    workers: int | None = None
    backend: str = "process"
    address: str | None = None
    resume: bool = False
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    evals_per_decade: int = 8
    plots: bool = True
    plugins: tuple[str, ...] = ()
    config_file: str | None = None
    sets: tuple[str, ...] = ()
    logger: str | None = None
    force: bool = False

    def __post_init__(self) -> None:
        self._check_types()
        load_game(self.game)  # raises a ValueError naming the valid games
        import_plugins(self.plugins)
        if (
            self.budget_seconds is None
            and self.budget_iterations is None
            and (self.budget_work is None)
        ):
            raise ValueError("give a budget: budget_seconds, budget_iterations or budget_work")
        if self.logger is not None and self.logger not in LOGGERS:
            raise ValueError(f"logger must be one of {', '.join(LOGGERS)}, got {self.logger!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if not (self.self_play or self.cross_play):
            raise ValueError("nothing to race: enable self_play or cross_play")
        if self.learners is not None:
            labels = [parse_learner_spec(spec)[0] for spec in self.learners]
            twice = sorted({n for n in labels if labels.count(n) > 1})
            if twice:
                raise ValueError(
                    f"learner(s) {twice} listed more than once; list each learner once "
                    "(--seeds sets how many runs each gets; LABEL=NAME(...) races a second "
                    "config)"
                )
        self.learner_settings()  # unknown learners, fields or values: one-line SettingsError
        if self.resume and self.force:
            raise ValueError("resume keeps the race in out and force deletes it: choose one")

    def _check_types(self) -> None:
        """Every field of the right type (a stored race_config.json is checked the same way)."""
        self._check_flags_and_strings()
        self._check_counts()
        self._check_tuples()
        self._check_optional_strings()

    def _check_flags_and_strings(self) -> None:
        flags = ("cross_play", "self_play", "resume", "plots", "force")
        for name in flags:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("game", "backend"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.out, (str, os.PathLike)):
            raise ValueError(f"out must be a folder path, got {self.out!r}")
        if self.address is not None and not isinstance(self.address, str):
            raise ValueError(f"address must be a string, got {self.address!r}")

    def _check_counts(self) -> None:
        for name in ("seeds", "evals_per_decade", "workers", "budget_iterations", "budget_work"):
            value = getattr(self, name)
            if (value is not None or name in ("seeds", "evals_per_decade")) and not (
                isinstance(value, int) and not isinstance(value, bool) and value >= 1
            ):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.budget_seconds is not None and not _positive_number(self.budget_seconds):
            raise ValueError(
                f"budget_seconds must be a positive number, got {self.budget_seconds!r}"
            )

    def _check_tuples(self) -> None:
        for name in ("learners", "thresholds", "plugins", "sets"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                raise ValueError(f"{name} must be a tuple, got {value!r}")
        if self.learners is not None and (
            not self.learners or not all(isinstance(n, str) for n in self.learners)
        ):
            raise ValueError(f"learners must be learner names, got {self.learners!r}")
        if not self.thresholds or not all(_positive_number(t) for t in self.thresholds):
            raise ValueError(f"thresholds must be positive numbers, got {self.thresholds!r}")
        for module in self.plugins:
            check_module_name(module)

    def _check_optional_strings(self) -> None:
        for name in ("config_file", "logger"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r}")
        if not all(isinstance(item, str) for item in self.sets):
            raise ValueError(f"sets must be LEARNER.FIELD=VALUE strings, got {self.sets!r}")

    def learner_settings(self) -> dict[str, LearnerSetting]:
        """Every raced learner's label, algorithm and checked config overrides."""
        names = self.learners
        if names is None:
            names = tuple(learning_learner_names())
        return resolve_settings(names, config_file=self.config_file, sets=self.sets)

    def budget_text(self) -> str:
        parts = []
        if self.budget_seconds is not None:
            parts.append(f"{self.budget_seconds:g} s of training per run")
        if self.budget_iterations is not None:
            parts.append(f"{self.budget_iterations} iterations per run")
        if self.budget_work is not None:
            parts.append(f"{self.budget_work} nodes/env steps per run")
        return ", ".join(parts) + f" (whichever comes first), {self.seeds} seed(s)"


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


@dataclasses.dataclass(frozen=True)
class RaceJob:
    """One run: a learner per seat, a seed and the budget."""

    game: str
    learners: tuple[str, str]
    seed: int
    budget_seconds: float | None
    budget_iterations: int | None
    budget_work: int | None
    evals_per_decade: int = 8
    plugins: tuple[str, ...] = ()
    algorithms: tuple[str, str] | None = None  # per seat; None: the learners' names
    configs: tuple[dict[str, Any], dict[str, Any]] = ({}, {})  # full config per seat
    logger: str | None = None

    @property
    def mode(self) -> str:
        return "self" if self.learners[0] == self.learners[1] else "cross"

    @property
    def run_id(self) -> str:
        a, b = self.learners
        head = f"self-{a}" if a == b else f"cross-{a}-vs-{b}"
        return f"{head}-seed{self.seed}"


def usable_learners(
    game: str, names: Iterable[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Learners that can play ``game``: ``(usable, {skipped name: reason})``."""
    game_obj = load_game(game)
    chosen = learning_learner_names() if names is None else list(names)
    usable, skipped = [], {}
    for name in chosen:
        try:
            learner_class(name).check_game(game_obj)
        except ImportError as err:
            skipped[name] = str(err)
            continue
        except ValueError as err:
            skipped[name] = str(err)
            continue
        usable.append(name)
    return usable, skipped


def plan(config: RaceConfig) -> tuple[list[RaceJob], dict[str, str]]:
    """The jobs of a race and the learners skipped (with the reason)."""
    settings = config.learner_settings()
    algorithms = sorted({s.algorithm for s in settings.values()})
    ok, reasons = usable_learners(config.game, algorithms)
    usable = [label for label, s in settings.items() if s.algorithm in ok]
    skipped = {
        label: reasons[s.algorithm] for label, s in settings.items() if s.algorithm in reasons
    }
    full = {label: settings[label].full_config() for label in usable}
    pairs: list[tuple[str, str]] = []
    if config.self_play:
        pairs += [(a, a) for a in usable]
    if config.cross_play:
        pairs += [(a, b) for a in usable for b in usable if a != b]
    jobs = [
        RaceJob(
            config.game,
            pair,
            seed,
            config.budget_seconds,
            config.budget_iterations,
            config.budget_work,
            config.evals_per_decade,
            tuple(config.plugins),
            (settings[pair[0]].algorithm, settings[pair[1]].algorithm),
            (full[pair[0]], full[pair[1]]),
            config.logger,
        )
        for pair in pairs
        for seed in range(config.seeds)
    ]
    return jobs, skipped


class _RaceRecorder(Callback):
    """Records the exact payoff of the CURRENT policies at each evaluation (what each side
    earns while learning)."""

    def __init__(self) -> None:
        self.current_values: list[tuple[float, ...]] = []

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        policies = [lr.current_policy() for lr in trainer.learners]
        values = expected_returns(trainer.game, policies)
        self.current_values.append(tuple(float(v) for v in values))
        return None


def _limit_threads() -> None:
    """One thread per run: runs are the unit of parallelism."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def run_job(job: RaceJob, out: str) -> dict[str, Any]:
    """Run one job and write its files; never raises for a failing learner (the error is
    recorded in ``error.json`` and returned)."""
    _limit_threads()
    folder = Path(out) / "runs" / job.run_id
    folder.mkdir(parents=True, exist_ok=True)
    for stale in ("result.json", "error.json"):
        (folder / stale).unlink(missing_ok=True)
    started = time.time()
    try:
        import_plugins(job.plugins)  # a spawned worker starts with only nashzoo's learners
        recorder = _RaceRecorder()
        trainer = _job_trainer(job, out, folder, recorder)
        _limit_threads()
        result = trainer.run(
            iterations=job.budget_iterations, seconds=job.budget_seconds, work=job.budget_work
        )
        result.average_policy.save(folder / "average_policy.json")
        trainer.save(folder / "checkpoint.npz")
        payload = _ok_payload(job, trainer, result, recorder, started)
        atomic_write_bytes(folder / "result.json", json.dumps(payload, indent=1).encode())
        return payload
    except Exception as err:  # a failing run must not sink the race
        payload = {
            "status": "failed",
            "run_id": job.run_id,
            "job": dataclasses.asdict(job),
            "error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc(),
        }
        atomic_write_bytes(folder / "error.json", json.dumps(payload, indent=1).encode())
        return payload


def _job_trainer(job: RaceJob, out: str, folder: Path, recorder: _RaceRecorder) -> Trainer:
    """The job's Trainer: its pair, configs and seed, evaluated at log-spaced points (and every
    25th of the seconds budget), recorded by ``recorder`` and the job's logger if any."""
    callbacks: list[Callback] = [recorder]
    if job.logger is not None:
        group = Path(out).resolve().name
        callbacks.append(make_logger(job.logger, folder, name=job.run_id, group=group))
    eval_seconds = None if job.budget_seconds is None else job.budget_seconds / 25
    algorithms = job.algorithms or job.learners
    return Trainer(
        job.game,
        algorithms[0],
        algorithms[1],
        configs=job.configs,
        seed=job.seed,
        eval_every=EvalSchedule(per_decade=job.evals_per_decade, seconds=eval_seconds),
        callbacks=callbacks,
        progress=False,
    )


def _ok_payload(
    job: RaceJob, trainer: Trainer, result: Any, recorder: _RaceRecorder, started: float
) -> dict[str, Any]:
    """A finished run's ``result.json`` contents, with its checksum."""
    history = [record.to_dict() for record in result.history]
    for row, values in zip(history, recorder.current_values, strict=True):
        for p, v in enumerate(values):
            row[f"current_value_seat{p}"] = v
    payload = {
        "status": "ok",
        "run_id": job.run_id,
        "job": dataclasses.asdict(job),
        "mode": job.mode,
        "configs": [learner.config.to_dict() for learner in trainer.learners],
        "iterations": result.iterations,
        "train_seconds": result.train_seconds,
        "eval_seconds": result.eval_seconds,
        "stopped_by": result.stopped_by,
        "history": history,
        "elapsed_seconds": time.time() - started,
    }
    payload["checksum"] = _digest(payload)
    return payload


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


def _job_dict(job: RaceJob) -> dict[str, Any]:
    """``job`` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(job)))


RACE_CONFIG_FILE = "race_config.json"


def stored_race_config(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The :class:`RaceConfig` fields of the race last started in ``out`` (``None`` when
    there is none), so ``--resume`` can finish that race without repeating its options; every
    field is checked as :class:`RaceConfig` checks it (the error names the file)."""
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
    try:
        RaceConfig(**config)
    except (ValueError, TypeError, ImportError) as err:
        raise FileFormatError(f"{path}: {err}; fix it or start over with --force") from None
    return config


def _rows(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long-form rows: one per run, evaluation point and seat."""
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
                        "game": job["game"],
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


@dataclasses.dataclass(frozen=True)
class RaceOutcome:
    """What :func:`run_race` produced."""

    out: Path
    results: tuple[dict[str, Any], ...]
    failures: tuple[dict[str, Any], ...]
    skipped: dict[str, str]
    summary: dict[str, Any]
    markdown: str
    interrupted: bool = False


def _execute(
    config: RaceConfig, jobs: list[RaceJob], on_done: Callable[[dict[str, Any]], None]
) -> None:
    out = str(config.out)
    if not jobs:
        return
    workers = config.workers or min(os.cpu_count() or 1, len(jobs))
    if config.backend == "serial" or (config.backend == "process" and workers == 1):
        for job in jobs:
            on_done(run_job(job, out))
        return
    if config.backend == "ray":
        try:
            import ray
        except ImportError:
            raise ImportError(
                "backend 'ray' needs the ray extra: pip install 'nashzoo[ray]'"
            ) from None
        init_kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
        if config.address:
            init_kwargs["address"] = config.address
        else:
            init_kwargs["num_cpus"] = workers
            init_kwargs["include_dashboard"] = False
        started_here = not ray.is_initialized()
        ray.init(**init_kwargs)
        try:
            remote = ray.remote(num_cpus=1)(run_job)
            pending = {remote.remote(job, out): job for job in jobs}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        on_done(ray.get(ref))
                    except Exception as err:
                        on_done(_crashed(job, err))
        finally:
            if started_here and not config.address:
                ray.shutdown()
        return
    _run_process_pool(jobs, out, workers, on_done)


def _run_process_pool(
    jobs: list[RaceJob],
    out: str,
    workers: int,
    on_done: Callable[[dict[str, Any]], None],
    runner: Callable[[RaceJob, str], dict[str, Any]] = run_job,
) -> None:
    """Run ``jobs`` in a pool of ``workers`` processes, at most ``workers`` submitted at a time
    (so every submitted job is running). A worker that dies (killed, out of memory) fails only
    the runs in flight; the rest go on in a fresh pool. Workers exit when this process dies,
    even by ``kill -9`` (:func:`~nashzoo.io.exit_with_parent`), removing their partial files."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    queue = list(reversed(jobs))
    while queue:
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=exit_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            running: dict[Any, RaceJob] = {}
            try:
                while queue or running:
                    while queue and len(running) < workers:
                        job = queue.pop()
                        running[pool.submit(runner, job, out)] = job
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        job = running.pop(future)
                        try:
                            on_done(future.result())
                        except BrokenProcessPool as err:
                            on_done(_crashed(job, err))
                            for other in list(running):  # in flight when the pool broke
                                other_job = running.pop(other)
                                try:
                                    on_done(other.result())
                                except Exception as other_err:
                                    on_done(_crashed(other_job, other_err))
                            break
                        except Exception as err:
                            on_done(_crashed(job, err))
                    else:
                        continue
                    break  # the pool is broken: start a fresh one for the rest of the queue
            except BaseException:
                for future in running:
                    future.cancel()
                raise


def _crashed(job: RaceJob, err: BaseException) -> dict[str, Any]:
    return {
        "status": "failed",
        "run_id": job.run_id,
        "job": dataclasses.asdict(job),
        "error": f"worker crashed: {type(err).__name__}: {err}",
    }


def _standings(results: Iterable[dict[str, Any]], top: int = 3) -> str:
    """The live leaderboard for the progress bar: the self-play learners with the lowest mean
    final exploitability over their finished runs so far."""
    finals: dict[str, list[float]] = {}
    for res in results:
        learners = res["job"]["learners"]
        if learners[0] == learners[1]:
            finals.setdefault(learners[0], []).append(res["history"][-1]["exploitability"])
    ranked = sorted((sum(v) / len(v), name) for name, v in finals.items())
    return "leaders: " + ", ".join(f"{name} {value:.2g}" for value, name in ranked[:top])


def run_race(config: RaceConfig, *, progress: bool = True, stream: Any = None) -> RaceOutcome:
    """Run (or resume) a race and write every output; see the module docstring.

    ``out`` is checked before any work and locked while the race writes it (a second race on
    the same folder is refused); a folder that already holds a race is refused unless
    ``config.resume`` (finish it) or ``config.force`` (delete it and start over); temporary
    files a killed race left are removed.
    """
    out = check_output_folder(config.out)
    with folder_lock(out, "--out folder"):
        remove_stale_temp_files(out)
        _claim(out, config)
        return _run_locked(config, out, progress, stream or sys.stdout)


RACE_OUTPUTS = ("results.csv", "summary.json", "summary.md")


def _claim(out: Path, config: RaceConfig) -> None:
    """Refuse to start over a race already in ``out``, unless resuming it or forced to."""
    existing = [n for n in (RACE_CONFIG_FILE, "runs", *RACE_OUTPUTS) if (out / n).exists()]
    if not existing or config.resume:
        return
    if not config.force:
        raise FileExistsError(
            f"{out} already holds a race ({', '.join(existing)}); finish it with --resume "
            "(finished runs are kept), start over with --force, or choose another --out"
        )
    shutil.rmtree(out / "runs", ignore_errors=True)
    for name in (RACE_CONFIG_FILE, *RACE_OUTPUTS, *PLOT_FILES):
        (out / name).unlink(missing_ok=True)


def _run_locked(config: RaceConfig, out: Path, progress: bool, stream: Any) -> RaceOutcome:
    jobs, skipped = plan(config)
    if not jobs and not skipped:
        raise ValueError("cross-play needs at least two learners (or add self-play)")
    if not jobs:
        raise ValueError(
            f"no learner can play {config.game}: "
            + "; ".join(f"{k}: {v}" for k, v in skipped.items())
        )
    _write_race_config(out, config, jobs)
    for name, reason in skipped.items():
        print(f"skipping {name}: {reason}", file=stream)
    results, todo = _stored_and_todo(config, out, jobs, stream)
    failures: dict[str, dict[str, Any]] = {}
    bar, on_done = _progress_reporter(config, todo, results, failures, progress, stream)
    interrupted = False
    try:
        _execute(config, todo, on_done)
    except KeyboardInterrupt:
        interrupted = True
        print(
            f"\ninterrupted: {len(results)} of {len(jobs)} runs are saved in {out}; "
            "run again with --resume to finish the rest",
            file=stream,
        )
    finally:
        if bar is not None:
            bar.close()
    ordered = [results[j.run_id] for j in jobs if j.run_id in results]
    outcome = write_reports(
        config, ordered, list(failures.values()), skipped, interrupted, planned=len(jobs)
    )
    print("", file=stream)
    print(outcome.markdown, file=stream)
    print(f"results written to {out}/ (results.csv, summary.json, summary.md, plots)", file=stream)
    return outcome


def _write_race_config(out: Path, config: RaceConfig, jobs: Sequence[RaceJob]) -> None:
    """``race_config.json``: the race's settings and its planned run ids (what resume checks)."""
    atomic_write_bytes(
        out / RACE_CONFIG_FILE,
        json.dumps(
            {**dataclasses.asdict(config), "run_ids": [j.run_id for j in jobs]}, indent=1
        ).encode(),
    )


def _stored_and_todo(
    config: RaceConfig, out: Path, jobs: Sequence[RaceJob], stream: Any
) -> tuple[dict[str, dict[str, Any]], list[RaceJob]]:
    """The runs a resumed race keeps (stored, intact, same job) and the jobs left to run."""
    results: dict[str, dict[str, Any]] = {}
    todo = []
    outdated = 0
    for job in jobs:
        stored, problem = _stored(out, job) if config.resume else (None, "")
        if stored is not None and stored.get("job") == _job_dict(job):
            results[job.run_id] = stored
            continue
        outdated += stored is not None
        if problem:
            print(f"resuming: {problem}; running {job.run_id} again", file=stream)
        todo.append(job)
    if config.resume and results:
        print(f"resuming: {len(results)} of {len(jobs)} runs already finished", file=stream)
    if outdated:
        print(
            f"resuming: {outdated} stored run(s) had other settings (game, budget or "
            "evaluation points) and will be run again",
            file=stream,
        )
    return results, todo


def _progress_reporter(
    config: RaceConfig,
    todo: Sequence[RaceJob],
    results: dict[str, dict[str, Any]],
    failures: dict[str, dict[str, Any]],
    progress: bool,
    stream: Any,
) -> tuple[Any, Callable[[dict[str, Any]], None]]:
    """A progress bar (None without ``progress`` or work to do) and the callback that files
    each finished run into ``results`` or ``failures`` and reports it."""
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=f"race on {config.game}", unit="run", file=sys.stderr)

    def on_done(payload: dict[str, Any]) -> None:
        if payload.get("status") == "ok":
            results[payload["run_id"]] = payload
            last = payload["history"][-1]
            line = (
                f"{payload['run_id']}: exploitability {last['exploitability']:.4g} after "
                f"{payload['train_seconds']:.1f}s, {payload['iterations']} iterations"
            )
        else:
            failures[payload["run_id"]] = payload
            line = f"{payload['run_id']}: FAILED: {payload['error']}"
        if bar is not None:
            bar.write(line, file=stream)
            bar.set_postfix_str(_standings(results.values()), refresh=False)
            bar.update(1)
        else:
            print(line, file=stream)

    return bar, on_done


def write_reports(
    config: RaceConfig,
    results: Sequence[dict[str, Any]],
    failures: Sequence[dict[str, Any]],
    skipped: dict[str, str],
    interrupted: bool = False,
    planned: int | None = None,
) -> RaceOutcome:
    """Write results.csv, summary.json, summary.md and the plots from finished runs; outputs
    an earlier race left in the folder that this one does not produce are removed."""
    out = Path(config.out)
    rows = _rows(results)
    if rows:
        write_csv(out / "results.csv", rows)
    else:
        (out / "results.csv").unlink(missing_ok=True)
    board = leaderboard(rows, config.thresholds)
    cross = cross_play(rows)
    game_id = load_game(config.game).id
    markdown = markdown_summary(
        game_id,
        board,
        cross,
        thresholds=config.thresholds,
        budget=config.budget_text(),
        failures=[{"run_id": f["run_id"], "error": f["error"]} for f in failures],
    )
    markdown = _partial_note(out, len(results), planned, interrupted) + markdown
    markdown += _skipped_section(skipped)
    summary = {
        "game": game_id,
        "budget": config.budget_text(),
        "exploitability_convention": "NashConv / 2",
        "runs_finished": len(results),
        "runs_failed": len(failures),
        "interrupted": interrupted,
        "runs_planned": planned,
        "leaderboard": [e.to_dict() for e in board],
        "cross_play": None if cross is None else cross.to_dict(),
        "failures": [{"run_id": f["run_id"], "error": f["error"]} for f in failures],
        "skipped": skipped,
        "learner_configs": _learner_configs(results),
    }
    atomic_write_bytes(out / "summary.json", json.dumps(summary, indent=1).encode())
    atomic_write_bytes(out / "summary.md", markdown.encode())
    for stale in PLOT_FILES:
        (out / stale).unlink(missing_ok=True)
    if config.plots and rows:
        _plots(out, rows, cross, game_id)
    return RaceOutcome(
        out, tuple(results), tuple(failures), skipped, summary, markdown, interrupted
    )


def _partial_note(out: Path, finished: int, planned: int | None, interrupted: bool) -> str:
    """The summary's opening warning when the race was interrupted ("" otherwise)."""
    if not interrupted:
        return ""
    of = "" if planned is None else f" of {planned}"
    return (
        f"> **Partial results**: the race was interrupted after {finished}{of} runs; "
        f"`nashzoo race --resume --out {out}` finishes it.\n\n"
    )


def _skipped_section(skipped: dict[str, str]) -> str:
    """The summary's list of learners that could not play the game ("" when none)."""
    if not skipped:
        return ""
    return "\n## Skipped learners\n\n" + "\n".join(f"- {k}: {v}" for k, v in skipped.items()) + "\n"


def _learner_configs(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each raced label's algorithm and full config, as its runs recorded them."""
    out: dict[str, dict[str, Any]] = {}
    for res in results:
        job = res["job"]
        for seat, label in enumerate(job["learners"]):
            algorithm = (job.get("algorithms") or job["learners"])[seat]
            config = res.get("configs", [{}, {}])[seat]
            out.setdefault(label, {"algorithm": algorithm, "config": config})
    return out


PLOT_FILES = ("exploitability_vs_time.png", "exploitability_vs_work.png", "crossplay_heatmap.png")


def _plots(out: Path, rows: list[dict[str, Any]], cross: Any, game_id: str) -> None:
    from nashzoo.eval.plots import convergence_plot, curves_from_rows, heatmap

    points = [r for r in rows if r["seat"] == 0]
    self_rows = [r for r in points if r["mode"] == "self"]
    if self_rows:
        convergence_plot(
            curves_from_rows(self_rows, key="learner", x="wall_seconds"),
            out / PLOT_FILES[0],
            xlabel="training wall time (s, evaluation excluded)",
            title=f"Self-play on {game_id}: exploitability of the average policy",
        )
        convergence_plot(
            curves_from_rows(
                [r for r in self_rows if float(r["total_work"]) > 0], key="learner", x="total_work"
            ),
            out / PLOT_FILES[1],
            xlabel="work (nodes touched + env steps, both seats)",
            title=f"Self-play on {game_id}: exploitability against work",
        )
    if cross is not None:
        heatmap(
            cross.seat_exploitability,
            cross.learners,
            cross.learners,
            out / PLOT_FILES[2],
            title=f"Cross-play on {game_id}\nseat exploitability of the row learner vs column",
            colorbar="seat exploitability (lower is better)",
            log=True,
        )


__all__ = ["RaceConfig", "RaceJob", "RaceOutcome", "plan", "run_job", "run_race", "write_reports"]
