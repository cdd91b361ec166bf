"""Compile time per history through the OpenSpiel bridge, against OpenSpiel's own enumeration.

For each game, every history is visited by

* nashzoo ``compile_tree`` on the bridged game (``load_game("openspiel:...")``): the whole
  compiled tree, checks included, built uncached each time;
* OpenSpiel's ``get_all_states`` (``open_spiel.python.algorithms.get_all_states``, every history
  with chance and terminal states, keyed by ``history_str``): OpenSpiel's own Python enumeration
  of a game, what its ``TabularPolicy`` and Python best response start with; the peer;
* nashzoo ``compile_tree`` on nashzoo's native version of the game, where it has one (the
  same game string through ``load_game``: Kuhn and Leduc poker, Liar's Dice once it is built in);

and, to split the bridge's own cost from ``compile_tree``'s, two bare walks that ask what
``compile_tree`` asks (player to move, chance outcomes or legal actions, the information-set key
at decision nodes, returns at terminals, a child per edge) and build nothing: one through
nashzoo's ``OpenSpielState`` wrappers, one on raw ``pyspiel`` states. Their ratio is what the
wrapper adds per history.

Times are medians over rounds measured round-robin (each round runs every contender once), so
load from other jobs hits all alike; the ratios are taken within the run.

Run: ``.venv/bin/python benchmarks/bench_bridge.py [--quick] [--markdown BENCHMARKS.md]``
(``--markdown`` replaces only this benchmark's ``## OpenSpiel bridge`` section).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import version, write_section

from nashzoo.games import CHANCE, TERMINAL, Game, OpenSpielState, load_game
from nashzoo.games.tree import _compile

GAMES = ("kuhn_poker", "leduc_poker", "liars_dice(dice_sides=4)", "liars_dice")


def native_game(spec: str) -> Game | None:
    """nashzoo's own version of the OpenSpiel game ``spec`` (same string), if it has one."""
    try:
        return load_game(spec)
    except ValueError:
        return None


def walk(root: Any, child: Callable[[Any, int], Any], key: Callable[[Any, int], str]) -> int:
    """Visit every history from ``root``, asking what compile_tree asks, building nothing.

    ``child`` and ``key`` are the unbound methods of the state type walked: nashzoo's
    ``OpenSpielState._child`` / ``infoset_key``, or raw ``pyspiel.State.child`` /
    ``information_state_string`` (the floor for any Python bridge).
    """
    frontier = [root]
    count = 0
    while frontier:
        state = frontier.pop()
        count += 1
        who = state.current_player()
        if who == TERMINAL:
            state.returns()
        elif who == CHANCE:
            frontier.extend(child(state, a) for a, _ in state.chance_outcomes())
        else:
            key(state, who)
            frontier.extend(child(state, a) for a in state.legal_actions())
    return count


def walk_states(game: Game) -> int:
    return walk(game.new_initial_state(), OpenSpielState._child, OpenSpielState.infoset_key)


def walk_pyspiel(os_game: Any) -> int:
    state = os_game.new_initial_state()
    return walk(state, type(state).child, type(state).information_state_string)


def round_robin(contenders: list[tuple[str, Callable[[], object]]], rounds: int) -> dict:
    """Median seconds per call of each contender; every round runs each once, in turn."""
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(rounds):
        for name, fn in contenders:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no default liars_dice")
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    args = parser.parse_args()
    try:
        from open_spiel.python.algorithms.get_all_states import get_all_states
    except ImportError as err:
        raise SystemExit(f"this benchmark needs open_spiel as the peer: {err}") from None

    games = GAMES[:-1] if args.quick else GAMES
    load_before = os.getloadavg()[0]
    print(f"# Python {platform.python_version()}, open_spiel {version('open_spiel')}")
    rows = []
    for spec in games:
        game = load_game(f"openspiel:{spec}")
        tree = _compile(game)
        os_game = game.openspiel_game
        histories = tree.num_nodes
        assert walk_states(game) == histories == walk_pyspiel(os_game)
        contenders = [
            ("bridge", lambda g=game: _compile(g)),
            (
                "openspiel",
                lambda g=os_game: get_all_states(
                    g,
                    include_terminals=True,
                    include_chance_states=True,
                    to_string=lambda s: s.history_str(),
                ),
            ),
            ("states", lambda g=game: walk_states(g)),
            ("raw", lambda g=os_game: walk_pyspiel(g)),
        ]
        native = native_game(spec)
        if native is not None:
            assert _compile(native).num_nodes == histories
            contenders.append(("native", lambda g=native: _compile(g)))
        rounds = 3 if (args.quick or histories > 100_000) else 7
        med = round_robin(contenders, rounds)
        us = {name: 1e6 * seconds / histories for name, seconds in med.items()}
        rows.append((spec, histories, tree.num_infosets, us, med["bridge"], rounds))
        print(
            f"{spec}: {histories} histories, " + ", ".join(f"{k} {v:.2f} us" for k, v in us.items())
        )

    lines = [
        "| OpenSpiel game | histories | infosets | `compile_tree` via the bridge, us/history "
        "(whole compile) | OpenSpiel `get_all_states`, us/history | compile / `get_all_states` "
        "| native nashzoo `compile_tree`, us/history | bridge / native | bare walk through "
        "`OpenSpielState`, us/history | bare walk on raw `pyspiel`, us/history | wrapper "
        "overhead (State walk / raw walk) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, histories, infosets, us, seconds, _ in rows:
        native = f"{us['native']:.2f}" if "native" in us else "n/a"
        vs_native = f"{us['bridge'] / us['native']:.2f}x" if "native" in us else "n/a"
        lines.append(
            f"| {spec} | {histories:,} | {infosets:,} | {us['bridge']:.2f} ({seconds:.2f} s) "
            f"| {us['openspiel']:.2f} | {us['bridge'] / us['openspiel']:.2f}x | {native} "
            f"| {vs_native} | {us['states']:.2f} | {us['raw']:.2f} "
            f"| {us['states'] / us['raw']:.2f}x |"
        )
    print()
    print("\n".join(lines))
    if args.markdown:
        load_after = os.getloadavg()[0]
        rounds = ", ".join(f"{spec} {r}" for spec, *_, r in rows)
        notes = [
            "",
            f"- Date {datetime.date.today()}; {os.cpu_count()}-core {platform.machine()} CPU, "
            f"{platform.system()}; Python {platform.python_version()}, numpy {np.__version__}, "
            f"open_spiel {version('open_spiel')}. Shared machine: load average "
            f"{load_before:.2f} before, {load_after:.2f} after (other jobs ran on the same "
            "cores; absolute times are noisy, the same-run ratios less so).",
            f"- Median of round-robin rounds per game ({rounds}); every contender visits "
            "the same histories (checked).",
            "- Reading: the bridge itself (the `OpenSpielState` wrapper) costs "
            f"{min(r[3]['states'] / r[3]['raw'] for r in rows):.2f}x to "
            f"{max(r[3]['states'] / r[3]['raw'] for r in rows):.2f}x a raw `pyspiel` walk; "
            "nearly all of a bridged compile is `compile_tree`'s own per-history work (the "
            "sequence-form paths, the checks), the same as for a native game: through the "
            "bridge, "
            + ", ".join(
                f"{r[0]} compiles in {r[3]['bridge'] / r[3]['native']:.2f}x"
                for r in rows
                if "native" in r[3]
            )
            + " the time of nashzoo's native version (OpenSpiel's C++ applies the rules).",
            "- Reproduce: `.venv/bin/python benchmarks/bench_bridge.py "
            f"{'--quick ' if args.quick else ''}--markdown BENCHMARKS.md`.",
        ]
        write_section(args.markdown, SECTION, "\n".join([*INTRO, "", *lines, *notes]))
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


SECTION = "## OpenSpiel bridge"
INTRO = [
    "Compile time per history of OpenSpiel games through the bridge "
    '(`load_game("openspiel:...")`, `nashzoo/games/openspiel.py`): nashzoo\'s `compile_tree` '
    "(the whole tree as flat arrays, every history checked) against OpenSpiel's own Python "
    "enumeration of every history (`get_all_states`), and, where nashzoo has its own version "
    "of the game, against `compile_tree` on that native game. The last three columns split "
    "the bridge's own cost from `compile_tree`'s: a bare walk asking what `compile_tree` asks, "
    "through the `OpenSpielState` wrappers and on raw `pyspiel` states. Lower is better.",
]


if __name__ == "__main__":
    main()
