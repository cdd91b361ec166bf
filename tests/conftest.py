"""Fixtures shared by several test modules."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from pathlib import Path

import pytest

from nashzoo.agents import registry as learner_registry
from nashzoo.games import _numba

# A shell starts a background job (`.ci/run &`, `nohup make test &`) with SIGINT ignored, as
# POSIX asks, and Python then leaves it ignored, as do the processes it starts. The tests that
# stop a run with Ctrl-C, in this process or in a child, need the usual handler: give it back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


RUNNING_TEST = Path(__file__).resolve().parent.parent / ".pytest-running"
"""The test now running, written as each one starts and removed when the session ends: when
the process dies of a signal (a C library's abort or segmentation fault), the file is still
there and the Makefile prints the test it died in. The crash's own report, the faulthandler
dump, names only the outermost frames within the last lines CI keeps. Only a run in one
process writes it: under pytest-xdist (``make test``'s default) the workers' tests start side
by side, and xdist itself names the test a dead worker was running."""

_NAME_THE_RUNNING_TEST = False


def pytest_sessionstart(session: pytest.Session) -> None:
    global _NAME_THE_RUNNING_TEST
    distributed = session.config.pluginmanager.has_plugin("dsession")  # xdist's controller
    _NAME_THE_RUNNING_TEST = not distributed and "PYTEST_XDIST_WORKER" not in os.environ


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    if _NAME_THE_RUNNING_TEST:
        with contextlib.suppress(OSError):  # a read-only checkout runs its tests without it
            RUNNING_TEST.write_text(nodeid + "\n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _NAME_THE_RUNNING_TEST:
        with contextlib.suppress(OSError):
            RUNNING_TEST.unlink(missing_ok=True)


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_folders_under_pytests_own():
    """Stable-Baselines3's ``learn()`` on a model without a logger of its own makes an empty
    ``SB3-<time>`` folder in the system's temporary directory every time (nashzoo's ``ppo`` and
    ``dqn`` give theirs one; the tests that train SB3 models directly, as a user would, do not):
    point it, for this process and the commands it starts, at one folder removed at the end."""
    patch = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory(prefix="nashzoo-tests-sb3-") as folder:
        patch.setenv("SB3_LOGDIR", folder)
        yield
        patch.undo()


@pytest.fixture
def default_ctrl_c():
    """Python's own Ctrl-C handler for the test (a test runner may have its own)."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(params=["loop", "numpy"])
def layout_twin(request, monkeypatch) -> str:
    """Runs the test once with each twin of the compile's layout (``games/layout.py``): the
    compiled loop (skipped without numba) and numpy, one depth at a time."""
    if request.param == "loop" and not _numba.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): the numpy twin only")
    monkeypatch.setattr(_numba, "ENABLED", request.param == "loop")
    return request.param


def builtin_learner_names() -> list[str]:
    """nashzoo's own learners (those needing an extra included), without the test plugins
    that test modules register when imported and some tests take out again: a test
    parametrized over every registered name at collection would find one gone when it runs."""
    own = {
        name
        for name, cls in learner_registry._REGISTRY.items()
        if cls.__module__.startswith("nashzoo.")
    }
    return sorted(own | set(learner_registry._LAZY))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes ``builtin_learner`` runs once for each of nashzoo's own learners."""
    if "builtin_learner" in metafunc.fixturenames:
        metafunc.parametrize("builtin_learner", builtin_learner_names())
