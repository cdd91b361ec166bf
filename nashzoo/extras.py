"""Optional extras: which feature needs which packages, checked before any work starts.

A feature that needs an extra (plots, a logger, the Ray backend, reading a Stable-Baselines3
file) calls :func:`require` where its run begins, so a missing package is reported in one
line that names the extra to install, before a folder is claimed or a minute of training is
spent; the import itself stays where the feature is used.
"""

from __future__ import annotations

import importlib.util

__all__ = ["MissingExtra", "missing_modules", "require"]


class MissingExtra(ImportError):
    """A feature was asked for whose optional extra is not installed."""


def missing_modules(*modules: str) -> list[str]:
    """The top-level ``modules`` that cannot be found (nothing is imported)."""
    gone = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken parent package, or a module without spec
            found = False
        if not found:
            gone.append(module)
    return gone


def require(feature: str, extra: str, *modules: str, otherwise: str = "") -> None:
    """Raise :class:`MissingExtra` when any of ``modules`` is not installed: "FEATURE needs
    MODULES: pip install 'nashzoo[EXTRA]'", then ``otherwise`` (another way out, if any)."""
    gone = missing_modules(*modules)
    if gone:
        alternative = f", {otherwise}" if otherwise else ""
        raise MissingExtra(
            f"{feature} needs {' and '.join(gone)}: pip install 'nashzoo[{extra}]'{alternative}"
        )
