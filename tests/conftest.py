"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest

from nashzoo.games import _numba


@pytest.fixture(params=["loop", "numpy"])
def layout_twin(request, monkeypatch) -> str:
    """Runs the test once with each twin of the compile's layout (``games/layout.py``): the
    compiled loop (skipped without numba) and numpy, one depth at a time."""
    if request.param == "loop" and not _numba.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): the numpy twin only")
    monkeypatch.setattr(_numba, "ENABLED", request.param == "loop")
    return request.param
