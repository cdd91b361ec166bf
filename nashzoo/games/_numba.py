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
"""Whether numba is installed and in use. The compile's layout reads it here at each call;
the tree arithmetic reads its own copy, ``treemath._jit.ENABLED``, at each call (a
:class:`~nashzoo.games.treemath.FullWidthStep` once, when it is built). Tests switch a compiled
path off by setting the copy that path reads."""


def compiled(function):
    """``function`` compiled by numba (cached on disk, without the GIL), or as it is without
    numba. Inlined into the kernels that call it (a fifth of a small tree's NashConv kernel
    went to calls between compiled functions)."""
    if njit is None:
        return function
    return njit(cache=True, nogil=True, inline="always")(function)
