"""nashzoo inside a researcher's own process pool (``concurrent.futures``, ``multiprocessing``,
joblib): what a pool's workers inherit, and what crosses between the processes."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from nashzoo.io.atomic import FolderLockedError, folder_lock

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
