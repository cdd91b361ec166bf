"""Whether numba compiles nashzoo's loop kernels, and the one decorator that does it.

numba is optional (the ``fast`` extra): every compiled kernel has a numpy twin that gives the
same numbers bit for bit, and the twins are what runs without numba or with
``NASHZOO_PURE_NUMPY=1`` in the environment. The kernels live where their numpy twins do: the
tree arithmetic's in ``treemath/_jit.py``, the compile's layout in ``games/layout.py``.

numba is imported on first need, not with nashzoo: importing it takes about 0.3 s and 40 MB,
which a user of the environments, the command line's help or a tournament of policy files never
needs. The first read of :data:`ENABLED` imports it (a learner's set-up does, see
``treemath._jit.warm_up``), and so does the first call of a compiled kernel.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from nashzoo._locks import ForkSafeLock

_PURE = os.environ.get("NASHZOO_PURE_NUMPY") == "1"
_LOCK = ForkSafeLock(reentrant=True)  # a forked child gets it new (nashzoo._locks)
_KERNELS: list[_Lazy] = []  # every kernel defined so far, compiled together on first use
_njit: Any = None  # numba.njit once imported; False when numba cannot be imported


def _numba_njit() -> Any:
    """numba's ``njit``, importing numba on the first call; ``None`` without it."""
    global _njit
    if _njit is None:
        with _LOCK:
            if _njit is None:
                found: Any = False  # the pure-numpy path
                try:
                    if _PURE:
                        raise ImportError("pure numpy requested")
                    from numba import njit as found
                except ImportError:
                    pass
                _njit = found
    return _njit or None


def __getattr__(name: str) -> Any:
    # ENABLED: whether numba is installed and in use. Computed (numba imported) on first read,
    # then an ordinary module attribute. The compile's layout reads it here at each call; the
    # tree arithmetic reads its own copy, ``treemath._jit.ENABLED``, at each call (a
    # FullWidthStep once, when it is built). Tests switch a compiled path off by setting the
    # copy that path reads.
    if name == "ENABLED":
        value = globals()["ENABLED"] = _numba_njit() is not None
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Lazy:
    """A kernel until its first call: then every kernel defined so far becomes numba's
    dispatcher (or stays plain Python without numba) in its module, so compiled kernels find
    the kernels they call compiled too, and later calls through the module skip this object."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.target: Any = None
        self.__doc__ = function.__doc__
        self.__name__ = function.__name__
        self.__wrapped__ = function

    def __call__(self, *args: Any) -> Any:
        if self.target is None:
            _compile_all()
        return self.target(*args)

    def __repr__(self) -> str:
        return f"<nashzoo kernel {self.function.__module__}.{self.__name__}, not yet compiled>"


_CACHE = True  # False once numba found nowhere to cache a kernel: compiled in memory since


def _jit(njit: Any, function: Any) -> Any:
    """``function`` as numba's dispatcher, cached on disk where numba finds a place for it.

    With no such place (nashzoo installed read-only, as in a container, and no writable home
    or ``NUMBA_CACHE_DIR``) numba refuses ``cache=True`` with ``cannot cache function ...: no
    locator available``, which every command that compiles a game used to fail with. Then the
    kernels are compiled in memory, once per process, and one warning says how to keep them."""
    global _CACHE
    if _CACHE:
        try:
            return njit(cache=True, nogil=True, inline="always")(function)
        except RuntimeError as err:
            if "cannot cache" not in str(err):
                raise
            _CACHE = False
            warnings.warn(
                "numba finds no writable folder to cache nashzoo's compiled kernels in, so "
                "each process compiles them again (a few seconds); set NUMBA_CACHE_DIR to a "
                "writable folder to keep them",
                stacklevel=2,
            )
    return njit(nogil=True, inline="always")(function)


def _compile_all() -> None:
    """Make every kernel not made yet, then put them in their modules, one module at once.

    Another thread reaches a kernel through its module's globals as soon as it is put there,
    and numba resolves the kernels it calls at that thread's first call, which compiles it. Put
    there one by one, a kernel calling one defined after it (``two_player_values`` calls
    ``two_player_values_into``) could be compiled while that one was still the lazy stand-in:
    ``TypingError: Untyped global name 'two_player_values_into'`` in a thread that evaluated
    while another's first kernel call was binding them (a cold numba cache). A dict's
    ``update`` is one step for other threads."""
    njit = _numba_njit()
    with _LOCK:
        pending = [kernel for kernel in _KERNELS if kernel.target is None]
        targets = [k.function if njit is None else _jit(njit, k.function) for k in pending]
        modules: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        for kernel, target in zip(pending, targets, strict=True):
            namespace, name = kernel.function.__globals__, kernel.function.__name__
            if namespace.get(name) is kernel:
                modules.setdefault(id(namespace), (namespace, {}))[1][name] = target
        for namespace, bound in modules.values():
            namespace.update(bound)
        for kernel, target in zip(pending, targets, strict=True):
            kernel.target = target


def compiled(function: Any) -> Any:
    """``function`` compiled by numba (cached on disk, without the GIL) on first use, or as it
    is without numba. Inlined into the kernels that call it (a fifth of a small tree's NashConv
    kernel went to calls between compiled functions)."""
    if _PURE:
        return function
    kernel = _Lazy(function)
    with _LOCK:
        _KERNELS.append(kernel)
    return kernel
