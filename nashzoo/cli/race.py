"""``nashzoo race``: which learners converge, and how fast (the main job)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from nashzoo.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    GAME_HELP,
    UsageError,
    learner_list,
    logger_option,
    non_negative_float,
    positive_float_list,
    positive_int,
    settings_options,
    user_path,
)


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
        "thresholds",
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
    if fields.get("logger") is not None:  # --logger given once or more: one text, as stored
        from nashzoo.train.loggers import logger_kinds

        fields["logger"] = ",".join(logger_kinds(fields["logger"]))
    return fields


def _cmd_race(args: argparse.Namespace) -> int:
    from nashzoo.train.race import RaceConfig, run_race, stored_race_config

    fields = _race_fields(args)
    if args.resume:
        out = fields.get("out", RaceConfig.out)
        stored = stored_race_config(out, fields.get("config_file"))
        if stored is None:
            print(f"no race to resume in {out}/ (no race_config.json): starting a new one")
        else:
            if "plugins" in stored:  # else a race from before they were stored: take the typed
                _refuse_other_plugins(out, fields.get("plugins"), stored["plugins"])
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
    # A bar only on a terminal (in a log it is a redraw up to ten times a second); without
    # one each finished run is a line of its own.
    outcome = run_race(config, progress=not args.no_progress and sys.stderr.isatty())
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    if outcome.failures:  # the report holds the runs that finished; the status says some did not
        ids = ", ".join(str(f["run_id"]) for f in outcome.failures)
        print(
            f"error: {len(outcome.failures)} run(s) failed ({ids}): each folder's error.json "
            "says why; --resume runs them again",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return 0


def _refuse_other_plugins(out: str, typed: Any, stored: Any) -> None:
    """A race resumes with the ``--plugin`` modules it was started with (they define its
    learners and maybe its game, in every worker): typing the same ones, in any order, is
    fine; other ones are refused, as ``train --resume`` refuses them, rather than running the
    finished runs again and overwriting the stored list."""
    from nashzoo.agents.registry import same_plugins

    if typed is None or same_plugins(typed, stored or ()):
        return
    had = ",".join(stored) if stored else "no --plugin"
    raise UsageError(
        f"--resume finishes the race in {out}/ with the --plugin modules it was started with "
        f"({had}), but you typed --plugin {','.join(typed)}: leave --plugin out (the stored "
        "modules are imported again), or start a new race (--force or another --out)"
    )


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
    "thresholds": "--thresholds",
}


def _changed_option(key: str, value: Any, stored: Any) -> str:
    """How an option typed with ``--resume`` differs from the stored race's."""
    option = _RACE_OPTIONS.get(key, key)
    if isinstance(value, bool):  # an on/off flag (--cross-play, --no-plots): typed = changed
        return f"{option} (the stored race was started without it)"
    if stored is None or (isinstance(stored, (list, tuple)) and not stored):
        return f"{option} {_race_value(value)} (the stored race has none)"
    return f"{option} {_race_value(value)} (the stored race has {_race_value(stored)})"


def _race_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(_race_value, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_race_parser(sub: Any) -> None:
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
        type=learner_list,
        help="comma-separated learners (default: all); LABEL=NAME(FIELD=VALUE,...) races one "
        "algorithm under a config of its own, e.g. nfsp,nfsp_small=nfsp(hidden_sizes=[32])",
    )
    race.add_argument("--seeds", type=positive_int, help="seeds per pairing (default 3)")
    race.add_argument(
        "--budget-seconds",
        type=non_negative_float,
        help="training seconds per run (default 10; 0 = no time limit)",
    )
    race.add_argument("--budget-iterations", type=positive_int, help="iterations per run")
    race.add_argument(
        "--budget-work", type=positive_int, help="nodes touched + env steps per run (both seats)"
    )
    race.add_argument(
        "--cross-play",
        action="store_true",
        help="also race every ordered pair of different learners",
    )
    race.add_argument("--no-self-play", action="store_true", help="only cross-play")
    race.add_argument(
        "--thresholds",
        type=positive_float_list,
        metavar="E1,E2,...",
        help="exploitability levels of the time-to columns (the time from which a run held "
        "each), in the game's payoff units (default 0.1,0.05,0.01,0.001; a game paying "
        "thousands or thousandths wants its own)",
    )
    _race_output_options(race)
    settings_options(race)
    logger_option(race, "in each run's folder, --out/runs/RUN_ID")
    race.set_defaults(func=_cmd_race, stops_gracefully=True)


def _race_output_options(race: Any) -> None:
    """Where a race's runs go (folder, workers, backend) and what happens to a folder that
    already holds one."""
    race.add_argument("--out", type=user_path, help="output folder (default runs/race)")
    race.add_argument(
        "--workers",
        type=positive_int,
        help="parallel runs (default: one per CPU this process may use; more makes runs share "
        "CPUs, and their wall-clock times stop comparing)",
    )
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
    race.add_argument(
        "--no-progress",
        action="store_true",
        default=False,
        help="no progress bar (there is one only when stderr is a terminal)",
    )
