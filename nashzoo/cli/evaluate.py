"""``nashzoo eval``: exact NashConv / exploitability of a policy file or checkpoint."""

from __future__ import annotations

import argparse
import json
from typing import Any

from nashzoo.cli.common import load_game_arg


def _cmd_eval(args: argparse.Namespace) -> int:
    from nashzoo.eval import evaluate

    game = None if args.game is None else load_game_arg(args.game)
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


def add_eval_parser(sub: Any) -> None:
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
