"""CFR speed: full-width CFR and CFR+ in nashzoo against OpenSpiel's C++ solvers and LiteEFG.

Two measurements, every implementation in the same run:

1. Iterations per second of full-width, self-play CFR and CFR+ on Kuhn and Leduc poker:
   nashzoo's ``Trainer`` (``cfr`` / ``cfr_plus`` on both seats, alternating updates, no
   evaluation), OpenSpiel's C++ ``pyspiel.CFRSolver`` / ``pyspiel.CFRPlusSolver``
   (``evaluate_and_update_policy()``), and LiteEFG's ``baselines.CFR`` / ``baselines.CFRplus``
   graphs on its ``OpenSpielEnv`` (``update_graph`` + ``update_strategy``; one thread, its
   fastest on this machine, as in ``bench_scale.py``), when LiteEFG is installed
   (``pip install LiteEFG``; otherwise its column reads "n/a"). Measured round-robin: each
   round runs every contender for about the same wall time, so load from other jobs hits all
   alike; the table gives the median over rounds.
2. Wall time to reach NashConv <= 1e-3 on Leduc with CFR+ (nashzoo also DCFR), checking the
   average policy's exact NashConv every ``--check-every`` iterations with each library's own
   exact evaluator, whose time is kept OFF the clock for every implementation (nashzoo's
   Trainer excludes its evaluations by design; OpenSpiel's ``pyspiel.nash_conv`` and LiteEFG's
   ``exploitability`` calls are made with the clock stopped).

Run: ``.venv/bin/python benchmarks/bench_cfr.py [--quick] [--markdown BENCHMARKS.md]``
(``--markdown`` replaces only this benchmark's generated part of the ``## CFR speed``
section).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import provenance, require_openspiel, write_section

from nashzoo.games import _numba
from nashzoo.train import StopOnExploitability, Trainer

try:
    import pyspiel
except ImportError:  # main() refuses with the fix (require_openspiel); --help still works
    pyspiel = None

GAMES = ("kuhn_poker", "leduc_poker")
ALGORITHMS = ("cfr", "cfr_plus")
TARGET = 1e-3


# --- contenders: each is a callable running n iterations --------------------------------------
def nashzoo_runner(game: str, algorithm: str) -> Callable[[int], None]:
    trainer = Trainer(
        game, algorithm, algorithm, final_eval=False, evaluate_seats=False, progress=False
    )
    return lambda n: trainer.run(iterations=n)


def openspiel_runner(game: str, algorithm: str) -> Callable[[int], None]:
    solver_cls = pyspiel.CFRSolver if algorithm == "cfr" else pyspiel.CFRPlusSolver
    solver = solver_cls(pyspiel.load_game(game))

    def run(n: int) -> None:
        for _ in range(n):
            solver.evaluate_and_update_policy()

    return run


def liteefg_available() -> bool:
    try:
        import LiteEFG  # noqa: F401
    except ImportError:
        return False
    return True


def _liteefg_setup(game: str, algorithm: str):
    import LiteEFG as leg

    if algorithm == "cfr":
        from LiteEFG.baselines.CFR import graph
    else:
        from LiteEFG.baselines.CFRplus import graph
    leg.set_threads(1)  # its fastest here (Leduc: 1.6 ms an iteration, 2.9 with its default)
    with contextlib.redirect_stdout(io.StringIO()):  # its graphs print banners
        g = graph()
        env = leg.OpenSpielEnv(pyspiel.load_game(game), traverse_type="Enumerate", regenerate=False)
        env.set_graph(g)
    return g, env


def liteefg_runner(game: str, algorithm: str) -> Callable[[int], None]:
    return liteefg_loop(*_liteefg_setup(game, algorithm))


def liteefg_loop(g, env) -> Callable[[int], None]:
    """``run(n)``: n iterations of a LiteEFG graph on its environment."""

    def run(n: int) -> None:
        for _ in range(n):
            g.update_graph(env)
            env.update_strategy(g.current_strategy(), update_best=False)

    return run


def iterations_per_second(
    contenders: dict[str, Callable[[int], None]],
    rounds: int,
    budget: float,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Round-robin: each round runs every contender for about ``budget`` seconds of ``clock``
    (at least one call). Two warm-up calls first; the batch is sized on the second, so
    one-time costs (caches, compiled kernels) do not shrink it."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    batch = dict.fromkeys(contenders, 1)
    for name, run in contenders.items():  # warm-up and batch sizing
        run(1)
        start = clock()
        run(1)
        once = max(clock() - start, 1e-6)
        batch[name] = max(1, int(budget / once / 10))
    for _ in range(rounds):
        for name, run in contenders.items():
            done, start = 0, clock()
            while True:
                run(batch[name])
                done += batch[name]
                if clock() - start >= budget:
                    break
            rates[name].append(done / (clock() - start))
    return rates


# --- time to NashConv <= target ------------------------------------------------------------------
def nashzoo_time_to_target(game: str, algorithm: str, check_every: int, limit: int) -> tuple:
    stop = StopOnExploitability(TARGET)
    trainer = Trainer(
        game,
        algorithm,
        algorithm,
        eval_every=check_every,
        evaluate_seats=False,
        final_eval=False,
        callbacks=stop,
        progress=False,
    )
    trainer.run(iterations=limit)
    if stop.reached_at is None:
        return None, trainer.train_seconds, trainer.history[-1].nash_conv
    record = stop.reached_at
    return record.iteration, record.train_seconds, record.nash_conv


def openspiel_time_to_target(game: str, check_every: int, limit: int) -> tuple:
    ogame = pyspiel.load_game(game)
    solver = pyspiel.CFRPlusSolver(ogame)
    clock, conv = 0.0, float("inf")
    for iteration in range(check_every, limit + 1, check_every):
        start = time.perf_counter()
        for _ in range(check_every):
            solver.evaluate_and_update_policy()
        clock += time.perf_counter() - start
        conv = pyspiel.nash_conv(ogame, solver.average_policy())  # off the clock
        if conv <= TARGET:
            return iteration, clock, conv
    return None, clock, conv


def liteefg_time_to_target(game: str, check_every: int, limit: int) -> tuple:
    g, env = _liteefg_setup(game, "cfr_plus")
    clock, conv = 0.0, float("inf")
    for iteration in range(check_every, limit + 1, check_every):
        start = time.perf_counter()
        for _ in range(check_every):
            g.update_graph(env)
            env.update_strategy(g.current_strategy(), update_best=False)
        clock += time.perf_counter() - start
        # NashConv of the linearly averaged strategy (sum over players), off the clock.
        conv = float(sum(env.exploitability(g.current_strategy(), "linear-avg-iterate")))
        if conv <= TARGET:
            return iteration, clock, conv
    return None, clock, conv


# --- report ----------------------------------------------------------------------------------
def _fmt_rate(values: list[float] | None) -> str:
    return "n/a" if not values else f"{statistics.median(values):,.0f}"


def _ratio(a: list[float] | None, b: list[float] | None) -> str:
    if not a or not b:
        return "n/a"
    return f"{statistics.median(a) / statistics.median(b):.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=None, help="round-robin rounds")
    parser.add_argument("--check-every", type=int, default=10, help="iterations between checks")
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    args = parser.parse_args()
    require_openspiel()
    rounds = args.rounds or (2 if args.quick else 5)
    budget = 0.3 if args.quick else 1.0
    lite = liteefg_available()
    if not lite:  # said up front, as bench_scale.py does, not only in the markdown notes
        print(
            "# LiteEFG is not installed here (pip install LiteEFG): its columns will read n/a",
            file=sys.stderr,
        )
    load_before = os.getloadavg()

    speed_rows = []
    for game in GAMES:
        for algorithm in ALGORITHMS:
            contenders = {
                "nashzoo": nashzoo_runner(game, algorithm),
                "openspiel": openspiel_runner(game, algorithm),
            }
            if lite:
                contenders["liteefg"] = liteefg_runner(game, algorithm)
            rates = iterations_per_second(contenders, rounds, budget)
            speed_rows.append((game, algorithm, rates))
            print(
                f"# {game} {algorithm}: "
                + ", ".join(f"{k} {_fmt_rate(v)} it/s" for k, v in rates.items()),
                file=sys.stderr,
            )

    limit = 3000
    target_rows = []
    leduc, every = GAMES[1], args.check_every
    chasers: list[tuple[str, Callable[[], tuple]]] = [
        ("nashzoo cfr_plus", partial(nashzoo_time_to_target, leduc, "cfr_plus", every, limit)),
        ("nashzoo dcfr", partial(nashzoo_time_to_target, leduc, "dcfr", every, limit)),
        ("OpenSpiel C++ CFRPlusSolver", partial(openspiel_time_to_target, leduc, every, limit)),
    ]
    if lite:
        chasers.append(("LiteEFG CFRplus", partial(liteefg_time_to_target, leduc, every, limit)))
    for name, run in chasers:
        iterations, seconds, conv = run()
        target_rows.append((name, iterations, seconds, conv))
        print(
            f"# time to NashConv {TARGET:g}: {name}: {iterations} it, {seconds:.3f}s",
            file=sys.stderr,
        )
    load_after = os.getloadavg()

    lines = [
        "| game | algorithm | nashzoo it/s | OpenSpiel C++ it/s | LiteEFG it/s "
        "| nashzoo / OpenSpiel | nashzoo / LiteEFG |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for game, algorithm, rates in speed_rows:
        lines.append(
            f"| {game} | {algorithm} | {_fmt_rate(rates['nashzoo'])} "
            f"| {_fmt_rate(rates['openspiel'])} | {_fmt_rate(rates.get('liteefg'))} "
            f"| {_ratio(rates['nashzoo'], rates['openspiel'])} "
            f"| {_ratio(rates['nashzoo'], rates.get('liteefg'))} |"
        )
    reference = next(s for n, _, s, _ in target_rows if n == "nashzoo cfr_plus")
    lines += [
        "",
        f"Time to NashConv <= {TARGET:g} on leduc_poker (checks every {args.check_every} "
        "iterations, evaluation off the clock):",
        "",
        "| implementation | iterations | training seconds | NashConv at the stop "
        "| time / nashzoo cfr_plus |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, iterations, seconds, conv in target_rows:
        reached = f"{iterations:,}" if iterations is not None else f"not within {limit:,}"
        lines.append(
            f"| {name} | {reached} | {seconds:.3f} | {conv:.6f} | {seconds / reference:.1f}x |"
        )
    table = "\n".join(lines)
    print(table)

    notes = [
        "",
        "- Measured "
        + provenance(load_before[0], load_after[0], ("numpy", "numba", "open_spiel", "LiteEFG"))
        + ". On a shared machine absolute numbers are noisy, the same-run ratios less so.",
        f"- Iterations per second: median of {rounds} round-robin rounds of about {budget:g} s per "
        "contender; one iteration updates both seats (alternating updates in all three). "
        "nashzoo's figure is the whole `Trainer.run` loop (policies handed over as TabularPolicy "
        "objects), not just the kernel.",
        "- LiteEFG's exploitability is summed over players (NashConv) of its linearly averaged "
        "strategy; OpenSpiel's is `pyspiel.nash_conv` of `average_policy()`; nashzoo's is "
        "`nashzoo.eval.evaluate`. All three are exact full-tree computations.",
        "- Kuhn's tree is tiny (58 nodes): an iteration there costs a few microseconds, mostly "
        "the fixed cost of calls, which the optional numba kernels (the `fast` extra) cut to one "
        "compiled call per seat; in this run they were "
        + ("in use." if _numba.ENABLED else "not in use (numpy alone).")
        + " From Leduc (9,457 nodes) on, the arithmetic of the sequence-form pass is what counts.",
        "- LiteEFG is not a nashzoo dependency; install it to measure it (`pip install LiteEFG`).",
    ]
    if not lite:
        notes.append("- LiteEFG is not installed here (`pip install LiteEFG`): its column is n/a.")
    if args.markdown:
        write_section(args.markdown, SECTION, "\n".join([*INTRO, "", table, *notes]))
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


SECTION = "## CFR speed"
INTRO = [
    "Full-width self-play CFR and CFR+ (alternating updates): nashzoo's Trainer against "
    "OpenSpiel's C++ `pyspiel.CFRSolver` / `pyspiel.CFRPlusSolver` and LiteEFG's C++ graphs, in "
    "the same run (`benchmarks/bench_cfr.py`). Higher iterations per second is better; the "
    "ratios are nashzoo / peer.",
]


if __name__ == "__main__":
    main()
