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
``exploitability_vs_time.png``, ``exploitability_vs_work.png`` (each self-played learner's
median over seeds with a min-to-max band, :func:`nashzoo.eval.plots.convergence_figure`) and
``crossplay_heatmap.png`` (each cell's mean over seeds, the lowest and highest seed under it);
per run: the final joint average policy (``average_policy.json``, re-checkable with
``nashzoo eval``) and the trainer checkpoint (``checkpoint.npz``).

Work: a run's work is nodes touched plus env steps summed over both seats (an env step touches
one history), so model-based and model-free learners share one axis.

The package: :mod:`.config` (settings and plan), :mod:`.backends` (where runs go),
:mod:`.storage` (run files and resume), :mod:`.report` (CSV, JSON, plots), :mod:`.summary`
(leaderboard, verdicts and the Markdown) and :mod:`.runner` (:func:`run_race`).
"""

from nashzoo.train.race.backends import RaceReportError, run_job
from nashzoo.train.race.config import BACKENDS, RaceConfig, RaceJob, plan, usable_learners
from nashzoo.train.race.report import PLOT_FILES, RaceOutcome, write_reports
from nashzoo.train.race.runner import RACE_OUTPUTS, run_race
from nashzoo.train.race.storage import RACE_CONFIG_FILE, stored_race_config

__all__ = [
    "BACKENDS",
    "PLOT_FILES",
    "RACE_CONFIG_FILE",
    "RACE_OUTPUTS",
    "RaceConfig",
    "RaceJob",
    "RaceOutcome",
    "RaceReportError",
    "plan",
    "run_job",
    "run_race",
    "stored_race_config",
    "usable_learners",
    "write_reports",
]
