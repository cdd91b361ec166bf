"""When a run evaluates: every k iterations, at log-spaced iterations, and/or every s seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nashzoo.games.base import is_finite_number, is_whole_number


@dataclass(frozen=True)
class EvalSchedule:
    """Evaluation points of a run; any combination of the three triggers (all ``None``: never).

    Attributes:
        every: evaluate every ``every`` trainer iterations (default ``None``).
        per_decade: evaluate at about ``per_decade`` log-spaced iterations per factor of ten:
            ``round(10 ** (k / per_decade))`` for ``k = 0, 1, ...`` (duplicates dropped), which
            suits convergence plots on log axes (default ``None``).
        seconds: evaluate whenever ``seconds`` of training time (evaluation excluded) have
            passed since the last evaluation (default ``None``).
    """

    every: int | None = None
    per_decade: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("every", "per_decade"):
            value = getattr(self, name)
            if value is not None and not is_whole_number(value, 1):
                raise ValueError(f"EvalSchedule.{name} must be a positive integer, got {value!r}")
        if self.seconds is not None and not (is_finite_number(self.seconds) and self.seconds > 0):
            raise ValueError(f"EvalSchedule.seconds must be positive, got {self.seconds!r}")

    @property
    def active(self) -> bool:
        """Whether any evaluation happens inside the training loop."""
        return self.every is not None or self.per_decade is not None or self.seconds is not None

    @classmethod
    def coerce(cls, eval_every: Any = None, eval_seconds: float | None = None) -> EvalSchedule:
        """Build from the ``train``/``Trainer`` arguments.

        ``eval_every``: ``None`` (no evaluation inside the loop), a positive int ``k`` (every k
        iterations), ``"log"`` (10 log-spaced points per decade), or an ``EvalSchedule``.
        ``eval_seconds`` adds (or replaces) the seconds trigger.
        """
        if isinstance(eval_every, EvalSchedule):
            schedule = eval_every
        elif eval_every is None:
            schedule = cls()
        elif eval_every == "log":
            schedule = cls(per_decade=10)
        elif is_whole_number(eval_every, 1):
            schedule = cls(every=int(eval_every))
        else:
            raise ValueError(
                f"eval_every must be None, a positive int, 'log' or an EvalSchedule, "
                f"got {eval_every!r}"
            )
        if eval_seconds is not None:
            schedule = cls(schedule.every, schedule.per_decade, float(eval_seconds))
        return schedule

    def next_log_point(self, after: int) -> int | None:
        """The first log-spaced iteration strictly after ``after`` (``None`` without them)."""
        if self.per_decade is None:
            return None
        k = max(0, math.floor(self.per_decade * math.log10(max(after, 1))) - 1)
        while True:
            point = round(10 ** (k / self.per_decade))
            if point > after:
                return point
            k += 1

    def due(self, iteration: int, train_seconds: float, last_eval_seconds: float) -> bool:
        """Whether to evaluate after ``iteration`` iterations and ``train_seconds`` of training,
        the previous evaluation having been at ``last_eval_seconds`` of training time."""
        if self.every is not None and iteration % self.every == 0:
            return True
        if self.per_decade is not None and self.next_log_point(iteration - 1) == iteration:
            return True
        return self.seconds is not None and train_seconds - last_eval_seconds >= self.seconds

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (``every``, ``per_decade``, ``seconds``)."""
        return {"every": self.every, "per_decade": self.per_decade, "seconds": self.seconds}
