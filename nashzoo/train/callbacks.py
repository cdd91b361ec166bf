"""Callbacks (Stable-Baselines3 style): hooks the Trainer calls during a run.

Override any of :class:`Callback`'s hooks. ``on_step`` and ``on_eval`` may return ``False`` to
stop training (``None`` or ``True`` continue). Callback time is not counted on the run's time
axis.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

if TYPE_CHECKING:
    from nashzoo.train.result import EvalRecord, TrainResult
    from nashzoo.train.trainer import Trainer


class Callback:
    """Base class: every hook does nothing by default."""

    def on_training_start(self, trainer: Trainer) -> None:
        """Called at the start of :meth:`Trainer.run`."""

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        """Called after every trainer iteration; return ``False`` to stop.

        ``metrics`` has ``iteration``, ``train_seconds`` and ``seats`` (each seat's step
        metrics, including its cumulative work).
        """
        return None

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        """Called after every evaluation (the record is already in the history); return
        ``False`` to stop."""
        return None

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        """Called once :meth:`Trainer.run` has its result."""


def _asks_to_stop(answer: Any) -> bool:
    """A callback's answer means "stop": ``False``, numpy's ``False`` included (a comparison
    of numpy numbers gives one); ``None`` and anything else go on."""
    return answer is False or (answer.__class__ is np.bool_ and not answer)


class CallbackList(Callback):
    """Several callbacks as one; training stops if any of them asks to."""

    def __init__(self, callbacks: Iterable[Callback]) -> None:
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(
                    f"callbacks must be nashzoo.train.Callback instances, got "
                    f"{type(cb).__name__}; wrap a function with LambdaCallback(on_eval=fn)"
                )

    def on_training_start(self, trainer: Trainer) -> None:
        for cb in self.callbacks:
            cb.on_training_start(trainer)

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        results = [cb.on_step(trainer, metrics) for cb in self.callbacks]
        return False if any(map(_asks_to_stop, results)) else None

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        results = [cb.on_eval(trainer, record) for cb in self.callbacks]
        return False if any(map(_asks_to_stop, results)) else None

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        for cb in self.callbacks:
            cb.on_training_end(trainer, result)


class LambdaCallback(Callback):
    """A callback from plain functions (each optional, same signatures as the hooks)."""

    def __init__(
        self,
        on_step: Callable[[Trainer, dict[str, Any]], bool | None] | None = None,
        on_eval: Callable[[Trainer, EvalRecord], bool | None] | None = None,
        on_training_start: Callable[[Trainer], None] | None = None,
        on_training_end: Callable[[Trainer, TrainResult], None] | None = None,
    ) -> None:
        self._on_step = on_step
        self._on_eval = on_eval
        self._on_start = on_training_start
        self._on_end = on_training_end

    def on_training_start(self, trainer: Trainer) -> None:
        if self._on_start is not None:
            self._on_start(trainer)

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        return None if self._on_step is None else self._on_step(trainer, metrics)

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        return None if self._on_eval is None else self._on_eval(trainer, record)

    def on_training_end(self, trainer: Trainer, result: TrainResult) -> None:
        if self._on_end is not None:
            self._on_end(trainer, result)


class StopOnExploitability(Callback):
    """Stop once an evaluation reaches ``target`` or lower.

    Args:
        target: the threshold.
        metric: ``"nash_conv"`` (default) or ``"exploitability"`` (NashConv / players).
    """

    def __init__(self, target: float, metric: str = "nash_conv") -> None:
        if metric not in ("nash_conv", "exploitability"):
            raise ValueError(f"metric must be 'nash_conv' or 'exploitability', got {metric!r}")
        if not target > 0:
            raise ValueError(f"target must be positive, got {target!r}")
        self.target = float(target)
        self.metric = metric
        self.reached_at: EvalRecord | None = None

    def on_training_start(self, trainer: Trainer) -> None:
        if not trainer.eval_schedule.active:
            raise ValueError(
                "StopOnExploitability acts on evaluations, and this run evaluates only at its "
                "end: give eval_every (e.g. eval_every='log' or eval_every=100)"
            )

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        if getattr(record, self.metric) <= self.target:
            self.reached_at = record
            return False
        return None


class StopOnInterrupt(Callback):
    """Ctrl-C ends the run at the end of the current step instead of inside it, so the run
    finishes as if its budget were spent there: the final evaluation, the last checkpoint and
    the result all hold every finished iteration. A second Ctrl-C interrupts at once. (The
    command line routes SIGTERM to the same handler, so ``kill PID`` stops ``nashzoo train``
    the same way.)

    Active only inside :meth:`armed` (which installs the SIGINT handler, in the main thread
    only, and restores the previous one on the way out). ``interrupted`` says whether the
    last armed stretch was interrupted; entering :meth:`armed` again clears it, and so does a
    run started outside it (in a notebook, one Ctrl-C stopped every later run of the trainer
    after a single step)."""

    def __init__(self) -> None:
        self.interrupted = False
        self._armed = 0

    @contextlib.contextmanager
    def armed(self) -> Iterator[StopOnInterrupt]:
        """Context manager: Ctrl-C inside it asks the run to stop after the current step."""
        self.interrupted = False
        if threading.current_thread() is not threading.main_thread():
            yield self  # signal handlers belong to the main thread: Ctrl-C works as usual
            return
        previous = signal.getsignal(signal.SIGINT)

        def ask_to_stop(signum: int, frame: Any) -> None:
            self.interrupted = True
            signal.signal(signal.SIGINT, previous)  # the second Ctrl-C interrupts at once
            # The command line hands SIGTERM here too (nashzoo.cli.main); so may a user's code.
            again = "Ctrl-C again" if signum == signal.SIGINT else f"another {_name(signum)}"
            with contextlib.suppress(OSError):  # in a signal handler: a failed print (the
                # terminal that sent SIGHUP is gone) would raise inside the step
                print(
                    f"\nstopping after this step ({again} to interrupt at once, losing the "
                    "steps since the last checkpoint)",
                    file=sys.stderr,
                )

        signal.signal(signal.SIGINT, ask_to_stop)
        self._armed += 1
        try:
            yield self
        finally:
            self._armed -= 1
            signal.signal(signal.SIGINT, previous)

    def on_training_start(self, trainer: Trainer) -> None:
        if not getattr(self, "_armed", 0):  # an earlier armed run's Ctrl-C is not this run's
            self.interrupted = False

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        return False if self.interrupted else None


def _name(signum: int) -> str:
    """A signal's name (SIGTERM), or its number where the platform has no name for it."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class PrintEval(Callback):
    """Print one line per evaluation (iteration, training seconds, NashConv, per seat)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._reader_gone = False

    def on_eval(self, trainer: Trainer, record: EvalRecord) -> bool | None:
        if self._reader_gone:
            return None
        seats = ""
        if record.seat_exploitability is not None:
            seats = "  seats " + " ".join(f"{v:.3g}" for v in record.seat_exploitability)
        try:
            print(
                f"iter {record.iteration:>8d}  {record.train_seconds:9.3f}s  "
                f"NashConv {record.nash_conv:.6g}{seats}",
                file=self.stream or sys.stdout,
            )
        except OSError:
            # The output is gone, and the run goes on: ``train ... | head`` (a broken pipe), a
            # terminal hung up (EIO, an ssh session dropped) or a log's disk full (ENOSPC).
            # The run's files are what matters; they used to be lost to the line's failure.
            self._reader_gone = True
        return None


def as_callback(callbacks: Callback | Iterable[Callback] | None) -> CallbackList:
    """Normalise the ``callbacks=`` argument to one :class:`CallbackList`."""
    if callbacks is None:
        return CallbackList([])
    if isinstance(callbacks, Callback):
        return CallbackList([callbacks])
    if not isinstance(callbacks, Iterable) or isinstance(callbacks, (str, bytes)):
        # a function passed as is was "'function' object is not iterable"
        raise TypeError(
            f"callbacks must be a nashzoo.train.Callback or a list of them, got "
            f"{type(callbacks).__name__}; wrap a function with LambdaCallback(on_eval=fn)"
        )
    return CallbackList(callbacks)
