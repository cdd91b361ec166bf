"""The Learner interface: one seat, one native unit of work per ``step()``.

Template-method base in the Stable-Baselines3 style (one level of inheritance): the base class
owns seeding, work counters, validation and checkpoint files; a learner implements

* ``_setup()``: allocate its tables or networks;
* ``_step(opponent)``: one native unit of work against the opponent's Policy, returning the
  work it did (``nodes_touched``, ``env_steps``) and any metrics;
* ``current_policy()``: how it plays now (what the opponent faces during training);
* ``average_policy()``: its output (what exploitability is measured on) as a copy;
* ``_state_arrays()`` / ``_load_state_arrays()``: everything needed to resume bit-identically;
  ``_load_state_arrays`` takes the arrays through :meth:`Learner.checked_state_arrays` first, so
  a damaged checkpoint is refused instead of becoming a silently wrong learner.

A learner sees its opponent only as a :class:`~nashzoo.agents.policy.Policy`: the ``current`` one
for regret-based learners, the ``average`` one for fictitious play (``opponent_view``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, BinaryIO, ClassVar, Literal, TypeVar

import numpy as np

from nashzoo.agents.config_fields import ConfigFieldError, coerce_fields, coerce_instance
from nashzoo.agents.policy import Policy, TabularPolicy
from nashzoo.games import CompiledTree, Game, compile_tree, load_game
from nashzoo.games.base import check_player, checked_seed, display_ids_apart
from nashzoo.games.treemath import _jit
from nashzoo.io import (
    LEARNER_FORMAT,
    ArraySpec,
    CheckpointError,
    LearnerCheckpoint,
    atomic_file,
    cause,
    check_arrays,
    learner_checkpoint_bytes,
    newer_writer_note,
    read_learner_checkpoint,
    version_stamp,
    write_learner_checkpoint,
)

_L = TypeVar("_L", bound="Learner")


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    """Base of every learner config (frozen dataclass with documented defaults)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain Python values (numpy scalars become numbers), ready for JSON."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays turned into Python numbers and lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return value


def _defining_module(cls: type) -> str:
    """The module that defines ``cls``, as a checkpoint records it: a script's learner is
    ``__main__`` in the script's process and ``__mp_main__`` in a spawned worker's, one name."""
    return "__main__" if cls.__module__ == "__mp_main__" else cls.__module__


def _on_device(config: Any, device: str | None, name: str) -> Any:
    """A stored config with ``device`` in place of the one it was trained on. Without
    ``device``, a checkpoint trained on a GPU where torch sees none is refused with the fix
    (the config's own check would only say to write another config)."""
    if not isinstance(config, dict) or "device" not in config:
        return config  # a learner that computes with numpy: nothing to move
    if device is not None:
        return {**config, "device": device}
    if needs_missing_cuda(config):
        raise NoCudaHereError(name, config["device"])
    return config


class TrainingDivergedError(RuntimeError):
    """A loss or a parameter became NaN/inf; the learner stopped before applying it. Its message
    names the cause and the fix (here, not in the torch helpers, so the command line can tell it
    from a bug without importing torch)."""


class NoCudaHereError(CheckpointError):
    """A checkpoint trained on a CUDA device, read where torch sees none without a ``device``
    to rebuild it on; the message names the fix (``nashzoo train --resume`` names its own
    command, with the run's folder). ``name``: the file (and seat); ``device``: the stored one."""

    def __init__(self, name: str, device: str) -> None:
        self.name, self.device = name, device
        super().__init__(
            f"{name} was trained with device={device!r} and torch sees no CUDA device here; "
            "rebuild it on the CPU: load_learner(path, device='cpu'), "
            "Trainer.load(path, device='cpu') for a training run's checkpoint, or "
            "nashzoo train --out FOLDER --resume --device cpu for a run of nashzoo train"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # from a worker process: built again, by its fields
        return (type(self), (self.name, self.device))


def needs_missing_cuda(config: Any) -> bool:
    """Whether a stored learner config names a CUDA device and torch sees none here."""
    device = config.get("device") if isinstance(config, dict) else None
    return isinstance(device, str) and device.startswith("cuda") and not _sees_cuda()


def _sees_cuda() -> bool:
    """Whether torch sees a CUDA device (True without torch: building the learner then says
    which extra to install, which is the real problem)."""
    try:
        import torch
    except ImportError:
        return True
    return bool(torch.cuda.is_available())


class Learner(ABC):
    """Owns one seat of a game and learns a strategy for it."""

    name: ClassVar[str] = ""
    Config: ClassVar[type[LearnerConfig]] = LearnerConfig
    opponent_view: ClassVar[Literal["current", "average"]] = "current"
    """Which of the opponent's policies ``step`` needs."""
    learns: ClassVar[bool] = True
    """False for baselines whose strategy never changes (``uniform``, ``fixed``): a race leaves
    them out unless they are named."""
    kind: ClassVar[str] = ""
    """What the learner is, as ``nashzoo learners`` lists it: ``"tabular"`` (a table per
    information set, updated over the whole compiled tree every step), ``"sampling"`` (a table,
    updated along sampled walks), ``"neural"`` (networks reading information-set tensors) or
    ``"fixed"`` (a strategy that never changes); ``""``: not said (a plugin may say)."""
    reads_tensors: ClassVar[bool] = False
    """Whether the learner reads the game's information-set tensors (the neural and RL ones):
    :meth:`check_game` then refuses a game that defines none."""
    settings_before_they_existed: ClassVar[dict[str, Any]] = {}
    """For settings added after the learner's first checkpoints, the value that reproduces what
    it did before, where today's default does something else: a checkpoint whose stored config
    lacks one is restored with this value, not the default (NFSP: ``play="env"``, since
    checkpoints from before ``play`` played their episodes in PettingZoo envs)."""

    def __init__(
        self,
        game: Game | str,
        seat: int,
        config: LearnerConfig | dict[str, Any] | None = None,
        *,
        seed: int = 0,
    ) -> None:
        self.game = load_game(game)
        self.seat = check_player(self.game, seat)
        self.config = self.coerce_config(config)
        self.seed = checked_seed(seed)
        self.rng = np.random.default_rng(self.seed)
        self.iterations = 0
        self.nodes_touched = 0
        self.env_steps = 0
        self.check_game(self.game)
        _jit.warm_up()  # numba's one-time load, here rather than in the first timed step
        self._setup()

    # --- hooks for subclasses ----------------------------------------------------------------
    @classmethod
    def check_game(cls, game: Game) -> None:
        """Raise ValueError if this learner cannot handle ``game`` (default: any 2-player game,
        with information-set tensors where the learner :attr:`reads_tensors`)."""
        if game.num_players != 2:
            raise ValueError(
                f"{cls.name} supports two-player games; {game.display_id} has {game.num_players} "
                "players"
            )
        if cls.reads_tensors and int(getattr(game, "infoset_tensor_size", 0)) <= 0:
            raise ValueError(
                f"{cls.name} reads information-set tensors; {game.display_id} defines none"
            )

    def _setup(self) -> None:  # noqa: B027 - optional hook
        """Allocate tables or networks."""

    @abstractmethod
    def _step(self, opponent: Policy) -> Mapping[str, float]:
        """One native unit of work; return ``nodes_touched`` / ``env_steps`` done and metrics."""

    @abstractmethod
    def current_policy(self) -> Policy:
        """How the learner plays now: a snapshot that later steps do not change (an immutable
        policy, which may share a table the learner has given up rather than copy it)."""

    @abstractmethod
    def average_policy(self) -> Policy:
        """The learner's output strategy (a copy, never a live view)."""

    @abstractmethod
    def _state_arrays(self) -> dict[str, np.ndarray]:
        """Every array needed to resume exactly. They are written out at once and never kept,
        so a live table may be given as it is, through
        :func:`~nashzoo.games.treemath.read_only_view` (a copy of each would add the tables'
        size to the peak of every checkpoint: 1.4 GB on a 42-million-history game)."""

    @abstractmethod
    def _load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`_state_arrays` returned; check ``arrays`` first with
        :meth:`checked_state_arrays`."""

    # --- public API --------------------------------------------------------------------------
    @classmethod
    def coerce_config(cls, config: LearnerConfig | dict[str, Any] | None) -> LearnerConfig:
        """Accept a Config, a dict of its fields, or None (defaults). A dict's values, and a
        Config's, are checked against the fields' declared types, as the command line's are
        (:mod:`nashzoo.agents.config_fields`): ints for floats, lists for tuples (a Config is
        then rebuilt with them, so it equals the dict's config); a wrong type is the config's
        own ValueError where its checks have one, else a
        :class:`~nashzoo.agents.config_fields.ConfigFieldError` (a ValueError too)."""
        if config is None:
            cls._check_required(())
            return cls.Config()
        if isinstance(config, cls.Config):  # built already: its own checks have passed
            return coerce_instance(config, cls.name or cls.__name__)
        if isinstance(config, dict):
            fields = {f.name for f in dataclasses.fields(cls.Config)}
            unknown = sorted(set(config) - fields)
            if unknown:
                raise ValueError(
                    f"unknown {cls.name} config fields {unknown}; valid: {sorted(fields)}"
                )
            cls._check_required(config)
            # the command line's type check, so config={...} and --set give one config
            try:
                values = coerce_fields(cls.Config, config, cls.name or cls.__name__)
            except ConfigFieldError as type_error:
                cls.Config(**config)  # the learner's own message first, where it has one
                raise type_error from None  # what its checks let through ("true" for a rate)
            return cls.Config(**values)
        raise ValueError(
            f"{cls.name} expects a {cls.Config.__name__} or a dict, got {type(config).__name__}"
        )

    @classmethod
    def _check_required(cls, given: Any) -> None:
        """ValueError naming the learner, the fields and how to set them when ``Config`` has
        fields without a default that ``given`` does not set (a plugin's config may; the
        dataclass's own TypeError named neither the learner nor the way to give them)."""
        if not dataclasses.is_dataclass(cls.Config):
            return
        missing = [
            f.name
            for f in dataclasses.fields(cls.Config)
            if f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
            and f.name not in given
        ]
        if missing:
            raise ValueError(
                f"{cls.name}: settings without a default must be given, {missing}: e.g. "
                f"config={{{missing[0]!r}: ...}} in Python, --set {cls.name}.{missing[0]}=VALUE "
                f"or {cls.name}({missing[0]}=VALUE) on the command line"
            )

    def step(self, opponent: Policy) -> dict[str, float]:
        """Do one native unit of work against ``opponent`` and return metrics.

        The metrics always include the cumulative work: ``iterations``, ``nodes_touched`` and
        ``env_steps``.
        """
        metrics = self._step(opponent)
        if type(metrics) is not dict and not isinstance(metrics, Mapping):  # the ABC check: 0.1 us
            raise TypeError(
                f"{type(self).__name__}._step ({self.name}) must return a dict of metrics "
                f"(nodes_touched, env_steps and any others), got {type(metrics).__name__}"
            )
        metrics = dict(metrics)
        # A plain non-negative int (every built-in learner's) is taken as it is: this runs at
        # every step, a few microseconds on Kuhn, so the full check is only for the rest.
        touched = metrics.pop("nodes_touched", 0)
        if type(touched) is not int or touched < 0:
            touched = self._work_count(touched, "nodes_touched")
        moves = metrics.pop("env_steps", 0)
        if type(moves) is not int or moves < 0:
            moves = self._work_count(moves, "env_steps")
        self.iterations += 1
        self.nodes_touched += touched
        self.env_steps += moves
        metrics["iterations"] = self.iterations  # what work() reports, without its dict
        metrics["nodes_touched"] = self.nodes_touched
        metrics["env_steps"] = self.env_steps
        return metrics

    def _work_count(self, value: Any, key: str) -> int:
        """A step's ``nodes_touched`` / ``env_steps`` as an int, or a ValueError naming the
        learner: a negative count would lower the work done (and so stretch a work budget and
        misstate work per second), and NaN or a fraction is no count of anything."""
        number = isinstance(value, (int, float, np.integer, np.floating))
        if (
            not number
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
            or value != int(value)
        ):
            raise ValueError(
                f"{type(self).__name__}._step ({self.name}) returned {key}={value!r}; it must be "
                f"a non-negative whole number (the work this step did)"
            )
        return int(value)

    def work(self) -> dict[str, int]:
        """Cumulative work done so far."""
        return {
            "iterations": self.iterations,
            "nodes_touched": self.nodes_touched,
            "env_steps": self.env_steps,
        }

    def opponent_strategy(self, opponent: Policy) -> np.ndarray:
        """The opponent's policy as a ``[num_infosets, num_actions]`` array (exact)."""
        if isinstance(opponent, TabularPolicy) and opponent.game is self.game:
            return opponent.probs  # the common case, without from_policy's look-ups
        return TabularPolicy.from_policy(self.game, opponent).probs

    @property
    def tree(self) -> CompiledTree:
        """The game's compiled tree (cached per game): the arrays a tabular learner works on."""
        return compile_tree(self.game)

    # --- checkpoints -------------------------------------------------------------------------
    def checked_state_arrays(
        self, arrays: Mapping[str, np.ndarray], specs: Mapping[str, ArraySpec]
    ) -> dict[str, np.ndarray]:
        """``arrays`` from a checkpoint, checked against ``specs`` (names, shapes, dtype,
        finiteness, signs, zeros outside the support) and returned as writable copies; every
        ``_load_state_arrays`` starts here, so a corrupt file never becomes a silently wrong
        learner. Raises CheckpointError naming the array and the problem."""
        return check_arrays(arrays, specs, f"{self.name} checkpoint for seat {self.seat}")

    def _meta(self) -> dict[str, Any]:
        return {
            "format": LEARNER_FORMAT,
            **version_stamp(),
            "learner": self.name,
            "module": _defining_module(type(self)),  # what to import where the name is unknown
            "game": self.game.name,
            "game_id": self.game.id,
            "game_params": self.game.params,
            "seat": self.seat,
            "seed": self.seed,
            "config": self.config.to_dict(),
            "work": self.work(),
            "rng_state": self.rng.bit_generator.state,
        }

    def checkpoint_bytes(self) -> bytes:
        """The contents of this learner's checkpoint file (``.npz``: metadata JSON + arrays).
        :class:`TrainingDivergedError` if a state array holds NaN or infinity: the reader
        refuses such a file as corrupt, so it is not written (the last good checkpoint stays)."""
        return learner_checkpoint_bytes(self._meta(), self._finite_state_arrays())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a checkpoint atomically (``.npz``: metadata JSON + state arrays), straight to
        the file (never held whole as bytes); refused as :meth:`checkpoint_bytes` refuses."""
        arrays = self._finite_state_arrays()
        with atomic_file(path) as handle:
            write_learner_checkpoint(handle, self._meta(), arrays)

    def write_checkpoint(self, handle: BinaryIO) -> None:
        """Write this learner's checkpoint (what :meth:`checkpoint_bytes` holds) to an open
        binary file, never whole in memory; refused as :meth:`checkpoint_bytes` refuses."""
        write_learner_checkpoint(handle, self._meta(), self._finite_state_arrays())

    def _finite_state_arrays(self) -> dict[str, np.ndarray]:
        """:meth:`_state_arrays`, refused with :class:`TrainingDivergedError` where one holds
        NaN or infinity."""
        arrays = self._state_arrays()
        for key, array in arrays.items():
            value = np.asarray(array)
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise TrainingDivergedError(
                    f"{self.name} (seat {self.seat}) on {self.game.display_id}: its {key!r} "
                    f"holds {int((~np.isfinite(value)).sum())} non-finite value(s) (NaN or "
                    "infinity), which no checkpoint can hold, so none was written; its sums "
                    "overflowed float64 (payoffs near 1e308 do after a few iterations: divide "
                    "them by a constant, the equilibrium is the same) or diverged"
                )
        return arrays

    @classmethod
    def load(
        cls: type[_L],
        path: str | os.PathLike[str],
        game: Game | str | None = None,
        *,
        device: str | None = None,
    ) -> _L:
        """Restore a learner saved by :meth:`save`; training resumes exactly where it stopped.
        ``device`` (torch learners): where to rebuild it instead of the device it was trained
        on, e.g. ``"cpu"`` for a checkpoint written on a GPU machine."""
        return cls.from_checkpoint(
            read_learner_checkpoint(path), game, name=str(path), device=device
        )

    @classmethod
    def from_checkpoint(
        cls: type[_L],
        checkpoint: LearnerCheckpoint,
        game: Game | str | None = None,
        *,
        name: str = "",
        device: str | None = None,
    ) -> _L:
        """The learner a validated checkpoint holds (``name``: the file, for messages;
        ``device``: see :meth:`load`; a learner without a ``device`` setting, one that computes
        with numpy, ignores it)."""
        name = name or "the checkpoint"
        if cls.name and checkpoint.learner != cls.name:
            raise CheckpointError(
                f"{name} is a {checkpoint.learner!r} checkpoint, not {cls.name!r}; load it "
                f"with nashzoo.agents.load_learner"
            )
        if game is not None and load_game(game).id != checkpoint.game.id:
            theirs, ours = display_ids_apart(checkpoint.game.id, load_game(game).id)
            raise CheckpointError(f"{name} was trained on {theirs}, not on {ours}")
        meta = checkpoint.meta
        config = _on_device(meta["config"], device, name)
        if isinstance(config, dict):
            # Only settings the class's config has: a plugin subclassing NFSP with a Config of
            # its own inherits NFSP's list, and a setting its config lacks would be refused.
            fields = {f.name for f in dataclasses.fields(cls.Config)}
            old = cls.settings_before_they_existed.items()
            config = {**{k: v for k, v in old if k in fields}, **config}
        newer = newer_writer_note(meta)  # a newer nashzoo's setting or array is no corruption
        try:
            learner = cls._instance_to_restore(checkpoint.game, meta["seat"], config, meta["seed"])
        except Exception as err:
            raise CheckpointError(
                f"{name}: its config does not build a {cls.name} learner ({cause(err)}){newer}"
            ) from None
        try:
            learner._load_state_arrays(dict(checkpoint.arrays))
        except CheckpointError as err:
            raise CheckpointError(f"{name}: {err}{newer}") from None
        except Exception as err:
            misfit = f"checkpoint contents do not fit a {cls.name} learner ({cause(err)})"
            raise CheckpointError(f"{name}: {misfit}{newer}") from None
        try:
            learner.rng.bit_generator.state = meta["rng_state"]
        except Exception as err:
            raise CheckpointError(
                f"{name}: field 'rng_state' is not a generator state ({err})"
            ) from None
        work = meta["work"]
        learner.iterations = work["iterations"]
        learner.nodes_touched = work["nodes_touched"]
        learner.env_steps = work["env_steps"]
        return learner

    @classmethod
    def _instance_to_restore(
        cls: type[_L], game: Game, seat: int, config: dict[str, Any], seed: int
    ) -> _L:
        """The fresh learner :meth:`from_checkpoint` fills from the stored arrays; a learner whose
        ``_setup`` reads something the checkpoint replaces (a file) overrides it to skip that."""
        return cls(game, seat, config, seed=seed)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} seat={self.seat} game={self.game.display_id}>"
