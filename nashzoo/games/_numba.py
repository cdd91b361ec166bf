"""Whether numba compiles nashzoo's loop kernels, and the one decorator that does it.

numba is optional (the ``fast`` extra): every compiled kernel has a numpy twin that gives the
same numbers bit for bit, and the twins are what runs without numba or with
``NASHZOO_PURE_NUMPY=1`` in the environment. The kernels live where their numpy twins do: the
tree arithmetic's in ``treemath/_jit.py``, the compile's layout in ``games/layout.py``.
"""

from __future__ import annotations

import os

try:
    if os.environ.get("NASHZOO_PURE_NUMPY") == "1":
        raise ImportError("pure numpy requested")
    from numba import njit
except ImportError:  # the pure-numpy path
    njit = None

ENABLED = njit is not None
"""Whether numba is installed and in use (checked by each caller at call time, so tests can
switch a compiled path off)."""


def compiled(function):
    """``function`` compiled by numba (cached on disk, without the GIL), or as it is without
    numba. Inlined into the kernels that call it (a fifth of a small tree's NashConv kernel
    went to calls between compiled functions)."""
    if njit is None:
        return function
    return njit(cache=True, nogil=True, inline="always")(function)
