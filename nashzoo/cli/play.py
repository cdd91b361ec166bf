"""``nashzoo play``: play an agent yourself in the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # the command line imports what a command needs when it runs
    from nashzoo.games import Game
    from nashzoo.games.infoset import Policy

from nashzoo.cli.common import game_arg, load_game_arg, non_negative_int, positive_int


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
    game = load_game_arg(args.game)
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


def add_play_parser(sub: Any) -> None:
    """``nashzoo play``: a human against an agent in the terminal."""
    play = sub.add_parser("play", help="play an agent in the terminal")
    game_arg(play)
    play.add_argument(
        "--agent",
        default="equilibrium",
        help="opponent: uniform, equilibrium, fixed:P1,P2,... (one strategy at every information "
        "set; fixed:P1,P2;Q1,Q2,Q3 one per seat), a policy .json, a checkpoint .npz or a "
        "Stable-Baselines3 .zip",
    )
    play.add_argument(
        "--seat", type=non_negative_int, choices=(0, 1), default=0, help="your seat (0)"
    )
    play.add_argument("--hands", type=positive_int, default=1, help="hands to play (1)")
    play.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the deals and its moves (0)"
    )
    play.set_defaults(func=_cmd_play)
