"""``nashzoo games``, ``nashzoo learners`` and ``nashzoo solve``: what nashzoo offers, from the
command line."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nashzoo.cli.common import (
    UsageError,
    game_spec,
    game_spec_arg,
    load_game_arg,
    required_game_spec,
    user_path,
)


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
    args.game = game_spec(args, "games")
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
    from nashzoo.games.catalog import COUNT_CAP, COUNT_SECONDS, TOO_BIG, game_facts
    from nashzoo.games.limits import history_limit

    game = load_game_arg(args.game)
    facts = game_facts(game)
    env: str | None = env_ids().get(game.name) or f"nashzoo.envs.env({game.id!r})"
    if int(getattr(game, "infoset_tensor_size", 0)) <= 0:
        env = None  # an env observes information-set tensors, which the game does not define
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
        ("PettingZoo env", env or "none: the game defines no information-set tensors to observe"),
    ]
    if size.note is not None:
        lines.append(("value", "not computed: the tree was not compiled"))
    if size.note == TOO_BIG:
        cap = history_limit()
        capped = "" if cap is None else f", nor past the {cap:,} of NASHZOO_MAX_HISTORIES"
        lines.append(
            (
                "note",
                f"this listing compiles no game past {COUNT_CAP:,} histories or "
                f"{COUNT_SECONDS:g} s of walking{capped}; nashzoo solve "
                f"{shlex.quote(game.id)} computes the value and an equilibrium of a zero-sum "
                "game whose tree the machine can hold",
            )
        )
    elif size.note is not None:
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


def _check_output_file(path: str) -> None:
    """Refuse an ``--out`` file that cannot be written (a folder of that name, a folder that
    cannot be made or written), before any work."""
    from nashzoo.io import check_output_folder

    if Path(path).is_dir():
        raise UsageError(f"--out {path} is a folder; give a file path such as {path}/eq.json")
    check_output_folder(Path(path).parent, "--out's folder")


def _cmd_solve(args: argparse.Namespace) -> int:
    """``nashzoo solve``: the exact equilibrium of a two-player zero-sum game, to a file."""
    from nashzoo.eval import nash_conv, solve_game
    from nashzoo.eval.answers import no_value_reason

    if args.out is not None:  # before the solve, which may take minutes: not after it
        _check_output_file(args.out)
    game = load_game_arg(required_game_spec(args, "solve"))
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


def add_games_parser(sub: Any) -> None:
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
    game_spec_arg(games)
    games.add_argument(
        "--openspiel",
        action="store_true",
        help="list OpenSpiel's registered games the bridge loads as two-player games (needs "
        "pip install 'nashzoo[openspiel]')",
    )
    games.add_argument("--json", action="store_true", help="print JSON")
    games.set_defaults(func=_cmd_games)


def add_learners_parser(sub: Any) -> None:
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


def add_solve_parser(sub: Any) -> None:
    """``nashzoo solve``: a two-player zero-sum game's exact equilibrium, to a policy file."""
    solve = sub.add_parser(
        "solve",
        help="exact equilibrium and value of a two-player zero-sum game, to a policy file",
        description="Solve the game's sequence-form linear program: print each player's "
        "value and the equilibrium's NashConv (about 1e-15 times the largest payoff), and with "
        "--out write the equilibrium as a policy JSON file that nashzoo eval and nashzoo "
        "tournament read. Two-player zero-sum (or constant-sum) games only; a game with over "
        "300,000 terminal histories is solved after a warning (it may take minutes).",
    )
    game_spec_arg(solve)
    solve.add_argument(
        "--out", metavar="FILE", type=user_path, help="write the equilibrium policy here (.json)"
    )
    solve.add_argument("--json", action="store_true", help="print JSON")
    solve.set_defaults(func=_cmd_solve)
