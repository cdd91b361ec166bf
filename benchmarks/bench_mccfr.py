"""MCCFR speed: wall time to a NashConv target, nashzoo against OpenSpiel, in the same run.

Solvers (self-play with alternating updates, as each library runs it by default):

* nashzoo ``os_mccfr`` / ``es_mccfr``: two learners, one per seat, stepped alternately exactly
  as ``nashzoo.train.Trainer`` does (``l0.step(l1.current_policy());
  l1.step(l0.current_policy())``), default configs (exact averaging, linear weighting), plus
  the sampled-averaging variants (the paper's ``averaging="stochastic"`` / ``"simple"``) and
  ``weighting="uniform"`` (the 2009 paper's equal weights);
* OpenSpiel C++ ``pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, seed)`` and
  ``pyspiel.ExternalSamplingMCCFRSolver(game, seed, MCCFRAverageType.SIMPLE)`` (one episode /
  traversal per player per iteration);
* OpenSpiel Python ``open_spiel.python.algorithms.outcome_sampling_mccfr.OutcomeSamplingSolver``
  and ``external_sampling_mccfr.ExternalSamplingSolver`` (one episode / traversal per player per
  iteration; they draw from numpy's global RNG, which this script seeds per run). Kuhn only:
  on Leduc they need minutes per run.

OpenSpiel's average policies are evaluated by nashzoo's exact NashConv after
``nashzoo.eval.openspiel.from_openspiel`` (information sets the solver never visited play
uniformly, as in OpenSpiel's Python solvers): ``pyspiel.nash_conv`` refuses a C++ MCCFR average
that misses an information set, which on Liar's dice is every one of them for hours. Both
NashConvs agree to 1e-15 where both run (BENCHMARKS.md, "Cost growth").

Protocol: each run trains in chunks and evaluates the exact NashConv of the average policy at
log-spaced points (each ~10% more work than the last); only training is on the clock. The time
of the first evaluation at or below the target is the run's time; a run still above it after
``--cap`` seconds of training counts as infinitely slow (``n/a``). For every seed the solvers
take turns, so load from other processes hits all of them alike. The table shows the median
over seeds, the range, and the median number of samples per seat (trajectories for outcome
sampling, traversals for external sampling). The ratio is OpenSpiel C++ median time / this
solver's median time from the same run: above 1 means faster than OpenSpiel's C++.

Run: ``.venv/bin/python benchmarks/bench_mccfr.py [--quick] [--leduc] [--markdown BENCHMARKS.md]``
(Kuhn poker to NashConv 0.02; ``--leduc`` adds Leduc hold'em to NashConv 0.5).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _common import provenance, require_openspiel, write_section

from nashzoo.agents import ESMCCFRConfig, OSMCCFRConfig, TabularPolicy, make_learner
from nashzoo.games import compile_tree, load_game
from nashzoo.games.treemath import nash_conv

SECTION = "## MCCFR speed"
CPP = {"os": "OpenSpiel C++ OS", "es": "OpenSpiel C++ ES"}


@dataclass
class Runner:
    """One training run: ``advance(k)`` does ``k`` work units, ``nash_conv()`` evaluates,
    ``samples(units)`` converts units into samples per seat."""

    advance: Callable[[int], None]
    nash_conv: Callable[[], float]
    samples: Callable[[int], float]


def warm_up() -> None:
    """Load the optional compiled kernels once (a one-time cost of the process, not of a run)."""
    for name in ("os_mccfr", "es_mccfr"):
        nashzoo_runner("kuhn_poker", name, {}, 0).advance(1)


def nashzoo_runner(game_name: str, name: str, config: dict, seed: int) -> Runner:
    game = load_game(game_name)
    tree = compile_tree(game)
    l0 = make_learner(name, game, 0, config, seed=2 * seed)
    l1 = make_learner(name, game, 1, config, seed=2 * seed + 1)
    batch = l0.config.trajectories_per_step

    def advance(rounds: int) -> None:
        for _ in range(rounds):
            l0.step(l1.current_policy())
            l1.step(l0.current_policy())

    def evaluate() -> float:
        joint = TabularPolicy.joint(game, [l0.average_policy(), l1.average_policy()])
        return nash_conv(tree, joint.probs)[0]

    return Runner(advance, evaluate, lambda rounds: rounds * batch)


def openspiel_cpp_runner(game_name: str, kind: str, seed: int) -> Runner:
    import pyspiel

    from nashzoo.eval.openspiel import from_openspiel

    game = pyspiel.load_game(game_name)
    tree = compile_tree(load_game(game_name))
    # Both run one episode (OS) / traversal (ES) per player per iteration; for OS in
    # open_spiel 2.0.2 this was checked by serialising the solver after one iteration.
    if kind == "os":
        solver = pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, seed)
    else:
        solver = pyspiel.ExternalSamplingMCCFRSolver(game, seed, pyspiel.MCCFRAverageType.SIMPLE)

    def advance(iterations: int) -> None:
        for _ in range(iterations):
            solver.run_iteration()

    def evaluate() -> float:
        policy = from_openspiel(game_name, solver.average_policy())
        return nash_conv(tree, policy.probs)[0]

    return Runner(advance, evaluate, lambda iterations: float(iterations))


def openspiel_python_runner(game_name: str, kind: str, seed: int) -> Runner:
    import pyspiel
    from open_spiel.python.algorithms import (
        exploitability,
        external_sampling_mccfr,
        outcome_sampling_mccfr,
    )

    game = pyspiel.load_game(game_name)
    if kind == "os":
        solver = outcome_sampling_mccfr.OutcomeSamplingSolver(game)
    else:
        solver = external_sampling_mccfr.ExternalSamplingSolver(
            game, external_sampling_mccfr.AverageType.SIMPLE
        )
    state = np.random.RandomState(seed)  # OpenSpiel's Python solvers use numpy's global RNG

    def advance(iterations: int) -> None:
        saved = np.random.get_state()
        np.random.set_state(state.get_state())
        for _ in range(iterations):
            solver.iteration()
        state.set_state(np.random.get_state())
        np.random.set_state(saved)

    return Runner(
        advance,
        lambda: exploitability.nash_conv(game, solver.average_policy()),
        lambda iterations: float(iterations),  # one episode / traversal per player
    )


def time_to_target(
    runner: Runner,
    target: float,
    cap: float,
    growth: float = 1.1,
    timer: Callable[[], float] = time.perf_counter,
) -> dict:
    """Train until NashConv <= target at a log-spaced evaluation point (eval off the clock).
    ``timer`` is the clock: wall time by default, ``time.process_time`` for CPU time."""
    done, nxt, clock = 0, 1, 0.0
    while True:
        start = timer()
        runner.advance(nxt - done)
        clock += timer() - start
        done = nxt
        value = runner.nash_conv()
        if value <= target:
            return {"seconds": clock, "samples": runner.samples(done), "nash_conv": value}
        if clock > cap:
            return {"seconds": math.inf, "samples": math.inf, "nash_conv": value}
        nxt = max(done + 1, math.ceil(done * growth))


def solvers(game: str, python_peers: bool) -> dict[str, tuple[str, Callable[[int], Runner]]]:
    """Solver name -> (family, seed -> Runner) for one game."""
    table: dict[str, tuple[str, Callable[[int], Runner]]] = {}
    for kind, name in (("os", "os_mccfr"), ("es", "es_mccfr")):
        sampled = "stochastic" if kind == "os" else "simple"
        table[f"nashzoo {name}"] = (kind, lambda s, n=name: nashzoo_runner(game, n, {}, s))
        table[f"nashzoo {name} ({sampled} avg)"] = (
            kind,
            lambda s, n=name, a=sampled: nashzoo_runner(game, n, {"averaging": a}, s),
        )
        table[f"nashzoo {name} (uniform weights)"] = (
            kind,
            lambda s, n=name: nashzoo_runner(game, n, {"weighting": "uniform"}, s),
        )
        table[CPP[kind]] = (kind, lambda s, k=kind: openspiel_cpp_runner(game, k, s))
        if python_peers:
            table[f"OpenSpiel Python {kind.upper()}"] = (
                kind,
                lambda s, k=kind: openspiel_python_runner(game, k, s),
            )
    return table


def _fmt(value: float, unit: str = "") -> str:
    if math.isinf(value):
        return "n/a"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    return f"{value:,.0f}"


def _ratio(peer: list[dict] | None, seconds: float, cap: float) -> str:
    """OpenSpiel C++ median time / ``seconds``; a lower bound when the C++ median run was
    still above the target at the cap (its time is then at least the cap)."""
    if peer is None or math.isinf(seconds):
        return "n/a"
    theirs = statistics.median(r["seconds"] for r in peer)
    if math.isinf(theirs):
        return f"> {cap / seconds:,.0f}x (C++ above the target at the {cap:g} s cap)"
    return f"{theirs / seconds:.2f}x"


def run_game(
    game: str,
    target: float,
    seeds: int,
    cap: float,
    only: str | None,
    *,
    exact_names: bool = False,
    timer: Callable[[], float] = time.perf_counter,
) -> str:
    """Run every solver on ``game`` (those whose name contains one of the comma-separated
    ``only``, or with ``exact_names`` is one of them) and return the markdown table."""
    table = solvers(game, python_peers=game == "kuhn_poker")
    wanted = only.split(",") if only else []
    names = [
        n for n in table if not wanted or any(n == w if exact_names else w in n for w in wanted)
    ]
    results: dict[str, list[dict]] = {n: [] for n in names}
    warm_up()
    for seed in range(seeds):
        for name in names:
            r = time_to_target(table[name][1](seed), target, cap, timer=timer)
            results[name].append(r)
            print(
                f"# {game} seed {seed} {name:30s} {_fmt(r['seconds'], 's'):>10s} "
                f"samples/seat {_fmt(r['samples'])} NashConv {r['nash_conv']:.4f}",
                file=sys.stderr,
            )

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    lines = [
        f"| solver ({game}) | median time to NashConv {target} | range over seeds | "
        "median samples per seat | C++ time / this |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in names:
        kind = table[name][0]
        seconds = median(name, "seconds")
        times = [r["seconds"] for r in results[name]]
        slowest = f"> {cap:g} s" if math.isinf(max(times)) else _fmt(max(times), "s")
        spread = f"{_fmt(min(times), 's')} - {slowest}"
        censored = [r["nash_conv"] for r in results[name] if math.isinf(r["seconds"])]
        if censored:
            spread += (
                f" ({len(censored)} of {seeds} runs still above the target; NashConv at the "
                f"cap {statistics.median(censored):.3g})"
            )
        ratio = _ratio(results.get(CPP[kind]), seconds, cap)
        lines.append(
            f"| {name} | {_fmt(seconds, 's')} | {spread} | {_fmt(median(name, 'samples'))} "
            f"| {ratio} |"
        )
    return "\n".join(lines)


def sweep(game: str, target: float, learner: str, configs: list[str], seeds: int, cap: float):
    """A markdown table: CPU time and steps per seat to ``target`` for each config (how the
    defaults were chosen; BENCHMARKS.md, "MCCFR defaults")."""
    warm_up()
    lines = [
        f"| {learner} config ({game}) | median CPU time to NashConv {target} | range "
        "| median steps per seat |",
        "|---|---:|---:|---:|",
    ]
    for text in configs:
        config = json.loads(text)
        batch = make_learner(learner, "kuhn_poker", 0, config).config.trajectories_per_step
        found = [
            time_to_target(
                nashzoo_runner(game, learner, config, seed), target, cap, timer=time.process_time
            )
            for seed in range(seeds)
        ]
        times = [r["seconds"] for r in found]
        steps = statistics.median(r["samples"] for r in found) / batch
        lines.append(
            f"| `{text}` | {_fmt(statistics.median(times), 's')} "
            f"| {_fmt(min(times), 's')} - {_fmt(max(times), 's')} | {_fmt(steps)} |"
        )
        print(lines[-1], file=sys.stderr)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds instead of 7")
    parser.add_argument("--seeds", type=int, help="number of seeds (median reported)")
    parser.add_argument("--target", type=float, default=0.02, help="Kuhn NashConv to reach")
    parser.add_argument("--leduc", action="store_true", help="also Leduc hold'em")
    parser.add_argument("--leduc-target", type=float, default=0.5, help="Leduc NashConv")
    parser.add_argument("--cap", type=float, default=30.0, help="training seconds per run")
    parser.add_argument("--only", help="comma-separated substrings of solver names to run")
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    parser.add_argument(
        "--sweep",
        metavar="GAME:TARGET:LEARNER",
        help="instead: time LEARNER (os_mccfr or es_mccfr) to NashConv TARGET on GAME under "
        "each --config (CPU time), e.g. liars_dice:0.1:os_mccfr",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="with --sweep: a JSON object of config fields (repeatable; '{}' = the defaults)",
    )
    args = parser.parse_args()
    check_args(parser, args)
    seeds = args.seeds if args.seeds is not None else (3 if args.quick else 7)
    if args.sweep:
        game, target, learner = args.sweep.split(":")
        print(sweep(game, float(target), learner, args.config or ["{}"], seeds, args.cap))
        return
    require_openspiel()

    load_before = os.getloadavg()[0]
    tables = [run_game("kuhn_poker", args.target, seeds, args.cap, args.only)]
    if args.leduc:
        tables.append(run_game("leduc_poker", args.leduc_target, seeds, args.cap, args.only))
    load_after = os.getloadavg()[0]
    for table in tables:
        print(table + "\n")

    if args.markdown:
        body = markdown_section(tables, seeds, (load_before, load_after))
        write_section(args.markdown, SECTION, body)
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, in one line naming the fix, options that would otherwise end in a traceback
    after the imports, or in an empty table: ``--seeds 0`` (it read as "the default"), an
    ``--only`` that matches no solver, a ``--sweep`` not of the form GAME:TARGET:LEARNER, a
    ``--config`` that is not a JSON object."""
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    if args.cap <= 0:
        parser.error(f"--cap must be positive (training seconds per run), got {args.cap:g}")
    if args.only:
        names = list(solvers("kuhn_poker", python_peers=True))
        unmatched = [w for w in args.only.split(",") if not any(w in n for n in names)]
        if unmatched:
            parser.error(
                f"--only {','.join(unmatched)} matches no solver; the solvers are: "
                + ", ".join(names)
            )
    if args.sweep:
        fields = args.sweep.split(":")
        if len(fields) != 3 or fields[2] not in ("os_mccfr", "es_mccfr"):
            parser.error(
                f"--sweep takes GAME:TARGET:LEARNER with LEARNER os_mccfr or es_mccfr, e.g. "
                f"liars_dice:0.1:os_mccfr; got {args.sweep!r}"
            )
        try:
            float(fields[1])
        except ValueError:
            parser.error(f"--sweep's TARGET must be a number (a NashConv), got {fields[1]!r}")
    for text in args.config:
        try:
            config = json.loads(text)
        except json.JSONDecodeError as err:
            parser.error(f"--config {text!r} is not JSON ({err}); e.g. --config '{{}}'")
        if not isinstance(config, dict):
            parser.error(f"--config takes a JSON object of config fields, got {text!r}")


def markdown_section(tables: list[str], seeds: int, load: tuple[float, float]) -> str:
    """The ``## MCCFR speed`` section: protocol, tables, environment."""

    os_default, es_default = OSMCCFRConfig(), ESMCCFRConfig()
    return "\n".join(
        [
            SECTION,
            "",
            "Self-play with alternating updates. Wall time (training only; the exact NashConv "
            "of the average policy is evaluated off the clock at log-spaced points, each ~10% "
            "more work than the last) until NashConv is at most the target; median over "
            f"{seeds} seeds. Samples per seat: sampled trajectories (OS) or traversals (ES). "
            "nashzoo runs its default configs (`os_mccfr`: "
            f"{os_default.trajectories_per_step:,} trajectories per step, epsilon "
            f"{os_default.exploration}, {os_default.averaging} averaging, "
            f"{os_default.weighting} weighting; `es_mccfr`: "
            f"{es_default.trajectories_per_step:,} traversals per step, "
            f"{es_default.averaging} averaging, {es_default.weighting} weighting), the "
            "paper's sampled averaging (`stochastic` for OS, `simple` for ES) and "
            '`weighting="uniform"` (the 2009 paper\'s equal weights per '
            "step; linear = Linear CFR weights, Brown & Sandholm 2019). OpenSpiel runs "
            "`OutcomeSamplingMCCFRSolver(game, 0.6, seed)`, "
            "`ExternalSamplingMCCFRSolver(game, seed, SIMPLE)` and, on Kuhn, the Python "
            "solvers; their average policies are evaluated by nashzoo's exact NashConv after "
            "`from_openspiel` (never-visited information sets uniform; `pyspiel.nash_conv` "
            "refuses such a policy). Last column: OpenSpiel C++ median time / this solver's "
            "median time from the same run (above 1 = faster than OpenSpiel's C++).",
            "",
            *[t + "\n" for t in tables],
            f"- Measured {provenance(*load, ('numpy', 'numba', 'open_spiel'))}.",
            "",
        ]
    )


if __name__ == "__main__":
    main()
