"""Environment speed: random play through nashzoo's public ``env()`` against its peers, in the
same run.

Rows are Kuhn poker, Leduc hold'em and Liar's dice (one die each, six sides: 294,883
histories), the last twice: as ``liars_dice_v0.env()`` gives it (too big for the env's lookup
tables under ``tabulate="auto"``, so it steps the game's states with its memo of the histories
reached) and with ``tabulate=True`` (the whole tree tabulated first; the one-off cost of
compiling the tree and building the tables is printed). Columns (episodes per second, higher is
better):

* nashzoo ``kuhn_poker_v0.env()`` / ``leduc_holdem_v0.env()`` / ``liars_dice_v0.env()``, the
  default (illegal actions raise): the raw env under the one wrapper ``env()`` applies,
  nashzoo's ``OrderEnforcingWrapper`` (PettingZoo's, with faster attribute forwarding);
* nashzoo ``env(illegal_action="penalize")``: the raw env under the one wrapper that mode
  applies, ``PenalizeIllegalWrapper`` (PettingZoo's order checks and terminate-with-penalty
  convention);
* reference: the same raw env under PettingZoo's own classic stack
  ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(TerminateIllegalWrapper(raw_env)))``, what
  the penalize mode used to be (so what PettingZoo's wrappers cost);

all driven the PettingZoo way (``agent_iter``, ``last``, ``step``, dead steps included);
* OpenSpiel's ``open_spiel.python.rl_environment.Environment("kuhn_poker" / "leduc_poker" /
  "liars_dice")`` (``reset`` / ``step`` on ``TimeStep``s);
* PettingZoo's own ``pettingzoo.classic.leduc_holdem_v4`` (RLCard), Leduc only, when ``rlcard``
  and ``pygame-ce`` are installed (``pip install 'pettingzoo[classic]'``); otherwise the script
  says so and leaves the column out.

Every column plays the same policy with the same code: a uniformly random legal action drawn
with ``random.Random(seed)`` (legal actions read from the action mask, or from OpenSpiel's
``legal_actions``); every env is seeded. Each measurement times ``--episodes`` episodes after a
warm-up; the implementations take turns, ``--repeats`` rounds, and the median is reported, so
load from other processes hits every column alike. The clock is this process's CPU time
(``--clock cpu``, the default): every column runs single-threaded in this process (OpenSpiel's
C++ included), so CPU time is what each one costs, while wall time on a shared machine also
counts the waits for a free core (``--clock wall`` on an idle machine). Ratios are nashzoo / peer
from this run.

Run: ``.venv/bin/python benchmarks/bench_env.py [--quick] [--markdown BENCHMARKS.md]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _common import provenance, require_openspiel, write_section

from nashzoo.envs import kuhn_poker_v0, leduc_holdem_v0, liars_dice_v0
from nashzoo.games import compile_tree, load_game

SECTION = "## Environment speed"
Runner = Callable[[int], int]  # plays n episodes, returns the number of decisions made


def pettingzoo_classic_stack(module: object, **kwargs: object) -> object:
    """The raw env under PettingZoo's classic terminate-with-penalty wrapper stack."""
    from pettingzoo.utils import wrappers

    raw = module.raw_env(**kwargs)  # type: ignore[attr-defined]
    env = wrappers.TerminateIllegalWrapper(raw, illegal_reward=-1)
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(env))


def nashzoo_runner(env: object, seed: int) -> Runner:
    env.reset(seed=seed)  # type: ignore[attr-defined]
    rnd = random.Random(seed)
    flatnonzero = np.flatnonzero

    def run(episodes: int) -> int:
        decisions = 0
        for _ in range(episodes):
            env.reset()
            for _agent in env.agent_iter():
                obs, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                    continue
                legal = flatnonzero(obs["action_mask"]).tolist()
                env.step(legal[rnd.randrange(len(legal))])
                decisions += 1
        return decisions

    return run


def openspiel_runner(game: str, seed: int) -> Runner:
    from open_spiel.python import rl_environment

    env = rl_environment.Environment(
        game, chance_event_sampler=rl_environment.ChanceEventSampler(seed=seed)
    )
    rnd = random.Random(seed)

    def run(episodes: int) -> int:
        decisions = 0
        for _ in range(episodes):
            time_step = env.reset()
            while not time_step.last():
                player = time_step.observations["current_player"]
                legal = time_step.observations["legal_actions"][player]
                time_step = env.step([legal[rnd.randrange(len(legal))]])
                decisions += 1
        return decisions

    return run


def pettingzoo_leduc_runner(seed: int) -> Runner:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pettingzoo.classic import leduc_holdem_v4

    env = leduc_holdem_v4.env()
    env.reset(seed=seed)
    rnd = random.Random(seed)
    flatnonzero = np.flatnonzero

    def run(episodes: int) -> int:
        decisions = 0
        for _ in range(episodes):
            env.reset()
            for _agent in env.agent_iter():
                obs, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                    continue
                legal = flatnonzero(obs["action_mask"]).tolist()
                env.step(legal[rnd.randrange(len(legal))])
                decisions += 1
        return decisions

    return run


def measure(
    runners: dict[str, Runner], episodes: int, repeats: int, clock: Callable[[], float]
) -> dict[str, dict]:
    """Median episodes/s of each runner; the runners take turns within every round."""
    rates: dict[str, list[float]] = {name: [] for name in runners}
    decisions: dict[str, int] = {}
    for run in runners.values():
        run(max(50, episodes // 20))  # warm-up: imports, caches, table building
    for _ in range(repeats):
        for name, run in runners.items():
            start = clock()
            decisions[name] = run(episodes)
            rates[name].append(episodes / (clock() - start))
    return {
        name: {
            "eps": statistics.median(values),
            "spread": (min(values), max(values)),
            "decisions": decisions[name] / episodes,
        }
        for name, values in rates.items()
    }


def _versions() -> list[str]:
    """Python, numpy and the peers' versions (those installed)."""
    from importlib.metadata import PackageNotFoundError, version

    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for dist in ("pettingzoo", "open_spiel", "rlcard"):
        try:
            installed = version(dist.replace("_", "-"))
        except PackageNotFoundError:
            continue
        versions.append(f"{dist} {installed}")
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes (noisier)")
    parser.add_argument("--episodes", type=int, help="episodes per measurement")
    parser.add_argument("--repeats", type=int, help="measurement rounds (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="time.process_time (default; robust on a shared machine) or time.perf_counter",
    )
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    args = parser.parse_args()
    episodes = args.episodes or (2_000 if args.quick else 10_000)
    repeats = args.repeats or (3 if args.quick else 7)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    require_openspiel()
    notes = []
    try:
        pz_leduc: Runner | None = pettingzoo_leduc_runner(args.seed)
    except ImportError as err:
        pz_leduc = None
        notes.append(
            f"PettingZoo's leduc_holdem_v4 skipped ({err}); it needs rlcard and pygame-ce: "
            "pip install 'pettingzoo[classic]'"
        )

    load_before = os.getloadavg()
    liars = load_game("liars_dice")
    start = clock()
    histories = compile_tree(liars).num_nodes
    compiled = clock() - start
    start = clock()
    liars_dice_v0.env(tabulate=True)  # builds the env tables from the compiled tree
    tabulated = clock() - start
    one_off = (
        f"native liars_dice ({args.clock} time): compile_tree {compiled:.1f} s for "
        f"{histories:,} histories "
        f"({compiled / histories * 1e6:.1f} us per history); env tables built from it in "
        f"{tabulated:.1f} s; `liars_dice_v0.env()` itself compiles nothing"
    )
    print(f"# {one_off}", flush=True)
    rows = []
    for label, module, os_game, kwargs in (
        ("Kuhn poker", kuhn_poker_v0, "kuhn_poker", {}),
        ("Leduc hold'em", leduc_holdem_v0, "leduc_poker", {}),
        ("Liar's dice (states, the default)", liars_dice_v0, "liars_dice", {}),
        ("Liar's dice (`tabulate=True`)", liars_dice_v0, "liars_dice", {"tabulate": True}),
    ):
        runners = {
            "nashzoo": nashzoo_runner(module.env(**kwargs), args.seed),
            "penalize": nashzoo_runner(module.env(illegal_action="penalize", **kwargs), args.seed),
            "pz_stack": nashzoo_runner(pettingzoo_classic_stack(module, **kwargs), args.seed),
            "openspiel": openspiel_runner(os_game, args.seed),
        }
        if pz_leduc is not None and os_game == "leduc_poker":
            runners["pettingzoo"] = pz_leduc
        rows.append((label, measure(runners, episodes, repeats, clock)))
    load_after = os.getloadavg()

    def cell(result: dict | None) -> str:
        if result is None:
            return "n/a"
        return f"{result['eps']:,.0f} ({result['decisions']:.2f})"

    def ratio(row: dict, peer: str, ours: str = "nashzoo") -> str:
        return f"{row[ours]['eps'] / row[peer]['eps']:.2f}x" if peer in row else "n/a"

    lines = [
        '| game | nashzoo `env()` | nashzoo `env(illegal_action="penalize")` '
        "| nashzoo raw env + PettingZoo's classic wrappers (reference) "
        "| OpenSpiel `rl_environment` | PettingZoo `leduc_holdem_v4` "
        "| `env()` / OpenSpiel | penalize / OpenSpiel | classic wrappers / OpenSpiel "
        "| `env()` / PettingZoo |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, row in rows:
        lines.append(
            f"| {label} | {cell(row['nashzoo'])} | {cell(row['penalize'])} | "
            f"{cell(row['pz_stack'])} | {cell(row['openspiel'])} | "
            f"{cell(row.get('pettingzoo'))} | {ratio(row, 'openspiel')} | "
            f"{ratio(row, 'openspiel', 'penalize')} | {ratio(row, 'openspiel', 'pz_stack')} | "
            f"{ratio(row, 'pettingzoo')} |"
        )
    table = "\n".join(lines)
    versions = _versions()
    machine = f"{os.cpu_count()}-core {platform.machine()} CPU, {platform.system()}"
    load = (
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
        f"(other processes {'were' if max(load_before[0], load_after[0]) > 0.5 else 'were not'}"
        " running)"
    )
    print(f"# {machine}; {', '.join(versions)}; {load}")
    clock_text = "CPU time of the benchmark process" if args.clock == "cpu" else "wall-clock time"
    print(
        f"# random play, episodes/s (decisions per episode) in {clock_text}; median of "
        f"{repeats} rounds of {episodes} episodes, seed {args.seed}"
    )
    print(table, flush=True)
    for note in notes:
        print(f"# {note}")

    if args.markdown:
        column = {
            "nashzoo": "env()",
            "penalize": "penalize",
            "pz_stack": "classic wrappers",
            "openspiel": "OpenSpiel",
            "pettingzoo": "leduc_holdem_v4",
        }
        spreads = "; ".join(
            f"{label} {column[name]} {lo:,.0f}-{hi:,.0f}"
            for label, row in rows
            for name, r in row.items()
            for lo, hi in [r["spread"]]
        )
        body = "\n".join(
            [
                SECTION,
                "",
                "Random play (uniformly random legal actions, same policy code and seed for "
                "every column) through each library's public environment API. nashzoo's "
                "`kuhn_poker_v0.env()` / `leduc_holdem_v0.env()` / `liars_dice_v0.env()` as a "
                "user gets them, "
                "everything `env()` returns included, driven with `agent_iter`/`last`/`step` "
                "(dead steps included): the default `env()` is the raw env under one wrapper, "
                "nashzoo's `OrderEnforcingWrapper` (PettingZoo's order checks, faster "
                'attribute forwarding); `env(illegal_action="penalize")` is the raw env '
                "under one wrapper, `PenalizeIllegalWrapper` (the same order checks plus "
                "PettingZoo's terminate-with-penalty convention, checked against PettingZoo's "
                "own wrappers in `tests/test_envs.py`). The reference column is the same raw "
                "env under PettingZoo's classic stack `OrderEnforcingWrapper("
                "AssertOutOfBoundsWrapper(TerminateIllegalWrapper(raw_env)))` (what the "
                "penalize mode used before), i.e. the cost of PettingZoo's own wrappers. "
                "Peers: OpenSpiel's Python `rl_environment.Environment` and PettingZoo's own "
                "`leduc_holdem_v4` (RLCard, under its classic wrappers; Leduc only). Episodes "
                "per second, higher is better; in brackets the mean number of decisions per "
                "episode (OpenSpiel plays the same games, so equal numbers mean equal work). "
                "Ratios are measured in the same run with the implementations taking turns. "
                "RLCard's Leduc is a variant (blinds instead of antes, its own action set), "
                "so its random games are shorter; per decision the gap is larger than per "
                "episode. Liar's dice (one die each, six sides, OpenSpiel's `liars_dice`) has "
                '294,883 histories, more than `tabulate="auto"` tabulates (100,000), so '
                "`liars_dice_v0.env()` steps the game's states, remembering the histories it "
                "reaches (at most 65,536 nodes); the last row forces the lookup tables of the "
                "whole tree (`tabulate=True`) for comparison.",
                "",
                table,
                "",
                "- Measured "
                + provenance(
                    load_before[0], load_after[0], ("numpy", "pettingzoo", "open_spiel", "rlcard")
                )
                + f". Episodes per second are measured in {clock_text} (`--clock {args.clock}`), "
                "which waiting for a core does not inflate; single rounds still vary (see the "
                "ranges below) while the columns, taking turns, share the load alike.",
                f"- Median of {repeats} rounds of {episodes:,} episodes each; range over the "
                f"rounds: {spreads}.",
                f"- One-off: {one_off}.",
                *[f"- {note}." for note in notes],
                "",
            ]
        )
        write_section(args.markdown, SECTION, body)
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
