"""Fixtures shared by several test modules."""

from __future__ import annotations

import signal

import pytest

from nashzoo.games import _numba

# A shell starts a background job (`.ci/run &`, `nohup make test &`) with SIGINT ignored, as
# POSIX asks, and Python then leaves it ignored, as do the processes it starts. The tests that
# stop a run with Ctrl-C, in this process or in a child, need the usual handler: give it back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(params=["loop", "numpy"])
def layout_twin(request, monkeypatch) -> str:
    """Runs the test once with each twin of the compile's layout (``games/layout.py``): the
    compiled loop (skipped without numba) and numpy, one depth at a time."""
    if request.param == "loop" and not _numba.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): the numpy twin only")
    monkeypatch.setattr(_numba, "ENABLED", request.param == "loop")
    return request.param
