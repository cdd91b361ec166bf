"""Learners and policies from the files nashzoo writes, whatever kind of file it is.

The file formats and their validation live in :mod:`nashzoo.io`; this module turns validated
checkpoints into objects, dispatching on the learner name a checkpoint stores.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from nashzoo.agents.base import Learner, needs_missing_cuda
from nashzoo.agents.policy import PolicyError, TabularPolicy
from nashzoo.agents.registry import check_module_name, learner_class
from nashzoo.extras import require
from nashzoo.games import Game, load_game
from nashzoo.games.base import display_ids_apart
from nashzoo.io import (
    CheckpointError,
    LearnerCheckpoint,
    TrainerCheckpoint,
    is_trainer_checkpoint,
    read_learner_checkpoint,
    read_trainer_checkpoint,
)


def learner_from_checkpoint(
    checkpoint: LearnerCheckpoint,
    game: Game | str | None = None,
    *,
    name: str = "",
    device: str | None = None,
) -> Learner:
    """The learner a validated checkpoint holds, built by the class its name is registered as
    (on ``device`` rather than the one it was trained on, for a torch learner; see
    :meth:`Learner.load`)."""
    try:
        cls = learner_class(checkpoint.learner)
    except ValueError:
        raise CheckpointError(
            f"{name or 'the checkpoint'} names an unknown learner {checkpoint.learner!r}; "
            f"{_how_to_register(checkpoint.meta.get('module'))}"
        ) from None
    return cls.from_checkpoint(checkpoint, game, name=name, device=device)


def _how_to_register(module: object) -> str:
    """What makes a checkpoint's unknown learner known, by the module its class was defined in
    (stored in the checkpoint since it was first written; older files do not say). The module
    is named, never imported: a file must not choose what code runs."""
    try:
        module = check_module_name(module)
    except ValueError:  # an old file, or a damaged field: name no module
        module = "nashzoo."
    if module.startswith("nashzoo."):
        return "import the module that registers it first (nashzoo --plugin MODULE ...)"
    if module in ("__main__", "__mp_main__"):
        return (
            "it was defined in a script or notebook (__main__), which nothing else can import: "
            "move the class into a module, then import that module first (nashzoo --plugin "
            "MODULE ...)"
        )
    return (
        f"it was registered by the module {module!r}: import it first (import {module} in "
        f"Python, nashzoo --plugin {module} ... on the command line)"
    )


def load_learner(
    path: str | os.PathLike[str], game: Game | str | None = None, *, device: str | None = None
) -> Learner:
    """Load any learner checkpoint, dispatching on the learner name stored in it. ``device``
    (torch learners): where to rebuild it instead of where it was trained, e.g. ``"cpu"`` for
    a checkpoint written on a GPU machine; learners that compute with numpy ignore it."""
    return learner_from_checkpoint(
        read_learner_checkpoint(path), game, name=str(path), device=device
    )


def seat_learners(
    checkpoint: TrainerCheckpoint, *, name: str = "", device: str | None = None
) -> list[Learner]:
    """The learners of a trainer checkpoint, one per seat (``device``: see
    :func:`load_learner`)."""
    return [
        learner_from_checkpoint(seat, checkpoint.game, name=f"{name}, seat {p}", device=device)
        for p, seat in enumerate(checkpoint.seats)
    ]


def _policy_device(configs: list[Any]) -> str | None:
    """Where stored learners are rebuilt to read their policy: on the CPU when one was trained
    on a CUDA device and torch sees none here (a policy is the same wherever it is computed,
    to float32 rounding), else where they were trained. Without torch: where they were
    trained, and building the learner names the extra to install. ``configs`` are the stored
    configs as read (a dict, or whatever a damaged file holds)."""
    return "cpu" if any(needs_missing_cuda(config) for config in configs) else None


def load_policy_file(path: str | os.PathLike[str], game: Game | str | None = None) -> TabularPolicy:
    """The policy stored in any file nashzoo writes, as a :class:`TabularPolicy` (see
    :func:`load_policy_and_seat`, which also says whether the file is one seat's learner)."""
    return load_policy_and_seat(path, game)[0]


def load_policy_and_seat(
    path: str | os.PathLike[str], game: Game | str | None = None
) -> tuple[TabularPolicy, int | None]:
    """The policy stored in any file nashzoo writes, as a :class:`TabularPolicy`, and the seat
    the file's learner was trained for when it is one learner's checkpoint (``None`` for any
    other file: its policy covers every seat it was meant to):

    * a policy ``.json`` (:meth:`TabularPolicy.save`, the race's ``average_policy.json``);
    * a learner checkpoint ``.npz`` (:meth:`Learner.save`): its average policy;
    * a trainer checkpoint ``.npz`` (``Trainer.save``, the ``checkpoint.npz`` that ``nashzoo
      train`` and ``race`` write): the joint average policy of its two learners;
    * a Stable-Baselines3 model ``.zip`` (PPO, A2C, MaskablePPO, DQN trained on the game's
      information-set tensors, e.g. on ``gymnasium.make("nashzoo/KuhnPoker-v0")``), read by
      :func:`nashzoo.agents.adapters.from_sb3` and materialised; it needs ``game``.

    ``game`` (optional) checks the file is for that game. Raises PolicyError / CheckpointError
    with a message naming the file. A learner checkpoint's other seats hold what the learner
    plays there (uniform rows for a tabular learner), not anything it was trained for.
    """
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not file.is_file() and not file.is_dir():
        # A pipe (``nashzoo eval <(gunzip -c policy.json.gz)``, ``/dev/stdin``) reads once:
        # its bytes go to a file, which is read as any other. It was refused as not a policy.
        # Copied a chunk at a time: a policy file is then streamed, never held whole.
        with tempfile.TemporaryDirectory(prefix="nashzoo-") as folder:
            copy = Path(folder) / (file.name or "input")
            with open(file, "rb") as source, open(copy, "wb") as target:
                shutil.copyfileobj(source, target)
            return _load(copy, path, game)
    return _load(file, path, game)


def _load(
    file: Path, path: str | os.PathLike[str], game: Game | str | None
) -> tuple[TabularPolicy, int | None]:
    """:func:`load_policy_and_seat` of the regular file ``file`` (``path``, as given)."""
    kind = file_kind(file)
    if kind == ".json":
        return TabularPolicy.load(file, game), None
    if kind == ".zip":
        if game is None:
            raise PolicyError(
                f"{path}: a Stable-Baselines3 .zip does not say its game; name it "
                f"(e.g. nashzoo eval {path} --game kuhn_poker)"
            )
        require("reading a Stable-Baselines3 .zip", "rl", "torch", "stable_baselines3")
        from nashzoo.agents.adapters import from_sb3

        return TabularPolicy.from_policy(game, from_sb3(file, game)), None
    if kind != ".npz":
        raise PolicyError(
            f"{path}: expected a policy .json, a checkpoint .npz or a Stable-Baselines3 .zip"
        )
    if not is_trainer_checkpoint(file):
        one = read_learner_checkpoint(file)
        device = _policy_device([one.meta.get("config")])
        learner = learner_from_checkpoint(one, game, name=str(path), device=device)
        return TabularPolicy.from_policy(learner.game, learner.average_policy()), learner.seat
    checkpoint = read_trainer_checkpoint(file)
    if game is not None and load_game(game).id != checkpoint.game.id:
        theirs, ours = display_ids_apart(checkpoint.game.id, load_game(game).id)
        raise CheckpointError(f"{path} was trained on {theirs}, not on {ours}")
    device = _policy_device([seat.meta.get("config") for seat in checkpoint.seats])
    learners = seat_learners(checkpoint, name=str(path), device=device)
    return TabularPolicy.joint(checkpoint.game, [lr.average_policy() for lr in learners]), None


def file_kind(file: Path) -> str:
    """``.json``, ``.npz`` or ``.zip`` by the file's name, or, for any other name (``Trainer.save``
    and ``Learner.save`` take any), by its first bytes: a JSON object, or a zip that holds numpy
    arrays (a checkpoint) or a Stable-Baselines3 model."""
    if file.suffix in (".json", ".npz", ".zip") or not file.is_file():
        return file.suffix
    with open(file, "rb") as handle:
        head = handle.read(64).lstrip()
    if head.startswith(b"{"):
        return ".json"
    if head.startswith(b"PK"):
        import zipfile

        try:
            with zipfile.ZipFile(file) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError):
            return file.suffix
        return ".npz" if any(n.endswith(".npy") for n in names) else ".zip"
    return file.suffix
