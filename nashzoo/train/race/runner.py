"""Running a race: claim and lock the folder, keep what a resumed race finished, run the
rest on the chosen backend with live progress, then write the reports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import os
import shutil
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from nashzoo.agents.registry import same_plugins
from nashzoo.extras import require
from nashzoo.games.base import display_id, short_repr
from nashzoo.games.limits import check_counted_game
from nashzoo.games.progress import progress_bar
from nashzoo.games.registry import load_game
from nashzoo.io import (
    atomic_write_bytes,
    check_output_folder,
    folder_lock,
    remove_stale_temp_files,
)
from nashzoo.io.folder_kinds import refuse_other_kinds
from nashzoo.io.provenance import code_id
from nashzoo.train.loggers import require_logger
from nashzoo.train.race.backends import _execute, check_workers_can_import
from nashzoo.train.race.config import RaceConfig, RaceJob, plan
from nashzoo.train.race.report import PLOT_FILES, RaceOutcome, write_reports
from nashzoo.train.race.storage import RACE_CONFIG_FILE, _job_dict, _stored


def _standings(results: Iterable[dict[str, Any]], top: int = 3) -> str:
    """The live leaderboard for the progress bar: the self-play learners with the lowest median
    final exploitability over their finished runs so far (the report's statistic)."""
    finals: dict[str, list[float]] = {}
    for res in results:
        learners = res["job"]["learners"]
        if learners[0] == learners[1]:
            finals.setdefault(learners[0], []).append(res["history"][-1]["exploitability"])
    ranked = sorted((statistics.median(v), name) for name, v in finals.items())
    return "leaders: " + ", ".join(f"{name} {value:.2g}" for value, name in ranked[:top])


def run_race(config: RaceConfig, *, progress: bool = True, stream: Any = None) -> RaceOutcome:
    """Run (or resume) a race and write every output; see :mod:`nashzoo.train.race`.

    ``out`` is checked before any work and locked while the race writes it (a second race on
    the same folder is refused); a folder that already holds a race is refused unless
    ``config.resume`` (finish it) or ``config.force`` (delete it and start over); temporary
    files a killed race left are removed. A failure to report a finished run (writing its line
    to ``stream``) stops the race with :class:`~nashzoo.train.race.RaceReportError`, naming the
    run, which stays saved (a resume keeps it), not counted failed.
    """
    _refuse_in_a_workers_import()
    _require_extras(config)
    # A game too big to compile would fail every run in its worker, and a resume alike.
    check_counted_game(load_game(config.game))
    jobs, skipped = plan(config)
    check_workers_can_import(config, len(jobs), skipped)
    out = check_output_folder(config.out)
    with folder_lock(out, "--out folder"):
        remove_stale_temp_files(out)
        _claim(out, config)
        return _run_locked(config, out, progress, stream or sys.stdout)


RACE_OUTPUTS = ("results.csv", "summary.json", "summary.md")


def _refuse_in_a_workers_import() -> None:
    """Refuse a race started while a worker process imports the caller's script. Each worker
    starts by importing the script again (the ``spawn`` start method), so a ``run_race`` call
    not under ``if __name__ == "__main__":`` runs once more in every worker, where it found the
    folder locked by the real race and the race reported each run as a crashed worker.
    (``_inheriting`` is how multiprocessing itself tells that phase.)"""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(
            "run_race was called while a race worker imported your script: each worker "
            'imports it again, so put the call under if __name__ == "__main__": (the '
            "command line, nashzoo race, needs nothing)"
        )


def _require_extras(config: RaceConfig) -> None:
    """Refuse, before the folder is claimed or any run starts, what the race would need at
    its end or in each run but cannot have: plots without matplotlib, a logger without its
    packages, the Ray backend without Ray."""
    from nashzoo.eval.plots import require_matplotlib

    if config.plots:
        require_matplotlib(otherwise="or race without plots (--no-plots; plots=False)")
    if config.logger is not None:
        require_logger(config.logger)
    if config.backend == "ray":
        require("backend 'ray'", "ray", "ray")


def _claim(out: Path, config: RaceConfig) -> None:
    """Refuse to start over a race already in ``out``, unless resuming it or forced to, and
    a folder that holds a training run or a tournament whatever the options (the outputs would
    be mixed)."""
    refuse_other_kinds(out, "race", FileExistsError)
    existing = [n for n in (RACE_CONFIG_FILE, "runs", *RACE_OUTPUTS) if (out / n).exists()]
    if config.resume:
        _refuse_other_plugins(out, config)
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


def _refuse_other_plugins(out: Path, config: RaceConfig) -> None:
    """A race resumes with the plugin modules it was started with (they define its learners,
    in every worker). From Python a resume with other ones (``plugins`` left at its default
    included) ran the finished runs again, each failing with ``unknown learner``, and replaced
    their results with the errors; the command line refused it, and now so does this."""
    try:
        stored = json.loads((out / RACE_CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return  # none yet, or unreadable: the resume's own checks say so
    plugins = stored.get("plugins") if isinstance(stored, dict) else None
    if not isinstance(plugins, list) or same_plugins(config.plugins, plugins):
        return
    raise ValueError(
        f"resume=True finishes the race in {out} with the plugin modules it was started with, "
        f"plugins={tuple(plugins)!r}, but this one has plugins={tuple(config.plugins)!r}: pass "
        "the stored ones (on the command line, --resume takes them when --plugin is left out), "
        "or start a new race (force=True or another out); its finished runs would otherwise be "
        "run again without their learners"
    )


def _run_locked(config: RaceConfig, out: Path, progress: bool, stream: Any) -> RaceOutcome:
    jobs, skipped = plan(config)
    if not jobs and not skipped:
        raise ValueError("cross-play needs at least two learners (or add self-play)")
    if not jobs:
        raise ValueError(
            f"no learner can play {display_id(config.game)}: "
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
        with contextlib.suppress(OSError):  # the report below matters more than this line
            print(
                f"\ninterrupted: {len(results)} of {len(jobs)} runs are saved in {out}; "
                "run again with --resume (from Python: resume=True) to finish the rest",
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
    print(f"results written to {out}/ ({_written(out)})", file=stream)
    return outcome


def _written(out: Path) -> str:
    """The report files the race left in ``out``, in words: results.csv and the plots only
    where there were finished runs to put in them."""
    names = [
        name for name in ("results.csv", "summary.json", "summary.md") if (out / name).exists()
    ]
    if any((out / name).exists() for name in PLOT_FILES):
        names.append("plots")
    return ", ".join(names)


def _write_race_config(out: Path, config: RaceConfig, jobs: Sequence[RaceJob]) -> None:
    """``race_config.json``: the race's settings and its planned run ids (what resume checks).
    The ``--config`` file is stored as an absolute path, so a resume from another folder
    reads the same file."""
    fields = dataclasses.asdict(config)
    if config.config_file is not None:
        fields["config_file"] = os.path.abspath(config.config_file)
    atomic_write_bytes(
        out / RACE_CONFIG_FILE,
        json.dumps({**fields, "run_ids": [j.run_id for j in jobs]}, indent=1).encode(),
    )


def _stored_and_todo(
    config: RaceConfig, out: Path, jobs: Sequence[RaceJob], stream: Any
) -> tuple[dict[str, dict[str, Any]], list[RaceJob]]:
    """The runs a resumed race keeps (stored, intact, same job) and the jobs left to run."""
    results: dict[str, dict[str, Any]] = {}
    todo = []
    changes: dict[str, int] = {}  # what changed -> how many stored runs it changed
    for job in jobs:
        stored, problem = _stored(out, job) if config.resume else (None, "")
        if stored is not None and _same_job(stored.get("job"), _job_dict(job)):
            results[job.run_id] = stored
            continue
        if stored is not None:
            change = _job_changes(stored.get("job"), _job_dict(job))
            changes[change] = changes.get(change, 0) + 1
        if problem:
            print(f"resuming: {problem}; running {job.run_id} again", file=stream)
        todo.append(job)
    if config.resume and results:
        print(f"resuming: {len(results)} of {len(jobs)} runs already finished", file=stream)
        other = sum(res.get("code") != code_id() for res in results.values())
        if other and todo:
            print(
                f"resuming: {other} of the finished runs were timed by other nashzoo code (an "
                "older version, or edited source); their seconds are not comparable with the "
                "new runs' (summary.md says so; --force runs the whole race with this code)",
                file=stream,
            )
    if changes:
        shown = [f"{change} ({n} run{'s' * (n != 1)})" for change, n in list(changes.items())[:3]]
        more = f"; and {len(changes) - 3} other changes" if len(changes) > 3 else ""
        print(
            f"resuming: {sum(changes.values())} stored run(s) had other settings and will be "
            f"run again: {'; '.join(shown)}{more}",
            file=stream,
        )
    return results, todo


def _job_changes(stored: Any, job: dict[str, Any]) -> str:
    """What differs between a stored run's job and ``job``, for the resume's message:
    ``budget_iterations 20 -> 10``, or a learner's setting as ``regret_matching.mode
    'full' -> 'sampled'`` (a default changed by a newer nashzoo shows up the same way)."""
    if not isinstance(stored, dict):
        return "its stored job is unreadable"
    parts: list[str] = []
    for key, now in job.items():
        before = stored.get(key)
        if before == now or (
            key == "plugins" and isinstance(before, list) and same_plugins(before, now)
        ):
            continue
        if key == "configs" and isinstance(before, list) and len(before) == len(now):
            for name, old, new in zip(job["learners"], before, now, strict=True):
                if not isinstance(old, dict):
                    parts.append(f"{name}'s settings")
                    continue
                for field in sorted(set(old) | set(new), key=str):
                    if old.get(field, _UNSET) != new.get(field, _UNSET):
                        parts.append(
                            f"{name}.{field} {_shown(old.get(field, _UNSET))} -> "
                            f"{_shown(new.get(field, _UNSET))}"
                        )
            continue
        parts.append(f"{key} {short_repr(before)} -> {short_repr(now)}")
    return ", ".join(dict.fromkeys(parts)) or "its stored job"  # a self-play run's seats agree


_UNSET = object()


def _shown(value: Any) -> str:
    return "unset" if value is _UNSET else short_repr(value)


def _same_job(stored: Any, job: dict[str, Any]) -> bool:
    """Whether a stored run's job is ``job``: every field equal, the plugins as a set (a race
    resumed with its plugins in another order keeps its runs: :func:`same_plugins`)."""
    plugins = stored.get("plugins") if isinstance(stored, dict) else None
    if not isinstance(plugins, list) or not all(isinstance(m, str) for m in plugins):
        return stored == job
    return {**stored, "plugins": job["plugins"]} == job and same_plugins(
        stored["plugins"], job["plugins"]
    )


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
        bar = progress_bar(
            total=len(todo), desc=f"race on {display_id(config.game)}", unit="run", file=sys.stderr
        )

    output_gone = False

    def on_done(payload: dict[str, Any]) -> None:
        nonlocal output_gone
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
        if output_gone:
            return
        try:
            if bar is not None:
                bar.write(line, file=stream)
                bar.set_postfix_str(_standings(results.values()), refresh=False)
                bar.update(1)
            else:
                print(line, file=stream)
        except BrokenPipeError:
            raise  # ``race ... | head``: the reader went away (the race stops, runs kept)
        except OSError:
            # A terminal hung up (EIO) or a log's disk full (ENOSPC): the race goes on and
            # writes its report; a failed line used to stop it as a failed report.
            output_gone = True

    return bar, on_done
