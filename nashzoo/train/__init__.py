"""Training: pair two learners (self-play or cross-play), schedule their updates, evaluate the
joint average policy exactly, checkpoint and resume.

``train(game, "cfr_plus", iterations=1000)`` is the one-call API; :class:`Trainer` is the
object behind it.
"""

from nashzoo.train.callbacks import (
    Callback,
    CallbackList,
    LambdaCallback,
    PrintEval,
    StopOnExploitability,
    StopOnInterrupt,
)
from nashzoo.train.result import EvalRecord, TrainResult, write_csv
from nashzoo.train.schedule import EvalSchedule
from nashzoo.train.threads import limit_threads
from nashzoo.train.trainer import SCHEDULES, Trainer, seat_seeds, train

__all__ = [
    "SCHEDULES",
    "Callback",
    "CallbackList",
    "EvalRecord",
    "EvalSchedule",
    "LambdaCallback",
    "PrintEval",
    "StopOnExploitability",
    "StopOnInterrupt",
    "TrainResult",
    "Trainer",
    "limit_threads",
    "seat_seeds",
    "train",
    "write_csv",
]
