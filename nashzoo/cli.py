"""``nashzoo``: the command line.

``nashzoo race``        which learners converge, and how fast (the main job)
``nashzoo train``       train one learner (self-play) or a pair, to a checkpoint
``nashzoo eval``        exact NashConv / exploitability of a policy file or checkpoint
``nashzoo tournament``  round robin between saved agents and built-ins
``nashzoo duel``        two different algorithms learning against each other, live
``nashzoo play``        play an agent yourself in the terminal
``nashzoo games``       the games: parameters, players, sizes; one game's exact value
``nashzoo learners``    the learners: kind, extras needed; one learner's settings
``nashzoo solve``       a two-player zero-sum game's exact equilibrium, to a policy file

Bad arguments give a one-line error and a non-zero exit status, never a traceback: 2 for
malformed options (caught while parsing), 1 for values the library refuses while running (an
unknown learner, an unreadable or foreign file) and for any failure inside a command (an
unexpected one says so and points to ``--debug``, which shows the traceback instead).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

from nashzoo import __version__

if TYPE_CHECKING:  # the command line imports what a command needs when it runs
    from nashzoo.games import Game
    from nashzoo.games.infoset import Policy

EXIT_USAGE = 2
EXIT_FAILURE = 1


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _learner_list(text: str) -> tuple[str, ...]:
    """Comma-separated learner specs (commas inside ``name(...)`` do not split)."""
    from nashzoo.train.settings import SettingsError, split_specs

    try:
        return tuple(split_specs(text))
    except SettingsError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _settings_options(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--set LEARNER.FIELD=VALUE`` (see nashzoo.train.settings)."""
    parser.add_argument(
        "--config",
        dest="config_file",
        metavar="FILE",
        help="learner settings: a YAML/TOML file with a 'learners' table of LABEL: {FIELD: "
        "VALUE, algorithm: NAME}",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        metavar="LEARNER.FIELD=VALUE",
        help="set one learner config field (repeatable; wins over --config)",
    )


def _number_type(kind: type, low: float, *, strict: bool) -> Any:
    """An argparse ``type``: ``kind`` (int or float), finite, above ``low`` (``strict``) or at
    least ``low``; the message says what was expected."""
    noun = "an integer" if kind is int else "a number"
    bound = f"{'>' if strict else '>='} {low:g}"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not (value > low if strict else value >= low) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected {noun} {bound}, got {text}")
        return value

    return parse


_positive_float = _number_type(float, 0, strict=True)
_non_negative_float = _number_type(float, 0, strict=False)
_positive_int = _number_type(int, 0, strict=True)
_non_negative_int = _number_type(int, 0, strict=False)


def _game_arg(parser: argparse.ArgumentParser, default: str | None = "kuhn_poker") -> None:
    """``--game``; ``default=None`` leaves it unset when not typed (``--resume`` tells the two
    apart), with kuhn_poker still the default the command uses."""
    parser.add_argument(
        "--game",
        default=default,
        help=f"{GAME_HELP} (default kuhn_poker)",
    )


GAME_HELP = (
    "a game name or spec: rps, matrix:PRESET (e.g. matrix:matching_pennies), kuhn_poker, "
    "leduc_poker, liars_dice, a registered game (--plugin), parameters as NAME(key=value,...), "
    "e.g. 'liars_dice(dice_sides=4)', or any "
    "two-player OpenSpiel game as 'openspiel:GAME_STRING'"
)


def _load_game(spec: str) -> Any:
    from nashzoo.games import load_game

    return load_game(spec)


# --- race ------------------------------------------------------------------------------------
def _race_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The RaceConfig fields given on the command line (race options default to SUPPRESS, so
    an option that was not typed is absent and ``--resume`` can take it from the stored race)."""
    fields: dict[str, Any] = {}
    for key in (
        "game",
        "learners",
        "seeds",
        "budget_iterations",
        "budget_work",
        "cross_play",
        "out",
        "workers",
        "backend",
        "address",
        "config_file",
        "logger",
    ):
        if hasattr(args, key):
            fields[key] = getattr(args, key)
    if fields.get("config_file") is not None:  # as race_config.json stores it
        fields["config_file"] = os.path.abspath(fields["config_file"])
    if hasattr(args, "sets"):
        fields["sets"] = tuple(args.sets)
    if hasattr(args, "budget_seconds"):
        fields["budget_seconds"] = None if args.budget_seconds == 0 else args.budget_seconds
    if hasattr(args, "no_self_play"):
        fields["self_play"] = False
    if hasattr(args, "no_plots"):
        fields["plots"] = False
    if args.plugin:
        fields["plugins"] = tuple(args.plugin)
    return fields


def _cmd_race(args: argparse.Namespace) -> int:
    from nashzoo.agents.registry import same_plugins
    from nashzoo.train.race import RaceConfig, run_race, stored_race_config

    fields = _race_fields(args)
    if args.resume:
        out = fields.get("out", RaceConfig.out)
        stored = stored_race_config(out, fields.get("config_file"))
        if stored is None:
            print(f"no race to resume in {out}/ (no race_config.json): starting a new one")
        else:
            if same_plugins(fields.get("plugins", ()), stored.get("plugins", ())):
                fields.pop("plugins", None)  # the same modules: the stored order is kept
            changed = [
                _changed_option(k, v, stored[k])
                for k, v in fields.items()
                if k in stored and k != "out" and _race_value(v) != _race_value(stored[k])
            ]
            fields = {**stored, **fields}  # options typed now win over the stored ones
            print(f"resuming the race in {out}/ (options not given now are the stored ones)")
            if changed:
                print(
                    "resuming with " + "; ".join(changed) + ": runs whose settings changed are "
                    "run again, finished runs with unchanged settings are kept"
                )
    if fields.get("address") and fields.get("backend", RaceConfig.backend) != "ray":
        raise UsageError("--address needs --backend ray")
    config = RaceConfig(**{**fields, "resume": args.resume, "force": args.force})
    outcome = run_race(config, progress=not args.no_progress)
    if outcome.interrupted:
        return 130
    if outcome.failures:  # the report holds the runs that finished; the status says some did not
        ids = ", ".join(str(f["run_id"]) for f in outcome.failures)
        print(
            f"error: {len(outcome.failures)} run(s) failed ({ids}): each folder's error.json "
            "says why; --resume runs them again",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return 0


_RACE_OPTIONS = {
    "budget_seconds": "--budget-seconds",
    "budget_iterations": "--budget-iterations",
    "budget_work": "--budget-work",
    "cross_play": "--cross-play",
    "self_play": "--no-self-play",
    "plots": "--no-plots",
    "plugins": "--plugin",
    "config_file": "--config",
    "sets": "--set",
}


def _changed_option(key: str, value: Any, stored: Any) -> str:
    """How an option typed with ``--resume`` differs from the stored race's."""
    option = _RACE_OPTIONS.get(key, key)
    if isinstance(value, bool):  # an on/off flag (--cross-play, --no-plots): typed = changed
        return f"{option} (the stored race was started without it)"
    return f"{option} {_race_value(value)} (the stored race has {_race_value(stored)})"


def _race_value(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


# --- train / duel ----------------------------------------------------------------------------
def _train_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iterations", type=_positive_int, help="trainer iterations (total)")
    parser.add_argument("--seconds", type=_positive_float, help="training seconds (total)")
    parser.add_argument(
        "--work", type=_positive_int, help="work: nodes touched + env steps, both seats (total)"
    )
    parser.add_argument("--seed", type=_non_negative_int, help="trainer seed (default 0)")
    parser.add_argument(
        "--eval-every",
        help="evaluate every N iterations, 'log' (log-spaced, default) or 'none'",
    )
    parser.add_argument("--out", help="folder for checkpoint.npz, average_policy.json, history")
    parser.add_argument("--checkpoint-every", type=_positive_int, help="iterations between saves")
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    _settings_options(parser)
    _logger_option(parser, "in --out (without --out: a new folder runs/train/logs/TIME per run)")


def _device(text: str) -> str:
    """``--device``: the devices a torch learner's ``device`` setting takes."""
    if text in ("cpu", "cuda", "auto") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"expected cpu, cuda, cuda:N or auto, got {text!r}")


def _logger_option(parser: argparse.ArgumentParser, where: str) -> None:
    parser.add_argument(
        "--logger",
        choices=("tensorboard", "wandb", "csv"),
        help=f"also log exploitability, seat exploitability, work and the learners' own "
        f"metrics {where}: TensorBoard, Weights & Biases (offline) or metrics.csv",
    )


def _eval_every(text: str) -> Any:
    if text in ("none", "log"):
        return None if text == "none" else "log"
    try:
        return _positive_int(text)
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
    }
    return {k: v for k, v in typed.items() if v is not None}


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

        require_logger(args.logger)  # before --out is claimed by a run that could not start
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
            # built from the run's own settings (a learner typed again names only its name)
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
    if args.resume and (args.config_file or args.sets or any(s.overrides for s in seats)):
        raise UsageError(
            "--config, --set and NAME(FIELD=VALUE) set up a new run; a resumed run keeps the "
            "settings in its train_config.json (to change them, start a new run: --force or "
            "another --out)"
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

    game = _load_game(config.game)
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
    if args.logger is not None:
        from nashzoo.train.loggers import make_logger

        callbacks.append(make_logger(args.logger, folder or _new_log_folder()))
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
    with stopper.armed():
        result = trainer.run(**remaining)
    print(result)
    if folder is not None:
        result.average_policy.save(folder / "average_policy.json")
        result.to_csv(folder / "history.csv")
        result.to_json(folder / "result.json")
        print(
            f"wrote {folder}/checkpoint.npz, average_policy.json, history.csv, result.json "
            "(beside train_config.json, written at the start)"
        )
    if stopper.interrupted:
        again = (
            f"; the same command with --resume trains on to {config.budget_text()}"
            if folder is not None
            else ""
        )
        print(f"interrupted at iteration {trainer.iteration}{again}", file=sys.stderr)
        return 130
    return 0


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
    if args.seat0 == args.seat1:
        print(
            "note: the same algorithm on both seats is self-play; a duel is usually between "
            "two different ones"
        )
    return _run_trainer(args, args.seat0, args.seat1)


# --- eval ------------------------------------------------------------------------------------
def _cmd_eval(args: argparse.Namespace) -> int:
    from nashzoo.eval import evaluate

    game = None if args.game is None else _load_game(args.game)
    from nashzoo.agents.loading import load_policy_and_seat

    policy, seat = load_policy_and_seat(args.path, game)
    game = policy.game
    report = evaluate(game, policy, seats=True if args.seats else None)
    if args.json:
        note = {} if report.seat_note is None else {"seat_note": report.seat_note}
        print(json.dumps({**report.to_dict(), "trained_seat": seat, **note}, indent=1))
        return 0
    print(report)
    if seat is not None and report.seat_exploitability is not None:
        print(
            f"note: {args.path} is one learner, trained for seat {seat}; the other seats play "
            "what it holds for them (uniform for a tabular learner), so NashConv above rates "
            f"that joint policy. This learner's own figure is seat {seat}'s exploitability, "
            f"{report.seat_exploitability[seat]:.6g}."
        )
    return 0


# --- tournament ------------------------------------------------------------------------------
def _cmd_tournament(args: argparse.Namespace) -> int:
    from nashzoo.eval.tournament import check_entrants, load_entrant

    if args.out is None and (args.resume or args.force):
        raise UsageError("--resume and --force need --out FOLDER (the tournament's folder)")
    if args.resume and args.force:
        raise UsageError(
            "--resume finishes the tournament in --out; --force replaces it: choose one"
        )
    from_folder = _tournament_from_folder(args)
    game = _load_game(args.game)
    if from_folder is not None:  # the stored entrants are for the stored game
        from nashzoo.eval.tournament_folder import game_difference, resume_refusal

        differences = game_difference(game, from_folder)
        if differences:
            raise resume_refusal(args.out, differences, from_folder)
    specs = args.entrants if from_folder is None else _stored_specs(args.out, from_folder)
    try:
        entrants = [load_entrant(game, spec) for spec in specs]
    except ValueError as err:
        if from_folder is None:
            raise
        raise ValueError(
            f"{err} (the entrants stored in {args.out}/tournament_config.json; to give them "
            "anew, type them as the tournament was started, in the same order, before --out)"
        ) from None
    check_entrants(game, entrants)  # a bad entrant leaves no --out folder behind
    if args.out is not None and not args.no_plots:
        from nashzoo.eval.plots import require_matplotlib

        # before the games are played, and before --out is made: no empty folder behind
        require_matplotlib(otherwise="or pass --no-plots")
    if args.out is None:
        return _play_tournament(args, game, entrants)
    directory = None if from_folder is None else from_folder.get("working_directory")
    return _play_tournament_into(args, game, entrants, directory)


def _stored_specs(out: str, stored: dict[str, Any]) -> list[str]:
    """The stored entrants' specs as they read from here: a relative path in one leads from
    the working directory it was typed in (stored beside them; the current one in a folder
    written before it was), so the folder resumes from any directory. A file no longer
    there is named, with the way on (type the entrants again)."""
    from nashzoo.eval.tournament import spec_file, spec_from

    directory = stored.get("working_directory") or os.getcwd()
    specs = []
    for spec in stored["specs"]:
        found = spec_from(spec, directory)
        path = spec_file(found)
        if path is not None and not path.exists():
            typed = spec_file(spec)
            raise ValueError(
                f"entrant {spec!r} (stored in {out}/tournament_config.json"
                + ("" if typed is None or typed.is_absolute() else f", typed in {directory}")
                + f"): {path} is not there (moved or deleted?); type the entrants again, in the "
                "order the tournament was started with, with the file where it is now: "
                f"nashzoo tournament ENTRANT ... --out {out} --resume"
            )
        specs.append(found)
    return specs


_TOURNAMENT_DEFAULTS = {"game": "kuhn_poker", "episodes": 2000, "seed": 0}


def _tournament_from_folder(args: argparse.Namespace) -> dict[str, Any] | None:
    """Fill in what was not typed: with ``--resume``, from the tournament stored in ``--out``
    (its entrants' specs, game, episodes and seed; what was typed is checked against it when
    the folder is claimed), else the defaults. The stored config where the entrants came from
    it, else ``None``."""
    from nashzoo.eval.tournament_folder import CONFIG_FILE, stored_tournament

    stored = stored_tournament(args.out) if args.resume else None
    for key, default in _TOURNAMENT_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, default if stored is None else stored[key])
    if args.entrants:
        return None
    if not args.resume:  # argparse's own words, as when entrants were always required
        raise UsageError(
            "nashzoo tournament: the following arguments are required: entrants (see nashzoo "
            "tournament --help)"
        )
    if stored is None:
        raise UsageError(
            f"no tournament to resume in {args.out}/ (no {CONFIG_FILE}): give its entrants to "
            f"start one: nashzoo tournament ENTRANT ENTRANT ... --out {args.out}"
        )
    if stored.get("specs") is None:
        import shlex

        names = ", ".join(entrant["name"] for entrant in stored["entrants"])
        command = ["nashzoo", "tournament", "ENTRANT", "...", "--game", stored["game"]]
        command += ["--episodes", str(stored["episodes"]), "--seed", str(stored["seed"])]
        why = (
            "was started by an older nashzoo, whose "
            f"{CONFIG_FILE} does not store how its entrants were given"
            if "specs" not in stored
            else "was started (or grown) from Python with entrants that have no spec (built "
            "by hand, not by load_entrant), so it stores none"
        )
        raise UsageError(
            f"the tournament in {args.out}/ {why}: type them again, in the order it was "
            f"started with ({names}): " + shlex.join([*command, "--out", args.out, "--resume"])
        )
    args.entrants = list(stored["specs"])
    return stored


def _play_tournament(args: argparse.Namespace, game: Any, entrants: list) -> int:
    """The round robin of ``_cmd_tournament`` without ``--out``: its table, no files."""
    from nashzoo.eval.tournament import round_robin

    try:
        result = round_robin(
            game, entrants, episodes=args.episodes, seed=args.seed, progress=not args.no_progress
        )
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(
            "interrupted: a tournament without --out keeps nothing; give --out DIR to keep "
            "each pairing as it finishes (--resume then plays the rest), or --episodes 0 for "
            "the exact payoffs at once",
            file=sys.stderr,
        )
        return 130
    _print_tournament(result, entrants)
    return 0


def _print_tournament(result: Any, entrants: list) -> None:
    print(result.table())
    for note in filter(None, (entrant.seat_note() for entrant in entrants)):
        print(note)


def _play_tournament_into(
    args: argparse.Namespace, game: Any, entrants: list, directory: str | None
) -> int:
    """The round robin of ``_cmd_tournament`` into ``--out``: each pairing kept as it
    finishes, the folder locked (a second tournament into it is refused at once instead of
    leaving one's table beside the other's map) while it plays and writes its files. The
    specs are stored as typed, with ``directory``, where their relative paths lead from (the
    stored one for stored specs, else the current one)."""
    from nashzoo.eval.tournament_folder import CONFIG_FILE, open_tournament

    with open_tournament(
        args.out,
        game,
        entrants,
        episodes=args.episodes,
        seed=args.seed,
        resume=args.resume,
        force=args.force,
        specs=args.entrants,
        directory=directory,
    ) as tournament:
        if args.resume and not tournament.resumed:
            print(
                f"no tournament to resume in {tournament.folder}/ (no {CONFIG_FILE}): "
                "starting a new one"
            )
        if tournament.resumed:
            print(tournament.resume_note())
        try:
            result = tournament.play(progress=not args.no_progress)
        except KeyboardInterrupt:
            if args.debug:
                raise
            print(f"interrupted: {_kept(tournament, args)}", file=sys.stderr)
            return 130
        except Exception as err:
            if args.debug:
                raise
            print(f"error: {_one_line(err)}{_hint(err)}", file=sys.stderr)
            print(_kept(tournament, args), file=sys.stderr)
            return EXIT_FAILURE
        _print_tournament(result, entrants)
        if not args.no_plots:
            from nashzoo.eval.plots import heatmap
            from nashzoo.eval.tournament_folder import HEATMAP_FILE
            from nashzoo.games import display_id

            heatmap(
                result.exact,
                result.names,
                result.names,
                tournament.folder / HEATMAP_FILE,
                title=f"Tournament on {display_id(result.game_id)}: exact payoff of row vs column",
                colorbar="expected payoff (both seats averaged)",
                cmap="RdBu",
                fmt="{:+.3f}",
                center_zero=True,
            )
        print(
            f"wrote {tournament.folder}/tournament.json"
            + ("" if args.no_plots else " and tournament_heatmap.png")
        )
    return 0


def _kept(tournament: Any, args: argparse.Namespace) -> str:
    """How many pairings the folder keeps, and the command that plays the rest."""
    done = len(tournament.pairings)
    return (
        f"{done} of {tournament.total} pairings are kept in {tournament.folder}/; to finish "
        f"the tournament, run:\n  {_resume_command(args)}"
    )


def _resume_command(args: argparse.Namespace) -> str:
    """The ``nashzoo tournament`` command that finishes the tournament ``args`` started: the
    folder stores its entrants (as typed), game, episodes and seed, so ``--out DIR --resume``
    is the whole of it, with the plugins that make its game and its output options."""
    import shlex

    words = ["nashzoo"]
    for plugin in args.plugin:
        words += ["--plugin", plugin]
    words += ["tournament", "--out", args.out]
    words += ["--no-plots"] if args.no_plots else []
    words += ["--no-progress"] if args.no_progress else []
    return shlex.join([*words, "--resume"])


# --- play ------------------------------------------------------------------------------------
class _PlayOpponent(NamedTuple):
    name: str
    policy: Policy
    trained_seat: int | None


def _play_opponent(game: Game, spec: str) -> _PlayOpponent:
    """The agent ``play`` faces: a tournament entrant, or, on a game too big to compile (a
    tournament's entrants are tables over the whole tree), ``uniform`` played straight from
    each position's legal actions; the other agents need the tree and say so."""
    from nashzoo.eval.tournament import load_entrant
    from nashzoo.games import GameTooLarge
    from nashzoo.games.infoset import UniformPolicy

    try:
        entrant = load_entrant(game, spec)
    except GameTooLarge:
        name, sep, body = spec.partition("=")
        if (body if sep else spec).strip() != "uniform":
            raise
        label = name.strip() if sep and name.strip() else "uniform"
        return _PlayOpponent(label, UniformPolicy(), None)
    return _PlayOpponent(entrant.name, entrant.policy, entrant.trained_seat)


def _cmd_play(args: argparse.Namespace, stdin: Any = None) -> int:
    import numpy as np

    from nashzoo.agents import Infoset
    from nashzoo.agents.policy import sample_action
    from nashzoo.envs.aec import GameAECEnv, agent_name

    stdin = stdin or sys.stdin
    game = _load_game(args.game)
    opponent = _play_opponent(game, args.agent)
    me = agent_name(args.seat)
    if opponent.trained_seat is not None and opponent.trained_seat == args.seat:
        print(
            f"note: {opponent.name} is one learner, trained for seat {opponent.trained_seat}, "
            f"the seat you take; it plays the other seat as that learner holds it (uniform "
            f"for a tabular learner). Take --seat {1 - opponent.trained_seat} to play against "
            "what it learned"
        )
    rng = np.random.default_rng(args.seed)
    env = GameAECEnv(game, render_mode="ansi", render_agent=me)
    total = 0.0
    for hand in range(1, args.hands + 1):
        env.reset(seed=int(rng.integers(2**31)))
        print(f"\n=== hand {hand}: you are {me} against {opponent.name} ===")
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                if agent == me:
                    total += reward
                    print(env.render())
                    print(
                        f"you {'won' if reward > 0 else 'lost' if reward < 0 else 'drew'} "
                        f"{abs(reward):g}; running total {total:+g}"
                    )
                env.step(None)
                continue
            legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
            state = env.game_state()
            if agent != me:
                player = env.possible_agents.index(agent)
                infoset = Infoset.from_observation(
                    obs, player, info["infoset_key"], game.num_actions
                )
                action = sample_action(opponent.policy.action_probabilities(infoset), rng)
                if _move_is_seen(state, action, legal, args.seat):
                    print(f"{opponent.name} plays {state.action_to_string(action)}")
                else:
                    print(f"{opponent.name} has moved (a move you do not see)")
                env.step(action)
                continue
            print(env.render())
            print(f"your information set: {info['infoset_key']}")
            choice = _ask_move(state, legal, stdin)
            if choice is None:
                print("\nbye")
                return 0
            env.step(choice)
    print(f"\nfinal result after {args.hands} hand(s): {total:+g}")
    return 0


def _move_is_seen(state: Any, action: int, legal: list[int], seat: int) -> bool:
    """Whether the player in ``seat`` learns which move ``action`` was: the hand ends with it,
    or it leads to an information set of theirs that no other legal move leads to. A move made
    without them seeing it (the first move of a matrix game, a hidden OpenSpiel move) is not
    named: naming it told the human the opponent's rock before they chose in RPS."""
    try:
        after = state.child(action)
        if after.is_terminal():
            return True
        key = after.infoset_key(seat)
        return all(state.child(a).infoset_key(seat) != key for a in legal if a != action)
    except Exception:  # a game that keys no information set here: name it, as the render does
        return True


def _ask_move(state: Any, legal: list[int], stdin: Any) -> int | None:
    """Ask until the player types a legal action (its id or its name in ``state``, any case);
    None when the input ends. Anything else (a name of another state's move, ``-1``, ``²``)
    is refused and asked again: the game stays as it was."""
    names = {state.action_to_string(a).lower(): a for a in legal}
    listed = ", ".join(f"{a}={state.action_to_string(a)}" for a in legal)
    while True:
        print(f"your move [{listed}]: ", end="", flush=True)
        line = stdin.readline()
        if not line:
            return None
        text = line.strip().lower()
        choice = names.get(text)
        if choice is None and text.isascii() and text.isdigit():
            choice = int(text)
        if choice in legal:
            return choice
        print(
            f"'{line.strip()}' is not a legal move here; choose one of "
            + ", ".join(f"{a} ({state.action_to_string(a)})" for a in legal)
        )


# --- games / learners / solve: what nashzoo offers ---------------------------------------------
def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Rows under a header, each column as wide as its widest cell (the last one unpadded)."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


def _count_cell(value: int | None, note: str | None) -> str:
    from nashzoo.games.catalog import TOO_BIG

    if value is not None:
        return f"{value:,}"
    return TOO_BIG if note == TOO_BIG else "-"


def _parameters_text(parameters: Any) -> str:
    if parameters is None:
        return "(see its docs: the factory takes **params)"
    return ", ".join(map(str, parameters)) or "-"


def _cmd_games(args: argparse.Namespace) -> int:
    if args.openspiel:
        if args.game is not None:
            raise UsageError("--openspiel lists OpenSpiel's games; give no GAME_SPEC with it")
        return _list_openspiel_games(args)
    if args.game is not None:
        return _describe_game(args)
    from nashzoo.envs import env_ids
    from nashzoo.games.catalog import TOO_BIG, game_catalog

    catalog, envs = game_catalog(), env_ids()
    if args.json:
        rows = [{**f.to_dict(), "pettingzoo_env": envs.get(f.name)} for f in catalog]
        print(json.dumps(rows, indent=1))
        return 0
    header = ("game", "parameters (defaults)", "players", "histories", "information sets", "env")
    _print_table(
        header,
        [
            (
                f.name,
                _parameters_text(f.parameters),
                "-" if f.players is None else str(f.players),
                _count_cell(f.size.histories, f.size.note),
                _count_cell(f.size.infosets, f.size.note),
                envs.get(f.name, "-"),
            )
            for f in catalog
        ],
    )
    notes = [f for f in catalog if f.size.note is not None and f.size.note != TOO_BIG]
    for facts in notes:
        print(f"note: {facts.name}: {facts.size.note}")
    print(
        "Sizes of each game with its defaults; env: its PettingZoo id (any game also plays "
        "through nashzoo.envs.env(GAME)). nashzoo games GAME_SPEC describes one game (its "
        "exact value too); nashzoo games --openspiel lists OpenSpiel's games the bridge loads."
    )
    return 0


def _describe_game(args: argparse.Namespace) -> int:
    """``nashzoo games GAME_SPEC``: the game's facts, and its exact value where it is quick."""
    from nashzoo.envs import env_ids
    from nashzoo.games.catalog import TOO_BIG, game_facts

    game = _load_game(args.game)
    facts = game_facts(game)
    env = env_ids().get(game.name) or f"nashzoo.envs.env({game.id!r})"
    answers = None
    if facts.size.note is None:
        from nashzoo.eval.answers import game_answers

        answers = game_answers(game)
    if args.json:
        extra = {} if answers is None else answers.to_dict()
        print(json.dumps({**facts.to_dict(), "pettingzoo_env": env, **extra}, indent=1))
        return 0
    size = facts.size
    lines = [
        ("game", game.display_id),
        ("parameters", _parameters_text(facts.parameters)),
        ("players", str(game.num_players)),
        ("histories", _count_cell(size.histories, size.note)),
        ("information sets", _count_cell(size.infosets, size.note)),
        ("terminal histories", _count_cell(size.terminals, size.note)),
        ("PettingZoo env", env),
    ]
    if size.note is not None:
        lines.append(("value", "not computed: the tree was not compiled"))
    if size.note not in (None, TOO_BIG):
        lines.append(("note", size.note))
    if answers is not None:
        if answers.value is not None:
            value = ", ".join(f"player {p} {v:.12g}" for p, v in enumerate(answers.value))
            lines.append(("value", value))
            lines.append(("equilibrium NashConv", f"{answers.equilibrium_nash_conv:.3g}"))
        else:
            lines.append(("value", str(answers.note)))
        lines.append(("uniform play", f"exploitability {answers.uniform_exploitability:.6g}"))
    width = max(len(label) for label, _ in lines)
    for label, text in lines:
        print(f"{label.ljust(width)}  {text}")
    return 0


def _list_openspiel_games(args: argparse.Namespace) -> int:
    """``nashzoo games --openspiel``: OpenSpiel's games the bridge loads as two-player games."""
    from nashzoo.games.catalog import OPENSPIEL_LOAD_CHECKS, openspiel_catalog

    entries = openspiel_catalog()
    if args.json:
        print(json.dumps([entry.to_dict() for entry in entries], indent=1))
        return 0
    header = ("spec", "dynamics", "information", "chance", "utility")
    rows = [
        (
            entry.spec + ("" if entry.default_loadable else "  (needs parameters)"),
            entry.dynamics,
            entry.information,
            entry.chance,
            entry.utility,
        )
        for entry in entries
    ]
    _print_table(header, rows)
    print(
        f"{len(entries)} of OpenSpiel's games can be loaded as two-player games (decided from "
        "their types: turn-based or simultaneous moves, information-state strings, chance "
        "outcomes listed, two players). Checked only when a game is loaded or compiled: "
        + "; ".join(OPENSPIEL_LOAD_CHECKS)
        + ". nashzoo games SPEC counts one; nashzoo solve SPEC solves a zero-sum one."
    )
    return 0


def _cmd_learners(args: argparse.Namespace) -> int:
    from nashzoo.agents.catalog import learner_catalog, learner_facts

    if args.learner is not None:
        return _describe_learner(args, learner_facts(args.learner))
    catalog = learner_catalog()
    if args.json:
        print(json.dumps([facts.to_dict() for facts in catalog], indent=1))
        return 0
    rows = [
        (
            facts.name,
            facts.kind or "-",
            facts.needs() + ("" if facts.installed else " (not installed)"),
            facts.summary,
        )
        for facts in catalog
    ]
    _print_table(("learner", "kind", "needs", "description"), rows)
    print(
        "kind: tabular (whole tree each step), sampling (tabular, sampled walks), neural, "
        "fixed (never learns; a race runs it only when named). nashzoo learners NAME lists its "
        "settings (--set NAME.FIELD=VALUE, NAME(FIELD=VALUE, ...))."
    )
    return 0


def _describe_learner(args: argparse.Namespace, facts: Any) -> int:
    """``nashzoo learners NAME``: the learner's facts and its config fields."""
    import textwrap

    from nashzoo.agents.catalog import config_fields

    fields = config_fields(facts.name)  # imports its module: a missing extra is named here
    if args.json:
        print(json.dumps({**facts.to_dict(), "fields": [f.to_dict() for f in fields]}, indent=1))
        return 0
    print(f"{facts.name}: {facts.summary}")
    print(f"kind: {facts.kind or '-'}; needs: {facts.needs()}; defined in {facts.module}")
    if not fields:
        print("settings: none")
        return 0
    print(f"settings (--set {facts.name}.FIELD=VALUE, or {facts.name}(FIELD=VALUE, ...)):")
    for field in fields:
        print(f"  {field.name}: {field.type} = {field.default}")
        if field.doc:
            print(textwrap.fill(field.doc, 100, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return 0


def _cmd_solve(args: argparse.Namespace) -> int:
    """``nashzoo solve``: the exact equilibrium of a two-player zero-sum game, to a file."""
    from nashzoo.eval import nash_conv, solve_game
    from nashzoo.eval.answers import no_value_reason

    game = _load_game(args.game)
    reason = no_value_reason(game)
    if reason is not None:
        raise ValueError(
            f"nashzoo solve needs a two-player zero-sum (or constant-sum) game; {game.display_id}"
            f" {reason} (nashzoo games GAME shows what is known about it; nashzoo eval rates a "
            "policy on any game)"
        )
    solution = solve_game(game)  # warns first where the LP may take minutes
    conv = nash_conv(game, solution.policy)
    if args.out is not None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        solution.policy.save(args.out)
    value = [float(v) for v in solution.value]
    if args.json:
        print(json.dumps({"game": game.id, "value": value, "nash_conv": conv, "out": args.out}))
        return 0
    print(f"{game.display_id}: an exact equilibrium (sequence-form LP)")
    print("value: " + ", ".join(f"player {p} {v:.12g}" for p, v in enumerate(value)))
    print(f"equilibrium NashConv: {conv:.3g}")
    if args.out is not None:
        print(
            f"wrote {args.out}: a policy file (nashzoo eval {args.out}; an entrant of nashzoo "
            "tournament)"
        )
    return 0


# --- parser ----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nashzoo",
        description="Imperfect-information games, learners, and exact Nash-equilibrium answers.",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (repeatable, or comma-separated: a,b): a module that "
        "registers your own learners "
        "(@nashzoo.agents.register) or games (nashzoo.games.register_game), so every command "
        "(and every race worker) knows them; the current folder is searched",
    )
    parser.add_argument(
        "--debug", action="store_true", help="on failure, show the Python traceback"
    )
    parser.add_argument("--version", action="version", version=f"nashzoo {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    _add_race_parser(sub)
    _add_train_parser(sub)
    _add_duel_parser(sub)
    _add_eval_parser(sub)
    _add_tournament_parser(sub)
    _add_play_parser(sub)
    _add_games_parser(sub)
    _add_learners_parser(sub)
    _add_solve_parser(sub)
    return parser


def _add_race_parser(sub: Any) -> None:
    """``nashzoo race``: the learners, budget, where runs go and how they resume."""
    race = sub.add_parser(
        "race",
        help="which learners converge, and how fast (the main job)",
        description="Train every learner in self-play (and, with --cross-play, every pair of "
        "different learners) under an equal budget, measure exact exploitability over time, "
        "and write results.csv, summary.json/md and plots.",
    )
    race.argument_default = argparse.SUPPRESS  # see _race_fields: --resume fills the rest
    race.add_argument(
        "--game",
        help=f"{GAME_HELP} (default kuhn_poker)",
    )
    race.add_argument(
        "--learners",
        type=_learner_list,
        help="comma-separated learners (default: all); LABEL=NAME(FIELD=VALUE,...) races one "
        "algorithm under a config of its own, e.g. nfsp,nfsp_small=nfsp(hidden_sizes=[32])",
    )
    race.add_argument("--seeds", type=_positive_int, help="seeds per pairing (default 3)")
    race.add_argument(
        "--budget-seconds",
        type=_non_negative_float,
        help="training seconds per run (default 10; 0 = no time limit)",
    )
    race.add_argument("--budget-iterations", type=_positive_int, help="iterations per run")
    race.add_argument(
        "--budget-work", type=_positive_int, help="nodes touched + env steps per run (both seats)"
    )
    race.add_argument(
        "--cross-play",
        action="store_true",
        help="also race every ordered pair of different learners",
    )
    race.add_argument("--no-self-play", action="store_true", help="only cross-play")
    _race_output_options(race)
    _settings_options(race)
    _logger_option(race, "in each run's folder, --out/runs/RUN_ID")
    race.set_defaults(func=_cmd_race)


def _race_output_options(race: Any) -> None:
    """Where a race's runs go (folder, workers, backend) and what happens to a folder that
    already holds one."""
    race.add_argument("--out", help="output folder (default runs/race)")
    race.add_argument("--workers", type=_positive_int, help="parallel runs (default: cores)")
    race.add_argument(
        "--backend", choices=("process", "serial", "ray"), help="where runs go (default process)"
    )
    race.add_argument("--address", help="Ray cluster address (with --backend ray)")
    race.add_argument(
        "--resume",
        action="store_true",
        default=False,
        help="finish the race stored in --out: finished runs are kept, options not given "
        "are taken from it",
    )
    race.add_argument(
        "--force",
        action="store_true",
        default=False,
        help="start over in an --out that already holds a race, deleting its runs "
        "(default: refuse; --resume finishes it instead)",
    )
    race.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    race.add_argument("--no-progress", action="store_true", default=False, help="no progress bar")


def _add_train_parser(sub: Any) -> None:
    """``nashzoo train``: one learner in self-play (or a pair) to a checkpoint."""
    train = sub.add_parser("train", help="train a learner (self-play) or a pair to a checkpoint")
    _game_arg(train, default=None)
    train.add_argument(
        "--learner",
        help="learner, e.g. cfr_plus or nfsp(hidden_sizes=[32]) (required unless --resume)",
    )
    train.add_argument("--opponent", help="learner on seat 1 (default: the same: self-play)")
    _train_common(train)
    train.set_defaults(func=_cmd_train)


def _add_duel_parser(sub: Any) -> None:
    """``nashzoo duel``: two different algorithms learning against each other."""
    duel = sub.add_parser("duel", help="two different algorithms learning against each other")
    _game_arg(duel, default=None)
    duel.add_argument("seat0", help="learner on seat 0")
    duel.add_argument("seat1", help="learner on seat 1")
    _train_common(duel)
    duel.set_defaults(func=_cmd_duel)


def _add_eval_parser(sub: Any) -> None:
    """``nashzoo eval``: exact NashConv/exploitability of a file."""
    ev = sub.add_parser("eval", help="exact NashConv/exploitability of a policy or checkpoint")
    ev.add_argument(
        "path", help="policy .json, checkpoint .npz, or Stable-Baselines3 .zip (needs --game)"
    )
    ev.add_argument("--game", help="check the file is for this game (the game of an SB3 .zip)")
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.add_argument(
        "--seats",
        action="store_true",
        help="per-seat exploitability even on a game whose value LP is slow (over 300,000 "
        "terminal histories: minutes); by default it is computed only where the LP is quick",
    )
    ev.set_defaults(func=_cmd_eval)


def _add_tournament_parser(sub: Any) -> None:
    """``nashzoo tournament``: a round robin between entrants."""
    tour = sub.add_parser(
        "tournament",
        help="round robin between agents",
        description="Entrants: uniform, equilibrium, fixed:P1,P2,... (matrix games), a policy "
        ".json, a checkpoint .npz or a Stable-Baselines3 .zip; NAME=SPEC names one. "
        "nashzoo tournament --out DIR --resume finishes the tournament in DIR with the entrants "
        "and options stored there.",
    )
    _game_arg(tour, default=None)
    tour.add_argument(
        "entrants",
        nargs="*",
        help="two or more entrant specs (none with --out DIR --resume: the ones stored there)",
    )
    tour.add_argument(
        "--episodes",
        type=_non_negative_int,
        help="sampled matches per pairing and seating (default 2000; 0 = exact only)",
    )
    tour.add_argument(
        "--seed",
        type=_non_negative_int,
        help="seed of the sampled matches (default 0; the same seed gives the same table)",
    )
    tour.add_argument(
        "--out",
        help="folder for tournament.json and the heatmap; each pairing is kept there as it "
        "finishes (pairings/), so an interrupted tournament keeps what it played",
    )
    tour.add_argument(
        "--resume",
        action="store_true",
        help="finish the tournament in --out: its finished pairings are kept, the rest are "
        "played; the entrants, --game, --episodes and --seed not typed are the stored ones "
        "(nashzoo tournament --out DIR --resume), and any typed must match them, except that "
        "entrants typed after the stored ones join the tournament (only their pairings play)",
    )
    tour.add_argument(
        "--force",
        action="store_true",
        help="start over in an --out that already holds a tournament, deleting it (default: "
        "refuse; --resume finishes it instead)",
    )
    tour.add_argument("--no-plots", action="store_true", help="no tournament_heatmap.png")
    tour.add_argument("--no-progress", action="store_true", help="no progress bar")
    tour.set_defaults(func=_cmd_tournament)


def _add_play_parser(sub: Any) -> None:
    """``nashzoo play``: a human against an agent in the terminal."""
    play = sub.add_parser("play", help="play an agent in the terminal")
    _game_arg(play)
    play.add_argument(
        "--agent",
        default="equilibrium",
        help="opponent: uniform, equilibrium, fixed:P1,P2,... (one strategy at every information "
        "set), a policy .json, a checkpoint .npz or a Stable-Baselines3 .zip",
    )
    play.add_argument(
        "--seat", type=_non_negative_int, choices=(0, 1), default=0, help="your seat (0)"
    )
    play.add_argument("--hands", type=_positive_int, default=1, help="hands to play (1)")
    play.add_argument(
        "--seed", type=_non_negative_int, default=0, help="seed of the deals and its moves (0)"
    )
    play.set_defaults(func=_cmd_play)


def _add_games_parser(sub: Any) -> None:
    """``nashzoo games``: the registered games, one game, or OpenSpiel's."""
    games = sub.add_parser(
        "games",
        help="list the games (parameters, players, sizes); describe one (its exact value)",
        description="Without GAME_SPEC: every registered game (built-in, and those --plugin "
        "modules or installed packages register) with its parameters and defaults, players, "
        "histories and information sets (counted on its compiled tree where that is quick, "
        "else 'too big to count quickly') and its PettingZoo env id. With GAME_SPEC: that game "
        "with these parameters, plus each player's exact value (sequence-form LP, where it "
        "solves in seconds) and the exploitability of uniform play.",
    )
    games.add_argument("game", nargs="?", metavar="GAME_SPEC", help=GAME_HELP)
    games.add_argument(
        "--openspiel",
        action="store_true",
        help="list OpenSpiel's registered games the bridge loads as two-player games (needs "
        "pip install 'nashzoo[openspiel]')",
    )
    games.add_argument("--json", action="store_true", help="print JSON")
    games.set_defaults(func=_cmd_games)


def _add_learners_parser(sub: Any) -> None:
    """``nashzoo learners``: the registered learners, or one learner's settings."""
    learners = sub.add_parser(
        "learners",
        help="list the learners; NAME lists one learner's settings",
        description="Without NAME: every registered learner (built-in, those needing an "
        "optional extra, and those --plugin modules register): its kind, what it needs and "
        "what it does (torch is not imported to list them). With NAME: its config fields, "
        "each with the type --set NAME.FIELD=VALUE and NAME(FIELD=VALUE, ...) check it "
        "against, its default and its documentation.",
    )
    learners.add_argument("learner", nargs="?", metavar="NAME", help="a learner's name")
    learners.add_argument("--json", action="store_true", help="print JSON")
    learners.set_defaults(func=_cmd_learners)


def _add_solve_parser(sub: Any) -> None:
    """``nashzoo solve``: a two-player zero-sum game's exact equilibrium, to a policy file."""
    solve = sub.add_parser(
        "solve",
        help="exact equilibrium and value of a two-player zero-sum game, to a policy file",
        description="Solve the game's sequence-form linear program: print each player's "
        "value and the equilibrium's NashConv (about 1e-15), and with --out write the "
        "equilibrium as a policy JSON file that nashzoo eval and nashzoo tournament read. "
        "Two-player zero-sum (or constant-sum) games only; a game with over 300,000 terminal "
        "histories is solved after a warning (it may take minutes).",
    )
    solve.add_argument("game", metavar="GAME_SPEC", help=GAME_HELP)
    solve.add_argument("--out", metavar="FILE", help="write the equilibrium policy here (.json)")
    solve.add_argument("--json", action="store_true", help="print JSON")
    solve.set_defaults(func=_cmd_solve)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. Any failure is one line on stderr (``--debug``
    shows the traceback instead)."""
    parser = build_parser()
    debug = False
    try:
        args = parser.parse_args(argv)
        debug = args.debug
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # plugins are found in the current folder
        if args.plugin:
            from nashzoo.agents import import_plugins
            from nashzoo.agents.registry import plugin_modules

            args.plugin = list(plugin_modules(args.plugin))  # --plugin a,b is a and b
            import_plugins(args.plugin)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = int(args.func(args))
        sys.stdout.flush()  # inside the try: a reader that went away is handled below
        return code
    except UsageError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``nashzoo eval ... | head``): not an error to report.
        # Point stdout at devnull so the interpreter's own flush at exit does not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as err:
        if debug:
            raise
        print(f"error: {_one_line(err)}{_hint(err)}", file=sys.stderr)
        return EXIT_FAILURE


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """nashzoo's own warnings as one ``warning: ...`` line (others as Python shows them)."""
    if issubclass(category, UserWarning) and filename.startswith(_PACKAGE):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning
_PACKAGE = str(Path(__file__).resolve().parent) + os.sep

_EXPECTED = (ValueError, ImportError, OSError)
"""Errors that mean bad input or a missing extra (their message is the whole story)."""


def _one_line(err: BaseException) -> str:
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return " ".join(text.split()) or type(err).__name__


def _hint(err: Exception) -> str:
    if isinstance(err, _EXPECTED):
        return ""
    return (
        f" ({type(err).__name__}: an unexpected failure, perhaps a bug in nashzoo or a plugin; "
        "run again with --debug for the traceback)"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
