"""One thread per run for the numeric libraries: BLAS, OpenMP and torch.

numpy's OpenBLAS and torch's OpenMP runtime start one worker thread per core by default, and
those workers busy-wait between calls. A learner whose matrices are small (NFSP's and Deep CFR's
networks, a few hundred rows of a few dozen columns) gains almost nothing from them, and two
such runs side by side on a 2-core machine each keep both cores busy: measured on NFSP Leduc
(2026-11-26, two processes side by side on 2 cores, ``benchmarks/bench_neural.py threads``),
280-283 iterations each in 40 s with the default pools against 724-842 with one thread each.
Runs are the unit of parallelism (``nashzoo race --workers``, benchmark seeds side by side), so
each run is held to one thread.

Environment variables such as ``OPENBLAS_NUM_THREADS`` are read only when the library loads,
which in any process that has imported numpy has already happened; :func:`limit_threads`
therefore also resizes the pools of the libraries already loaded (``threadpoolctl``), and sets
the variables for child processes.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from nashzoo._locks import ForkSafeLock
from nashzoo.games.limits import cgroup_folders

__all__ = ["THREAD_VARIABLES", "ThreadLimit", "limit_threads", "usable_cpus"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

_LOCK = ForkSafeLock()
_HELD: list[ThreadLimit] = []  # the limits not let go yet, oldest first


class ThreadLimit:
    """What :func:`limit_threads` changed, to put back with :meth:`restore` (or by using it as a
    context manager): the environment variables, the loaded pools' sizes and torch's.

    The settings are the process's, shared by its threads, so limits held at once (two threads'
    runs, a serial race beside a ``Trainer(processes=2)``) are kept together: the process holds
    the most recent limit still held, and the settings from before the first come back when
    the last is let go, in whatever order they are. Each limit putting back what it found, two
    threads' overlapping limits left the process, and the processes it started, on one thread
    for good (the first let go put back the settings from before both, the second the first's
    one thread)."""

    _first: ThreadLimit  # the first of the limits held at once, which keeps what they replaced
    _environ: dict[str, str | None]  # the first's only, as the three below
    _torch_threads: int | None
    _pools: Any

    def __init__(self, threads: int) -> None:
        self.threads = threads
        with _LOCK:
            if _HELD:
                self._first = _HELD[0]._first  # holds the settings from before any limit
            else:
                self._first = self
                self._environ = {var: os.environ.get(var) for var in THREAD_VARIABLES}
                torch = sys.modules.get("torch")
                self._torch_threads = None if torch is None else torch.get_num_threads()
                self._pools = threadpool_limits(threads)
            _HELD.append(self)
            self._apply(pools=self._first is not self)  # the first one's were resized above

    def _apply(self, pools: bool = True) -> None:
        """Hold the process to this limit's threads (called with the lock held)."""
        for var in THREAD_VARIABLES:
            os.environ[var] = str(self.threads)
        if pools:
            threadpool_limits(self.threads)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(self.threads)

    def restore(self) -> None:
        """Let this limit go: the process goes back to the most recent limit still held, or,
        where none is, to its settings from before the first (once; a second call does
        nothing)."""
        with _LOCK:
            if self not in _HELD:
                return
            _HELD.remove(self)
            if _HELD:
                _HELD[-1]._apply()
            else:
                self._first._put_back()

    def _put_back(self) -> None:
        """Put the settings back as they were before the first limit (the lock held)."""
        self._pools.restore_original_limits()
        for var, value in self._environ.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(self._torch_threads or self._torch_default(torch))

    def _torch_default(self, torch: Any) -> int:
        """The thread count torch would have started with, for a torch first imported under the
        limit (it read the limit's ``OMP_NUM_THREADS`` and kept it: the caller's torch stayed on
        one thread after a serial race or a run). Torch's own default is also the size of its
        inter-op pool (which nashzoo never sets); the caller's ``MKL_NUM_THREADS``, else
        ``OMP_NUM_THREADS``, lowers it, as torch reads them."""
        default = max(1, int(torch.get_num_interop_threads()))
        for var in ("MKL_NUM_THREADS", "OMP_NUM_THREADS"):  # torch lets MKL's override OMP's
            value = self._environ.get(var)
            if value is not None and value.strip().isdigit() and int(value) > 0:
                return min(int(value), default)
        return default

    def __enter__(self) -> ThreadLimit:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


def limit_threads(threads: int = 1) -> ThreadLimit:
    """Hold this process (and the processes it starts from now on) to ``threads`` threads in
    BLAS, OpenMP and torch. Call it after the heavy imports: a library loaded later starts with
    its own default again (``torch`` is covered when it is imported by then). The limit stays
    until :meth:`ThreadLimit.restore`; ``with limit_threads(): ...`` restores it on leaving."""
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return ThreadLimit(threads)


def usable_cpus() -> int:
    """The CPUs this process may run on: those its affinity mask allows (``taskset``, a
    cpuset, a SLURM allocation), fewer where a CPU quota on its control group or any group
    above it is smaller (a container's ``--cpus``, systemd's ``CPUQuota=``), at least one.
    ``os.cpu_count()`` counts the machine's: a race given one core of many ran two runs on
    it, each at half speed, and ranked them against runs that had a core alone."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        count = min(count, quota)
    return max(1, count)


def _cgroup_cpu_quota() -> int | None:
    """The whole CPUs (rounded up) of the smallest CPU quota on this process's control group
    and the groups above it (:func:`nashzoo.games.limits.cgroup_folders`); ``None`` without
    one. cgroup v2 ``cpu.max`` ("QUOTA PERIOD" or "max PERIOD"), v1 ``cpu.cfs_quota_us`` over
    ``cpu.cfs_period_us``."""
    quotas = [q for q in (_quota_in(*found) for found in cgroup_folders("cpu")) if q is not None]
    return min(quotas) if quotas else None


def _quota_in(folder: Path, v2: bool) -> int | None:
    """The whole CPUs of the quota set in ``folder``, ``None`` without one (or unreadable)."""
    try:
        if v2:
            quota, period = (folder / "cpu.max").read_text().split()[:2]
        else:
            quota = (folder / "cpu.cfs_quota_us").read_text().strip()
            period = (folder / "cpu.cfs_period_us").read_text().strip()
        if quota in ("max", "-1"):
            return None
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):  # no such files, or not numbers
        return None
