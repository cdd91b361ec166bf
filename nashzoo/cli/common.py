"""What every command shares: exit statuses, the parser class that turns argparse's errors into one
line, option types, the ``--game`` option and its loading."""

from __future__ import annotations

import argparse
import os
from typing import Any, NoReturn

EXIT_USAGE = 2  # malformed options, caught while parsing
EXIT_FAILURE = 1  # a value refused while running, or a failure inside a command
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (128 + SIGINT, as a shell reports it)


def user_path(text: str) -> str:
    """A path option's value with a leading ``~`` expanded: the shell expands it in
    ``--out ~/x`` but not in ``--out=~/x``, which made a folder named ``~`` in the current one
    (and printed ``wrote ~/x/...``, which reads as the home folder)."""
    return os.path.expanduser(text)


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        words = message.split()
        if words[:2] == ["unrecognized", "arguments:"] and any(
            word == "--plugin" or word.startswith("--plugin=") for word in words
        ):  # nashzoo's own option, typed after the command
            message += "; --plugin goes before the command: nashzoo --plugin MODULE COMMAND ..."
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def learner_list(text: str) -> tuple[str, ...]:
    """Comma-separated learner specs (commas inside ``name(...)`` do not split)."""
    from nashzoo.train.settings import SettingsError, split_specs

    try:
        return tuple(split_specs(text))
    except SettingsError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def settings_options(parser: argparse.ArgumentParser) -> None:
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


def number_type(kind: type, low: float, *, strict: bool) -> Any:
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


positive_float = number_type(float, 0, strict=True)


non_negative_float = number_type(float, 0, strict=False)


positive_int = number_type(int, 0, strict=True)


def positive_float_list(text: str) -> tuple[float, ...]:
    """Comma-separated numbers > 0 (``0.1,0.01``), for ``race --thresholds``."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected numbers > 0 separated by commas, got {text!r}")
    return tuple(positive_float(part) for part in parts)


non_negative_int = number_type(int, 0, strict=False)


def game_arg(parser: argparse.ArgumentParser, default: str | None = "kuhn_poker") -> None:
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


def game_spec_arg(parser: argparse.ArgumentParser) -> None:
    """``GAME_SPEC`` as the command's positional argument, which ``--game GAME_SPEC`` gives too
    (every other command names its game with ``--game``); :func:`game_spec` reads either."""
    parser.add_argument("game", nargs="?", metavar="GAME_SPEC", help=GAME_HELP)
    parser.add_argument(
        "--game", dest="game_option", metavar="GAME_SPEC", help="the same as GAME_SPEC"
    )


def game_spec(args: argparse.Namespace, command: str) -> str | None:
    """The game :func:`game_spec_arg` read, given as ``GAME_SPEC`` or as ``--game`` (``None``
    where neither is); a usage error where the two differ."""
    spec, option = args.game, args.game_option
    if spec is not None and option is not None and spec != option:
        raise UsageError(
            f"nashzoo {command}: two games given, {spec!r} and --game {option!r}; give one"
        )
    return spec if spec is not None else option


def required_game_spec(args: argparse.Namespace, command: str) -> str:
    """:func:`game_spec` for a command that needs a game: a usage error where none is given."""
    spec = game_spec(args, command)
    if spec is None:
        raise UsageError(
            f"nashzoo {command}: which game? e.g. nashzoo {command} kuhn_poker (or --game "
            "kuhn_poker; nashzoo games lists them)"
        )
    return spec


def load_game_arg(spec: str) -> Any:
    from nashzoo.games import load_game

    return load_game(spec)


def logger_option(parser: argparse.ArgumentParser, where: str) -> None:
    """``--logger``: where a run (``where``: per run, per seat) also logs its metrics."""
    parser.add_argument(
        "--logger",
        action="append",
        metavar="{tensorboard,wandb,csv}",
        help=f"also log exploitability, seat exploitability, work and the learners' own "
        f"metrics {where}: TensorBoard, Weights & Biases (offline) or metrics.csv; several: "
        "--logger csv,tensorboard (or the option again)",
    )


EXPECTED_ERRORS = (ValueError, ImportError, OSError)
"""Errors that mean bad input or a missing extra (their message is the whole story); a training
run that diverged (:class:`~nashzoo.agents.base.TrainingDivergedError`) is one too."""


def failure_hint(err: Exception) -> str:
    """After an unexpected error's line: that it may be a bug, and ``--debug``; nothing after
    bad input or a missing extra (:data:`EXPECTED_ERRORS`), whose message says it all."""
    from nashzoo.agents.base import TrainingDivergedError  # not at start-up: the CLI starts light

    if isinstance(err, (*EXPECTED_ERRORS, TrainingDivergedError)):
        return ""
    return (
        f" ({type(err).__name__}: an unexpected failure, perhaps a bug in nashzoo or a plugin; "
        "run again with --debug for the traceback)"
    )
