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

import os
import sys

from threadpoolctl import threadpool_limits

__all__ = ["THREAD_VARIABLES", "limit_threads"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def limit_threads(threads: int = 1) -> None:
    """Hold this process (and the processes it starts from now on) to ``threads`` threads in
    BLAS, OpenMP and torch. Call it after the heavy imports: a library loaded later starts with
    its own default again (``torch`` is covered when it is imported by then)."""
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    for var in THREAD_VARIABLES:
        os.environ[var] = str(threads)
    threadpool_limits(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
