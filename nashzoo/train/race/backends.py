"""Where a race's runs go: one run (:func:`run_job`, a Trainer and its files), in this
process, in a pool of spawned processes that exit with their parent, or on a Ray cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from nashzoo.agents import import_plugins
from nashzoo.eval import expected_returns
from nashzoo.io import (
    atomic_write_bytes,
    exit_with_parent,
)
from nashzoo.io.provenance import code_id
from nashzoo.train.callbacks import Callback
from nashzoo.train.loggers import make_loggers, remove_logger_output
from nashzoo.train.race.config import RaceConfig, RaceJob
from nashzoo.train.race.storage import _digest
from nashzoo.train.result import EvalRecord
from nashzoo.train.schedule import EvalSchedule
from nashzoo.train.threads import limit_threads, usable_cpus
from nashzoo.train.trainer import Trainer


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


def run_job(
    job: RaceJob, out: str, placement: Mapping[str, int | None] | None = None
) -> dict[str, Any]:
    """Run one job and write its files; never raises for a failing learner (the error is
    recorded in ``error.json`` and returned). The run is held to one thread (runs are the unit
    of parallelism); the caller's thread settings are back when it returns (the serial backend
    runs jobs in the caller's process). ``placement``: how many runs went side by side with
    this one on how many usable CPUs (``runs_at_a_time``, ``usable_cpus``), kept in its
    result: a race resumed elsewhere reports how each of its runs ran."""
    with limit_threads():
        return _run_job(job, out, placement)


def _run_job(
    job: RaceJob, out: str, placement: Mapping[str, int | None] | None = None
) -> dict[str, Any]:
    folder = Path(out) / "runs" / job.run_id
    folder.mkdir(parents=True, exist_ok=True)
    for stale in ("result.json", "error.json"):
        (folder / stale).unlink(missing_ok=True)
    # A run run again (it failed, was cut off, or the race changed) starts its trackers afresh:
    # TensorBoard and W&B showed the old and the new attempt as one curve.
    remove_logger_output(folder)
    started = time.time()
    try:
        import_plugins(job.plugins)  # a spawned worker starts with only nashzoo's learners
        recorder = _RaceRecorder()
        trainer = _job_trainer(job, out, folder, recorder)
        with limit_threads():  # again: the learners may have loaded torch
            result = trainer.run(
                iterations=job.budget_iterations, seconds=job.budget_seconds, work=job.budget_work
            )
        result.average_policy.save(folder / "average_policy.json")
        trainer.save(folder / "checkpoint.npz")
        payload = _ok_payload(job, trainer, result, recorder, started, placement)
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
    callbacks: list[Callback] = [recorder, _StopWhenAsked()]
    if job.logger is not None:
        group = Path(out).resolve().name
        callbacks.extend(make_loggers(job.logger, folder, name=job.run_id, group=group))
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
    job: RaceJob,
    trainer: Trainer,
    result: Any,
    recorder: _RaceRecorder,
    started: float,
    placement: Mapping[str, int | None] | None = None,
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
        "code": code_id(),  # which code timed it: a resume says when runs' codes differ
    }
    if placement is not None:  # how it ran beside others (not on Ray: its cluster's to say)
        payload["placement"] = dict(placement)
    payload["checksum"] = _digest(payload)
    return payload


def check_workers_can_import(
    config: RaceConfig, num_jobs: int, skipped: Iterable[str] = ()
) -> None:
    """Refuse, before anything is written, a game or learner the race's worker processes could
    not find, so that every run would fail with 'unknown game' or 'unknown learner': one
    defined in an interactive ``__main__`` (a notebook, ``python -c``, stdin), and a learner
    from a module the caller imported but did not give as a plugin
    (:func:`_refuse_learners_from_modules_not_given`). ``skipped``: labels the plan leaves out
    (a learner whose extra is missing is skipped, not refused)."""
    workers = race_workers(config, num_jobs)
    if config.backend == "serial" or (config.backend == "process" and workers == 1):
        return  # the runs stay in this process
    from nashzoo.agents import learner_class
    from nashzoo.games.registry import factory_of

    left_out = set(skipped)
    classes: dict[str, type] = {}
    for label, setting in config.learner_settings().items():
        if label in left_out:
            continue
        with contextlib.suppress(ImportError, ValueError):  # said where the run needs it
            classes[label] = learner_class(setting.algorithm)
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    script = main is not None and bool(file) and not str(file).startswith("<")
    if config.backend == "ray" or not script:
        # (a script's workers run its top level again, imports included, under "spawn")
        _refuse_learners_from_modules_not_given(config, classes)
    if script or main is None:
        return
    found = []
    factory = factory_of(config.game)
    if getattr(factory, "__module__", None) == "__main__":
        found.append(f"game {config.game!r}")
    found += [
        f"learner {label!r}" for label, cls in classes.items() if cls.__module__ == "__main__"
    ]
    if found:
        raise ValueError(
            f"{' and '.join(found)} defined in this interactive session (a notebook, python -c "
            f"or stdin) cannot reach the race's {config.backend} workers, which import only "
            "modules: move the definition into a module and pass plugins=('that_module',) "
            "(--plugin on the command line), or race with backend='serial'"
        )


def _refuse_learners_from_modules_not_given(config: RaceConfig, classes: dict[str, type]) -> None:
    """Refuse a learner whose class comes from a module the workers would not import: one the
    caller imported (``import my_learners`` in a notebook) but did not give in ``plugins``.
    Every run failed in its worker with ``unknown learner``, after the folder was claimed,
    without naming the fix. A learner is found by the workers when it is nashzoo's own, when
    a plugin module (or one of its submodules) defines it, when a plugin's import registered
    it, or when a plugin module holds its class by name."""
    from nashzoo.agents.registry import is_nashzoos, registered_by_plugin

    plugins = tuple(config.plugins)
    missing: dict[str, list[str]] = {}
    for label, cls in classes.items():
        module = getattr(cls, "__module__", "") or ""
        if module == "__main__" or is_nashzoos(cls):
            continue
        if any(module == p or module.startswith(p + ".") for p in plugins):
            continue
        if registered_by_plugin(getattr(cls, "name", "")) in plugins:
            continue
        if any(cls in getattr(sys.modules.get(p), "__dict__", {}).values() for p in plugins):
            continue
        missing.setdefault(module, []).append(label)
    if missing:
        named = "; ".join(
            f"{', '.join(map(repr, labels))} from {m}" for m, labels in missing.items()
        )
        modules = tuple(dict.fromkeys((*plugins, *missing)))
        raise ValueError(
            f"the race's {config.backend} workers import only nashzoo and the plugin modules, "
            f"and these learners come from modules that are neither: {named}; pass "
            f"plugins={modules!r} (--plugin on the command line), or race with workers=1"
        )


def _execute(
    config: RaceConfig, jobs: list[RaceJob], on_done: Callable[[dict[str, Any]], None]
) -> None:
    out = str(config.out)
    if not jobs:
        return
    workers = race_workers(config, len(jobs))
    if config.backend == "process":
        _warn_if_oversubscribed(config, workers)
    if config.backend == "process" and workers > 1 and not _processes_can_share_locks():
        workers = 1  # the same runs, the same numbers, one at a time
    if config.backend == "process" and workers > 1 and not _may_start_processes():
        workers = 1
    if config.backend == "ray":
        _run_on_ray(config, jobs, out, workers, on_done)
        return
    serial = config.backend == "serial" or workers == 1
    placement = {"runs_at_a_time": 1 if serial else workers, "usable_cpus": usable_cpus()}
    if serial:
        for job in jobs:
            _report(on_done, run_job(job, out, placement), out)
        return
    _run_process_pool(jobs, out, workers, on_done, functools.partial(run_job, placement=placement))


def race_workers(config: RaceConfig, num_jobs: int) -> int:
    """How many runs go side by side: ``config.workers``, else one per CPU this process may
    use (:func:`~nashzoo.train.threads.usable_cpus`); never more than there are runs."""
    return max(1, min(config.workers or usable_cpus(), num_jobs))


def _warn_if_oversubscribed(config: RaceConfig, workers: int) -> None:
    """Warn where more runs go side by side than there are CPUs to run them: a run's seconds
    are wall clock, so runs sharing a CPU each train at a fraction of the speed of a run that
    had one alone, and their times and finals do not compare (two identical CFR+ runs sharing
    one core did 31-32k iterations in 2 s where a third did 77k alone, and ranked below it)."""
    cpus = usable_cpus()
    if workers > cpus and config.budget_seconds is not None:
        warnings.warn(
            f"{workers} runs side by side on {cpus} usable CPU{'s' * (cpus != 1)}: a run's "
            "budget is wall-clock seconds, so runs that share a CPU train slower than runs "
            "that have one alone and their times do not compare; --workers "
            f"{cpus} (or fewer) gives each run a CPU of its own",
            stacklevel=3,
        )


def _may_start_processes() -> bool:
    """Whether this process may start the race's worker processes; if not (a daemonic one, as
    a ``multiprocessing.Pool``'s workers are: a researcher's sweep of races over a pool), a
    warning says the race runs in this process. The race used to fail with multiprocessing's
    bare ``AssertionError: daemonic processes are not allowed to have children`` after it had
    claimed its folder."""
    import multiprocessing

    if not multiprocessing.current_process().daemon:
        return True
    warnings.warn(
        "this process is a daemonic one (a multiprocessing.Pool's worker), which may not start "
        "the race's worker processes: the race runs its runs one at a time in this process, "
        "as --workers 1 does (a concurrent.futures.ProcessPoolExecutor's workers may start "
        "them)",
        stacklevel=3,
    )
    return False


def _processes_can_share_locks() -> bool:
    """Whether this system gives processes the shared semaphores a pool of workers needs; if
    not (``/dev/shm`` read-only or missing: some sandboxes and serverless runtimes), a warning
    says the race runs in this process. The race used to fail with ``[Errno 30] Read-only file
    system`` after it had claimed its folder, naming neither the cause nor ``--workers 1``."""
    import multiprocessing

    try:
        multiprocessing.get_context("spawn").Lock()
    except OSError as err:
        warnings.warn(
            f"this system gives processes no shared locks ({err.strerror or err}; is /dev/shm "
            "read-only or missing?): the race runs its runs one at a time in this process, as "
            "--workers 1 does",
            stacklevel=3,
        )
        return False
    return True


def _run_on_ray(
    config: RaceConfig,
    jobs: list[RaceJob],
    out: str,
    workers: int,
    on_done: Callable[[dict[str, Any]], None],
) -> None:
    """Run ``jobs`` as Ray tasks: on the cluster at ``config.address``, on the Ray this process
    already started, or on a local one started (and shut down) here."""
    import ray  # present: run_race checked it before claiming the folder

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
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        payload = ray.get(ref)
                    except Exception as err:  # the run's failure, not the report's
                        payload = _crashed(job, err)
                    _report(on_done, payload, out)
        except BaseException:
            _stop_ray_tasks(ray, list(pending), on_done, out)
            raise
    finally:
        if started_here and not config.address:
            ray.shutdown()


def _stop_ray_tasks(
    ray: Any, refs: list[Any], on_done: Callable[[dict[str, Any]], None], out: str
) -> None:
    """Cancel the race's tasks still queued or running on Ray and wait for them to end, so that
    none writes into OUT after the race lets go of its lock; report those that had finished.

    A cluster given by ``address``, or a Ray this process started before the race, outlives the
    race: after a Ctrl-C its tasks used to run on, writing runs the race had just called
    unsaved, beside the ones a ``--resume`` started again."""
    if not refs:
        return
    for ref in refs:
        ray.cancel(ref)  # a running task gets a KeyboardInterrupt: it removes its partial files
    _, left = ray.wait(refs, num_returns=len(refs), timeout=30)
    for ref in left:  # a task stuck in native code: end its worker process
        ray.cancel(ref, force=True)
    if left:
        ray.wait(left, num_returns=len(left), timeout=30)
    for ref in refs:
        try:
            payload = ray.get(ref, timeout=0)
        except Exception:  # cancelled (the usual case), or failed
            continue
        _report_on_the_way_out(on_done, payload, out)  # finished before the cancel: counted


def _run_process_pool(
    jobs: list[RaceJob],
    out: str,
    workers: int,
    on_done: Callable[[dict[str, Any]], None],
    runner: Callable[[RaceJob, str], dict[str, Any]] = run_job,
) -> None:
    """Run ``jobs`` in a pool of ``workers`` processes, at most ``workers`` submitted at a time
    (so every submitted job is running). A worker that dies (killed, out of memory) breaks the
    pool, and nothing says which of the runs in flight it was running: each of them runs again
    alone, so the one that kills its worker again fails, named, and the others finish; the
    queue goes on in a fresh pool. Workers exit when this process dies, even by ``kill -9``
    (:func:`~nashzoo.io.exit_with_parent`), removing their partial files. An interruption of
    this process (Ctrl-C, whether or not the workers saw it too) stops the runs in flight at
    once (:func:`_start_pool_worker`) rather than waiting for them to spend their budgets."""
    queue = list(reversed(jobs))
    while queue:
        in_flight = _pool_pass(queue, workers, out, on_done, runner)
        if len(in_flight) == 1:  # the only run in flight killed its worker
            _report(on_done, _crashed(in_flight[0], None), out)
            continue
        for job in in_flight:  # one of these killed its worker: find which, one at a time
            if _pool_pass([job], 1, out, on_done, runner):
                _report(on_done, _crashed(job, len(in_flight)), out)


def _pool_pass(
    queue: list[RaceJob],
    workers: int,
    out: str,
    on_done: Callable[[dict[str, Any]], None],
    runner: Callable[[RaceJob, str], dict[str, Any]],
) -> list[RaceJob]:
    """Run jobs popped from the end of ``queue`` in one pool until the queue is empty or a
    worker dies; return the jobs in flight when it died (reported to no one yet), or ``[]``.

    When this process is interrupted (or ``on_done`` raises), the runs in flight are stopped
    before the exception goes on, and those that had finished are still reported: a Ctrl-C that
    only this process sees (Jupyter's interrupt, ``kill -INT``) used to wait for every run in
    flight to spend its whole budget, then called them unsaved though their files were written.
    """
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    # The stop signal is the end of a pipe only this process writes to: closing it reaches every
    # worker at once. A multiprocessing Event's set() waited for each worker that had waited on
    # it to wake, so after a worker was killed (SIGTERM to the race's process group, the
    # out-of-memory killer) a Ctrl-C or SIGTERM left the race hanging in set() for ever.
    stop_reader, stop_writer = context.Pipe(duplex=False)
    # The pipe's ends are closed as the block ends, before the pool waits for its workers: a
    # second interruption inside the except block below (two signals from one event, as
    # systemd sends them) skipped its close, and the pool waited for every run in flight to
    # spend its budget.
    with (
        ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_start_pool_worker,
            initargs=(os.getpid(), stop_reader),
        ) as pool,
        contextlib.ExitStack() as pipe,
    ):
        pipe.callback(stop_reader.close)
        pipe.callback(stop_writer.close)
        running: dict[Any, RaceJob] = {}
        try:
            while queue or running:
                while queue and len(running) < workers:
                    job = queue.pop()
                    running[pool.submit(_run_in_worker, runner, job, out)] = job
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for future in done:
                    job = running.pop(future)
                    try:
                        payload = future.result()
                    except BrokenProcessPool:
                        broken = True
                        running[future] = job
                        continue
                    except Exception as err:  # the run's failure, not the report's
                        payload = _crashed(job, err)
                    _report(on_done, payload, out)
                if broken:
                    return list(running.values())
        except BaseException:
            for future in running:
                future.cancel()
            stop_writer.close()  # the runs in flight end now, not when their budgets are spent
            wait(running)
            for future in running:
                if not future.cancelled() and future.exception() is None:
                    # finished before the stop: saved, so counted
                    _report_on_the_way_out(on_done, future.result(), out)
            raise
    return []


_IN_RUN = False
"""In a pool worker: a run is in progress (an interruption then stops it; an idle worker
ignores one, and leaves when the pool shuts down)."""
_STOP: Any = None
"""In a pool worker: the reading end of the parent's stop pipe (at its end of file, the parent
asked the runs to stop, or is gone)."""
_STOP_ASKED = False
"""In a pool worker: the parent asked the runs to stop. The interrupt that says so at once can
be lost: raised while the main thread runs a weak reference's callback or a ``__del__`` (an
import's module lock has one), it is only printed as "Exception ignored in", and the run went
on to the end of its budget, the race waiting on it (a ``kill`` of a race ignored for up to a
minute). The run also looks at this after every step (:class:`_StopWhenAsked`)."""


class _StopWhenAsked(Callback):
    """Ends a race's run at its next step once the parent asked the runs to stop, with the
    ``KeyboardInterrupt`` the stop pipe's interrupt raises (where that one was lost)."""

    def on_step(self, trainer: Trainer, metrics: dict[str, Any]) -> bool | None:
        if _STOP_ASKED and _IN_RUN:
            raise KeyboardInterrupt
        return None


def _start_pool_worker(parent_pid: int, stop: Any) -> None:
    """A race pool worker's set-up: exit with the parent (:func:`~nashzoo.io.exit_with_parent`),
    and stop the run in progress with a ``KeyboardInterrupt`` when ``stop``, the reading end of a
    pipe nothing is written to, reaches its end (the parent closed its end: stop) or a
    terminal's Ctrl-C reaches this process too (its partial files are removed on the way out);
    a Ctrl-C between runs is ignored, the parent decides what happens next."""
    global _STOP
    _STOP = stop
    exit_with_parent(parent_pid)

    def interrupt(signum: int, frame: Any) -> None:
        if _IN_RUN:
            raise KeyboardInterrupt

    def watch() -> None:
        global _STOP_ASKED
        with contextlib.suppress(EOFError, OSError):
            stop.recv()  # nothing is ever sent: the end of the pipe is the message
        import _thread

        _STOP_ASKED = True  # looked at after every step, where the interrupt below is lost
        _thread.interrupt_main()  # runs ``interrupt`` in the main thread, where the run is

    signal.signal(signal.SIGINT, interrupt)
    threading.Thread(target=watch, name="nashzoo-stop-run", daemon=True).start()


def _run_in_worker(
    runner: Callable[[RaceJob, str], dict[str, Any]], job: RaceJob, out: str
) -> dict[str, Any]:
    """``runner(job, out)`` in a pool worker, marked in progress for :func:`_start_pool_worker`;
    a run that reaches its worker after the parent asked to stop does not start."""
    global _IN_RUN
    _IN_RUN = True  # before looking at the pipe: a stop after the look interrupts the run
    try:
        if _STOP is not None and _STOP.poll():  # at its end: the parent asked to stop
            raise KeyboardInterrupt
        return runner(job, out)
    finally:
        _IN_RUN = False


class RaceReportError(RuntimeError):
    """The race's report callback (``on_done``) raised on a run's report. The race stops; the
    run is not counted failed for it (its files are as the run left them)."""


def _report(on_done: Callable[[dict[str, Any]], None], payload: dict[str, Any], out: str) -> None:
    """Hand one run's report to ``on_done``, whose own failure is not the run's: it used to be
    caught as the run's, and the finished run was reported a second time, as crashed. It is
    raised once, as :class:`RaceReportError` naming the run and where it is saved (an
    interruption, and ``BrokenPipeError``, the reader of the output gone, go on as they are)."""
    try:
        on_done(payload)
    except BrokenPipeError:
        raise
    except Exception as err:
        run_id = payload.get("run_id")
        if payload.get("status") == "ok":
            run = f"finished and is saved in {Path(out) / 'runs' / str(run_id)}"
        else:
            run = f"failed ({payload.get('error')})"
        raise RaceReportError(
            f"the race's report of run {run_id} failed ({type(err).__name__}: {err}); the run "
            f"itself {run}. The race stopped there: resuming it (--resume, resume=True) keeps "
            "every finished run and runs the rest"
        ) from err


def _report_on_the_way_out(
    on_done: Callable[[dict[str, Any]], None], payload: dict[str, Any], out: str
) -> None:
    """:func:`_report` while the race stops for another exception, which goes on: a second
    failure of the report callback would only hide it (the run's files are saved anyway)."""
    with contextlib.suppress(RaceReportError, BrokenPipeError):
        _report(on_done, payload, out)


def _crashed(job: RaceJob, err: BaseException | int | None) -> dict[str, Any]:
    """A failed run's report. ``err``: the exception the run raised; ``None`` when its worker
    died (killed, out of memory) with no other run in flight; the number of runs in flight
    when its worker died (then the run died again, run alone)."""
    if isinstance(err, BaseException):
        error = f"{type(err).__name__}: {err}"
    else:
        alone = "" if err is None else f", again when run alone after {err} runs were in flight"
        error = (
            f"worker crashed: the process running {job.run_id} died{alone} (killed, or out "
            "of memory: try --workers 1 or a smaller budget; from a script, a race call not "
            'under if __name__ == "__main__": also ends every worker: see their errors above)'
        )
    return {
        "status": "failed",
        "run_id": job.run_id,
        "job": dataclasses.asdict(job),
        "error": error,
    }
