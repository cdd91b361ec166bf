"""Cost growth from Kuhn to ten million histories: nashzoo against OpenSpiel's C++ solvers and
LiteEFG, every number of a rung measured in the same run.

The ladder (two-player zero-sum; histories as OpenSpiel counts them):

1. ``kuhn_poker`` (58), 2. ``leduc_poker`` (9,457), 3. ``liars_dice`` (one die each, six sides:
294,883), 4. Leduc with 13 ranks through the OpenSpiel bridge (1,179,777), 5. the largest game
named by ``--rung5`` (default: liars_dice with nine sides, about 4.2e7 histories).

Per rung:

* nashzoo's compile: seconds (CPU) to build the tree with ``compile_tree``, the bytes the tree
  and one CFR+ learner's tables hold per history, and the peak resident memory of a fresh
  process while it compiles the tree and sets one learner up (Linux ``VmHWM``), per history;
* milliseconds (CPU) per CFR+ iteration (both seats, alternating updates): nashzoo's Trainer
  (``cfr_plus`` and ``dcfr``), OpenSpiel's C++ ``pyspiel.CFRPlusSolver``
  (``evaluate_and_update_policy()``) and LiteEFG's ``baselines.CFRplus`` graph (one thread);
  round-robin, median over rounds;
* milliseconds (CPU) for the exact NashConv of one given policy: nashzoo's
  ``nash_conv(game, policy)`` (the public API) on the loaded game and a ``TabularPolicy`` (the
  CFR+ average), LiteEFG's ``exploitability`` of its graph's strategy on its loaded
  environment, and ``pyspiel.nash_conv`` of a solver's average policy on the loaded game.
  Same work on every side: the evaluation. None loads the game in the timed call, and none
  checks the policy there (a ``TabularPolicy`` is immutable and checked once, when it is built
  or first evaluated; LiteEFG's strategy lives in its graph);
* correctness: nashzoo's NashConv of its CFR+ policy against ``pyspiel.nash_conv`` of the same
  policy converted to OpenSpiel (``nashzoo.eval.openspiel.to_pyspiel``).

A rung whose game nashzoo cannot load here (a game or bridge not installed) keeps its peers'
columns and says n/a for nashzoo; a peer that does not run on a rung says n/a too.

Times are CPU seconds of this process (``time.process_time``), not wall time: the benchmark
machine is shared (2 cores, several jobs), and every contender is single-threaded, so CPU time
is what each one costs. Ratios come from the same run.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--max-rung N] [--markdown BENCHMARKS.md]
[--plot docs/scale.png]``. With ``--markdown`` each kind of run rewrites only its own generated
part of the ``## Cost growth`` section (the ladder; ``--compile-only`` with or without
``--bridge``; the time-to-target tables of ``--targets``/``--targets-only``;
``--liteefg-footprint``), each stamped with when, where, at which commit and by which command
it was measured; the readings written by hand around those parts are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import bench_cfr
import bench_mccfr
import numpy as np
from _common import provenance, require_openspiel, write_section

from nashzoo.eval import nash_conv
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.train import Trainer

try:
    import pyspiel
except ImportError:  # main() refuses with the fix (require_openspiel) but for --compile-only
    pyspiel = None

SECTION = "## Cost growth"
UNIVERSAL_13 = (
    "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,raiseSize=2 4,"
    "firstPlayer=1 1,maxRaises=2 2,numSuits=2,numRanks=13,numHoleCards=1,numBoardCards=0 1)"
)


@dataclass(frozen=True)
class Rung:
    number: int
    nashzoo: str  # load_game spec
    openspiel: str  # pyspiel.load_game spec
    histories: int  # as OpenSpiel counts them (the issue's table); nashzoo's count is checked


RUNGS = [
    Rung(1, "kuhn_poker", "kuhn_poker", 58),
    Rung(2, "leduc_poker", "leduc_poker", 9_457),
    Rung(3, "liars_dice", "liars_dice", 294_883),
    Rung(4, f"openspiel:{UNIVERSAL_13}", UNIVERSAL_13, 1_179_777),
]


@dataclass
class Row:
    rung: Rung
    compile: dict = field(default_factory=dict)  # nashzoo compile measurements (or empty)
    ms_per_iteration: dict[str, float | None] = field(default_factory=dict)
    nash_conv_ms: dict[str, float | None] = field(default_factory=dict)
    check: str = "n/a"


# --- nashzoo compile and memory, in a fresh process --------------------------------------------
def measure_compile(spec: str) -> dict:
    """Compile ``spec`` and set up one CFR+ learner in THIS process; return the numbers.

    Peak memory is that of the first compile (the cached tree the learner then uses). The time
    is the median over compiles repeated uncached until one CPU second is spent (at most 1,000;
    the first, cold one included): a small game's single cold compile measures the
    interpreter's first calls more than the game, and a median of a few dozen sub-millisecond
    compiles moved by half between runs on this shared machine."""
    from nashzoo.agents import make_learner
    from nashzoo.games.tree import _compile

    _warm_up()
    game = load_game(spec)
    base = _reset_peak_rss()
    start = time.process_time()
    tree = compile_tree(game)
    times = [time.process_time() - start]
    sf = tm.sequence_form(tree)
    learner = make_learner("cfr_plus", game, 0)
    peak = _status_kib("VmHWM") * 1024 - base
    while sum(times) < 1.0 and len(times) < 1000:
        start = time.process_time()
        _compile(game)
        times.append(time.process_time() - start)
    tree_buffers = _buffers(tree)
    sf_bytes = sum(_buffers(sf, exclude=tree_buffers).values())
    learner_bytes = sum(_buffers(learner, exclude=tree_buffers | _buffers(sf)).values())
    return {
        "histories": tree.num_nodes,
        "infosets": tree.num_infosets,
        "compile_s": statistics.median(times),
        "compile_runs": len(times),
        "tree_bytes": sum(tree_buffers.values()) + sf_bytes,
        "learner_bytes": learner_bytes,
        "peak_bytes": peak,
    }


def _warm_up() -> None:
    """The imports and one-time loading (or compilation) of the numba kernels, on a game that is
    not a rung: a CFR+ learner's, and the layout's of a walk over States (which the native
    builders skip). Then every cache is emptied: the learner's warm-up runs its kernels on
    Kuhn's tree, which would otherwise be measured already compiled."""
    from nashzoo.agents import make_learner
    from nashzoo.games import clear_caches, fast_walk

    game = load_game("rps")
    fast_walk.walk(game, game.new_initial_state(), fast_walk.state_ops(game))
    make_learner("cfr_plus", game, 0)
    clear_caches()


def _status_kib(name: str) -> int:
    """A ``/proc/self/status`` memory figure in KiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {name} in /proc/self/status")


def _reset_peak_rss() -> int:
    """Reset the resident-memory high-water mark (Linux ``clear_refs``); return the resident
    bytes now, the baseline the peak is measured from."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS") * 1024


def _buffers(value: object, exclude: dict[int, int] | None = None) -> dict[int, int]:
    """The numpy buffers ``value`` holds (through arrays, tuples, lists, dicts and the
    attributes of nashzoo's own objects, cached parts included), as ``{id of the array that
    owns the memory: its bytes}``: a view counts once, with what it views. ``exclude``: buffers
    counted elsewhere."""
    found: dict[int, int] = {}
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            owner = item
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            if exclude is None or id(owner) not in exclude:
                found[id(owner)] = owner.nbytes
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif type(item).__module__.startswith("nashzoo"):
            stack.extend(getattr(item, "__dict__", {}).values())
            stack.extend(getattr(item, name) for name in getattr(item, "__slots__", ()))
    return found


def measure_traced(spec: str) -> dict:
    """The peak of the bytes allocated while ``spec`` compiles and one CFR+ learner is set up
    (``tracemalloc``, which numpy reports its buffers to), in THIS process: every nashzoo
    module imported and the numba kernels compiled beforehand, so only the build's own
    allocations count, temporaries included. Exact at any size, unlike the resident-memory
    mark, which moves in pages and, in a fresh process, also holds the allocator's one-time
    growth (on Kuhn, the first compile raises it by about 0.5 MB and a second compile of the
    same game by 4 KB)."""
    import importlib
    import pkgutil
    import tracemalloc

    import nashzoo
    from nashzoo.agents import make_learner

    for module in pkgutil.walk_packages(nashzoo.__path__, "nashzoo."):
        if module.name.endswith("__main__"):  # importing it runs the command line
            continue
        with contextlib.suppress(ImportError):  # modules of extras not installed here
            importlib.import_module(module.name)
    _warm_up()
    game = load_game(spec)
    tracemalloc.start()
    tree = compile_tree(game)
    compile_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    learner = make_learner("cfr_plus", game, 0)
    held, setup_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del learner
    return {
        "histories": tree.num_nodes,
        "traced_peak_bytes": max(compile_peak, setup_peak),
        "traced_compile_peak_bytes": compile_peak,
        "traced_held_bytes": held,
    }


def compile_in_subprocess(spec: str, timeout: float) -> dict:
    """:func:`measure_compile` in a fresh interpreter (so peak memory is this game's alone),
    then :func:`measure_traced` in another."""
    out: dict = {}
    for flag in ("--measure-compile", "--measure-traced"):
        try:
            done = subprocess.run(
                [sys.executable, __file__, flag, spec],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"compile took over {timeout:g} s"}
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
        out.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


# --- contenders: each is a callable running n CFR+ iterations ------------------------------
def nashzoo_runner(spec: str, algorithm: str) -> Callable[[int], None]:
    """``n`` Trainer iterations, as the Trainer times them (``Trainer.step``: both seats'
    updates, policies handed over as TabularPolicy). Not ``Trainer.run``, whose result (the
    joint average policy, built and checked once per call) would be counted once per
    iteration on the largest rung, where a call is one iteration."""
    trainer = Trainer(
        spec, algorithm, algorithm, final_eval=False, evaluate_seats=False, progress=False
    )

    def run(n: int) -> None:
        for _ in range(n):
            trainer.step()

    return run


def openspiel_runner(spec: str) -> Callable[[int], None]:
    solver = pyspiel.CFRPlusSolver(pyspiel.load_game(spec))

    def run(n: int) -> None:
        for _ in range(n):
            solver.evaluate_and_update_policy()

    return run


def liteefg_setup(spec: str):
    """LiteEFG's CFR+ graph on its OpenSpiel environment (one thread), or None."""
    try:
        import LiteEFG as leg
        from LiteEFG.baselines.CFRplus import graph
    except ImportError:
        return None
    leg.set_threads(1)
    with contextlib.redirect_stdout(io.StringIO()):  # its graphs print banners
        g = graph()
        env = leg.OpenSpielEnv(pyspiel.load_game(spec), traverse_type="Enumerate", regenerate=False)
        env.set_graph(g)
    return g, env


def measure_liteefg(spec: str) -> dict:
    """LiteEFG's CFR+ graph loaded on ``spec`` in THIS (fresh) process: CPU seconds of the
    load and the growth of the resident-memory high-water mark."""
    base = _reset_peak_rss()
    start = time.process_time()
    loaded = liteefg_setup(spec)
    seconds = time.process_time() - start
    if loaded is None:
        raise RuntimeError("LiteEFG is not installed (pip install LiteEFG)")
    return {"load_s": seconds, "peak_bytes": _status_kib("VmHWM") * 1024 - base}


def liteefg_footprint_table(rungs: list[Rung], timeout: float) -> str:
    """LiteEFG's load cost per history on the rungs it runs, each in a fresh process, and
    what the largest rate makes of rung 5's histories (LiteEFG converts a game by walking
    OpenSpiel's states in Python and keeps the whole tree as C++ objects)."""
    lines = [
        "| rung | histories | LiteEFG load s (CPU) | us/history | peak bytes/history |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    rates = []
    for rung in rungs:
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--measure-liteefg", rung.openspiel],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as error:
            lines.append(f"| {rung.number} | {rung.histories:,} | failed: {error} | | |")
            continue
        c = json.loads(done.stdout.strip().splitlines()[-1])
        n = rung.histories
        rates.append((c["load_s"] / n, c["peak_bytes"] / n))
        lines.append(
            f"| {rung.number} | {n:,} | {c['load_s']:.3g} | {1e6 * c['load_s'] / n:.1f} "
            f"| {c['peak_bytes'] / n:,.0f} |"
        )
    if rates:
        seconds, peak = (max(r[k] for r in rates[-2:]) for k in (0, 1))  # the largest rungs
        n5 = 42_467_257
        lines += [
            "",
            f"At the two largest rungs' memory rate ({peak:,.0f} bytes/history) rung 5's "
            f"{n5:,} histories need about {peak * n5 / 2**30:.0f} GiB to load (this machine: "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB), "
            f"and at their slower load rate about {seconds * n5 / 60:.0f} CPU minutes.",
        ]
    return "\n".join(lines)


def cpu_ms_per_call(
    contenders: dict[str, Callable[[int], None]], rounds: int, budget: float
) -> dict[str, float]:
    """bench_cfr's round-robin on CPU time: median CPU milliseconds per call."""
    rates = bench_cfr.iterations_per_second(contenders, rounds, budget, time.process_time)
    return {name: 1e3 / statistics.median(r) for name, r in rates.items()}


# --- one rung ------------------------------------------------------------------------------
def nashzoo_loads(spec: str) -> str | None:
    """None if nashzoo can load ``spec`` here, else why not."""
    try:
        load_game(spec)
    except Exception as error:  # any reason makes the column n/a
        return f"{type(error).__name__}: {error}"
    return None


def run_rung(rung: Rung, args: argparse.Namespace) -> Row:
    row = Row(rung)
    why = nashzoo_loads(rung.nashzoo)
    state = "loads" if why is None else why
    print(f"# rung {rung.number} {rung.nashzoo}: nashzoo {state}", file=sys.stderr)
    if why is None:
        row.compile = compile_in_subprocess(rung.nashzoo, args.compile_timeout)
        print(f"#   compile {row.compile}", file=sys.stderr)
    nashzoo_ok = why is None and "error" not in row.compile
    makers: dict[str, Callable[[], Callable[[int], None]]] = {}
    if nashzoo_ok:
        makers["nashzoo cfr_plus"] = lambda: nashzoo_runner(rung.nashzoo, "cfr_plus")
        makers["nashzoo dcfr"] = lambda: nashzoo_runner(rung.nashzoo, "dcfr")
    peers = rung.number <= args.peers_max_rung
    if peers:
        makers["OpenSpiel C++"] = lambda: openspiel_runner(rung.openspiel)
    lite_ok = peers and rung.number <= args.liteefg_max_rung
    lite = liteefg_setup(rung.openspiel) if lite_ok else None
    if lite is not None:
        makers["LiteEFG"] = lambda: bench_cfr.liteefg_loop(*lite)
    if rung.number < 5:
        contenders = {name: make() for name, make in makers.items()}
        row.ms_per_iteration = cpu_ms_per_call(contenders, args.rounds, args.budget)
        row.nash_conv_ms, row.check = nash_conv_times(
            rung, nashzoo_ok, lite, args.rounds, args.budget
        )
    else:  # one contender alive at a time: the largest tree barely fits twice in memory
        # One iteration per round, the median over rounds: a single iteration here streams
        # gigabytes, and its time moves with whatever else uses the memory bus.
        for name, make in makers.items():
            row.ms_per_iteration.update(cpu_ms_per_call({name: make()}, args.rung5_rounds, 0.0))
        row.nash_conv_ms, row.check = nash_conv_times(rung, nashzoo_ok, None, 1, 0.0, peers=False)
    print(f"#   ms/iteration {row.ms_per_iteration}", file=sys.stderr)
    print(f"#   NashConv ms {row.nash_conv_ms}; {row.check}", file=sys.stderr)
    return row


def nash_conv_times(
    rung: Rung, nashzoo_ok: bool, lite, rounds: int, budget: float, *, peers: bool = True
) -> tuple[dict[str, float], str]:
    """CPU ms of one exact NashConv per library, and nashzoo's value checked against
    OpenSpiel's on the same policy (nashzoo's CFR+ average after three iterations). Without
    ``peers`` (the largest rung) only nashzoo is timed and nothing is checked."""
    timers: dict[str, Callable[[int], None]] = {}
    check = "n/a"
    ogame = pyspiel.load_game(rung.openspiel) if peers else None
    if peers:
        solver = pyspiel.CFRPlusSolver(ogame)
        solver.evaluate_and_update_policy()
        average = solver.average_policy()
        timers["OpenSpiel C++"] = lambda n: [pyspiel.nash_conv(ogame, average) for _ in range(n)]
    if nashzoo_ok:
        game = load_game(rung.nashzoo)
        policy = _nashzoo_policy(game)
        timers["nashzoo"] = lambda n: [nash_conv(game, policy) for _ in range(n)]
        if peers:
            check = _check_against_openspiel(rung, policy, ogame)
    if lite is not None:
        g, env = lite
        timers["LiteEFG"] = lambda n: [env.exploitability(g.current_strategy()) for _ in range(n)]
    return cpu_ms_per_call(timers, rounds, budget / 2), check


def time_to_target_rows(game: str, check_every: int, limit: int) -> list[tuple]:
    """Wall time to NashConv <= 1e-3 (bench_cfr's protocol: evaluation off the clock)."""
    rows = []
    for name, run in (
        (
            "nashzoo cfr_plus",
            lambda: bench_cfr.nashzoo_time_to_target(game, "cfr_plus", check_every, limit),
        ),
        (
            "nashzoo dcfr",
            lambda: bench_cfr.nashzoo_time_to_target(game, "dcfr", check_every, limit),
        ),
        (
            "OpenSpiel C++ CFRPlusSolver",
            lambda: bench_cfr.openspiel_time_to_target(game, check_every, limit),
        ),
    ):
        iterations, seconds, conv = run()
        rows.append((name, iterations, seconds, conv))
        print(f"# {game} to NashConv 1e-3: {name} {iterations} it {seconds:.2f}s", file=sys.stderr)
    return rows


def target_table(game: str, rows: list[tuple], limit: int) -> str:
    reference = next(s for n, _, s, _ in rows if n == "OpenSpiel C++ CFRPlusSolver")
    lines = [
        f"Time to NashConv <= 1e-3 on `{game}` (wall seconds of training; exact NashConv "
        "checked off the clock; {provenance}):",
        "",
        "| implementation | iterations | seconds | NashConv at the stop | OpenSpiel time / this |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, iterations, seconds, conv in rows:
        reached = f"{iterations:,}" if iterations is not None else f"not within {limit:,}"
        ratio = f"{reference / seconds:.1f}x" if iterations is not None else "n/a"
        lines.append(f"| {name} | {reached} | {seconds:.2f} | {conv:.6f} | {ratio} |")
    return "\n".join(lines)


MCCFR_SOLVERS = "nashzoo os_mccfr,OpenSpiel C++ OS,nashzoo es_mccfr,OpenSpiel C++ ES"


def targets_text(args: argparse.Namespace) -> dict[str, str]:
    """The rung-3 time-to-target tables, by part of the section: CFR+ to NashConv 1e-3 (wall
    time) and the default OS/ES-MCCFR learners against OpenSpiel's C++ MCCFR solvers to
    NashConv 0.1 (CPU time)."""
    rung3 = RUNGS[2].nashzoo
    text = {}
    if args.only_target in (None, "cfr"):
        limit = 5000
        found = time_to_target_rows(rung3, args.check_every, limit)
        text["time to 1e-3"] = target_table(rung3, found, limit)
    if args.only_target in (None, "mccfr"):
        mccfr = bench_mccfr.run_game(
            rung3,
            0.1,
            args.mccfr_seeds,
            args.mccfr_cap,
            MCCFR_SOLVERS,
            exact_names=True,
            timer=time.process_time,
        )
        text["MCCFR to 0.1"] = (
            f"OS- and ES-MCCFR on `{rung3}` to NashConv 0.1 (bench_mccfr's protocol on CPU "
            f"time: median over {args.mccfr_seeds} seeds, exact NashConv off the clock, a run "
            f"still above the target after {args.mccfr_cap:g} CPU s is censored there; "
            "{provenance}):\n\n" + mccfr
        )
    return text


def _nashzoo_policy(game):
    trainer = Trainer(game, "cfr_plus", "cfr_plus", final_eval=False, progress=False)
    trainer.run(iterations=3)
    return trainer.average_policy()


def _check_against_openspiel(rung: Rung, policy, ogame) -> str:
    try:
        from nashzoo.eval.openspiel import to_pyspiel

        theirs = pyspiel.nash_conv(ogame, to_pyspiel(rung.nashzoo, policy))
    except Exception as error:  # the conversion may not support it
        return f"not checked ({type(error).__name__})"
    ours = nash_conv(rung.nashzoo, policy)
    return f"|diff| {abs(ours - theirs):.1e} (NashConv {ours:.6f})"


# --- report --------------------------------------------------------------------------------
def _ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _ratio(peer: float | None, ours: float | None) -> str:
    return "n/a" if peer is None or ours is None else f"{peer / ours:.2f}x"


def compile_table(rungs: list[Rung], timeout: float) -> str:
    """nashzoo's compile columns alone, each rung in a fresh process."""
    lines = [
        "| rung | histories | compile s (CPU) | us/history | bytes/history (tree + learner) "
        "| peak bytes/history (resident) | peak bytes/history (traced) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rung in rungs:
        c = compile_in_subprocess(rung.nashzoo, timeout)
        if "error" in c:
            lines.append(f"| {rung.number} | {rung.histories:,} | {c['error']} | | | | |")
            continue
        n = c["histories"]
        lines.append(
            f"| {rung.number} | {n:,} | {c['compile_s']:.3g} | {1e6 * c['compile_s'] / n:.2f} "
            f"| {(c['tree_bytes'] + c['learner_bytes']) / n:.0f} | {c['peak_bytes'] / n:.0f} "
            f"| {c['traced_peak_bytes'] / n:.0f} |"
        )
    return "\n".join(lines)


def table(rows: list[Row]) -> str:
    lines = [
        "| rung | game | histories | compile s | bytes/history (tree + learner) "
        "| peak bytes/history (resident / traced) | nashzoo CFR+ ms/it | nashzoo DCFR ms/it "
        "| OpenSpiel C++ ms/it | LiteEFG ms/it | OpenSpiel / nashzoo (CFR+, DCFR) "
        "| LiteEFG / nashzoo |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        c, ms = row.compile, row.ms_per_iteration
        ok = bool(c) and "error" not in c
        n = c["histories"] if ok else row.rung.histories
        ours = ms.get("nashzoo cfr_plus")
        lines.append(
            f"| {row.rung.number} | `{row.rung.nashzoo}` | {n:,} "
            f"| {c['compile_s']:.3g} | {(c['tree_bytes'] + c['learner_bytes']) / n:.0f} "
            f"| {c['peak_bytes'] / n:.0f} / {c['traced_peak_bytes'] / n:.0f} "
            if ok
            else f"| {row.rung.number} | `{row.rung.nashzoo}` | {n:,} | n/a | n/a | n/a "
        )
        lines[-1] += (
            f"| {_ms(ours)} | {_ms(ms.get('nashzoo dcfr'))} | {_ms(ms.get('OpenSpiel C++'))} "
            f"| {_ms(ms.get('LiteEFG'))} | {_ratio(ms.get('OpenSpiel C++'), ours)}, "
            f"{_ratio(ms.get('OpenSpiel C++'), ms.get('nashzoo dcfr'))} "
            f"| {_ratio(ms.get('LiteEFG'), ours)} |"
        )
    lines += [
        "",
        "Exact NashConv of one policy (CPU ms) and nashzoo's value against OpenSpiel's on the "
        "same policy:",
        "",
        "| rung | nashzoo | LiteEFG | OpenSpiel C++ | LiteEFG / nashzoo | OpenSpiel / nashzoo "
        "| nashzoo vs pyspiel.nash_conv |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        t = row.nash_conv_ms
        lines.append(
            f"| {row.rung.number} | {_ms(t.get('nashzoo'))} | {_ms(t.get('LiteEFG'))} "
            f"| {_ms(t.get('OpenSpiel C++'))} | {_ratio(t.get('LiteEFG'), t.get('nashzoo'))} "
            f"| {_ratio(t.get('OpenSpiel C++'), t.get('nashzoo'))} | {row.check} |"
        )
    return "\n".join(lines)


def slope(rows: list[Row], name: str) -> float | None:
    """Least-squares slope of log(ms/iteration) against log(histories)."""
    points = [
        (row.rung.histories, row.ms_per_iteration[name])
        for row in rows
        if row.ms_per_iteration.get(name)
    ]
    if len(points) < 2:
        return None
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, marker in (
        ("nashzoo cfr_plus", "o"),
        ("OpenSpiel C++", "s"),
        ("LiteEFG", "^"),
    ):
        pts = [
            (r.rung.histories, r.ms_per_iteration[name])
            for r in rows
            if r.ms_per_iteration.get(name)
        ]
        if pts:
            ax.plot(
                *zip(*pts, strict=True), marker=marker, label=name.replace(" cfr_plus", " CFR+")
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("histories")
    ax.set_ylabel("CPU ms per CFR+ iteration (both seats)")
    ax.set_title("Cost growth of one CFR+ iteration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


QUICK = {"max_rung": 2, "rounds": 1, "budget": 0.3}  # --quick: rungs 1-2, one short round


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-rung", type=int, default=4, help="largest rung to run (1-5)")
    parser.add_argument("--rung5", default="liars_dice(dice_sides=9)", help="rung 5's game")
    parser.add_argument("--rung5-openspiel", default="liars_dice(dice_sides=9)")
    parser.add_argument("--rung5-histories", type=int, default=42_467_257)
    parser.add_argument("--rounds", type=int, default=3, help="round-robin rounds")
    parser.add_argument(
        "--rung5-rounds",
        type=int,
        default=5,
        help="timed iterations per contender on rung 5 (one per round, the median reported)",
    )
    parser.add_argument("--budget", type=float, default=1.0, help="CPU seconds per round")
    parser.add_argument("--compile-timeout", type=float, default=1800.0)
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    parser.add_argument("--plot", type=Path, help="save the log-log plot here (PNG)")
    parser.add_argument(
        "--liteefg-max-rung",
        type=int,
        default=4,
        help="LiteEFG loads games "
        "through a Python walk of OpenSpiel's states: skip it above this rung",
    )
    parser.add_argument(
        "--targets",
        action="store_true",
        help="also time CFR+ to NashConv 1e-3 and OS/ES-MCCFR to NashConv 0.1 on rung 3",
    )
    parser.add_argument("--targets-only", action="store_true", help="only the rung-3 targets")
    parser.add_argument(
        "--only-target",
        choices=["cfr", "mccfr"],
        help="with --targets(-only): just CFR+ to 1e-3 or just OS/ES-MCCFR to 0.1",
    )
    parser.add_argument("--only-rung", type=int, help="run just this rung of the ladder")
    parser.add_argument(
        "--peers-max-rung",
        type=int,
        default=5,
        help="run OpenSpiel and "
        "LiteEFG only up to this rung (their largest runs take many minutes)",
    )
    parser.add_argument(
        "--check-every",
        type=int,
        default=10,
        help="CFR+ iterations between NashConv checks in the time-to-target runs",
    )
    parser.add_argument("--mccfr-seeds", type=int, default=3)
    parser.add_argument("--mccfr-cap", type=float, default=120.0, help="seconds per MCCFR run")
    parser.add_argument(
        "--compile-only", action="store_true", help="only nashzoo's compile columns (no peers)"
    )
    parser.add_argument(
        "--liteefg-footprint",
        action="store_true",
        help="only LiteEFG's load time and memory per history on rungs 1-4 (does rung 5 fit?)",
    )
    parser.add_argument(
        "--bridge",
        action="store_true",
        help="load every rung through the OpenSpiel bridge (`openspiel:<game>`), native games "
        "included: the bridge's own compile cost on each rung",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run: the options left at their defaults become {QUICK}",
    )
    parser.add_argument("--measure-compile", help=argparse.SUPPRESS)
    parser.add_argument("--measure-traced", help=argparse.SUPPRESS)
    parser.add_argument("--measure-liteefg", help=argparse.SUPPRESS)
    return parser


def _markdown_notes(args: argparse.Namespace, slope_line: str, lite_missing: bool) -> list[str]:
    """The lines under the ladder's tables in BENCHMARKS.md: how each column was measured."""
    notes = [
        "",
        f"Log-log slope of CPU ms per iteration against histories: {slope_line}.",
        "",
        "- Times are CPU seconds of the benchmark process (each contender single-threaded; "
        "LiteEFG set to one thread), so a neighbour on the machine slows a contender's clock "
        "less than its wall time; the ratios come from the same run.",
        f"- Per-iteration figures: median of {args.rounds} round-robin rounds of about "
        f"{args.budget:g} CPU s per contender; on rung 5, one contender at a time, the "
        f"median of {args.rung5_rounds} single iterations after two untimed ones. nashzoo's "
        "is `Trainer.step` (both seats' updates, as the Trainer times them).",
        "- NashConv: nashzoo's `nash_conv(game, policy)` on the loaded game and the CFR+ "
        "average (a `TabularPolicy`, checked once when built), LiteEFG's `exploitability` of "
        "its graph's strategy, OpenSpiel's `nash_conv` of its solver's average policy: the "
        "same work on every side (no game loading, no policy check in the timed call).",
        f"- {COMPILE_COLUMNS}",
    ]
    if lite_missing:
        notes.append(
            "- LiteEFG is not installed here (`pip install LiteEFG`): its columns are n/a."
        )
    return notes


COMPILE_COLUMNS = (
    "Bytes per history: the compiled tree's stored arrays, its sequence-form index and one "
    "CFR+ learner's tables; peak (resident): the resident-memory high-water mark of a fresh "
    "process compiling the tree and setting up one learner (imports and the one-time "
    "compilation of the optional numba kernels excluded); peak (traced): the most bytes "
    "allocated at once during the same work in another fresh process (`tracemalloc`, "
    "temporaries included; every nashzoo module imported first). On small games the resident "
    "mark is mostly the allocator's one-time growth of a fresh process (Kuhn: about 0.5 MB on "
    "the first compile, 4 KB on a second one), so there the traced peak is the measure of the "
    "tree and tables. Compile s: CPU seconds, the median of uncached compiles repeated in "
    "that process until one CPU second is spent (one compile for the large rungs)."
)
PACKAGES = ("numpy", "numba", "open_spiel", "LiteEFG")


def _rungs(args: argparse.Namespace) -> list[Rung]:
    """The rungs the options ask for: up to ``--max-rung`` (rung 5 is ``--rung5``), or the one
    of ``--only-rung`` (whatever ``--max-rung``); with ``--bridge``, each loaded through the
    OpenSpiel bridge."""
    top = max(args.max_rung, args.only_rung or 0)  # --only-rung 5 needs no --max-rung 5
    rungs = [r for r in RUNGS if r.number <= top]
    if top >= 5:
        rungs.append(Rung(5, args.rung5, args.rung5_openspiel, args.rung5_histories))
    if args.only_rung is not None:
        rungs = [r for r in rungs if r.number == args.only_rung]
    if args.bridge:
        rungs = [dataclasses.replace(r, nashzoo=f"openspiel:{r.openspiel}") for r in rungs]
    return rungs


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, in one line naming the fix, options that ran nothing (an empty table, exit 0),
    failed after the work (``--rounds 0``: no median of no rounds) or were silently ignored
    while the whole ladder ran (``--only-target`` without ``--targets``)."""
    if not 1 <= args.max_rung <= 5:
        parser.error(f"--max-rung must be 1-5 (the ladder's rungs), got {args.max_rung}")
    if args.only_rung is not None and not 1 <= args.only_rung <= 5:
        parser.error(f"--only-rung must be 1-5 (the ladder's rungs), got {args.only_rung}")
    for flag in ("rounds", "rung5_rounds", "mccfr_seeds", "check_every"):
        if getattr(args, flag) < 1:
            name = "--" + flag.replace("_", "-")
            parser.error(f"{name} must be at least 1, got {getattr(args, flag)}")
    if args.budget <= 0:
        parser.error(f"--budget must be positive (CPU seconds per round), got {args.budget:g}")
    if args.only_target and not (args.targets or args.targets_only):
        parser.error(
            f"--only-target {args.only_target} chooses among the time-to-target runs: add "
            "--targets (with the ladder) or --targets-only"
        )


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    check_args(parser, args)
    if args.quick:
        for name, value in QUICK.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    if args.measure_compile:
        print(json.dumps(measure_compile(args.measure_compile)))
        return
    if args.measure_liteefg:
        print(json.dumps(measure_liteefg(args.measure_liteefg)))
        return
    if args.measure_traced:
        print(json.dumps(measure_traced(args.measure_traced)))
        return
    if not args.compile_only:  # nashzoo's compile alone needs no peer
        require_openspiel()
    load_before = os.getloadavg()[0]
    parts: dict[str, str] = {}  # generated part of the section -> its text
    if args.liteefg_footprint:
        text = liteefg_footprint_table(RUNGS, args.compile_timeout)
        parts["LiteEFG footprint"] = (
            "LiteEFG on the rungs it loads (its CFR+ graph on its OpenSpiel environment, each "
            "rung in a fresh process; CPU seconds and the growth of the resident high-water "
            f"mark; {{provenance}}):\n\n{text}"
        )
    elif args.compile_only:
        text = compile_table(_rungs(args), args.compile_timeout)
        how = (
            "every rung loaded through the OpenSpiel bridge, the native games included"
            if args.bridge
            else "each rung loaded as the ladder loads it"
        )
        parts["compile through the bridge" if args.bridge else "compile"] = (
            f"nashzoo's compile alone ({how}; each rung in fresh processes; {{provenance}}):"
            f"\n\n{text}\n\n{COMPILE_COLUMNS}"
        )
    else:
        text, parts = _ladder_and_targets(args)
    line = provenance(load_before, os.getloadavg()[0], PACKAGES)
    print(text.replace("{provenance}", line))
    if args.markdown:
        for part, body in parts.items():
            write_section(args.markdown, SECTION, body.replace("{provenance}", line), part)
            print(f"# wrote {part!r} of {SECTION!r} in {args.markdown}", file=sys.stderr)


def _ladder_and_targets(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """Run the ladder (unless ``--targets-only``) and the time-to-target runs (with
    ``--targets``); return what to print and the markdown of each part of the section."""
    parts: dict[str, str] = {}
    lite_missing = not args.targets_only and not bench_cfr.liteefg_available()
    if lite_missing:
        print(
            "# LiteEFG is not installed here (pip install LiteEFG): its columns will read n/a",
            file=sys.stderr,
        )
    printed = []
    if not args.targets_only:
        rows = [run_rung(r, args) for r in _rungs(args)]
        slopes = {n: slope(rows, n) for n in ("nashzoo cfr_plus", "OpenSpiel C++", "LiteEFG")}
        slope_line = ", ".join(
            f"{n} {s:.2f}" if s is not None else f"{n} n/a" for n, s in slopes.items()
        )
        printed += [table(rows), f"log-log slope of ms/iteration against histories: {slope_line}"]
        if args.plot:
            plot(rows, args.plot)
            print(f"# wrote {args.plot}", file=sys.stderr)
        notes = _markdown_notes(args, slope_line, lite_missing)
        parts["ladder"] = "\n".join(
            [
                "How the cost of one CFR+ iteration grows with the game, nashzoo against "
                "OpenSpiel's C++ `CFRPlusSolver` and LiteEFG's CFR+ graph, with nashzoo's "
                "compile time and memory per history; the plot is "
                "[docs/scale.png](docs/scale.png). Measured {provenance}.",
                "",
                table(rows),
                *notes,
            ]
        )
    if args.targets or args.targets_only:
        for part, text in targets_text(args).items():
            printed.append(text)
            parts[part] = text
    return "\n\n".join(printed), parts


if __name__ == "__main__":
    main()
