"""The ``nashzoo`` entry point: the parser of every command, and one line on stderr for any failure
(``--debug`` shows the traceback instead)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO

from nashzoo import __version__
from nashzoo.cli.catalog import add_games_parser, add_learners_parser, add_solve_parser
from nashzoo.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Parser,
    UsageError,
    failure_hint,
)
from nashzoo.cli.evaluate import add_eval_parser
from nashzoo.cli.play import add_play_parser
from nashzoo.cli.race import add_race_parser
from nashzoo.cli.tournament import add_tournament_parser
from nashzoo.cli.train import add_duel_parser, add_train_parser
from nashzoo.games.base import error_text


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    sub = parser.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    add_race_parser(sub)
    add_train_parser(sub)
    add_duel_parser(sub)
    add_eval_parser(sub)
    add_tournament_parser(sub)
    add_play_parser(sub)
    add_games_parser(sub)
    add_learners_parser(sub)
    add_solve_parser(sub)
    return parser


class _Termination:
    """Whether a SIGTERM reached this command (:func:`_terminate_as_interrupt`)."""

    received = False


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[_Termination]:
    """SIGTERM (``kill PID``; what a batch scheduler such as SLURM, ``docker stop`` or
    Kubernetes sends before it kills a job) acts as Ctrl-C does: through whatever SIGINT
    handler is in place, so ``train`` ends after the current step with its checkpoint and
    outputs written, a race or tournament keeps and reports every finished run or pairing, and
    a second one stops at once. Its default was to die on the spot, writing nothing a Ctrl-C
    would have. Where SIGINT is ignored (a background job of a non-interactive shell), SIGTERM
    still interrupts. Main thread only; the previous handler is back on the way out."""
    state = _Termination()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        state.received = True
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # Python's default raises KeyboardInterrupt; train's asks to stop
            handler(signum, frame)
        else:  # SIG_IGN or SIG_DFL: a termination is still one
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield state
    finally:
        signal.signal(signal.SIGTERM, previous)


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
        code = _run_command(args)
        sys.stdout.flush()  # inside the try: a reader that went away is handled below
        return code
    except UsageError as err:
        print(f"error: {error_text(err)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (``nashzoo eval ... | head``): not an error to report.
        # Point stdout at devnull so the interpreter's own flush at exit does not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as err:
        if debug:
            raise
        print(f"error: {error_text(err)}{failure_hint(err)}", file=sys.stderr)
        return EXIT_FAILURE


def _run_command(args: argparse.Namespace) -> int:
    """The command's exit status, warnings shown as one line each; an interruption by Ctrl-C
    or SIGTERM that the command does not handle itself is reported here, and SIGTERM's status
    is 143 whichever way the command stopped."""
    with warnings.catch_warnings(), _terminate_as_interrupt() as termination:
        warnings.showwarning = _show_warning
        try:
            code = int(args.func(args))
        except KeyboardInterrupt:
            if args.debug:
                raise
            print("terminated" if termination.received else "interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
    if termination.received and code == EXIT_INTERRUPTED:
        code = EXIT_TERMINATED  # the shell's status for a process ended by SIGTERM
    return code


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


_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep  # nashzoo/
