"""Experiment tracking through the Trainer's callbacks: TensorBoard, Weights & Biases, or CSV.

Each logger is a :class:`~nashzoo.train.callbacks.Callback` that writes, against both the
trainer iteration (the step axis) and the training wall time (evaluation excluded):

* at every evaluation: ``eval/nash_conv``, ``eval/exploitability`` (NashConv / players),
  ``eval/seat{p}_exploitability``, ``eval/seat{p}_value`` and each seat's cumulative work
  ``work/seat{p}_{iterations,nodes_touched,env_steps}``;
* every ``step_every`` iterations: each learner's own numeric step metrics
  (``seat{p}/{name}``: losses, buffer sizes, epsilons, mean returns, ...).

``make_logger("tensorboard" | "wandb" | "csv", folder)`` builds one; ``make_loggers("csv,
tensorboard", folder)`` several (what ``--logger`` on ``nashzoo train`` and ``race`` does).
TensorBoard needs the ``tensorboard`` package (the ``tracking`` extra); its wall-clock axis is
the training time. Weights & Biases needs ``wandb``; ``mode="offline"`` (the default here) writes
the run to the folder for ``wandb sync``, and a resumed run goes on as the same W&B run (its id
is kept in the folder, :data:`WANDB_ID_FILE`).

A run that starts over in a folder (``train --force``, a race run run again) first removes
what the loggers wrote there before (:func:`remove_logger_output`): TensorBoard and W&B would
otherwise show the old and the new run as one curve.
"""

from __future__ import annotations

import csv
import math
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nashzoo.extras import require
from nashzoo.io import atomic_write_bytes
from nashzoo.train.callbacks import Callback
from nashzoo.train.result import write_csv

if TYPE_CHECKING:
    from nashzoo.train.result import EvalRecord, TrainResult
    from nashzoo.train.trainer import Trainer

__all__ = [
    "LOGGERS",
    "CSVLogger",
    "MetricsLogger",
    "TensorBoardLogger",
    "WandbLogger",
    "logger_kinds",
    "make_logger",
    "make_loggers",
    "remove_logger_output",
    "require_logger",
]

LOGGERS = ("tensorboard", "wandb", "csv")

WANDB_ID_FILE = "wandb_run_id.txt"
"""The file in a run's folder holding its W&B run id: every session of a resumed run logs to
that one W&B run (without it, each session was a W&B run of its own)."""


def logger_kinds(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """The loggers ``spec`` names: ``None`` (none), ``"csv"``, ``"csv,tensorboard"``, or a
    sequence of such texts (``--logger`` given twice); each kind once, in :data:`LOGGERS`'
    order (so that the same loggers typed in another order are the same setting: a race
    resumed with them re-ran every run). ValueError naming the unknown one."""
    if spec is None:
        return ()
    texts = [spec] if isinstance(spec, str) else list(spec)
    kinds: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            raise ValueError(f"a logger is named by text, got {text!r}")
        for kind in (part.strip() for part in text.split(",")):
            if kind not in LOGGERS:
                raise ValueError(
                    f"logger must be one of {', '.join(LOGGERS)} (several: 'csv,tensorboard'), "
                    f"got {kind!r}"
                )
            if kind not in kinds:
                kinds.append(kind)
    return tuple(kind for kind in LOGGERS if kind in kinds)


def remove_logger_output(folder: str | os.PathLike[str]) -> None:
    """Remove what the loggers wrote in ``folder`` (``metrics.csv``, TensorBoard's event files,
    W&B's folder and run id): what a run that starts over there does first."""
    folder = Path(folder)
    for stale in ("metrics.csv", WANDB_ID_FILE, *(p.name for p in folder.glob("events.out.*"))):
        (folder / stale).unlink(missing_ok=True)
    shutil.rmtree(folder / "wandb", ignore_errors=True)


_NEEDS = {"tensorboard": ("torch", "tensorboard"), "wandb": ("wandb",)}
"""The packages (of the ``tracking`` extra) each logger writes with."""


def require_logger(spec: str | Sequence[str]) -> None:
    """Refuse, before a run starts or a folder is claimed, a logger whose packages are not
    installed (a run would otherwise train and fail at its first log, or leave a folder that
    holds a run that never began); ``spec`` as :func:`logger_kinds` reads it."""
    for kind in logger_kinds(spec):
        if kind in _NEEDS:
            require(f"--logger {kind}", "tracking", *_NEEDS[kind])


def _numbers(prefix: str, metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numeric entries of ``metrics`` (bools and text are left out)."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[f"{prefix}{key}"] = float(value)
    return out


class MetricsLogger(Callback):
    """Turns trainer events into named scalars; subclasses write them (:meth:`write`).

    Args:
        step_every: log the learners' step metrics every this many iterations (default 10;
            evaluations are always logged).
    """

    def __init__(self, step_every: int = 10) -> None:
        if not isinstance(step_every, int) or step_every < 1:
            raise ValueError(f"step_every must be a positive integer, got {step_every!r}")
        self.step_every = step_every

    def write(self, scalars: dict[str, float], iteration: int, train_seconds: float) -> None:
        """Record ``scalars`` at ``iteration`` / ``train_seconds``."""
        raise NotImplementedError

    def run_config(self, trainer: Trainer) -> dict[str, Any]:
        """What the run is: game, learners, seeds and each seat's full config."""
        return {
            "game": trainer.game.id,
            "seed": trainer.seed,
            "learners": [lr.name for lr in trainer.learners],
            "configs": [lr.config.to_dict() for lr in trainer.learners],
        }

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        iteration = int(metrics["iteration"])
        if iteration % self.step_every == 0:
            scalars: dict[str, float] = {}
            for p, seat in enumerate(metrics["seats"]):
                scalars.update(_numbers(f"seat{p}/", seat))
            self.write(scalars, iteration, float(metrics["train_seconds"]))
        return None

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        scalars = {"eval/nash_conv": record.nash_conv, "eval/exploitability": record.exploitability}
        for p, value in enumerate(record.values):
            scalars[f"eval/seat{p}_value"] = value
            if record.seat_exploitability is not None:
                scalars[f"eval/seat{p}_exploitability"] = record.seat_exploitability[p]
            scalars.update(_numbers(f"work/seat{p}_", dict(record.work[p])))
        self.write(scalars, record.iteration, record.train_seconds)
        return None


class CSVLogger(MetricsLogger):
    """Long-form ``metrics.csv`` in ``folder``: one row per (iteration, metric), with the
    training seconds. Rows are appended and flushed as they come, so the file can be followed
    while the run trains and keeps what was logged if the process dies. A resumed run keeps
    the rows an earlier session wrote up to the iteration it resumes from, and adds its own."""

    COLUMNS = ("iteration", "train_seconds", "metric", "value")

    def __init__(self, folder: str | os.PathLike[str], step_every: int = 10) -> None:
        super().__init__(step_every)
        self.path = Path(folder) / "metrics.csv"
        self._handle: Any = None
        self._writer: Any = None

    def on_training_start(self, trainer: Trainer) -> None:
        super().on_training_start(trainer)
        earlier: list[dict[str, Any]] = []
        if self.path.exists():
            with open(self.path, newline="") as handle:
                earlier = [
                    {k: row.get(k, "") for k in self.COLUMNS}
                    for row in csv.DictReader(handle)
                    if row.get("iteration", "").isdigit()
                    and int(row["iteration"]) <= trainer.iteration
                ]
        self.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if earlier:
            write_csv(self.path, earlier)
        else:
            atomic_write_bytes(self.path, (",".join(self.COLUMNS) + "\n").encode())
        self._handle = open(self.path, "a", newline="")  # noqa: SIM115 (closed at the end)
        self._writer = csv.DictWriter(self._handle, fieldnames=self.COLUMNS, lineterminator="\n")

    def write(self, scalars: dict[str, float], iteration: int, train_seconds: float) -> None:
        if self._writer is None:
            raise RuntimeError("CSVLogger.write before the training started")
        self._writer.writerows(
            {"iteration": iteration, "train_seconds": train_seconds, "metric": k, "value": v}
            for k, v in scalars.items()
        )
        self._handle.flush()

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = self._writer = None


WALL_ORIGIN = 1_000_000_000.0
"""Where TensorBoard's wall-time axis starts (a fixed time: its "relative" view is then the
training time, across the sessions of a resumed run)."""


class TensorBoardLogger(MetricsLogger):
    """TensorBoard event files in ``folder`` (``tensorboard --logdir folder``). The step axis
    is the iteration; the wall-time axis ("relative") is the training time."""

    def __init__(self, folder: str | os.PathLike[str], step_every: int = 10) -> None:
        super().__init__(step_every)
        require_logger("tensorboard")
        self.folder = str(folder)
        self.writer: Any = None
        # A fixed origin, so the "relative" axis is the training time in every session of a
        # resumed run (a per-session origin made it jump at each resume).
        self._start = WALL_ORIGIN

    def on_training_start(self, trainer: Trainer) -> None:
        from torch.utils.tensorboard import SummaryWriter

        if self.writer is None:
            # A resumed run drops what an earlier session logged past the iteration it resumes
            # from (its checkpoint's): those points were trained again, and would be drawn twice.
            purge = trainer.iteration + 1 if trainer.iteration else None
            self.writer = SummaryWriter(log_dir=self.folder, purge_step=purge)
        config = self.run_config(trainer)
        self.writer.add_text("run", "\n".join(f"    {k}: {v}" for k, v in config.items()))

    def write(self, scalars: dict[str, float], iteration: int, train_seconds: float) -> None:
        walltime = self._start + train_seconds
        for key, value in scalars.items():
            self.writer.add_scalar(key, value, global_step=iteration, walltime=walltime)

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        self.writer.close()
        self.writer = None


class WandbLogger(MetricsLogger):
    """A Weights & Biases run per training run, in ``folder``; ``iteration`` and
    ``train_seconds`` are logged with every point, so either can be the x axis.

    Args:
        folder: where wandb writes (``folder/wandb``).
        project: the W&B project (default: the ``WANDB_PROJECT`` environment variable, else
            ``"nashzoo"``).
        mode: ``"offline"`` (default: nothing leaves the machine; ``wandb sync`` uploads
            later), ``"online"`` or ``"disabled"``.
        name, group: the run's name and group (a race groups its runs).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        step_every: int = 10,
        *,
        project: str | None = None,
        mode: str = "offline",
        name: str | None = None,
        group: str | None = None,
    ) -> None:
        super().__init__(step_every)
        require_logger("wandb")
        import wandb

        if mode not in ("offline", "online", "disabled"):
            raise ValueError(f"mode must be 'offline', 'online' or 'disabled', got {mode!r}")
        self.wandb = wandb
        self.folder = Path(folder)
        self.kwargs: dict[str, Any] = {
            "project": project or os.environ.get("WANDB_PROJECT") or "nashzoo",
            "mode": mode,
            "name": name,
            "group": group,
        }
        self.run: Any = None

    def on_training_start(self, trainer: Trainer) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run = self.wandb.init(
            dir=str(self.folder),
            config=self.run_config(trainer),
            reinit="create_new",
            settings=self.wandb.Settings(silent=True),
            id=self._run_id(continuing=trainer.iteration > 0),
            resume="allow",  # a resumed training run goes on as the same W&B run
            **self.kwargs,
        )
        self.run.define_metric("iteration")
        self.run.define_metric("train_seconds")
        self.run.define_metric("*", step_metric="iteration")

    def _run_id(self, continuing: bool) -> str:
        """The W&B run id: a run that goes on (a resumed trainer, or one run again) takes the
        one stored in the folder (:data:`WANDB_ID_FILE`); a run from its first iteration gets a
        new one, stored (two runs logged into one folder stay two W&B runs)."""
        path = self.folder / WANDB_ID_FILE
        if continuing and path.exists():
            stored = path.read_text().strip()
            if stored.isalnum() and 0 < len(stored) <= 64:
                return stored
        run_id = secrets.token_hex(8)
        atomic_write_bytes(path, run_id.encode())
        return run_id

    def write(self, scalars: dict[str, float], iteration: int, train_seconds: float) -> None:
        self.run.log({**scalars, "iteration": iteration, "train_seconds": train_seconds})

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        self.run.finish()


def make_logger(
    kind: str,
    folder: str | os.PathLike[str],
    *,
    step_every: int = 10,
    name: str | None = None,
    group: str | None = None,
) -> MetricsLogger:
    """``"tensorboard"``, ``"wandb"`` (offline; ``name``/``group`` name the W&B run) or
    ``"csv"``, writing in ``folder``."""
    if kind == "tensorboard":
        return TensorBoardLogger(folder, step_every)
    if kind == "wandb":
        return WandbLogger(folder, step_every, name=name, group=group)
    if kind == "csv":
        return CSVLogger(folder, step_every)
    raise ValueError(f"logger must be one of {', '.join(LOGGERS)}, got {kind!r}")


def make_loggers(
    spec: str | Sequence[str] | None,
    folder: str | os.PathLike[str],
    *,
    step_every: int = 10,
    name: str | None = None,
    group: str | None = None,
) -> list[MetricsLogger]:
    """One logger per kind ``spec`` names (:func:`logger_kinds`), all writing in ``folder``."""
    return [
        make_logger(kind, folder, step_every=step_every, name=name, group=group)
        for kind in logger_kinds(spec)
    ]
