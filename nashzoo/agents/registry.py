"""Registry mapping learner names (``"cfr_plus"``, ``"nfsp"``) to Learner classes."""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nashzoo.agents.base import CheckpointError, Learner, LearnerConfig
from nashzoo.agents.policy import PolicyError, TabularPolicy
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


def import_plugins(modules: Iterable[str]) -> None:
    """Import the modules that register user learners (``@register``), by module name.

    This is how ``nashzoo --plugin mymodule race`` and every race worker process learn the
    names of learners defined outside nashzoo.
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise ImportError(
                f"cannot import plugin module {module!r} ({err}); give an importable module "
                "name (the current folder is searched) that registers learners with "
                "@nashzoo.agents.register"
            ) from None


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


def load_policy_file(path: str | os.PathLike[str], game: Game | str | None = None) -> TabularPolicy:
    """The policy stored in any file nashzoo writes, as a :class:`TabularPolicy`:

    * a policy ``.json`` (:meth:`TabularPolicy.save`, the race's ``average_policy.json``);
    * a learner checkpoint ``.npz`` (:meth:`Learner.save`): its average policy;
    * a trainer checkpoint ``.npz`` (``Trainer.save``, the ``checkpoint.npz`` that ``nashzoo
      train`` and ``race`` write): the joint average policy of its two learners;
    * a Stable-Baselines3 model ``.zip`` (PPO, A2C, MaskablePPO, DQN trained on the game's
      information-set tensors, e.g. on ``gymnasium.make("nashzoo/KuhnPoker-v0")``), read by
      :func:`nashzoo.agents.adapters.from_sb3` and materialised; it needs ``game``.

    ``game`` (optional) checks the file is for that game. Raises PolicyError / CheckpointError
    with a message naming the file.
    """
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if file.suffix == ".json":
        return TabularPolicy.load(file, game)
    if file.suffix == ".zip":
        if game is None:
            raise PolicyError(
                f"{path}: a Stable-Baselines3 .zip does not say its game; name it "
                f"(e.g. nashzoo eval {path} --game kuhn_poker)"
            )
        from nashzoo.agents.adapters import from_sb3

        return TabularPolicy.from_policy(game, from_sb3(file, game))
    if file.suffix != ".npz":
        raise PolicyError(
            f"{path}: expected a policy .json, a checkpoint .npz or a Stable-Baselines3 .zip"
        )
    try:
        with np.load(file, allow_pickle=False) as data:
            seat_blobs = [data[f"seat{p}"] for p in range(2)] if TRAINER_KEY in data.files else []
    except Exception as err:
        raise CheckpointError(
            f"{path} is not a readable nashzoo checkpoint ({type(err).__name__}); it may be "
            "truncated or from another program"
        ) from None
    if not seat_blobs:
        learner = load_learner(file, game)
        return TabularPolicy.from_policy(learner.game, learner.average_policy())
    learners = load_seat_learners(seat_blobs, game, source=str(path))
    return TabularPolicy.joint(learners[0].game, [lr.average_policy() for lr in learners])


TRAINER_KEY = "__trainer__"
"""The entry of a trainer checkpoint ``.npz`` that holds the trainer state (JSON)."""


def load_seat_learners(
    blobs: Sequence[np.ndarray], game: Game | str | None = None, *, source: str = "checkpoint"
) -> list[Learner]:
    """The learners stored as one learner checkpoint per seat inside a trainer checkpoint."""
    learners = []
    with tempfile.TemporaryDirectory(prefix="nashzoo-ckpt-") as tmp:
        for seat, blob in enumerate(blobs):
            file = Path(tmp) / f"seat{seat}.npz"
            file.write_bytes(np.asarray(blob).tobytes())
            try:
                learners.append(load_learner(file, game))
            except CheckpointError as err:
                raise CheckpointError(f"{source}, seat {seat}: {err}") from None
    return learners
