"""Compile time per history through the OpenSpiel bridge, where it goes, and OpenSpiel's own
enumeration as the peer.

For each game, every history is visited by

* nashzoo's compile of the bridged game (``load_game("openspiel:...")``): the fast walk over raw
  ``pyspiel`` states (``games/fast_walk.py`` with the bridge's ``_raw_ops``), timed in its two
  parts, the walk (one Python step per history, recording into typed buffers) and the layout
  (``games/layout.py``: breadth-first order, sequences, the recall check; one compiled loop
  with numba, numpy one depth at a time without);
* the floor: the same ``pyspiel`` calls the walk makes (player, chance outcomes or legal
  actions, information-state string at decisions, returns at terminals, one clone-and-apply per
  child but the last, which is applied in place), recording nothing; what any walk through
  pyspiel's Python bindings pays;
* the checking walk (``tree.walk_states`` through ``OpenSpielState`` wrappers): the path every
  bridged game took before the fast walk, now the one that explains a malformed game;
* OpenSpiel's ``get_all_states`` (``open_spiel.python.algorithms.get_all_states``, every history
  with chance and terminal states, keyed by ``history_str``): OpenSpiel's own Python enumeration,
  what its ``TabularPolicy`` and Python best response start with (not run above
  ``--peer-limit`` histories: it keeps every state alive in a dict);
* nashzoo's compile of its native version of the game, where it has one (Kuhn, Leduc and Liar's
  dice, through their vectorised builders).

Times are CPU seconds of this process (``time.process_time``; the machine is shared and every
contender is single-threaded), medians over rounds measured round-robin (each round runs every
contender once), so load from other jobs hits all alike; the ratios are taken within the run.

Run: ``.venv/bin/python benchmarks/bench_bridge.py [--quick] [--markdown BENCHMARKS.md]``
(``--markdown`` replaces only this benchmark's generated part of the ``## OpenSpiel bridge``
section).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import provenance, require_openspiel, version, write_section

from nashzoo.games import CHANCE, TERMINAL, Game, load_game
from nashzoo.games import fast_walk as fw
from nashzoo.games.layout import lay_out
from nashzoo.games.openspiel import _raw_ops
from nashzoo.games.tree import _compile, walk_states

try:
    import pyspiel
except ImportError:  # main() refuses with the fix (require_openspiel); --help still works
    pyspiel = None

UNIVERSAL_13 = (
    "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,raiseSize=2 4,"
    "firstPlayer=1 1,maxRaises=2 2,numSuits=2,numRanks=13,numHoleCards=1,numBoardCards=0 1)"
)
GAMES = ("kuhn_poker", "leduc_poker", "liars_dice(dice_sides=4)", "liars_dice", UNIVERSAL_13)


def native_game(spec: str) -> Game | None:
    """nashzoo's own version of the OpenSpiel game ``spec`` (same string), if it has one."""
    try:
        return load_game(spec)
    except ValueError:
        return None


def floor_walk(os_game: Any) -> int:
    """Every history through the pyspiel calls the fast walk makes, recording nothing."""
    state_type = pyspiel.State
    player, returns, outcomes = (
        state_type.current_player,
        state_type.returns,
        (state_type.chance_outcomes),
    )
    key, legal = state_type.information_state_string, state_type.legal_actions
    child, advance = state_type.child, state_type.apply_action
    stack = [os_game.new_initial_state()]
    pop, push = stack.pop, stack.append
    count = 0
    while stack:
        state = pop()
        count += 1
        who = player(state)
        if who == TERMINAL:
            returns(state)
            continue
        if who == CHANCE:
            actions = [o for o, _ in outcomes(state)]
        else:
            key(state, who)
            actions = legal(state)
        for action in actions[:0:-1]:
            push(child(state, action))
        advance(state, actions[0])
        push(state)
    return count


def bridge_parts(game: Game) -> tuple[float, float]:
    """CPU seconds of the bridge's compile in its two parts: the walk, the layout."""
    records = fw._Records()
    start = time.process_time()
    fw._visit_all(game, game.openspiel_game.new_initial_state(), _raw_ops(game), records)
    middle = time.process_time()
    lay_out(game, records)
    return middle - start, time.process_time() - middle


def round_robin(
    contenders: list[tuple[str, Callable[[], object]]], rounds: int
) -> dict[str, list[float]]:
    """CPU seconds of each call of each contender; every round runs each once, in turn."""
    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(rounds):
        for name, fn in contenders:
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    return times


def measure(spec: str, rounds: int, peer_limit: int) -> dict:
    """One game's row: sizes and the median CPU us/history of every contender."""
    from open_spiel.python.algorithms.get_all_states import get_all_states

    game = load_game(f"openspiel:{spec}")
    tree = _compile(game)
    histories = tree.num_nodes
    assert floor_walk(game.openspiel_game) == histories == walk_states(game).num_nodes

    parts: dict[str, list[float]] = {"bridge.walk": [], "bridge.layout": []}

    def bridge() -> None:
        for name, seconds in zip(parts, bridge_parts(game), strict=True):
            parts[name].append(seconds)

    contenders = [
        ("bridge", bridge),
        ("floor", lambda: floor_walk(game.openspiel_game)),
        ("checking", lambda: walk_states(game)),
    ]
    if histories <= peer_limit:
        every = {"include_terminals": True, "include_chance_states": True}
        contenders.append(
            ("openspiel", lambda: get_all_states(game.openspiel_game, **every, to_string=str))
        )
    native = native_game(spec)
    if native is not None:
        assert _compile(native).num_nodes == histories
        contenders.append(("native", lambda: _compile(native)))
    med = {
        name: statistics.median(seconds)
        for name, seconds in {**round_robin(contenders, rounds), **parts}.items()
    }
    us = {name: 1e6 * seconds / histories for name, seconds in med.items()}
    print(f"{spec}: {histories} histories, " + ", ".join(f"{k} {v:.2f} us" for k, v in us.items()))
    return {
        "spec": spec,
        "histories": histories,
        "infosets": tree.num_infosets,
        "us": us,
        "seconds": med["bridge"],
        "rounds": rounds,
    }


def _value(us: dict[str, float], name: str) -> str:
    return f"{us[name]:.2f}" if name in us else "n/a"


def _ratio(us: dict[str, float], top: str, bottom: str) -> str:
    return f"{us[top] / us[bottom]:.2f}x" if top in us and bottom in us else "n/a"


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| OpenSpiel game | histories | infosets | compile via the bridge, us/history (CPU s) "
        "| of which the walk | of which the layout | the pyspiel calls alone (floor) "
        "| compile / floor | checking walk (the path before), us/history | before / now "
        "| OpenSpiel `get_all_states`, us/history | `get_all_states` / compile "
        "| native nashzoo compile, us/history |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        us = row["us"]
        lines.append(
            f"| `{row['spec']}` | {row['histories']:,} | {row['infosets']:,} "
            f"| {us['bridge']:.2f} ({row['seconds']:.2f} s) | {_value(us, 'bridge.walk')} "
            f"| {_value(us, 'bridge.layout')} | {_value(us, 'floor')} "
            f"| {_ratio(us, 'bridge', 'floor')} | {_value(us, 'checking')} "
            f"| {_ratio(us, 'checking', 'bridge')} | {_value(us, 'openspiel')} "
            f"| {_ratio(us, 'openspiel', 'bridge')} | {_value(us, 'native')} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, the small games")
    parser.add_argument("--rounds", type=int, help="rounds per game (default 7, 3 above 100k)")
    parser.add_argument(
        "--peer-limit", type=int, default=500_000, help="largest game get_all_states is run on"
    )
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    args = parser.parse_args()
    require_openspiel()
    games = GAMES[:3] if args.quick else GAMES
    load_before = os.getloadavg()[0]
    print(f"# Python {platform.python_version()}, open_spiel {version('open_spiel')}")
    rows = []
    for spec in games:
        rounds = args.rounds or (3 if (args.quick or spec in GAMES[3:]) else 7)
        rows.append(measure(spec, rounds, args.peer_limit))
    lines = table(rows)
    print()
    print("\n".join(lines))
    if args.markdown:
        notes = [
            "",
            "- Measured "
            + provenance(load_before, os.getloadavg()[0], ("numpy", "numba", "open_spiel"))
            + ". CPU time of the benchmark process; on a shared machine absolute times are "
            "noisy, the same-run ratios less so.",
            "- Median of round-robin rounds per game ("
            + ", ".join(f"{r['spec']} {r['rounds']}" for r in rows)
            + "); every contender visits the same histories (checked).",
        ]
        write_section(args.markdown, SECTION, "\n".join([*INTRO, "", *lines, *notes]))
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


SECTION = "## OpenSpiel bridge"
INTRO = [
    "Compile time per history of OpenSpiel games through the bridge "
    '(`load_game("openspiel:...")`, `nashzoo/games/openspiel.py`): the fast walk over raw '
    "`pyspiel` states (`nashzoo/games/fast_walk.py`), split into the walk and the layout "
    "(`nashzoo/games/layout.py`, the compiled loop when numba is installed), "
    "against the same pyspiel calls with nothing recorded (the floor of any walk through "
    "pyspiel's Python bindings), the checking walk through `OpenSpielState` wrappers (the path "
    "before the fast walk; it now only explains malformed games), OpenSpiel's own Python "
    "enumeration of every history (`get_all_states`) and, where nashzoo has its own version of "
    "the game, its native compile. Lower is better.",
]


if __name__ == "__main__":
    main()
