"""The Trainer: two learners, one per seat, one code path for self-play and cross-play.

Schedule of one trainer iteration (``schedule=``):

* ``"alternating"`` (default; what CFR+ and OpenSpiel's solvers do): seat 0 steps against seat 1's
  view, then seat 1 steps against seat 0's view taken AFTER seat 0's update.
* ``"simultaneous"``: both views are taken first, then both seats step (vanilla CFR as first
  published, classical fictitious play).

With ``processes=2`` (``"simultaneous"`` only) seat 1's learner steps in a worker process while
seat 0's steps in this one (:mod:`nashzoo.train.seat_worker`), in about half the time on two
cores when a step is much more work than handing over a policy (the neural learners). Both
processes are held to one thread during the run, so the results are, bit for bit, those of one
process held to one thread (``with limit_threads(1):``, as a race runs); torch's sums, and so a
neural learner's numbers, depend on the thread count.

A learner sees its opponent only as a Policy, the one its ``opponent_view`` asks for: the
opponent's ``current_policy()`` (regret-based learners) or ``average_policy()`` (fictitious
play). The same algorithm on both seats is self-play; different algorithms are cross-play;
nothing else differs.

At the points of an :class:`~nashzoo.train.schedule.EvalSchedule` (and once at the end) the
Trainer evaluates the joint AVERAGE policy exactly with :func:`nashzoo.eval.evaluate`: NashConv,
exploitability and each seat's exploitability, recorded against training wall time (only the
learners' updates are timed: evaluation, checkpoints, callbacks and the progress bar are off
the clock) and against work (each seat's iterations, nodes touched, env steps).

Seeding: seat ``p``'s learner, when built from a name, gets its seed from
``np.random.SeedSequence(seed).spawn(2)[p]`` (:func:`seat_seeds`); same seed, same run.

Checkpoints are one file written atomically: both learners' checkpoints plus the trainer state
(iteration, clocks, history, schedule state); :meth:`Trainer.load` resumes exactly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig, checked_seed
from nashzoo.agents.loading import seat_learners
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.agents.registry import learner_class, make_learner
from nashzoo.eval import evaluate, lp_is_cheap
from nashzoo.games import Game, limits, load_game
from nashzoo.games.base import is_finite_number, is_whole_number
from nashzoo.games.progress import progress_bar
from nashzoo.io import (
    TRAINER_FORMAT,
    atomic_file,
    cause,
    read_trainer_checkpoint,
    version_stamp,
    write_trainer_checkpoint,
)
from nashzoo.train.callbacks import Callback, StopOnInterrupt, as_callback
from nashzoo.train.result import EvalRecord, TrainResult
from nashzoo.train.schedule import EvalSchedule
from nashzoo.train.seat_worker import SeatWorker, SeatWorkerError, check_can_start_a_worker
from nashzoo.train.threads import limit_threads

SCHEDULES = ("alternating", "simultaneous")

LearnerSpec = str | Learner
"""A learner given by registry name (built by the Trainer) or as a ready Learner."""


def seat_seeds(seed: int, num_seats: int = 2) -> tuple[int, ...]:
    """Independent per-seat seeds derived from one trainer seed with ``np.random.SeedSequence``."""
    children = np.random.SeedSequence(checked_seed(seed)).spawn(num_seats)
    return tuple(int(child.generate_state(1, dtype=np.uint32)[0]) for child in children)


def _build(
    spec: LearnerSpec, game: Game, seat: int, config: Any, seed: int, argument: str
) -> Learner:
    if isinstance(spec, Learner):
        if config is not None:
            raise ValueError(
                f"{argument} is an already built Learner; give its config when building it, "
                "not as a separate config"
            )
        if spec.game.id != game.id:
            raise ValueError(
                f"{argument} ({spec.name}) was built for {spec.game.display_id}, but the Trainer "
                f"plays {game.display_id}"
            )
        if spec.seat != seat:
            raise ValueError(
                f"{argument} ({spec.name}) owns seat {spec.seat} but is placed on seat {seat}; "
                f"build it with seat={seat}"
            )
        return spec
    if isinstance(spec, str):
        return make_learner(spec, game, seat, config, seed=seed)
    raise ValueError(
        f"{argument} must be a learner name (e.g. 'cfr_plus') or a Learner, "
        f"got {type(spec).__name__}"
    )


class Trainer:
    """Pairs two learners on a two-player game and trains them (see the module docs).

    Args:
        game: the game (or its name).
        learner_seat0, learner_seat1: a registry name (built here, seeded from ``seed``) or a
            Learner owning that seat.
        configs: configs for learners given by name, one per seat (``None``: defaults).
        seed: trainer seed; per-seat seeds are derived with ``SeedSequence`` (default 0).
        schedule: ``"alternating"`` (default) or ``"simultaneous"``.
        eval_every: ``None`` (default: no evaluation inside the loop, one at the end), an int
            ``k`` (every k iterations), ``"log"`` (10 log-spaced points per decade) or an
            :class:`EvalSchedule`.
        eval_seconds: also evaluate every this many seconds of training time.
        evaluate_seats: record per-seat exploitability (needs the game value, solved once per
            game by LP; skipped for games that are not two-player zero-sum). ``None`` (default):
            only where the LP is quick (:func:`nashzoo.eval.lp_is_cheap`: up to 300,000
            terminal histories; NashConv and exploitability are recorded at any size).
        final_eval: evaluate at the end of a run if the last iteration was not evaluated
            (outside the timed loop). Default True.
        callbacks: a :class:`Callback` or a list of them.
        progress: ``None`` (default): a tqdm bar when stderr is a terminal; ``True``: always
            (notebooks, logged runs); ``False``: never.
        checkpoint_path: file to write checkpoints to (atomically, overwritten each time).
        checkpoint_every: write a checkpoint every this many iterations (and at the end of each
            run) when ``checkpoint_path`` is set.
        processes: 1 (default) or 2: during :meth:`run`, seat 1's learner steps in a worker
            process beside seat 0's (needs ``schedule="simultaneous"``; the same results as one
            process; see the module docs). Worth it when a step is much more work than
            passing a policy: the neural learners, not the tabular ones on small games.
    """

    def __init__(
        self,
        game: Game | str,
        learner_seat0: LearnerSpec,
        learner_seat1: LearnerSpec,
        *,
        configs: Sequence[LearnerConfig | dict[str, Any] | None] = (None, None),
        seed: int = 0,
        schedule: Literal["alternating", "simultaneous"] = "alternating",
        eval_every: int | str | EvalSchedule | None = None,
        eval_seconds: float | None = None,
        evaluate_seats: bool | None = None,
        final_eval: bool = True,
        callbacks: Callback | Iterable[Callback] | None = None,
        progress: bool | None = None,
        checkpoint_path: str | os.PathLike[str] | None = None,
        checkpoint_every: int | None = None,
        processes: int = 1,
    ) -> None:
        self.game = load_game(game)
        _check_trainer_args(self.game, schedule, configs, checkpoint_path, checkpoint_every)
        _check_processes(processes, schedule)
        self.seed = checked_seed(seed)
        derived = seat_seeds(self.seed)
        self.learners: tuple[Learner, Learner] = (
            _build(learner_seat0, self.game, 0, configs[0], derived[0], "learner_seat0"),
            _build(learner_seat1, self.game, 1, configs[1], derived[1], "learner_seat1"),
        )
        done = [lr.iterations for lr in self.learners]
        if done[0] != done[1]:
            warnings.warn(
                f"the learners have done {done[0]} and {done[1]} steps already: the Trainer's "
                "iteration count and their averaging weights will not line up; pair learners "
                "at the same point (or resume both with Trainer.load)",
                stacklevel=2,
            )
        self.schedule = schedule
        self.processes = processes
        self.eval_schedule = EvalSchedule.coerce(eval_every, eval_seconds)
        self.evaluate_seats = (
            lp_is_cheap(self.game) if evaluate_seats is None else bool(evaluate_seats)
        )
        self.final_eval = bool(final_eval)
        self.callbacks = as_callback(callbacks)
        self.progress = progress
        self.checkpoint_path = None if checkpoint_path is None else Path(checkpoint_path)
        self.checkpoint_every = checkpoint_every
        self.checkpoint_error: OSError | None = None
        """Why the last run's final checkpoint could not be written (``None``: it was)."""
        self.iteration = 0
        self.train_seconds = 0.0
        self.eval_seconds = 0.0
        self._last_eval_train_seconds = 0.0
        self._history: list[EvalRecord] = []
        self._cut_short: tuple[int, list[int]] | None = None  # see _refuse_if_torn

    # --- read-only views ---------------------------------------------------------------------
    @property
    def history(self) -> tuple[EvalRecord, ...]:
        """The evaluation records so far."""
        return tuple(self._history)

    @property
    def self_play(self) -> bool:
        """True when both seats run the same algorithm."""
        return self.learners[0].name == self.learners[1].name

    def average_policy(self) -> TabularPolicy:
        """The joint average policy: seat ``p``'s rows from seat ``p``'s learner."""
        return TabularPolicy.joint(self.game, [lr.average_policy() for lr in self.learners])

    def _view(self, learner: Learner, opponent: Learner) -> Policy:
        if learner.opponent_view == "average":
            return opponent.average_policy()
        return opponent.current_policy()

    # --- one iteration -----------------------------------------------------------------------
    def step(self) -> dict[str, Any]:
        """One trainer iteration (each seat steps once, per the schedule); only this is timed."""
        first, second = self.learners
        start = time.perf_counter()
        if self.schedule == "alternating":
            m0 = first.step(self._view(first, second))
            m1 = second.step(self._view(second, first))
        else:
            view0, view1 = self._view(first, second), self._view(second, first)
            if isinstance(second, SeatWorker):  # processes=2: seat 1 steps while seat 0 does
                second.step_async(view1, first.opponent_view)
                m0 = first.step(view0)
                try:
                    m1 = second.step_wait()
                except KeyboardInterrupt:
                    # A Ctrl-C held while seat 1's reply was read goes on once it is taken:
                    # if both seats stepped, the iteration counts (uncounted, the trainer
                    # called itself torn). One during the wait leaves the step in flight; an
                    # error in seat 1's step (which the Ctrl-C then hides) leaves it undone.
                    if second.last_step_done:
                        self._count(start)
                    raise
            else:
                m0 = first.step(view0)
                m1 = second.step(view1)
        self._count(start)
        return {"iteration": self.iteration, "train_seconds": self.train_seconds, "seats": (m0, m1)}

    def _count(self, start: float) -> None:
        """An iteration both seats stepped, begun at ``perf_counter()`` ``start``."""
        self.train_seconds += time.perf_counter() - start
        self.iteration += 1

    def evaluate(self) -> EvalRecord:
        """Evaluate the joint average policy now, record it, and return the record."""
        start = time.perf_counter()
        report = evaluate(self.game, self.average_policy(), seats=self.evaluate_seats)
        elapsed = time.perf_counter() - start
        self.eval_seconds += elapsed
        self._last_eval_train_seconds = self.train_seconds
        record = EvalRecord(
            iteration=self.iteration,
            train_seconds=self.train_seconds,
            eval_seconds=elapsed,
            nash_conv=float(report.nash_conv),
            exploitability=float(report.exploitability),
            seat_exploitability=report.seat_exploitability,
            values=tuple(float(v) for v in report.on_policy_values),
            work=tuple(lr.work() for lr in self.learners),
        )
        self._history.append(record)
        return record

    # --- the loop ------------------------------------------------------------------------------
    def run(
        self,
        iterations: int | None = None,
        seconds: float | None = None,
        work: int | None = None,
    ) -> TrainResult:
        """Train for ``iterations`` more iterations, ``seconds`` more training seconds and/or
        ``work`` more work (nodes touched + env steps, both seats), whichever comes first, then
        return the result so far.

        Raises:
            ValueError: no budget given, or a non-positive one.
        """
        iterations = _checked_budget(iterations, seconds, work)
        self._refuse_if_torn("run")
        if isinstance(self.learners[1], SeatWorker):  # lost in an earlier run()
            why = self.learners[1].lost or "its worker process died"
            raise SeatWorkerError(
                f"this trainer lost seat 1's learner at iteration {self.iteration} in an "
                f"earlier run() ({why}); load the last checkpoint to go on "
                "(Trainer.load(path, processes=2))"
            )
        limits = _Limits(
            iteration=None if iterations is None else self.iteration + iterations,
            train_seconds=None if seconds is None else self.train_seconds + float(seconds),
            work=None if work is None else self.work_done() + int(work),
        )
        threads = limit_threads() if self.processes > 1 else None  # one per process, both
        start_work, start_iteration = self.work_done(), self.iteration
        try:
            stopped_by = self._loop(limits, self._progress_bar(iterations))
        finally:
            if threads is not None:
                threads.restore()
        done = self.work_done() - start_work
        if stopped_by == "work" and work is not None and done > 2 * int(work):
            steps = max(self.iteration - start_iteration, 1)
            warnings.warn(
                f"the work budget of {int(work):,} was overshot: the run did {done:,} "
                f"({steps:,} iteration(s), about {done // steps:,} each; the budget is checked "
                "between iterations). Give a larger budget, or iterations=",
                stacklevel=2,
            )
        return self._finish(stopped_by)

    def _loop(self, limits: _Limits, bar: Any) -> str:
        """Step until a limit is reached or a callback stops; return which. With
        ``processes=2`` seat 1's learner is in its worker for the loop and back after it,
        whatever happened."""
        try:
            if self.processes > 1:
                # While the loop runs, a SeatWorker stands in for seat 1's learner (it answers
                # everything the Trainer asks of a learner, from the worker process).
                worker = SeatWorker(self.learners[1])
                self.learners = (self.learners[0], worker)  # type: ignore[assignment]
            self.callbacks.on_training_start(self)
            with _WholeSteps() as whole:
                return self._steps(limits, bar, whole)
        finally:
            if bar is not None:
                bar.close()
            second = self.learners[1]
            if isinstance(second, SeatWorker):
                try:
                    second.close()
                finally:  # back even where a Ctrl-C came as it arrived (it goes on after)
                    if second.brought_back is not None:
                        self.learners = (self.learners[0], second.brought_back)

    def _steps(self, limits: _Limits, bar: Any, whole: _WholeSteps) -> str:
        """The loop of :meth:`_loop`: step until a limit is reached or a callback stops. A
        Ctrl-C during a step takes effect when the step is done (``whole``); an iteration cut
        short all the same (a second Ctrl-C, an error in a learner) after one seat had stepped
        leaves the trainer torn, which :meth:`save` and :meth:`run` then refuse."""
        while (stopped_by := self._stop_reason(limits)) is None:
            before = [learner.iterations for learner in self.learners]
            counted = self.iteration
            whole.in_step = True
            try:
                metrics = self.step()
            except BaseException:
                if self.iteration == counted:  # not counted, though a seat may have stepped
                    self._note_if_torn(before)
                raise
            finally:
                whole.in_step = False
            whole.raise_if_interrupted()
            if self._after_step(metrics, bar):
                interrupted = any(
                    isinstance(cb, StopOnInterrupt) and cb.interrupted
                    for cb in self.callbacks.callbacks
                )
                return "interrupted" if interrupted else "callback"
        return stopped_by

    def _note_if_torn(self, before: list[int]) -> None:
        """Keep the seats' step counts from before an iteration that failed: the trainer did
        not count it, so a seat that stepped in it (the worker's seat is known only once its
        learner is back) leaves the trainer torn."""
        self._cut_short = (self.iteration, before)

    def _refuse_if_torn(self, what: str) -> None:
        """Refuse to go on from, or save, seats out of step with the trainer's count."""
        cut = getattr(self, "_cut_short", None)  # (absent from a Trainer pickled before it)
        if cut is None or isinstance(self.learners[1], SeatWorker):
            return  # (a seat left in its dead worker: that error says more)
        iteration, before = cut
        moved = [lr.iterations - b for lr, b in zip(self.learners, before, strict=True)]
        if not any(moved) or iteration != self.iteration:
            self._cut_short = None  # no seat stepped in it (or a load replaced the state)
            return
        stepped = " and ".join(f"seat {p}" for p, m in enumerate(moved) if m)
        raise RuntimeError(
            f"Trainer.{what}: iteration {iteration + 1} was cut short (an interrupt inside "
            f"the step, or an error in it) after {stepped} had stepped, so the seats are out of "
            "step with the trainer's count and a checkpoint of them could not be loaded; go on "
            "from the last checkpoint (Trainer.load) or a new Trainer (a single Ctrl-C waits "
            "for the step to finish and keeps them in step)"
        )

    def _stop_reason(self, limits: _Limits) -> str | None:
        """Which budget is spent (checked in the order iterations, seconds, work), or None."""
        if limits.iteration is not None and self.iteration >= limits.iteration:
            return "iterations"
        if limits.train_seconds is not None and self.train_seconds >= limits.train_seconds:
            return "seconds"
        if limits.work is not None and self.work_done() >= limits.work:
            return "work"
        return None

    def _after_step(self, metrics: dict[str, Any], bar: Any) -> bool:
        """Callbacks, progress, scheduled evaluation and checkpoint after one step; True when a
        callback asked to stop."""
        callbacks = self.callbacks
        stop = bool(callbacks.callbacks) and callbacks.on_step(self, metrics) is False
        if bar is not None:
            bar.update(1)
        schedule = self.eval_schedule
        if schedule.active and schedule.due(
            self.iteration, self.train_seconds, self._last_eval_train_seconds
        ):
            record = self.evaluate()
            if bar is not None:
                bar.set_postfix(nash_conv=f"{record.nash_conv:.3g}", refresh=False)
            stop = callbacks.on_eval(self, record) is False or stop
        every, path = self.checkpoint_every, self.checkpoint_path
        if every is not None and path is not None and self.iteration % every == 0:
            self.save(path)  # checkpoint_every is refused without a path (_check_trainer_args)
        return stop

    def _finish(self, stopped_by: str) -> TrainResult:
        """The final evaluation (if the last iteration has none), the last checkpoint, and the
        result handed to the callbacks."""
        if self.final_eval and (not self._history or self._history[-1].iteration != self.iteration):
            self.callbacks.on_eval(self, self.evaluate())
        self.checkpoint_error = None
        if self.checkpoint_path is not None:
            try:
                self.save(self.checkpoint_path)
            except OSError as err:
                # A full disk at the very end cost the whole run: the result, in memory, was
                # thrown away with the checkpoint, and the command line wrote no output. The
                # result is returned; the checkpoint written before, if any, stays.
                self.checkpoint_error = err
                warnings.warn(
                    f"the run's final checkpoint could not be written: {err}",
                    stacklevel=3,
                )
        result = self.result(stopped_by)
        self.callbacks.on_training_end(self, result)
        return result

    def work_done(self) -> int:
        """Work so far: nodes touched plus env steps, summed over both seats."""
        return sum(lr.nodes_touched + lr.env_steps for lr in self.learners)

    def _progress_bar(self, iterations: int | None) -> Any:
        if self.progress is False or (self.progress is None and not sys.stderr.isatty()):
            return None  # None: a bar only on a terminal; True: always (notebooks, logs)
        names = " vs ".join(lr.name for lr in self.learners)
        return progress_bar(
            total=iterations, desc=f"{names} on {self.game.display_id}", unit="it", leave=False
        )

    def result(self, stopped_by: str = "iterations") -> TrainResult:
        """The run so far as a :class:`TrainResult`."""
        return TrainResult(
            game_id=self.game.id,
            learners=tuple(lr.name for lr in self.learners),
            seeds=tuple(lr.seed for lr in self.learners),
            seed=self.seed,
            schedule=self.schedule,
            iterations=self.iteration,
            train_seconds=self.train_seconds,
            eval_seconds=self.eval_seconds,
            stopped_by=stopped_by,
            history=self.history,
            average_policy=self.average_policy(),
            configs=tuple(lr.config.to_dict() for lr in self.learners),
        )

    # --- checkpoints ---------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        return {
            "format": TRAINER_FORMAT,
            **version_stamp(),
            "game": self.game.name,
            "game_params": self.game.params,
            "game_id": self.game.id,
            "learners": [lr.name for lr in self.learners],
            "seed": self.seed,
            "schedule": self.schedule,
            "eval_schedule": self.eval_schedule.to_dict(),
            "evaluate_seats": self.evaluate_seats,
            "final_eval": self.final_eval,
            "iteration": self.iteration,
            "train_seconds": self.train_seconds,
            "eval_seconds": self.eval_seconds,
            "last_eval_train_seconds": self._last_eval_train_seconds,
            "history": [record.to_dict() for record in self._history],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write one checkpoint file atomically: both learners and the trainer state.

        A learner in this process writes its checkpoint to an unnamed temporary file beside
        ``path``, copied into the trainer's file from there, one seat at a time: held as
        bytes, the seats' checkpoints raised the peak memory of a save by their size (1.4 GB
        on a 42-million-history game). The disk then holds, for a moment, the old checkpoint,
        the new one and one seat's file (about half a checkpoint). A seat in a worker process
        (``processes=2``), or a learner class that makes its own
        :meth:`~nashzoo.agents.Learner.checkpoint_bytes`, gives bytes."""
        self._refuse_if_torn("save")
        with atomic_file(path) as handle, contextlib.closing(self._seat_files(path)) as seats:
            write_trainer_checkpoint(handle, self._state(), seats)

    def _seat_files(self, path: str | os.PathLike[str]) -> Generator[bytes | BinaryIO]:
        """Each seat's checkpoint in turn, a local learner's in a temporary file beside
        ``path`` that is gone once the next seat is asked for (or the generator closed)."""
        for learner in self.learners:
            if not isinstance(learner, Learner) or _own_checkpoint_bytes(learner):
                yield learner.checkpoint_bytes()
                continue
            with tempfile.TemporaryFile(dir=Path(path).parent) as seat_file:
                learner.write_checkpoint(seat_file)
                seat_file.seek(0)
                yield seat_file

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        callbacks: Callback | Iterable[Callback] | None = None,
        progress: bool | None = None,
        checkpoint_path: str | os.PathLike[str] | None = None,
        checkpoint_every: int | None = None,
        processes: int = 1,
        device: str | None = None,
    ) -> Trainer:
        """Resume a Trainer saved by :meth:`save`; training continues exactly where it stopped.

        Callbacks, progress, checkpoint settings and ``processes`` are not stored (they are code
        and local choices): pass them again. ``device`` rebuilds the torch learners there
        instead of where they were trained (``"cpu"`` for a run saved on a GPU machine); the
        run then goes on with the other device's float arithmetic.

        Raises:
            CheckpointError: a missing, corrupt or foreign file (the message says which).
        """
        checkpoint = read_trainer_checkpoint(path)
        state = checkpoint.state
        try:
            learners = seat_learners(checkpoint, name=str(path), device=device)
            schedule = EvalSchedule(**state["eval_schedule"])
            trainer = cls(
                checkpoint.game,
                learners[0],
                learners[1],
                seed=state["seed"],
                schedule=state["schedule"],
                eval_every=schedule,
                evaluate_seats=state["evaluate_seats"],
                final_eval=state["final_eval"],
                callbacks=callbacks,
                progress=progress,
                checkpoint_path=checkpoint_path,
                checkpoint_every=checkpoint_every,
                processes=processes,
            )
            trainer.iteration = int(state["iteration"])
            trainer.train_seconds = float(state["train_seconds"])
            trainer.eval_seconds = float(state["eval_seconds"])
            trainer._last_eval_train_seconds = float(state["last_eval_train_seconds"])
            trainer._history = [EvalRecord.from_dict(row) for row in state["history"]]
        except CheckpointError:
            raise  # already names the file and the seat
        except Exception as err:
            raise CheckpointError(
                f"{path}: trainer checkpoint contents are inconsistent ({cause(err)})"
            ) from None
        for p, learner in enumerate(trainer.learners):
            if learner.iterations != trainer.iteration:
                raise CheckpointError(
                    f"{path}: seat {p} has done {learner.iterations} iterations but the trainer "
                    f"{trainer.iteration}; the file is inconsistent"
                )
        return trainer

    def __repr__(self) -> str:
        names = " vs ".join(lr.name for lr in self.learners)
        return f"<Trainer {names} on {self.game.display_id}, iteration {self.iteration}>"


def _own_checkpoint_bytes(learner: Learner) -> bool:
    """Whether ``learner``'s class makes its checkpoint's bytes its own way (a plugin may):
    then those bytes are what a trainer's checkpoint holds, not what
    :meth:`Learner.write_checkpoint` writes."""
    return type(learner).checkpoint_bytes is not Learner.checkpoint_bytes


def train(
    game: Game | str,
    learner: LearnerSpec,
    opponent: LearnerSpec | None = None,
    *,
    iterations: int | None = None,
    seconds: float | None = None,
    eval_every: int | str | EvalSchedule | None = None,
    seed: int = 0,
    work: int | None = None,
    config: LearnerConfig | dict[str, Any] | None = None,
    opponent_config: LearnerConfig | dict[str, Any] | None = None,
    **trainer_options: Any,
) -> TrainResult:
    """Train ``learner`` against ``opponent`` and return the :class:`TrainResult`.

    Args:
        game: the game (or its name).
        learner: a registry name (``"cfr_plus"``) or a Learner. A name takes seat 0; a Learner
            keeps the seat it owns.
        opponent: the other seat: a name or a Learner. ``None`` means self-play: the same
            algorithm (and config) on the other seat.
        iterations: trainer iterations to run (one step of each seat each).
        seconds: training seconds to run (evaluation excluded); with ``iterations`` too,
            whichever comes first.
        work: work to do (nodes touched + env steps over both seats); with the other budgets,
            whichever comes first.
        eval_every: ``None`` (default: no evaluation inside the timed loop; one final
            evaluation outside it), an int, ``"log"`` or an :class:`EvalSchedule`.
        seed: trainer seed; each seat's learner seed derives from it (``SeedSequence``).
        config: config of ``learner`` when given by name.
        opponent_config: config of ``opponent`` when given by name (defaults to ``config`` in
            self-play).
        **trainer_options: any other :class:`Trainer` keyword (``schedule``, ``eval_seconds``,
            ``callbacks``, ``progress``, ``checkpoint_path``, ``checkpoint_every``,
            ``evaluate_seats``, ``final_eval``, ``processes``).

    Returns:
        The :class:`TrainResult`: ``average_policy`` (joint), ``history`` (records), ...
    """
    game = load_game(game)
    seat = learner.seat if isinstance(learner, Learner) else 0
    other = 1 - seat
    seeds = seat_seeds(seed)
    if opponent is None:
        if isinstance(learner, Learner):
            opponent = learner_class(learner.name)(game, other, learner.config, seed=seeds[other])
        else:
            opponent = learner
            if opponent_config is None:
                opponent_config = config
    specs: list[LearnerSpec] = [learner, opponent] if seat == 0 else [opponent, learner]
    configs: list[Any] = [config, opponent_config] if seat == 0 else [opponent_config, config]
    trainer = Trainer(
        game,
        specs[0],
        specs[1],
        configs=configs,
        seed=seed,
        eval_every=eval_every,
        **trainer_options,
    )
    return trainer.run(iterations=iterations, seconds=seconds, work=work)


def _check_trainer_args(
    game: Game,
    schedule: str,
    configs: Sequence[Any],
    checkpoint_path: Any,
    checkpoint_every: Any,
) -> None:
    """The :class:`Trainer` arguments that are checked before any learner is built."""
    if game.num_players != 2:
        raise ValueError(
            f"the Trainer pairs two learners; {game.display_id} has {game.num_players} players"
        )
    histories = game.num_histories()
    if histories is not None:
        # The run's evaluations and its result's tabular policy need the whole tree: a game
        # too big to compile is refused now, not once every iteration has been trained.
        limits.check_counted(game.id, histories)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if len(configs) != 2:
        raise ValueError(f"configs needs one entry per seat (2), got {len(configs)}")
    if checkpoint_every is not None and (
        not isinstance(checkpoint_every, int) or checkpoint_every < 1
    ):
        raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
    if checkpoint_every is not None and checkpoint_path is None:
        raise ValueError("checkpoint_every needs checkpoint_path= (the file to write)")


def _check_processes(processes: Any, schedule: str) -> None:
    if isinstance(processes, bool) or processes not in (1, 2):
        raise ValueError(f"processes must be 1 or 2 (one per seat at most), got {processes!r}")
    if processes == 2 and schedule != "simultaneous":
        raise ValueError(
            "processes=2 steps both seats at once, which is the 'simultaneous' schedule; pass "
            f"schedule='simultaneous' (got {schedule!r}: seat 1 would have to wait for seat 0)"
        )
    if processes == 2:
        check_can_start_a_worker()


class _WholeSteps:
    """Ctrl-C during a trainer step takes effect when the step is done, so that both seats
    have stepped (or neither) and the trainer stays consistent: interrupted between its seats'
    steps, a trainer in a notebook had one seat an iteration ahead, and the checkpoint it then
    saved was refused by :meth:`Trainer.load`. A second Ctrl-C interrupts at once. Installed
    only in the main thread, and only where Ctrl-C has Python's default handler (under
    :class:`~nashzoo.train.callbacks.StopOnInterrupt`, which stops after the step anyway, or a
    handler of the caller's own, nothing changes)."""

    def __init__(self) -> None:
        self.in_step = False
        self._pending = False
        self._installed = False

    def __enter__(self) -> _WholeSteps:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.in_step:
            raise KeyboardInterrupt
        self._pending = True
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the second one: at once
        with contextlib.suppress(OSError):  # (a terminal gone: the print is not the point)
            # said at once: a step of seconds (a neural learner's) read as a Ctrl-C ignored,
            # and a second one then cut the step short
            print(
                "\ninterrupting after this step, when both seats have stepped (Ctrl-C again "
                "to interrupt at once)",
                file=sys.stderr,
            )

    def raise_if_interrupted(self) -> None:
        """Raise the KeyboardInterrupt that came during the step just finished."""
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt


@dataclass(frozen=True)
class _Limits:
    """Where one :meth:`Trainer.run` stops: absolute iteration, training seconds and work (None:
    no limit of that kind)."""

    iteration: int | None
    train_seconds: float | None
    work: int | None


def _checked_budget(iterations: Any, seconds: Any, work: Any) -> int | None:
    """Check :meth:`Trainer.run`'s budgets; return ``iterations`` as a plain int (or None)."""
    if iterations is None and seconds is None and work is None:
        raise ValueError("give iterations=, seconds= or work= (or several) to bound the run")
    if work is not None and not is_whole_number(work, 1):
        raise ValueError(f"work must be a positive int, got {work!r}")
    if iterations is not None and not is_whole_number(iterations):
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    if seconds is not None and not (is_finite_number(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number, got {seconds!r}")
    return None if iterations is None else int(iterations)
