"""nashzoo inside a researcher's own process pool (``concurrent.futures``, ``multiprocessing``,
joblib): what a pool's workers inherit, and what crosses between the processes."""

from __future__ import annotations

import csv
import importlib
import multiprocessing
import os
import pkgutil
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from user_games import MatchingPennies

import nashzoo
from nashzoo._locks import ForkSafeLock
from nashzoo.games import State, compile_tree
from nashzoo.games.treemath._cache import per_tree
from nashzoo.io.atomic import FolderLockedError, folder_lock
from nashzoo.train import limit_threads, train
from nashzoo.train.race import RaceConfig, run_race

FORK = "fork" in multiprocessing.get_all_start_methods()


@pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
def test_a_pool_forked_while_a_folder_is_locked_does_not_keep_it_locked(tmp_path):
    """A pool forked inside a locked folder's block (a race's ``on_done`` starting a pool) kept
    the folder locked as long as its workers lived: the flock belongs to the open file, which
    the workers shared, and the same process's next ``resume`` was refused."""
    folder = tmp_path / "run"
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    try:
        with folder_lock(folder):
            (folder / "results.csv").write_text("x\n")
            assert pool.submit(os.getpid).result() != os.getpid()  # the worker lives on
        with folder_lock(folder):  # refused before: "being written by this process"
            pass
        with folder_lock(folder), pytest.raises(FolderLockedError), folder_lock(folder):
            pass  # the lock still locks
    finally:
        pool.shutdown()


@pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
def test_a_child_forked_inside_the_block_leaves_the_parents_folder_alone(tmp_path):
    """A child that leaves the block (a plain ``os.fork()`` in it) does not tidy the folder
    up as its own: it would remove the parent's folder, lock and all, under the parent."""
    folder = tmp_path / "run"
    child = False
    try:
        with folder_lock(folder):  # created here: holding only the lock, removed on the way out
            pid = os.fork()
            child = pid == 0
            if not child:
                _, status = os.waitpid(pid, 0)  # the child has left the block
                assert os.waitstatus_to_exitcode(status) == 0
                assert (folder / ".nashzoo.lock").exists()
    finally:
        if child:
            os._exit(0)
    assert not folder.exists()  # the parent's own way out still tidies it


def _train_with_two_processes(_: int) -> str:
    """A pool task (module level: a spawned worker imports it)."""
    try:
        train("kuhn_poker", "cfr_plus", iterations=1, schedule="simultaneous", processes=2)
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return "trained"


def test_processes_2_in_a_multiprocessing_pools_worker_names_the_way_out():
    """A ``multiprocessing.Pool``'s workers are daemonic and may not start processes: the run
    failed with multiprocessing's bare ``AssertionError: daemonic processes are not allowed to
    have children``."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        (said,) = pool.map(_train_with_two_processes, [0])
    assert said.startswith("ValueError: processes=2 starts a worker process for seat 1")
    assert "processes=1" in said and "ProcessPoolExecutor" in said


def test_a_race_in_a_daemonic_worker_runs_its_runs_here(tmp_path, monkeypatch):
    """A race in a ``multiprocessing.Pool``'s worker (daemonic: it may start no processes)
    failed with the bare ``AssertionError`` after claiming its folder; it runs its runs one at
    a time in that process, with a warning, and gives the numbers a serial race gives."""
    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    config = dict(learners=("cfr", "cfr_plus"), seeds=1, budget_seconds=None, budget_iterations=5)
    with pytest.warns(UserWarning, match="daemonic.*one at a time in this process"):
        run_race(
            RaceConfig(out=str(tmp_path / "a"), workers=2, plots=False, **config),
            progress=False,
        )
    run_race(
        RaceConfig(out=str(tmp_path / "b"), backend="serial", plots=False, **config),
        progress=False,
    )
    assert _results_but_times(tmp_path / "a") == _results_but_times(tmp_path / "b")


def _results_but_times(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as file:
        return [
            {k: v for k, v in row.items() if k != "wall_seconds"} for row in csv.DictReader(file)
        ]


_BUILDING = threading.Event()  # a thread is inside the build
_GO_ON = threading.Event()  # ... which waits for this


class _SlowToBuild(MatchingPennies):
    """Matching pennies whose first state waits, in a thread other than the main one, until
    the test lets it go (a build in flight at a fork)."""

    name = "slow_to_build"

    def new_initial_state(self) -> State:
        if threading.current_thread() is not threading.main_thread():
            _BUILDING.set()
            _GO_ON.wait(30)
        return super().new_initial_state()


def _slow_index(tree: object) -> int:
    _BUILDING.set()
    _GO_ON.wait(30)
    return 1


@pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
@pytest.mark.parametrize("what", ["tree", "index"])
def test_a_child_forked_during_another_threads_build_builds_on_its_own(what):
    """A ``fork`` pool started while another thread compiled a game (or built a tree's index)
    had workers that hung for ever, without a word, the first time they asked for it: the
    build's lock was held by a thread the child does not have."""
    game = _SlowToBuild()
    tree = compile_tree("kuhn_poker")
    _BUILDING.clear()
    _GO_ON.clear()
    if what == "tree":
        thread = threading.Thread(target=compile_tree, args=(game,))
    else:
        thread = threading.Thread(target=per_tree, args=(tree, "slow_index", _slow_index))
    thread.start()
    try:
        assert _BUILDING.wait(30)
        if what == "tree":
            pid = _forked_child(lambda: compile_tree(game).num_nodes == 7)
        else:
            pid = _forked_child(lambda: per_tree(tree, "other_index", lambda _: 2) == 2)
    finally:
        _GO_ON.set()
        thread.join()
    assert _exit_code(pid) == 0  # -14 (SIGALRM): it hung


def _forked_child(check: Callable[[], bool]) -> int:
    """Fork: the child runs ``check`` and exits 0 where it returns true, or is killed by an
    alarm after 20 s where it hangs; the parent gets the child's pid."""
    pid = os.fork()
    if pid == 0:
        try:
            signal.alarm(20)
            os._exit(0 if check() else 1)
        finally:
            os._exit(2)
    return pid


def _exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_no_module_keeps_a_lock_a_forked_child_would_inherit_held():
    """Every lock nashzoo keeps at module level is a ForkSafeLock: the fork hooks were written
    one lock at a time, and four were missed (the registry's, the thread limits', the atomic
    writer's and the unpickled trees', the last held through a comparison of whole trees)."""
    plain = (type(threading.Lock()), type(threading.RLock()))
    found = []
    for info in pkgutil.walk_packages(nashzoo.__path__, "nashzoo."):
        if info.name.endswith("__main__"):  # importing it runs the command line
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an extra not installed here
            continue
        found += [f"{info.name}.{k}" for k, v in vars(module).items() if isinstance(v, plain)]
    assert found == []


@pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
def test_a_fork_safe_lock_another_thread_holds_is_free_in_a_forked_child():
    lock = ForkSafeLock()
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(30)
        pid = _forked_child(lambda: lock.__enter__())  # taken, or the child hangs
    finally:
        done.set()
        thread.join()
    assert _exit_code(pid) == 0  # -14 (SIGALRM): it hung


def _hang_guard() -> None:
    """A pool worker's initializer: a worker that hangs dies after a minute (the test fails
    with BrokenProcessPool instead of waiting for ever)."""
    import faulthandler

    faulthandler.dump_traceback_later(60, exit=True)


def _nfsp_threads_and_nash_conv(seed: int) -> tuple[int, float]:
    import torch

    return torch.get_num_threads(), train("kuhn_poker", "nfsp", iterations=2, seed=seed).nash_conv


@pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
def test_a_pool_forked_after_a_neural_learner_stepped_on_two_threads_does_not_hang():
    """torch's GNU OpenMP pool does not survive a fork: a ``fork`` pool started after a neural
    learner had stepped on more than one thread had workers that hung for ever in their first
    network call. A forked child runs torch on one thread, and gets one thread's numbers."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        train("kuhn_poker", "nfsp", iterations=2, seed=0)  # OpenMP's pool starts here
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(1, mp_context=context, initializer=_hang_guard) as pool:
            there = pool.submit(_nfsp_threads_and_nash_conv, 1).result()
    finally:
        torch.set_num_threads(threads)
    with limit_threads(1):
        here = train("kuhn_poker", "nfsp", iterations=2, seed=1).nash_conv
    assert there == (1, here)
