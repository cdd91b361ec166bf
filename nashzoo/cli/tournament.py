"""``nashzoo tournament``: a round robin between saved agents and built-ins, kept in a folder that
resumes and grows."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from nashzoo.cli.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    UsageError,
    failure_hint,
    game_arg,
    load_game_arg,
    non_negative_int,
    user_path,
)
from nashzoo.games.base import error_text


def _cmd_tournament(args: argparse.Namespace) -> int:
    from nashzoo.eval.tournament import check_entrants, load_entrant

    if args.out is None and (args.resume or args.force):
        raise UsageError("--resume and --force need --out FOLDER (the tournament's folder)")
    if args.resume and args.force:
        raise UsageError(
            "--resume finishes the tournament in --out; --force replaces it: choose one"
        )
    from_folder = _tournament_from_folder(args)
    game = load_game_arg(args.game)
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
    entrants += [load_entrant(game, spec) for spec in args.add or []]  # typed here: as typed
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
    from nashzoo.eval.tournament_folder import CONFIG_FILE, TOURNAMENT_FILES, stored_tournament

    _check_add(args)
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
        found = [name for name in TOURNAMENT_FILES if (Path(args.out) / name).exists()]
        if found:  # the folder's own words; its advice to type the entrants would be refused
            raise UsageError(
                f"{args.out}/ holds {', '.join(found)} but no {CONFIG_FILE} (written by an "
                "older nashzoo, or left incomplete): there is no tournament to resume; start "
                f"over with its entrants typed: nashzoo tournament ENTRANT ENTRANT ... --out "
                f"{args.out} --force, or choose another --out"
            )
        raise UsageError(
            f"no tournament to resume in {args.out}/ (no {CONFIG_FILE}): give its entrants to "
            f"start one: nashzoo tournament ENTRANT ENTRANT ... --out {args.out}"
        )
    if stored.get("specs") is None:
        import shlex

        names = ", ".join(entrant["name"] for entrant in stored["entrants"])
        command = ["nashzoo", "tournament", "ENTRANT", "...", *(args.add or [])]
        command += ["--game", stored["game"]]
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
    args.entrants = list(stored["specs"]) + _added_specs(args.add or [], stored)
    return stored


def _check_add(args: argparse.Namespace) -> None:
    """``--add`` grows the tournament kept in ``--out``, whose entrants come from the folder:
    it needs ``--out DIR --resume``, and no entrants typed beside it (they would say the whole
    list again, and which one meant what would be a guess)."""
    if not args.add:
        return
    import shlex

    short = shlex.join(["nashzoo", "tournament", "--out", args.out or "DIR", "--resume", "--add"])
    short += " " + shlex.join(args.add)
    if args.out is None or not args.resume:
        raise UsageError(f"--add grows the tournament kept in a folder: {short}")
    if args.entrants:
        raise UsageError(
            f"--add follows the entrants stored in --out, so type no entrants with it: {short} "
            "(or type the whole list, the stored entrants then the new ones, without --add)"
        )


def _added_specs(added: list[str], stored: dict[str, Any]) -> list[str]:
    """The ``--add`` specs as the folder stores them, beside its own, whose relative paths
    lead from its ``working_directory``: as typed where that is the current directory (the
    config the whole list typed there writes), else each relative path made absolute."""
    from nashzoo.eval.tournament import spec_from

    directory = stored.get("working_directory")
    if directory is None or Path(directory) == Path.cwd().absolute():
        return list(added)
    return [spec_from(spec, os.getcwd()) for spec in added]


def _play_tournament(args: argparse.Namespace, game: Any, entrants: list) -> int:
    """The round robin of ``_cmd_tournament`` without ``--out``: its table, no files."""
    from nashzoo.eval.tournament import round_robin

    try:
        result = round_robin(
            game, entrants, episodes=args.episodes, seed=args.seed, progress=_progress(args)
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
        return EXIT_INTERRUPTED
    _print_tournament(result, entrants)
    return 0


def _progress(args: argparse.Namespace) -> bool:
    """A progress bar only on a terminal: redirected to a file or a pipe (a CI or ``nohup``
    log), a bar writes a redraw of itself up to ten times a second."""
    return not args.no_progress and sys.stderr.isatty()


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
            result = tournament.play(progress=_progress(args))
        except KeyboardInterrupt:
            if args.debug:
                raise
            print(f"interrupted: {_kept(tournament, args)}", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception as err:
            if args.debug:
                raise
            print(f"error: {error_text(err)}{failure_hint(err)}", file=sys.stderr)
            print(_kept(tournament, args), file=sys.stderr)
            return EXIT_FAILURE
        _print_tournament(result, entrants)
        if not args.no_plots:
            from nashzoo.eval.numbers import payoff_spec
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
                fmt="{:" + payoff_spec(result.exact.ravel()) + "}",
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


def add_tournament_parser(sub: Any) -> None:
    """``nashzoo tournament``: a round robin between entrants."""
    tour = sub.add_parser(
        "tournament",
        help="round robin between agents",
        description="Entrants: uniform, equilibrium, fixed:P1,P2,... (matrix games; "
        "fixed:P1,P2;Q1,Q2,Q3 one strategy per seat), a policy .json, a checkpoint .npz or a "
        "Stable-Baselines3 .zip; NAME=SPEC names one. "
        "nashzoo tournament --out DIR --resume finishes the tournament in DIR with the entrants "
        "and options stored there; add --add SPEC ... to grow it by new entrants.",
    )
    game_arg(tour, default=None)
    tour.add_argument(
        "entrants",
        nargs="*",
        help="two or more entrant specs (none with --out DIR --resume: the ones stored there)",
    )
    tour.add_argument(
        "--episodes",
        type=non_negative_int,
        help="sampled matches per pairing and seating (default 2000; 0 = exact only)",
    )
    tour.add_argument(
        "--seed",
        type=non_negative_int,
        help="seed of the sampled matches (default 0; the same seed gives the same table)",
    )
    tour.add_argument(
        "--out",
        type=user_path,
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
        "--add",
        nargs="+",
        action="extend",
        metavar="SPEC",
        help="with --out DIR --resume and no entrants typed: grow the tournament kept there by "
        "these entrants, after its own (only their pairings play; the same as typing the stored "
        "entrants, then these)",
    )
    tour.add_argument(
        "--force",
        action="store_true",
        help="start over in an --out that already holds a tournament, deleting it (default: "
        "refuse; --resume finishes it instead)",
    )
    tour.add_argument("--no-plots", action="store_true", help="no tournament_heatmap.png")
    tour.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is one only when stderr is a terminal)",
    )
    tour.set_defaults(func=_cmd_tournament, stops_gracefully=True)
