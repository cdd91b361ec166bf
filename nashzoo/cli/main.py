"""The ``nashzoo`` entry point: the parser of every command, and one line on stderr for any failure
(``--debug`` shows the traceback instead)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
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


SAME_EVENT_SECONDS = 2.0
"""A termination signal this soon after the first is the same event's (systemd sends SIGTERM
then SIGHUP at once; a dropped ssh session can send SIGHUP twice), not a second request to stop
at once: the race's stop, interrupted by it, crashed in a lock or waited out its runs."""


class _Termination:
    """Which termination signal reached this command, if any (:func:`_terminate_as_interrupt`)."""

    signum: int | None = None
    at = 0.0  # when it came (time.monotonic)

    @property
    def received(self) -> bool:
        return self.signum is not None


@contextlib.contextmanager
def _terminate_as_interrupt(active: bool = True) -> Iterator[_Termination]:
    """SIGTERM (``kill PID``; what a batch scheduler such as SLURM, ``docker stop`` or
    Kubernetes sends before it kills a job) acts as Ctrl-C does: through whatever SIGINT
    handler is in place, so ``train`` ends after the current step with its checkpoint and
    outputs written, a race or tournament keeps and reports every finished run or pairing, and
    a second one stops at once. Its default was to die on the spot, writing nothing a Ctrl-C
    would have. Where SIGINT is ignored (a background job of a non-interactive shell), SIGTERM
    still interrupts. SIGHUP (the terminal of a run in the foreground closed, an ssh session
    dropped) does the same. A signal ignored when the command starts (``nohup``) stays so.
    Only the commands that have work to keep (train, race, tournament: ``stops_gracefully``)
    take it so: the others end at once as before, rather than when a native call (an LP, a
    compiled kernel) returns. Main thread only; the previous handlers are back on the way
    out."""
    state = _Termination()
    if not active or threading.current_thread() is not threading.main_thread():
        yield state
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if state.signum is not None and now - state.at < SAME_EVENT_SECONDS:
            return  # one event's second signal (systemd: SIGTERM then SIGHUP; ssh: two SIGHUPs)
        state.signum, state.at = signum, now
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # Python's default raises KeyboardInterrupt; train's asks to stop
            handler(signum, frame)
        else:  # SIG_IGN or SIG_DFL: a termination is still one
            raise KeyboardInterrupt

    previous = {}
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):  # no SIGHUP on Windows
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, interrupt)
    try:
        yield state
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. Any failure is one line on stderr (``--debug``
    shows the traceback instead)."""
    parser = build_parser()
    _fill_closed_streams()
    with _any_terminal_encoding():
        return _main(parser, argv)


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """:func:`main` once the standard streams are set up."""
    debug = False
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help, --version or a malformed option: argparse said it
            return stop.code if isinstance(stop.code, int) else EXIT_USAGE
        debug = args.debug
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if not _search_the_current_folder_last():
            print(
                "error: the current folder no longer exists (deleted or moved under this "
                "shell), and the packages nashzoo imports need it: cd to an existing folder "
                "and run the command again",
                file=sys.stderr,
            )
            return EXIT_FAILURE
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
        with contextlib.suppress(OSError):  # stderr gone too (a terminal that hung up)
            print(f"error: {error_text(err)}{failure_hint(err)}", file=sys.stderr)
        return EXIT_FAILURE


def _fill_closed_streams() -> None:
    """A standard stream closed by the shell (``nashzoo learners >&-``, ``play <&-``) is
    ``None`` in Python: every command then failed at its end with ``'NoneType' object has no
    attribute 'flush' ... perhaps a bug``. It becomes the null device: what would have been
    printed is dropped, input is at its end."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode))  # noqa: SIM115 (lives as long as sys)


@contextlib.contextmanager
def _any_terminal_encoding() -> Iterator[None]:
    """Print what the terminal's encoding cannot show as escapes instead of failing: under
    ``PYTHONIOENCODING=ascii`` or a C locale without UTF-8 mode, a race's report (its µs, ±
    and dashes) raised ``'ascii' codec can't encode character`` after every run had finished,
    and so did every resume. Files are written as UTF-8 whatever the terminal. The streams'
    settings are back on the way out (``main`` may be called from a program)."""
    restore = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        if errors == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, OSError):  # a closed or unusual stream
                stream.reconfigure(errors="backslashreplace")
                restore.append(stream)
    try:
        yield
    finally:
        for stream in restore:
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors="strict")


def _search_the_current_folder_last() -> bool:
    """Let ``--plugin`` modules (and a game's or learner's module named in a stored run) be
    found in the current folder, after everything installed: it used to go first, so a
    ``secrets.py``, ``logging.py`` or ``queue.py`` lying there replaced the standard library's
    in every command and race worker (``cannot import name randbits``), and a source checkout of
    nashzoo there replaced the installed one in the workers alone. False: there is no current
    folder (deleted under the shell; PettingZoo, among others, asks for it when imported)."""
    try:
        here = os.getcwd()
    except FileNotFoundError:
        return False
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)
    return True


def _run_command(args: argparse.Namespace) -> int:
    """The command's exit status, warnings shown as one line each; an interruption by Ctrl-C
    or SIGTERM (or SIGHUP) that the command does not handle itself is reported here, and the
    status of a termination is the shell's (128 + the signal) whichever way it stopped."""
    graceful = getattr(args, "stops_gracefully", False)
    with warnings.catch_warnings(), _terminate_as_interrupt(graceful) as termination:
        warnings.showwarning = _show_warning
        try:
            code = int(args.func(args))
        except KeyboardInterrupt:
            if args.debug:
                raise
            with contextlib.suppress(OSError):  # the terminal that hung up is gone
                print("terminated" if termination.received else "interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
    if termination.signum is not None and code == EXIT_INTERRUPTED:
        code = 128 + termination.signum  # the shell's status: 143 for SIGTERM, 129 for SIGHUP
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
