"""What holds Deep CFR back on Leduc: the sampling, the network's fit, or the average network?

For each configuration, ``deep_cfr`` self-play runs a fixed number of iterations; at checkpoints
three exploitabilities (NashConv / 2) are taken exactly:

* ``network average``: the strategy networks (what ``deep_cfr`` outputs);
* ``exact average``: the linear (iteration-weighted), reach-weighted average of the strategies
  ``sigma_t`` the advantage networks actually played, computed exactly over the tree: what a
  perfect strategy network would output. If it is as bad as the network average, the average
  network is not the problem;
* a tabular reference, ``tabular external sampling``: the same batched walks
  (``treemath.sampled_walks``), the same number of traversals and the same linear weighting, with
  the regrets summed exactly per information set instead of fitted by a network: the level the
  sampling alone allows. The gap between it and ``exact average`` is the network's fit.

Run: ``.venv/bin/python benchmarks/bench_deep_cfr_memory.py [--iterations 60] [--quick]
[--markdown BENCHMARKS.md]`` (single-threaded; about ten minutes on a shared 2-core CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _common import provenance, write_section

from nashzoo.agents.policy import TabularPolicy
from nashzoo.games import compile_tree, load_game
from nashzoo.games.treemath import (
    behaviour_strategy,
    nash_conv,
    realization_plan,
    regret_matching,
    sampled_walks,
)
from nashzoo.train import Trainer

SECTION = "## Deep CFR on Leduc: what held it back"
VARIANTS = {
    "reservoir, 1x64 (the old defaults)": {
        "memory": "reservoir",
        "advantage_hidden": [64],
        "strategy_hidden": [64],
    },
    "reservoir, 3x64": {"memory": "reservoir"},
    "infoset memory, 1x64": {"advantage_hidden": [64], "strategy_hidden": [64]},
    "infoset memory, 3x64 (the new defaults)": {},
}


def exploitability(tree, strategy: np.ndarray) -> float:
    return nash_conv(tree, strategy)[0] / 2


def deep_cfr_rows(game, label: str, config: dict, iterations: int, every: int) -> list[list]:
    """Checkpoints of one ``deep_cfr`` run: network average and exact average of sigma_t."""
    tree = compile_tree(game)
    trainer = Trainer(game, "deep_cfr", "deep_cfr", configs=(config, config), progress=False)
    plans = np.zeros((tree.num_infosets, tree.num_actions))
    seconds, rows = 0.0, []
    for t in range(1, iterations + 1):
        played = [lr.current_policy() for lr in trainer.learners]
        start = time.perf_counter()
        trainer.step()
        seconds += time.perf_counter() - start
        sigma = TabularPolicy.joint(game, played).probs
        plans += t * sum(realization_plan(tree, sigma, p) for p in (0, 1))
        if t % every == 0:
            network = trainer.average_policy().probs
            exact = behaviour_strategy(tree, plans)
            rows.append(
                [label, t, seconds, exploitability(tree, network), exploitability(tree, exact)]
            )
    return rows


def tabular_rows(game, traversals: int, iterations: int, every: int) -> list[list]:
    """The same walks with exact per-information-set regret sums (alternating updates)."""
    tree = compile_tree(game)
    walker, rng = sampled_walks(tree), np.random.default_rng(0)
    regrets = np.zeros((tree.num_infosets, tree.num_actions))
    plans = np.zeros_like(regrets)
    seconds, rows = 0.0, []
    for t in range(1, iterations + 1):
        start = time.perf_counter()
        for seat in (0, 1):
            sigma = regret_matching(regrets, tree.legal_mask)
            isets, sampled = walker.sampled_regrets(walker.walk(seat, sigma, traversals, rng), seat)
            np.add.at(regrets, isets, t * sampled)
            plans += t * realization_plan(tree, sigma, seat)
        seconds += time.perf_counter() - start
        if t % every == 0:
            exact = exploitability(tree, behaviour_strategy(tree, plans))
            rows.append(["tabular external sampling (same walks)", t, seconds, float("nan"), exact])
    return rows


def table(rows: list[list]) -> str:
    head = ["configuration", "iterations", "training s", "network average", "exact average"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    for label, t, seconds, network, exact in rows:
        net = "-" if np.isnan(network) else f"{network:.4f}"
        lines.append(f"| {label} | {t} | {seconds:.1f} | {net} | {exact:.4f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="leduc_poker", help="the game (default leduc_poker)")
    parser.add_argument(
        "--iterations", type=int, default=60, help="deep_cfr iterations per configuration"
    )
    parser.add_argument(
        "--every", type=int, default=20, help="iterations between the exact evaluations"
    )
    parser.add_argument(
        "--quick", action="store_true", help="10 iterations, one evaluation (run_all.py --quick)"
    )
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    parser.add_argument("--note", default="", help="extra line for the markdown notes")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.quick:
        args.iterations, args.every = 10, 10
    if args.every < 1 or args.iterations < args.every:
        # --every 0 ended in a ZeroDivisionError, fewer iterations than --every in a table
        # with no rows but the tabular reference's header.
        parser.error(
            f"--every must be at least 1 and at most --iterations, got --every {args.every} "
            f"--iterations {args.iterations}"
        )
    torch.set_num_threads(1)
    game = load_game(args.game)
    rows = tabular_rows(game, 1_000, args.iterations, args.every)
    for label, config in VARIANTS.items():
        rows += deep_cfr_rows(game, label, config, args.iterations, args.every)
        print(table(rows), flush=True)
    notes = [
        f"Exploitability (NashConv / 2) on {args.game}, seed 0, 1,000 traversals per iteration "
        "(every configuration: the `deep_cfr` defaults otherwise). 'network average': the "
        "strategy networks, what `deep_cfr` outputs; 'exact average': the linear, reach-weighted "
        "average of the strategies the advantage networks played, computed over the tree.",
        "",
        f"- Measured {provenance(load_before, os.getloadavg()[0], ('numpy', 'torch'))}; "
        "torch single-threaded.",
        "- Configurations: " + json.dumps(VARIANTS) + ".",
    ]
    if args.note:
        notes.append(f"- {args.note}")
    body = table(rows) + "\n\n" + "\n".join(notes)
    print(body)
    if args.markdown:
        write_section(args.markdown, SECTION, body)
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
