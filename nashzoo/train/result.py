"""What a training run records: plain, frozen data that writes straight to long-form CSV/JSON.

* :class:`EvalRecord`: one evaluation point: iteration, training wall time (evaluation time
  excluded), work done by each seat, and the exact NashConv / exploitability / per-seat
  exploitability of the joint AVERAGE policy.
* :class:`TrainResult`: the whole run: who played, the records, and the final joint average
  policy. ``to_rows()`` gives one dict per record (run columns first), ``to_csv`` / ``to_json``
  write them atomically.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nashzoo.agents.policy import TabularPolicy
from nashzoo.games.base import brief_repr, display_id
from nashzoo.io import atomic_write_bytes

WORK_KEYS = ("iterations", "nodes_touched", "env_steps")


@dataclass(frozen=True)
class EvalRecord:
    """One evaluation point of a run.

    Attributes:
        iteration: trainer iterations done (one iteration = one step of each seat).
        train_seconds: wall time spent in learner updates so far; evaluation, checkpoints,
            callbacks and the progress bar are excluded, so this is the time axis of the run.
        eval_seconds: how long this evaluation took (kept off the time axis).
        nash_conv: NashConv of the joint average policy (``sum_p BR_p - u_p``).
        exploitability: ``nash_conv / num_players`` (OpenSpiel's convention).
        seat_exploitability: per seat, what a best responder gains against that seat's average
            strategy relative to the game value (``nashzoo.eval.seat_exploitability``); ``None``
            for games that are not two-player zero-sum or when not requested.
        values: each seat's expected return when both play their average policies.
        work: per seat, cumulative ``iterations`` / ``nodes_touched`` / ``env_steps``.
    """

    iteration: int
    train_seconds: float
    eval_seconds: float
    nash_conv: float
    exploitability: float
    seat_exploitability: tuple[float, ...] | None
    values: tuple[float, ...]
    work: tuple[Mapping[str, int], ...]

    def to_dict(self) -> dict[str, Any]:
        """Flat dict (one CSV row): per-seat numbers as ``seat{p}_...`` columns."""
        row: dict[str, Any] = {
            "iteration": self.iteration,
            "train_seconds": self.train_seconds,
            "eval_seconds": self.eval_seconds,
            "nash_conv": self.nash_conv,
            "exploitability": self.exploitability,
        }
        for p, value in enumerate(self.values):
            exploit = None if self.seat_exploitability is None else self.seat_exploitability[p]
            row[f"seat{p}_exploitability"] = exploit
            row[f"seat{p}_value"] = value
        for p, work in enumerate(self.work):
            for key in WORK_KEYS:
                row[f"seat{p}_{key}"] = int(work.get(key, 0))
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> EvalRecord:
        """Inverse of :meth:`to_dict` (used when a checkpoint is resumed)."""
        seats = sorted({int(k[4 : k.index("_")]) for k in row if k.startswith("seat") and "_" in k})
        exploits: list[Any] = [row.get(f"seat{p}_exploitability") for p in seats]
        return cls(
            iteration=int(row["iteration"]),
            train_seconds=float(row["train_seconds"]),
            eval_seconds=float(row["eval_seconds"]),
            nash_conv=float(row["nash_conv"]),
            exploitability=float(row["exploitability"]),
            seat_exploitability=(
                None if any(v is None for v in exploits) else tuple(float(v) for v in exploits)
            ),
            values=tuple(float(row[f"seat{p}_value"]) for p in seats),
            work=tuple({k: int(row[f"seat{p}_{k}"]) for k in WORK_KEYS} for p in seats),
        )


@dataclass(frozen=True)
class TrainResult:
    """The outcome of :func:`nashzoo.train.train` / :meth:`Trainer.run`.

    Attributes:
        game_id: the game trained on.
        learners: learner name per seat (equal names: self-play; different: cross-play).
        seeds: the seed each seat's learner was built with.
        seed: the trainer seed the seat seeds were derived from.
        schedule: ``"alternating"`` or ``"simultaneous"`` (see :class:`Trainer`).
        iterations: trainer iterations done in total.
        train_seconds: training wall time (evaluation excluded).
        eval_seconds: total time spent evaluating.
        stopped_by: ``"iterations"``, ``"seconds"``, ``"work"``, ``"callback"`` or
            ``"interrupted"`` (Ctrl-C, through :class:`~nashzoo.train.StopOnInterrupt`).
        history: the evaluation records, in order.
        average_policy: the joint average policy (seat ``p``'s rows from seat ``p``'s learner).
        configs: each seat's full learner config (every field, defaults included).
    """

    game_id: str
    learners: tuple[str, ...]
    seeds: tuple[int, ...]
    seed: int
    schedule: str
    iterations: int
    train_seconds: float
    eval_seconds: float
    stopped_by: str
    history: tuple[EvalRecord, ...]
    average_policy: TabularPolicy = field(repr=False)
    configs: tuple[dict[str, Any], ...] = ()

    @property
    def final(self) -> EvalRecord | None:
        """The last evaluation record (``None`` if nothing was evaluated)."""
        return self.history[-1] if self.history else None

    @property
    def nash_conv(self) -> float:
        """NashConv at the last evaluation (NaN if nothing was evaluated)."""
        return self.final.nash_conv if self.final is not None else math.nan

    @property
    def exploitability(self) -> float:
        """Exploitability (NashConv / players) at the last evaluation (NaN if none)."""
        return self.final.exploitability if self.final is not None else math.nan

    @property
    def seat_exploitability(self) -> tuple[float, ...] | None:
        """Per-seat exploitability at the last evaluation (``None`` if nothing was evaluated or
        the per-seat numbers were not computed; see :attr:`EvalRecord.seat_exploitability`)."""
        return self.final.seat_exploitability if self.final is not None else None

    def run_columns(self) -> dict[str, Any]:
        """The columns that identify the run in every row of a long-form table."""
        out: dict[str, Any] = {"game": self.game_id}
        for p, name in enumerate(self.learners):
            out[f"learner{p}"] = name
        out["seed"] = self.seed
        out["schedule"] = self.schedule
        for p, config in enumerate(self.configs):
            out[f"config{p}"] = json.dumps(config, sort_keys=True)
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per evaluation record, run columns first (long-form / tidy data). Every
        row repeats the game, so it shows :func:`~nashzoo.games.display_id` (a long id
        shortened; :meth:`summary` holds the whole one)."""
        run = {**self.run_columns(), "game": display_id(self.game_id)}
        return [{**run, **record.to_dict()} for record in self.history]

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_rows` as CSV, atomically."""
        write_csv(path, self.to_rows())

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary of the run (without the policy)."""
        return {
            **self.run_columns(),
            "seeds": list(self.seeds),
            "iterations": self.iterations,
            "train_seconds": self.train_seconds,
            "eval_seconds": self.eval_seconds,
            "stopped_by": self.stopped_by,
            "configs": list(self.configs),
            "final": None if self.final is None else self.final.to_dict(),
            "history": [record.to_dict() for record in self.history],
        }

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`summary` as JSON, atomically (save the policy with
        ``result.average_policy.save(path)``)."""
        atomic_write_bytes(path, json.dumps(self.summary(), indent=1).encode())

    def __repr__(self) -> str:
        return brief_repr(self)

    def __str__(self) -> str:
        last = self.final
        tail = (
            "no evaluation"
            if last is None
            else f"NashConv {last.nash_conv:.6g} (exploitability {last.exploitability:.6g})"
        )
        vs = " vs ".join(self.learners)
        how = "interrupted" if self.stopped_by == "interrupted" else f"stopped by {self.stopped_by}"
        return (
            f"{vs} on {display_id(self.game_id)}: {self.iterations} iterations in "
            f"{self.train_seconds:.3f}s of training, {tail}; {how}"
        )


def write_csv(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write rows (dicts) as CSV atomically; columns are the union, in first-seen order."""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    atomic_write_bytes(path, buffer.getvalue().encode())
