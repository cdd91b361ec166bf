"""Registry mapping learner names (``"cfr_plus"``, ``"nfsp"``) to Learner classes."""

from __future__ import annotations

import importlib
import os
from typing import Any

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.games import Game

_REGISTRY: dict[str, type[Learner]] = {}
# Learners living in modules with optional dependencies: name -> (module, extra to install).
_LAZY: dict[str, tuple[str, str]] = {}


def register(cls: type[Learner]) -> type[Learner]:
    """Class decorator: make ``cls`` available to :func:`make_learner` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty `name` to be registered")
    _REGISTRY[cls.name] = cls
    return cls


def register_lazy(name: str, module: str, extra: str) -> None:
    """Declare a learner whose module needs an optional extra (imported on first use)."""
    _LAZY[name] = (module, extra)


def learner_names() -> list[str]:
    """All registered learner names (including ones needing optional extras)."""
    return sorted(set(_REGISTRY) | set(_LAZY))


def learner_class(name: str) -> type[Learner]:
    """The Learner class registered as ``name``."""
    if name not in _REGISTRY and name in _LAZY:
        module, extra = _LAZY[name]
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise ImportError(
                f"learner {name!r} needs the optional extra {extra!r}: "
                f"pip install 'nashzoo[{extra}]' ({err})"
            ) from None
    if name not in _REGISTRY:
        raise ValueError(f"unknown learner {name!r}; valid learners: {', '.join(learner_names())}")
    return _REGISTRY[name]


def make_learner(
    name: str,
    game: Game | str,
    seat: int,
    config: LearnerConfig | dict[str, Any] | None = None,
    *,
    seed: int = 0,
) -> Learner:
    """Build a learner by name for one seat of ``game``."""
    return learner_class(name)(game, seat, config, seed=seed)


def load_learner(path: str | os.PathLike[str], game: Game | str | None = None) -> Learner:
    """Load any learner checkpoint, dispatching on the learner name stored in it."""
    meta, _ = Learner.read_meta(path)
    name = meta.get("learner")
    try:
        cls = learner_class(str(name))
    except ValueError:
        raise CheckpointError(f"{path} names an unknown learner {name!r}") from None
    return cls.load(path, game)
