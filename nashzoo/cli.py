"""``nashzoo``: the command line.

``nashzoo race``        which learners converge, and how fast (the main job)
``nashzoo train``       train one learner (self-play) or a pair, to a checkpoint
``nashzoo eval``        exact NashConv / exploitability of a policy file or checkpoint
``nashzoo tournament``  round robin between saved agents and built-ins
``nashzoo duel``        two different algorithms learning against each other, live
``nashzoo play``        play an agent yourself in the terminal

Bad arguments give a one-line error and a non-zero exit status, never a traceback: 2 for
malformed options (caught while parsing), 1 for values the library refuses while running (an
unknown learner, an unreadable or foreign file) and for failures inside a command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_USAGE = 2
EXIT_FAILURE = 1


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _csv_list(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


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


def _game_arg(parser: argparse.ArgumentParser, default: str = "kuhn_poker") -> None:
    parser.add_argument(
        "--game",
        default=default,
        help=f"{GAME_HELP} (default {default})",
    )


GAME_HELP = (
    "a game name or spec: rps, matrix:PRESET (e.g. matrix:matching_pennies), kuhn_poker, "
    "leduc_poker, a registered game (--plugin), parameters as NAME(key=value,...), or any "
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
    ):
        if hasattr(args, key):
            fields[key] = getattr(args, key)
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
    from nashzoo.train.race import RaceConfig, run_race, stored_race_config

    fields = _race_fields(args)
    if args.resume:
        out = fields.get("out", RaceConfig.out)
        stored = stored_race_config(out)
        if stored is None:
            print(f"no race to resume in {out}/ (no race_config.json): starting a new one")
        else:
            fields = {**stored, **fields}  # options typed now win over the stored ones
            print(f"resuming the race in {out}/ (options not given now are the stored ones)")
    if fields.get("address") and fields.get("backend", RaceConfig.backend) != "ray":
        raise UsageError("--address needs --backend ray")
    config = RaceConfig(**{**fields, "resume": args.resume})
    outcome = run_race(config, progress=not args.no_progress)
    if outcome.interrupted:
        return 130
    return EXIT_FAILURE if outcome.failures and not outcome.results else 0


# --- train / duel ----------------------------------------------------------------------------
def _train_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iterations", type=_positive_int, help="trainer iterations")
    parser.add_argument("--seconds", type=_positive_float, help="training seconds")
    parser.add_argument(
        "--work", type=_positive_int, help="work: nodes touched + env steps (both seats)"
    )
    parser.add_argument("--seed", type=int, default=0, help="trainer seed (default 0)")
    parser.add_argument(
        "--eval-every",
        default="log",
        help="evaluate every N iterations, 'log' (log-spaced, default) or 'none'",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _eval_every(text: str) -> Any:
    if text == "none":
        return None
    if text == "log":
        return "log"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"--eval-every: {err}") from None


def _run_trainer(args: argparse.Namespace, seat0: str, seat1: str, out: str | None) -> int:
    from nashzoo.train import PrintEval, Trainer

    if args.iterations is None and args.seconds is None and args.work is None:
        raise UsageError("give --iterations N, --seconds S and/or --work W")
    game = _load_game(args.game)
    checkpoint = None if out is None else Path(out) / "checkpoint.npz"
    if getattr(args, "resume", False):
        if checkpoint is None or not checkpoint.exists():
            raise UsageError(f"--resume needs an existing checkpoint in --out ({checkpoint})")
        trainer = Trainer.load(
            checkpoint,
            callbacks=[PrintEval()],
            progress=not args.no_progress,
            checkpoint_path=checkpoint,
        )
        print(f"resumed {trainer}")
    else:
        trainer = Trainer(
            game,
            seat0,
            seat1,
            seed=args.seed,
            eval_every=_eval_every(args.eval_every),
            callbacks=[PrintEval()],
            progress=None if not args.no_progress else False,
            checkpoint_path=checkpoint,
            checkpoint_every=getattr(args, "checkpoint_every", None),
        )
    result = trainer.run(iterations=args.iterations, seconds=args.seconds, work=args.work)
    print(result)
    if out is not None:
        folder = Path(out)
        result.average_policy.save(folder / "average_policy.json")
        result.to_csv(folder / "history.csv")
        result.to_json(folder / "result.json")
        print(f"wrote {folder}/checkpoint.npz, average_policy.json, history.csv, result.json")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    opponent = args.opponent or args.learner
    return _run_trainer(args, args.learner, opponent, args.out)


def _cmd_duel(args: argparse.Namespace) -> int:
    if args.seat0 == args.seat1:
        print(
            "note: the same algorithm on both seats is self-play; a duel is usually between "
            "two different ones"
        )
    return _run_trainer(args, args.seat0, args.seat1, args.out)


# --- eval ------------------------------------------------------------------------------------
def _load_policy(path: str, game: Any | None) -> tuple[Any, Any]:
    """A TabularPolicy from a policy JSON, a learner checkpoint or a trainer checkpoint."""
    from nashzoo.agents.registry import load_policy_file

    policy = load_policy_file(path, game)
    return policy.game, policy


def _cmd_eval(args: argparse.Namespace) -> int:
    from nashzoo.eval import evaluate

    game = None if args.game is None else _load_game(args.game)
    game, policy = _load_policy(args.path, game)
    report = evaluate(game, policy)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(report)
    return 0


# --- tournament ------------------------------------------------------------------------------
def _cmd_tournament(args: argparse.Namespace) -> int:
    from nashzoo.eval.tournament import load_entrant, round_robin

    game = _load_game(args.game)
    entrants = [load_entrant(game, spec) for spec in args.entrants]
    result = round_robin(
        game, entrants, episodes=args.episodes, seed=args.seed, progress=not args.no_progress
    )
    print(result.table())
    if args.out:
        from nashzoo.agents.policy import atomic_write_bytes

        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(
            folder / "tournament.json", json.dumps(result.to_dict(), indent=1).encode()
        )
        if not args.no_plots:
            from nashzoo.eval.plots import heatmap

            heatmap(
                result.exact,
                result.names,
                result.names,
                folder / "tournament_heatmap.png",
                title=f"Tournament on {result.game_id}: exact payoff of row vs column",
                colorbar="expected payoff (both seats averaged)",
                cmap="RdBu",
                fmt="{:+.3f}",
                center_zero=True,
            )
        print(
            f"wrote {folder}/tournament.json"
            + ("" if args.no_plots else " and tournament_heatmap.png")
        )
    return 0


# --- play ------------------------------------------------------------------------------------
def _cmd_play(args: argparse.Namespace, stdin: Any = None) -> int:
    import numpy as np

    from nashzoo.agents import Infoset
    from nashzoo.envs.aec import GameAECEnv, agent_name
    from nashzoo.eval.tournament import load_entrant

    stdin = stdin or sys.stdin
    game = _load_game(args.game)
    opponent = load_entrant(game, args.agent)
    me = agent_name(args.seat)
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
            if agent != me:
                player = env.possible_agents.index(agent)
                infoset = Infoset.from_observation(
                    obs, player, info["infoset_key"], game.num_actions
                )
                action = opponent.policy.act(infoset, rng)
                print(f"{opponent.name} plays {game.action_name(action)}")
                env.step(action)
                continue
            print(env.render())
            print(f"your information set: {info['infoset_key']}")
            names = {game.action_name(a).lower(): a for a in legal}  # typed names, any case
            prompt = "your move [" + ", ".join(f"{a}={game.action_name(a)}" for a in legal) + "]: "
            while True:
                print(prompt, end="", flush=True)
                line = stdin.readline()
                if not line:
                    print("\nbye")
                    return 0
                text = line.strip().lower()
                choice = names.get(text)
                if choice is None and text.isdigit():
                    choice = int(text)
                if choice in legal:
                    env.step(choice)
                    break
                print(
                    f"'{line.strip()}' is not a legal move here; choose one of "
                    + ", ".join(f"{a} ({game.action_name(a)})" for a in legal)
                )
    print(f"\nfinal result after {args.hands} hand(s): {total:+g}")
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
        help="import MODULE first (repeatable): a module that registers your own learners "
        "(@nashzoo.agents.register) or games (nashzoo.games.register_game), so every command "
        "(and every race worker) knows them; the current folder is searched",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

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
    race.add_argument("--learners", type=_csv_list, help="comma-separated names (default: all)")
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
    race.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    race.add_argument("--no-progress", action="store_true", default=False, help="no progress bar")
    race.set_defaults(func=_cmd_race)

    train = sub.add_parser("train", help="train a learner (self-play) or a pair to a checkpoint")
    _game_arg(train)
    train.add_argument("--learner", required=True, help="learner name, e.g. cfr_plus")
    train.add_argument("--opponent", help="learner on seat 1 (default: the same: self-play)")
    train.add_argument("--out", help="folder for checkpoint.npz, average_policy.json, history")
    train.add_argument("--checkpoint-every", type=_positive_int, help="iterations between saves")
    train.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.npz")
    _train_common(train)
    train.set_defaults(func=_cmd_train)

    duel = sub.add_parser("duel", help="two different algorithms learning against each other")
    _game_arg(duel)
    duel.add_argument("seat0", help="learner on seat 0")
    duel.add_argument("seat1", help="learner on seat 1")
    duel.add_argument("--out", help="folder for checkpoint and results")
    _train_common(duel)
    duel.set_defaults(func=_cmd_duel)

    ev = sub.add_parser("eval", help="exact NashConv/exploitability of a policy or checkpoint")
    ev.add_argument("path", help="policy .json, learner checkpoint .npz or trainer checkpoint")
    ev.add_argument("--game", help="check the file is for this game")
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.set_defaults(func=_cmd_eval)

    tour = sub.add_parser(
        "tournament",
        help="round robin between agents",
        description="Entrants: uniform, equilibrium, fixed:P1,P2,... (matrix games), a policy "
        ".json or a checkpoint .npz; NAME=SPEC names one.",
    )
    _game_arg(tour)
    tour.add_argument("entrants", nargs="+", help="two or more entrant specs")
    tour.add_argument(
        "--episodes",
        type=_non_negative_int,
        default=2000,
        help="sampled matches per pairing and seating (default 2000; 0 = exact only)",
    )
    tour.add_argument("--seed", type=int, default=0)
    tour.add_argument("--out", help="folder for tournament.json and the heatmap")
    tour.add_argument("--no-plots", action="store_true")
    tour.add_argument("--no-progress", action="store_true")
    tour.set_defaults(func=_cmd_tournament)

    play = sub.add_parser("play", help="play an agent in the terminal")
    _game_arg(play)
    play.add_argument(
        "--agent",
        default="equilibrium",
        help="opponent: uniform, equilibrium, a policy .json or checkpoint .npz",
    )
    play.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (0)")
    play.add_argument("--hands", type=_positive_int, default=1, help="hands to play (1)")
    play.add_argument("--seed", type=int, default=0)
    play.set_defaults(func=_cmd_play)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if args.plugin:
            from nashzoo.agents import import_plugins

            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # as `python -m` would
            import_plugins(args.plugin)
        return int(args.func(args))
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, ImportError, OSError, KeyError) as err:
        message = str(err).strip("'\"") or type(err).__name__
        print(f"error: {message}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
