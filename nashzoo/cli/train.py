"""``nashzoo train`` and ``nashzoo duel``: one learner in self-play, or two different ones against
each other, to a run folder that resumes."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from nashzoo.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    UsageError,
    game_arg,
    load_game_arg,
    logger_option,
    non_negative_int,
    positive_float,
    positive_int,
    settings_options,
    user_path,
)


def _train_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iterations", type=positive_int, help="trainer iterations (total)")
    parser.add_argument("--seconds", type=positive_float, help="training seconds (total)")
    parser.add_argument(
        "--work", type=positive_int, help="work: nodes touched + env steps, both seats (total)"
    )
    parser.add_argument("--seed", type=non_negative_int, help="trainer seed (default 0)")
    parser.add_argument(
        "--eval-every",
        help="evaluate every N iterations, 'log' (log-spaced, default) or 'none'",
    )
    parser.add_argument(
        "--out", type=user_path, help="folder for checkpoint.npz, average_policy.json, history"
    )
    parser.add_argument("--checkpoint-every", type=positive_int, help="iterations between saves")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out until its budget (budgets are totals; a larger one "
        "trains further); options not typed are the run's own",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace a run already in --out (default: refuse)"
    )
    parser.add_argument(
        "--device",
        type=_device,
        help="with --resume: rebuild the run's torch learners on this device (cpu, cuda, "
        "cuda:N or auto) instead of the one they were trained on, e.g. cpu for a run trained "
        "on a GPU resumed on a machine without CUDA; stored in the run's settings once the "
        "resume goes on (a new run sets it per learner: --set nfsp.device=cuda)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is one only when stderr is a terminal)",
    )
    settings_options(parser)
    logger_option(parser, "in --out (without --out: a new folder runs/train/logs/TIME per run)")


def _device(text: str) -> str:
    """``--device``: the devices a torch learner's ``device`` setting takes."""
    if text in ("cpu", "cuda", "auto") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"expected cpu, cuda, cuda:N or auto, got {text!r}")


def _eval_every(text: str) -> Any:
    if text in ("none", "log"):
        return None if text == "none" else "log"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise UsageError(
            f"--eval-every: expected 'log', 'none' or an integer > 0, got {text!r}"
        ) from None


def _typed_run(args: argparse.Namespace, seat0: str | None, seat1: str | None) -> dict[str, Any]:
    """The run options typed on the command line (``None``: not typed)."""
    if args.eval_every is not None:
        _eval_every(args.eval_every)
    typed = {
        "game": args.game,
        "learners": None if seat0 is None else (seat0, seat1 or seat0),
        "seed": args.seed,
        "eval_every": args.eval_every,
        "iterations": args.iterations,
        "seconds": args.seconds,
        "work": args.work,
        "checkpoint_every": args.checkpoint_every,
        # stored with the run (a resume imports them), as a race stores its own
        "plugins": tuple(args.plugin) if args.plugin else None,
        "loggers": _logger_kinds(args.logger),
    }
    return {k: v for k, v in typed.items() if v is not None}


def _logger_kinds(typed: Any) -> tuple[str, ...] | None:
    """The ``--logger`` kinds typed (``None``: not typed, a resumed run keeps its own)."""
    if typed is None:
        return None
    from nashzoo.train.loggers import logger_kinds

    try:
        return logger_kinds(typed)
    except ValueError as err:
        raise UsageError(f"--logger: {err}") from None


def _run_trainer(args: argparse.Namespace, seat0: str | None, seat1: str | None) -> int:
    from nashzoo.io import check_output_folder, folder_lock, remove_stale_temp_files
    from nashzoo.train import run_folder

    if seat0 is None and seat1 is not None:
        raise UsageError("--opponent needs --learner")
    if args.resume and args.force:
        raise UsageError("--resume continues the run in --out; --force replaces it: choose one")
    if args.device is not None and not args.resume:
        raise UsageError(
            "--device moves a resumed run's learners (with --resume); a new run's device is "
            f"a learner setting: --set LEARNER.device={args.device} or "
            f"LEARNER(device='{args.device}')"
        )
    if args.logger is not None:
        from nashzoo.train.loggers import require_logger

        require_logger(_logger_kinds(args.logger) or ())  # before --out is claimed
    seats = _seat_settings(args, seat0, seat1)
    if seats is not None:
        seat0, seat1 = seats[0].algorithm, seats[1].algorithm
    typed = _typed_run(args, seat0, seat1)
    if args.out is None:
        if args.resume or args.checkpoint_every or args.force:
            raise UsageError("--resume, --force and --checkpoint-every need --out FOLDER")
        config = _new_config(typed)
        return _train_once(args, config, None, _build_learners(config, seats))
    if args.resume and not Path(args.out).exists():
        raise UsageError(f"no run to resume in {args.out}: the folder does not exist")
    folder = check_output_folder(args.out)
    with folder_lock(folder, "--out folder"):
        remove_stale_temp_files(folder)
        if args.resume:
            # Built from the run's own settings. A learner typed again by its name alone keeps
            # them; settings typed too (the command that started the run, typed again) must be
            # the run's.
            if seats is not None and any(seat.overrides for seat in seats):
                typed["settings"] = tuple(dict(seat.overrides) for seat in seats)
            return _train_once(args, run_folder.resume(folder, typed), folder, None)
        if seats is not None:
            typed["settings"] = tuple(dict(seat.overrides) for seat in seats)
        config = _new_config(typed)
        learners = _build_learners(config, seats)  # before the folder is claimed
        run_folder.start(folder, config, force=args.force)
        return _train_once(args, config, folder, learners)


def _seat_settings(args: argparse.Namespace, seat0: str | None, seat1: str | None) -> Any:
    """Each seat's learner setting (``--config``, ``--set``, ``NAME(FIELD=VALUE)``), or
    ``None`` when no learner is named (a resumed run keeps the settings it was started with)."""
    from nashzoo.train.settings import seat_settings

    if seat0 is None:
        if args.config_file or args.sets:
            raise UsageError(
                "--config and --set set up a new run; a resumed run keeps the settings in its "
                "train_config.json (to change them, start a new run: --force or another --out)"
            )
        return None
    seats = seat_settings(
        [seat0, seat1 or seat0], config_file=args.config_file, sets=args.sets or ()
    )
    return seats


def _new_config(typed: dict[str, Any]) -> Any:
    from nashzoo.train.run_folder import RunConfig

    if "learners" not in typed:
        raise UsageError("give --learner NAME (or --resume to continue the run in --out)")
    if not any(k in typed for k in ("iterations", "seconds", "work")):
        raise UsageError("give --iterations N, --seconds S and/or --work W")
    return RunConfig(**{"game": "kuhn_poker", **typed})


def _build_learners(config: Any, seats: Sequence[Any]) -> tuple[Any, Any]:
    """Each seat's learner, with its setting and the seed the Trainer gives that seat
    (:func:`~nashzoo.train.trainer.seat_seeds`), built once and handed to the Trainer. A new
    run builds them before any file is written: an unknown learner, one that cannot play the
    game, and settings that only the learner can check (NFSP's ``memory='infoset'`` with
    ``play='env'``, sizes too big for the memory) are refused here, not after
    ``train_config.json`` claimed the folder for a run that cannot start (whose retry was then
    refused as an existing run, and whose ``--force`` had already deleted the run it
    replaced)."""
    from nashzoo.agents import make_learner
    from nashzoo.train.trainer import seat_seeds

    game = load_game_arg(config.game)
    seeds = seat_seeds(config.seed)
    learners = []
    for seat, setting in enumerate(seats):
        try:
            learners.append(
                make_learner(setting.algorithm, game, seat, setting.config(), seed=seeds[seat])
            )
        except MemoryError as err:
            raise ValueError(
                f"{setting.algorithm} with {dict(setting.overrides) or 'its defaults'} needs more "
                f"memory than this machine has ({err}); lower its sizes (capacities, buffers, "
                "steps per iteration)"
            ) from None
    return learners[0], learners[1]


def _new_log_folder() -> Path:
    """A folder of its own for the metrics of a ``train`` run without ``--out``
    (``runs/train/logs/<time>``), so a second run never replaces the first one's."""
    import time

    base = Path("runs/train/logs") / time.strftime("%Y%m%d-%H%M%S")
    folder, n = base, 1
    while True:
        try:
            folder.mkdir(parents=True)
        except FileExistsError:
            n += 1
            folder = base.with_name(f"{base.name}-{n}")
            continue
        print(f"metrics go to {folder}")
        return folder


def _add_loggers(trainer: Any, config: Any, folder: Path | None) -> None:
    """The run's loggers (typed now, or the resumed run's own), built once it is known to train
    (a resume already at its budget left an empty TensorBoard file per try). A run that starts
    from its first iteration in a folder (a resume before any checkpoint starts over) first
    removes what loggers wrote there before: TensorBoard drew the cut-off attempt and the new
    one as one curve."""
    from nashzoo.train.loggers import make_loggers, remove_logger_output

    if folder is not None and trainer.iteration == 0:
        remove_logger_output(folder)
    if config.loggers:
        trainer.callbacks.callbacks.extend(
            make_loggers(config.loggers, folder or _new_log_folder())
        )


def _train_once(
    args: argparse.Namespace, config: Any, folder: Path | None, learners: tuple[Any, Any] | None
) -> int:
    """Make the trainer for ``config`` from ``learners`` (a new run's, built by
    :func:`_build_learners`) or, resuming (``None``), load it from the folder's checkpoint or
    build the learners from the stored settings; train to its total budget, write the
    outputs."""
    from nashzoo.agents.base import NoCudaHereError
    from nashzoo.train import PrintEval, StopOnInterrupt, Trainer
    from nashzoo.train.run_folder import CHECKPOINT_FILE, OUTPUT_FILES, check_checkpoint

    checkpoint = None if folder is None else folder / CHECKPOINT_FILE
    progress = None if not args.no_progress else False
    stopper = StopOnInterrupt()
    callbacks: list[Any] = [PrintEval(), stopper]
    if folder is not None and checkpoint is not None and args.resume and checkpoint.exists():
        try:
            trainer = Trainer.load(
                checkpoint,
                callbacks=callbacks,
                progress=progress,
                checkpoint_path=checkpoint,
                checkpoint_every=config.checkpoint_every,
                device=args.device,
            )
        except NoCudaHereError as err:
            raise _no_cuda_here(err.name, err.device, folder) from None
        check_checkpoint(trainer, config, folder)
        _note_unused_device(args.device, [learner.config for learner in trainer.learners])
        print(f"resumed {trainer}; training to {config.budget_text()}")
    else:
        if learners is None:  # resumed before its first checkpoint: start over as it was started
            assert folder is not None  # only a resume gives no learners
            learners = _build_learners(config, _stored_settings(config, args.device, folder))
            print(f"no checkpoint yet in {folder}: starting the run over with its settings")
        trainer = Trainer(
            learners[0].game,
            learners[0],
            learners[1],
            seed=config.seed,
            eval_every=_eval_every(config.eval_every),
            callbacks=callbacks,
            progress=progress,
            checkpoint_path=checkpoint,
            checkpoint_every=config.checkpoint_every,
        )
    if folder is not None and args.resume:
        if args.device is not None:  # a start-over before the next checkpoint uses it too
            config = _with_device(config, args.device)
        config.write(folder)  # the budget and device typed now, once the run is known to go on
    remaining = config.remaining(trainer)
    if remaining == {"iterations": 0} and trainer.iteration:
        print(
            f"the run is already at its budget ({config.budget_text()}); budgets are totals: "
            "give a larger one to train further"
        )
        if folder is not None and all((folder / name).exists() for name in OUTPUT_FILES):
            return 0  # its outputs stand as the run wrote them (how it stopped included)
    _add_loggers(trainer, config, folder)
    result = _run(trainer, remaining, stopper, config, folder, checkpoint)
    if folder is not None:  # written before anything is printed: an output gone loses nothing
        _write_outputs(folder, config, result)
    # Stopped by a signal, the terminal may be gone (SIGHUP): its lines are then dropped, and
    # the status stays the signal's; otherwise an output that fails is an error.
    with contextlib.suppress(OSError) if stopper.interrupted else contextlib.nullcontext():
        print(result)
        if folder is not None:
            saved = "" if trainer.checkpoint_error is not None else "checkpoint.npz, "
            print(
                f"wrote {folder}/{saved}average_policy.json, history.csv, result.json "
                "(beside train_config.json, written at the start)"
            )
    if trainer.checkpoint_error is not None:
        print(
            f"error: {trainer.checkpoint_error}; the other outputs hold the finished run, and "
            "--resume goes on from the last checkpoint that was written",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    if stopper.interrupted:
        again = (
            f"; the same command with --resume trains on to {config.budget_text()}"
            if folder is not None
            else ""
        )
        with contextlib.suppress(OSError):
            print(f"interrupted at iteration {trainer.iteration}{again}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _run(
    trainer: Any,
    remaining: dict[str, Any],
    stopper: Any,
    config: Any,
    folder: Path | None,
    checkpoint: Path | None,
) -> Any:
    """``trainer.run(**remaining)`` with Ctrl-C ending it after a step; a second Ctrl-C (or
    SIGTERM) stops it inside one, and then says what the folder keeps."""
    try:
        with stopper.armed(), warnings.catch_warnings():
            # said below, with what the command wrote: a warning too would say it twice
            warnings.filterwarnings("ignore", "the run's final checkpoint could not be written")
            return trainer.run(**remaining)
    except KeyboardInterrupt:
        if folder is not None and checkpoint is not None:
            with contextlib.suppress(OSError):
                print(_kept_after_a_hard_stop(trainer, config, folder, checkpoint), file=sys.stderr)
        raise


def _kept_after_a_hard_stop(trainer: Any, config: Any, folder: Path, checkpoint: Path) -> str:
    """What a run stopped inside a step keeps, and what ``--resume`` does with it: a second
    Ctrl-C used to print only "interrupted", and a run with no checkpoint yet (the default
    writes one only at the end) was lost without a word."""
    inside = f"stopped inside iteration {trainer.iteration + 1}"
    if checkpoint.exists():
        every = config.checkpoint_every
        when = f" (one every {every} iterations)" if every else ""
        return (
            f"{inside}: {checkpoint} holds the run as of its last checkpoint{when}; the same "
            "command with --resume goes on from there"
        )
    return (
        f"{inside}, before any checkpoint: nothing of the run is saved in {folder}, and the "
        "same command with --resume starts it over (--checkpoint-every N saves a long run "
        "every N iterations)"
    )


def _write_outputs(folder: Path, config: Any, result: Any) -> None:
    """The finished run's policy, history and result, in ``folder``; its config again if the
    folder was deleted (or emptied) while the run trained: the writes make the folder again,
    and without its config it could be neither resumed nor started over."""
    from nashzoo.train.run_folder import CONFIG_FILE

    if not (folder / CONFIG_FILE).exists():
        print(
            f"warning: {folder}/{CONFIG_FILE} was removed while the run trained; it is written "
            "again with the outputs",
            file=sys.stderr,
        )
        config.write(folder)
    result.average_policy.save(folder / "average_policy.json")
    result.to_csv(folder / "history.csv")
    result.to_json(folder / "result.json")


def _has_device(learner: str) -> bool:
    """Whether ``learner``'s config has a ``device`` field (a torch learner)."""
    from nashzoo.agents import learner_class

    return any(f.name == "device" for f in fields(learner_class(learner).Config))


def _with_device(config: Any, device: str) -> Any:
    """``config`` (a RunConfig) with each torch learner's stored ``device`` set to ``device``
    (``--device``), so ``train_config.json`` says where the run now computes."""
    import dataclasses

    settings = tuple(
        {**seat, "device": device} if _has_device(name) else seat
        for name, seat in zip(config.learners, config.settings, strict=True)
    )
    return dataclasses.replace(config, settings=settings)


def _stored_settings(config: Any, device: str | None, folder: Path) -> list[Any]:
    """Each seat's setting as ``train_config.json`` stored it, checked field by field again;
    a torch learner's ``device`` replaced by ``device`` (``--device``), and one trained on CUDA
    where torch sees none refused with the command that moves it."""
    from nashzoo.agents.base import needs_missing_cuda
    from nashzoo.train.run_folder import CONFIG_FILE
    from nashzoo.train.settings import LearnerSetting, check_overrides

    settings = []
    for seat, (name, overrides) in enumerate(zip(config.learners, config.settings, strict=True)):
        overrides = dict(overrides)
        if device is not None and _has_device(name):
            overrides["device"] = device
        elif device is None and needs_missing_cuda(overrides):
            where = f"{folder / CONFIG_FILE}, seat {seat}"
            raise _no_cuda_here(where, overrides["device"], folder)
        settings.append(LearnerSetting(name, name, check_overrides(name, name, overrides)))
    _note_unused_device(device, [setting.config() for setting in settings])
    return settings


def _no_cuda_here(name: str, device: str, folder: Any) -> Exception:
    """The error for a run trained on CUDA resumed where torch sees none: the command that
    resumes it on the CPU."""
    import shlex

    from nashzoo.io import CheckpointError

    return CheckpointError(
        f"{name} was trained with device={device!r} and torch sees no CUDA device here; resume "
        f"the run on the CPU: nashzoo train --out {shlex.quote(str(folder))} --resume --device cpu"
    )


def _note_unused_device(device: str | None, configs: Sequence[Any]) -> None:
    """Say so when ``--device`` moves nothing: every learner computes with numpy."""
    if device is not None and not any(hasattr(config, "device") for config in configs):
        print(f"note: --device {device} changes nothing: this run's learners compute with numpy")


def _cmd_train(args: argparse.Namespace) -> int:
    return _run_trainer(args, args.learner, args.opponent)


def _cmd_duel(args: argparse.Namespace) -> int:
    if args.seat1 is None and (args.seat0 is not None or not args.resume):
        raise UsageError(
            "nashzoo duel needs two learners, e.g. nashzoo duel cfr_plus nfsp (or --resume --out "
            "FOLDER, which continues a run with its own)"
        )
    if args.seat0 is not None and args.seat0 == args.seat1:
        print(
            "note: the same algorithm on both seats is self-play; a duel is usually between "
            "two different ones"
        )
    return _run_trainer(args, args.seat0, args.seat1)


def add_train_parser(sub: Any) -> None:
    """``nashzoo train``: one learner in self-play (or a pair) to a checkpoint."""
    train = sub.add_parser("train", help="train a learner (self-play) or a pair to a checkpoint")
    game_arg(train, default=None)
    train.add_argument(
        "--learner",
        help="learner, e.g. cfr_plus or nfsp(hidden_sizes=[32]) (required unless --resume)",
    )
    train.add_argument("--opponent", help="learner on seat 1 (default: the same: self-play)")
    _train_common(train)
    train.set_defaults(func=_cmd_train, stops_gracefully=True)


def add_duel_parser(sub: Any) -> None:
    """``nashzoo duel``: two different algorithms learning against each other."""
    duel = sub.add_parser("duel", help="two different algorithms learning against each other")
    game_arg(duel, default=None)
    duel.add_argument("seat0", nargs="?", help="learner on seat 0 (required unless --resume)")
    duel.add_argument("seat1", nargs="?", help="learner on seat 1 (required unless --resume)")
    _train_common(duel)
    duel.set_defaults(func=_cmd_duel)
