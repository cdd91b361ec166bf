"""Did a refactor make anything slower? nashzoo at two git revisions, timed in the same run.

Each revision is checked out into a temporary git worktree and timed in its own Python process
(``PYTHONPATH`` set to that checkout, the same interpreter and packages for both). The
revisions alternate round by round, so load from other jobs hits both alike; the table gives
the median over rounds of CPU milliseconds per unit of work and the ratio after / before
(below 1: faster after).

Cases: one uncached build of Kuhn's and Leduc's compiled tree (the game's ``compile_arrays``);
one Trainer iteration (both seats, alternating updates, no evaluation) of CFR+ on Kuhn,
Leduc and Liar's dice and of DCFR on Leduc; one exact NashConv of the uniform policy on Leduc
and Liar's dice (``nashzoo.eval.nash_conv``); one Trainer iteration of NFSP and of Deep CFR on
Leduc (torch single-threaded, timed once the memories are filled); a trainer's evaluation
(``Trainer.evaluate``: the seats' average policies joined and evaluated exactly) on Kuhn, Leduc
and Liar's dice, and a trainer's checkpoint on Liar's dice (``Trainer.save``). With
``--train-peak GAME``, also the peak resident memory of ``nashzoo train`` of CFR+ on that game.
All use only public entry points that both sides of a refactor keep.

Run: ``.venv/bin/python benchmarks/bench_revisions.py --before REV [--after REV] [--rounds 3]
[--markdown BENCHMARKS.md] [--train-peak GAME]``. ``--after`` defaults to the working tree as
it is (uncommitted changes included); ``--markdown`` replaces only the ``## Before and after a
refactor`` section.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _common import provenance, write_section

SECTION = "## Before and after a refactor"
ROOT = Path(__file__).resolve().parent.parent

# Runs inside each checkout; prints one JSON object {case: CPU ms per unit}.
TIMER = r"""
import json, time
from nashzoo.eval import nash_conv
from nashzoo.agents import TabularPolicy
from nashzoo.games import load_game
from nashzoo.train import Trainer

def units(n):
    return max(1, int(SCALE * n))

def trainer_ms(game, algo, n):
    # Warm-up: a throwaway Trainer long enough to reach every code path (some kernels compile
    # only once averaging starts), then a fresh one is timed.
    Trainer(game, algo, algo, seed=1, progress=False, final_eval=False).run(iterations=n // 4 + 3)
    tr = Trainer(game, algo, algo, seed=0, progress=False, final_eval=False)
    tr.run(iterations=3)
    t = time.process_time()
    tr.run(iterations=3 + n)
    return (time.process_time() - t) / n * 1e3

def neural_ms(game, algo, n):
    # A Trainer iteration of a torch learner (single-threaded torch, as in bench_neural), timed
    # after enough iterations that its memories are full enough to learn.
    import torch
    torch.set_num_threads(1)
    tr = Trainer(game, algo, algo, seed=0, progress=False, final_eval=False)
    tr.run(iterations=8)
    t = time.process_time()
    tr.run(iterations=8 + n)
    return (time.process_time() - t) / n * 1e3

def nash_conv_ms(game, n):
    game = load_game(game)
    policy = TabularPolicy.uniform(game)
    nash_conv(game, policy)
    t = time.process_time()
    for _ in range(n):
        nash_conv(game, policy)
    return (time.process_time() - t) / n * 1e3

def evaluate_ms(game, n):
    # A trainer's evaluation between its steps: the seats' average policies joined, checked
    # and evaluated exactly (Trainer.evaluate), after a few CFR+ iterations.
    tr = Trainer(game, "cfr_plus", "cfr_plus", seed=0, progress=False, final_eval=False)
    tr.run(iterations=5)
    tr.evaluate()
    t = time.process_time()
    for _ in range(n):
        tr.evaluate()
    return (time.process_time() - t) / n * 1e3

def save_ms(game, n):
    # A trainer's checkpoint (both seats' tables and its state) written to a file.
    import tempfile, pathlib
    tr = Trainer(game, "cfr_plus", "cfr_plus", seed=0, progress=False, final_eval=False)
    tr.run(iterations=3)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "checkpoint.npz"
        tr.save(path)
        t = time.process_time()
        for _ in range(n):
            tr.save(path)
        return (time.process_time() - t) / n * 1e3

def compile_ms(game, n):
    # The game's own builder, uncached (compile_tree caches per game).
    game = load_game(game)
    game.compile_arrays()
    t = time.process_time()
    for _ in range(n):
        game.compile_arrays()
    return (time.process_time() - t) / n * 1e3

out = {
    "kuhn_poker compile": compile_ms("kuhn_poker", units(3000)),
    "leduc_poker compile": compile_ms("leduc_poker", units(200)),
    "kuhn_poker cfr_plus iteration": trainer_ms("kuhn_poker", "cfr_plus", units(3000)),
    "leduc_poker cfr_plus iteration": trainer_ms("leduc_poker", "cfr_plus", units(1000)),
    "leduc_poker dcfr iteration": trainer_ms("leduc_poker", "dcfr", units(1000)),
    "liars_dice cfr_plus iteration": trainer_ms("liars_dice", "cfr_plus", units(20)),
    "leduc_poker nash_conv": nash_conv_ms("leduc_poker", units(300)),
    "liars_dice nash_conv": nash_conv_ms("liars_dice", units(10)),
    "leduc_poker nfsp iteration": neural_ms("leduc_poker", "nfsp", units(30)),
    "leduc_poker deep_cfr iteration": neural_ms("leduc_poker", "deep_cfr", units(10)),
    "kuhn_poker trainer evaluate": evaluate_ms("kuhn_poker", units(3000)),
    "leduc_poker trainer evaluate": evaluate_ms("leduc_poker", units(1000)),
    "liars_dice trainer evaluate": evaluate_ms("liars_dice", units(30)),
    "liars_dice trainer save": save_ms("liars_dice", units(10)),
}
print(json.dumps(out))
"""


@contextlib.contextmanager
def checkout(rev: str | None) -> Iterator[Path]:
    """A directory holding nashzoo at ``rev`` (``None``: this working tree as it is)."""
    if rev is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="nashzoo-rev-") as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev],
            check=True,
        )
        try:
            yield path
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False
            )


def time_checkout(path: Path, scale: float) -> dict[str, float]:
    """Run the timer in a fresh interpreter importing nashzoo from ``path``."""
    return run_in_checkout(path, f"SCALE = {scale}\n{TIMER}", "timing")


def run_in_checkout(path: Path, script: str, what: str) -> dict[str, float]:
    """The JSON object ``script`` prints last, run in a fresh interpreter importing nashzoo
    from ``path``; the run's error output if it fails."""
    env = {**os.environ, "PYTHONPATH": str(path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=path, env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{what} {path} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Runs inside each checkout: ``nashzoo train`` of CFR+ for a few iterations on GAME in this
# process (the command line's own entry point, every file it writes), then the process's peak
# resident memory in GB (10**9 bytes; Linux gives ``ru_maxrss`` in KiB).
TRAIN_PEAK = r"""
import json, resource, sys, tempfile
from nashzoo.cli.main import main
with tempfile.TemporaryDirectory() as out:
    code = main(["train", "--game", GAME, "--learner", "cfr_plus", "--iterations", "3",
                 "--out", out, "--no-progress"])
if code:
    sys.exit(f"nashzoo train exited with {code}")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
print(json.dumps({f"{GAME} train peak GB": peak}))
"""


def peak_checkout(path: Path, game: str) -> dict[str, float]:
    """The peak resident GB of ``nashzoo train`` on ``game`` at the checkout ``path``, in a
    fresh interpreter."""
    return run_in_checkout(path, f"GAME = {game!r}\n{TRAIN_PEAK}", "training at")


def measure(
    before: str, after: str | None, rounds: int, scale: float, peaks: list[str] | None = None
) -> dict[str, dict]:
    """Median CPU ms per case (and peak MB per ``--train-peak`` game) for both revisions,
    alternating them round by round."""
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with checkout(before) as old, checkout(after) as new:
        for r in range(rounds):
            for side, path in (("before", old), ("after", new)):
                run = time_checkout(path, scale)
                for game in peaks or ():
                    run.update(peak_checkout(path, game))
                runs[side].append(run)
                print(f"round {r + 1}/{rounds}: {side} done", file=sys.stderr, flush=True)
    cases = runs["after"][0].keys() & runs["before"][0].keys()
    return {
        case: {side: statistics.median(run[case] for run in runs[side]) for side in runs}
        for case in sorted(cases)
    }


def is_commit(rev: str) -> bool:
    """Whether ``rev`` names a commit here, checked before any work (``git worktree add`` of a
    wrong one failed with a CalledProcessError traceback)."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    return found.returncode == 0


def rev_label(rev: str | None) -> str:
    if rev is None:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        return f"working tree at {head}"
    short = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True
    ).stdout.strip()
    return f"`{rev}` ({short})" if short != rev else f"`{rev}`"


def markdown(results: dict[str, dict], args: argparse.Namespace, load: tuple[float, float]) -> str:
    before, after = rev_label(args.before), rev_label(args.after)
    lines = [
        SECTION,
        "",
        "nashzoo at two revisions, timed in the same run (`benchmarks/bench_revisions.py`): "
        "CPU ms per unit, median over rounds that alternate the revisions; ratio < 1 means "
        "faster after. A `train peak GB` row (`--train-peak GAME`) is the peak resident "
        "memory of `nashzoo train` of CFR+ for three iterations on that game, every file "
        "it writes included (ratio < 1: less memory after).",
        "",
        f"| case | before: {before} | after: {after} | after / before |",
        "| --- | ---: | ---: | ---: |",
    ]
    for case, r in results.items():
        lines.append(
            f"| {case} | {r['before']:.4g} | {r['after']:.4g} | {r['after'] / r['before']:.2f} |"
        )
    lines += [
        "",
        f"- Measured {provenance(*load, ('numpy', 'numba'))}; rounds: {args.rounds}"
        f"{' (--quick: a tenth of the work per case)' if args.quick else ''}. Both revisions "
        "alike see whatever else runs on the machine.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="git revision before the change")
    parser.add_argument("--after", default=None, help="git revision after (default: this tree)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the work per case")
    parser.add_argument("--markdown", type=Path, default=None, help="write into BENCHMARKS.md")
    parser.add_argument(
        "--train-peak",
        action="append",
        metavar="GAME",
        help="also measure the peak memory of `nashzoo train` (CFR+, 3 iterations) on GAME, "
        "e.g. 'liars_dice(dice_sides=9)' (rung 5: about 10 GB and 2 minutes a run); repeatable",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for flag, rev in (("--before", args.before), ("--after", args.after)):
        if rev is not None and not is_commit(rev):
            parser.error(
                f"{flag} {rev} is not a commit of the repository at {ROOT} "
                f"(a hash, a branch or a tag; e.g. {flag} HEAD~1)"
            )
    load_before = os.getloadavg()[0]
    results = measure(
        args.before, args.after, args.rounds, 0.1 if args.quick else 1.0, args.train_peak
    )
    table = markdown(results, args, (load_before, os.getloadavg()[0]))
    print(table)
    if args.markdown:
        write_section(args.markdown, SECTION, table)


if __name__ == "__main__":
    main()
