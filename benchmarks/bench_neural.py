"""Neural learners against OpenSpiel's PyTorch implementations, measured in the same run.

* NFSP self-play on Kuhn poker: nashzoo's ``nfsp`` (defaults, stops at 0.05) against
  ``open_spiel.python.pytorch.nfsp`` with the settings of OpenSpiel's ``nfsp_kuhn_pytorch``
  example (one hidden layer of 128, replay 2e5, reservoir 2e6, anticipatory 0.1, epsilon 0.06 to
  0.001 over 3e6 episodes). Exploitability = NashConv / 2 (OpenSpiel's convention); time to
  0.10 and 0.05.
* Deep CFR self-play on Kuhn poker: nashzoo's ``deep_cfr`` (defaults) against
  ``open_spiel.python.pytorch.deep_cfr`` with the settings of OpenSpiel's ``deep_cfr_pytorch``
  example (64-unit networks, 375 traversals, advantage networks re-initialised and trained 375
  steps per iteration, strategy network trained 2,500 steps). NashConv; time to 0.10 and 0.05.
  OpenSpiel is measured two ways: its example exactly as it runs (``solve()`` for its 101
  iterations; its only output exists when ``solve()`` returns) and checkpointed (see below).
* Deep CFR on Leduc hold'em, same settings: NashConv against iterations and time for both.
* The plain RL baseline: ``ppo`` in self-play against frozen snapshots of itself on Kuhn.

Time axis = training only; every evaluation is exact and off the clock. OpenSpiel's Deep CFR
trains its strategy network only at the end of ``solve()``; to evaluate it at a checkpoint the
"checkpointed" runs train it there (as ``solve()`` would) and charge that training to that
checkpoint only (not to later ones): an early-stopping variant that OpenSpiel's example does not
offer, and which favours OpenSpiel. Both sides run with
``torch.set_num_threads(1)``.

Run: ``.venv/bin/python benchmarks/bench_neural.py [--quick] [--markdown BENCHMARKS.md]``

``vec-env [GAME] [LEARNER]`` times a learner's step with its episodes played in envs (an SB3
learner's ``n_envs`` copies under ``DummyVecEnv``, NFSP's PettingZoo lanes) against over the
compiled tree (``TreeVecEnv``, NFSP's ``TreePlay``), alternating, in one process.
``threads [GAME]`` counts NFSP self-play iterations in 40 s of wall time with numpy's and torch's
default thread pools against one thread each (``nashzoo.train.threads.limit_threads``), one
process alone and two side by side (BENCHMARKS.md, "One thread per run").
``processes [GAME] [LEARNER]`` counts Trainer iterations in a fixed training time with one
process and with two (``Trainer(processes=2)``: seat 1 steps in a worker process beside seat 0).
``br-gap [GAME]`` follows how far NFSP's greedy Q-policies are from exact best responses while it
trains, and with ``memory="infoset"`` how far the greedy policy on the replay window's mean
targets is, and how exploitable the best-response play's frequencies are (BENCHMARKS.md, "NFSP on
Leduc: what holds it back").
``autograd [GAME]`` times NFSP iterations with the gradients from ``ManualMLP`` against
autograd's (a subclass computing the same losses the textbook way), alternating, in one process.
(``--markdown`` replaces only the ``## Neural learners`` section).

Levels held (``levels`` sub-command): noisy learners are reported as the *level held* from a
checkpoint on, the worst exploitability (NashConv / 2) of any evaluation at or after that
training time, per seed, then its median and range over seeds. One command runs one learner on
one game for several seeds (sequentially, single-threaded) and appends the curves to a JSON file;
``levels-report`` turns one or more such files into the ``## Neural learners: levels held``
section::

    .venv/bin/python benchmarks/bench_neural.py levels leduc_poker deep_cfr --seeds 0 1 2 \
        --budget 600 --out runs.json [--config '{"traversals": 2000}'] [--label NAME]
    .venv/bin/python benchmarks/bench_neural.py levels-report runs.json --markdown BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import provenance, require_openspiel, version, write_section

from nashzoo.agents import TabularPolicy, make_learner
from nashzoo.eval import exploitability
from nashzoo.games import compile_tree, load_game
from nashzoo.train import Callback, StopOnExploitability, Trainer
from nashzoo.train.threads import THREAD_VARIABLES, limit_threads

SECTION = "## Neural learners"


@dataclass
class Curve:
    """Evaluation points of one run: (iteration or episodes, training seconds, metric)."""

    label: str
    metric: str  # "exploitability" or "nash_conv"
    points: list[tuple[int, float, float]] = field(default_factory=list)
    budget: float = 0.0
    unit: str = "iterations"

    def time_to(self, threshold: float) -> float | None:
        for _, seconds, value in self.points:
            if value <= threshold:
                return seconds
        return None

    def final(self) -> tuple[int, float, float]:
        return self.points[-1] if self.points else (0, 0.0, float("nan"))

    def best(self) -> float:
        return min((v for _, _, v in self.points), default=float("nan"))


# --- nashzoo --------------------------------------------------------------------------------------
def run_nashzoo(
    game: str,
    name: str,
    budget: float,
    eval_seconds: float,
    metric: str,
    stop_at: float | None,
    config: dict | None = None,
    seed: int = 0,
    extra_callbacks: list | None = None,
    processes: int = 1,
) -> Curve:
    callbacks = [StopOnExploitability(stop_at, metric)] if stop_at else []
    callbacks += extra_callbacks or []
    trainer = Trainer(
        game,
        name,
        name,
        configs=(config, config),
        seed=seed,
        eval_seconds=eval_seconds,
        evaluate_seats=False,
        progress=False,
        callbacks=callbacks or None,
        processes=processes,
        schedule="simultaneous" if processes == 2 else "alternating",
    )
    result = trainer.run(seconds=budget)
    curve = Curve(f"nashzoo {name}", metric, budget=budget)
    for record in result.history:
        curve.points.append((record.iteration, record.train_seconds, getattr(record, metric)))
    return curve


# --- OpenSpiel NFSP -------------------------------------------------------------------------------
def run_openspiel_nfsp(budget: float, eval_every: int, stop_at: float | None) -> Curve:
    from open_spiel.python import policy as os_policy
    from open_spiel.python import rl_environment
    from open_spiel.python.algorithms import exploitability as os_exploitability
    from open_spiel.python.pytorch import nfsp

    env = rl_environment.Environment("kuhn_poker", players=2)
    state_size = env.observation_spec()["info_state"][0]
    num_actions = env.action_spec()["num_actions"]
    episodes_total = int(3e6)  # the example's num_train_episodes (epsilon decays over it)
    kwargs = {
        "replay_buffer_capacity": int(2e5),
        "epsilon_decay_duration": episodes_total,
        "epsilon_start": 0.06,
        "epsilon_end": 0.001,
    }
    agents = [
        nfsp.NFSP(p, state_size, num_actions, [128], int(2e6), 0.1, **kwargs) for p in range(2)
    ]

    class AveragePolicies(os_policy.Policy):
        """Both agents' average-policy networks as one OpenSpiel policy (for evaluation)."""

        def __init__(self) -> None:
            super().__init__(env.game, [0, 1])

        def action_probabilities(self, state, player_id=None):
            player = state.current_player()
            legal = state.legal_actions(player)
            obs = {
                "info_state": [None, None],
                "legal_actions": [None, None],
                "current_player": player,
            }
            obs["info_state"][player] = state.information_state_tensor(player)
            obs["legal_actions"][player] = legal
            step = rl_environment.TimeStep(
                observations=obs, rewards=None, discounts=None, step_type=None
            )
            with agents[player].temp_mode_as(nfsp.MODE.AVERAGE_POLICY):
                probs = agents[player].step(step, is_evaluation=True).probs
            return {a: probs[a] for a in legal}

    evaluator = AveragePolicies()
    curve = Curve("OpenSpiel PyTorch NFSP", "exploitability", budget=budget, unit="episodes")
    train_seconds, episode = 0.0, 0
    while train_seconds < budget:
        start = time.perf_counter()
        for _ in range(eval_every):
            step = env.reset()
            while not step.last():
                player = step.observations["current_player"]
                step = env.step([agents[player].step(step).action])
            for agent in agents:
                agent.step(step)
        train_seconds += time.perf_counter() - start
        episode += eval_every
        value = os_exploitability.exploitability(env.game, evaluator)
        curve.points.append((episode, train_seconds, value))
        if stop_at is not None and value <= stop_at:
            break
    return curve


# --- OpenSpiel Deep CFR ---------------------------------------------------------------------------
# The settings of OpenSpiel's examples/deep_cfr_pytorch.py (its num_iterations is 101).
OPENSPIEL_DEEP_CFR = {
    "policy_network_layers": (64,),
    "advantage_network_layers": (64,),
    "num_traversals": 375,
    "reinitialize_advantage_networks": True,
    "learning_rate": 1e-3,
    "batch_size_advantage": 256,
    "batch_size_strategy": 256,
    "memory_capacity": 100000,
    "policy_network_train_steps": 2500,
    "advantage_network_train_steps": 375,
}


def run_openspiel_deep_cfr(
    game_name: str, budget: float, eval_every: int, stop_at: float | None
) -> Curve:
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.pytorch import deep_cfr

    game = pyspiel.load_game(game_name)
    solver = deep_cfr.DeepCFRSolver(game, **{**OPENSPIEL_DEEP_CFR, "num_iterations": 10**6})
    label = "OpenSpiel PyTorch Deep CFR, checkpointed (strategy net trained at each evaluation)"
    curve = Curve(label, "nash_conv", budget=budget)
    train_seconds, iteration = 0.0, 0
    while train_seconds < budget:
        start = time.perf_counter()
        # One iteration of DeepCFRSolver.solve().
        for player in range(game.num_players()):
            for _ in range(375):
                solver._traverse_game_tree(solver._root_node, player)
            solver._reinitialize_advantage_network(player)
            solver._learn_advantage_network(player)
        solver._iteration += 1
        train_seconds += time.perf_counter() - start
        iteration += 1
        if iteration % eval_every:
            continue
        start = time.perf_counter()
        solver._learn_strategy_network()  # what solve() does once at the end
        output_seconds = time.perf_counter() - start
        table = os_policy.tabular_policy_from_callable(game, solver.action_probabilities)
        value = pyspiel.nash_conv(game, os_policy.python_policy_to_pyspiel_policy(table))
        solver._reinitialize_policy_network()
        curve.points.append((iteration, train_seconds + output_seconds, value))
        if stop_at is not None and value <= stop_at:
            break
    return curve


def run_openspiel_deep_cfr_example(game_name: str) -> Curve:
    """OpenSpiel's ``deep_cfr_pytorch`` example exactly as it runs: ``solve()`` with its 101
    iterations (the strategy network is trained once, at the end), then one evaluation. Its
    first output exists only when ``solve()`` returns, so that is its time to any threshold."""
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.pytorch import deep_cfr

    game = pyspiel.load_game(game_name)
    solver = deep_cfr.DeepCFRSolver(game, **{**OPENSPIEL_DEEP_CFR, "num_iterations": 101})
    start = time.perf_counter()
    solver.solve()
    seconds = time.perf_counter() - start
    table = os_policy.tabular_policy_from_callable(game, solver.action_probabilities)
    value = pyspiel.nash_conv(game, os_policy.python_policy_to_pyspiel_policy(table))
    curve = Curve("OpenSpiel PyTorch Deep CFR, example as run (solve(), 101 it.)", "nash_conv")
    curve.budget = seconds
    curve.points.append((101, seconds, value))
    return curve


# --- tables ---------------------------------------------------------------------------------------
def _fmt_time(seconds: float | None, budget: float) -> str:
    return f"> {budget:.0f} s (not reached)" if seconds is None else f"{seconds:.1f} s"


def _ratio(peer: float | None, ours: float | None, peer_budget: float) -> str:
    if ours is None:
        return "n/a (nashzoo did not reach it)"
    if peer is None:
        return f"> {peer_budget / ours:.1f}x"
    return f"{peer / ours:.1f}x"


def threshold_table(curves: list[Curve], thresholds: list[float]) -> str:
    """One row per implementation; on each peer's row, its time to each threshold divided by
    nashzoo's (the first curve): above 1 means nashzoo got there sooner."""
    metric = curves[0].metric
    name = "exploitability (NashConv / 2)" if metric == "exploitability" else "NashConv"
    head = ["implementation", *[f"time to {name} <= {t:g}" for t in thresholds]]
    head += [f"{name} at the end (training s, work)", "best"]
    head += [f"its time / nashzoo's to {t:g}" for t in thresholds]
    ours = curves[0]
    rows = []
    for curve in curves:
        n, seconds, value = curve.final()
        row = [curve.label, *[_fmt_time(curve.time_to(t), curve.budget) for t in thresholds]]
        row += [f"{value:.4f} ({seconds:.0f} s, {n:,} {curve.unit})", f"{curve.best():.4f}"]
        if curve is ours:
            row += ["1.0x" if ours.time_to(t) is not None else "" for t in thresholds]
        else:
            row += [_ratio(curve.time_to(t), ours.time_to(t), curve.budget) for t in thresholds]
        rows.append(row)
    return _markdown(head, rows)


def curve_table(curves: list[Curve], max_rows: int = 8) -> str:
    head = ["implementation", "iterations", "training s", curves[0].metric]
    rows = []
    for curve in curves:
        points = curve.points
        if len(points) > max_rows:
            keep = np.unique(np.linspace(0, len(points) - 1, max_rows).round().astype(int))
            points = [points[i] for i in keep]
        for n, seconds, value in points:
            rows.append([curve.label, f"{n:,}", f"{seconds:.1f}", f"{value:.4f}"])
    return _markdown(head, rows)


def _markdown(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- levels held over seeds -----------------------------------------------------------------------
LEVELS_SECTION = "## Neural learners: levels held"
CHECKPOINTS = (30.0, 60.0, 120.0, 300.0, 600.0)


def level_held(points: list[list[float]], since: float) -> float | None:
    """Worst exploitability evaluated at or after ``since`` training seconds (None if the run
    has no evaluation that late)."""
    later = [value for _, seconds, value in points if seconds >= since]
    return max(later) if later else None


class NetworkExploitability(Callback):
    """At every evaluation, also the exploitability of the joint policy of the networks being
    trained (``network_policy()``), for learners whose output is another policy (``mmd_ppo``
    with ``output="ema"``): ``points`` as ``[iteration, train_seconds, exploitability]``."""

    def __init__(self) -> None:
        self.points: list[list[float]] = []

    def on_eval(self, trainer: Trainer, record: Any) -> None:
        joint = TabularPolicy.joint(trainer.game, [lr.network_policy() for lr in trainer.learners])
        value = exploitability(trainer.game, joint)
        self.points.append([record.iteration, record.train_seconds, value])


def run_levels(args: argparse.Namespace) -> None:
    """Train one learner on one game for each seed and append its curves to ``args.out``."""
    config = json.loads(args.config) if args.config else None
    label = args.label or args.learner
    runs = json.loads(args.out.read_text()) if args.out.exists() else []
    for seed in args.seeds:
        network = NetworkExploitability() if args.network_too else None
        curve = run_nashzoo(
            args.game,
            args.learner,
            args.budget,
            args.eval_every,
            "exploitability",
            None,
            config,
            seed,
            [network] if network else None,
            args.processes,
        )
        runs.append(
            {
                "game": args.game,
                "learner": args.learner,
                "label": label,
                "config": config,
                "seed": seed,
                "budget": args.budget,
                "points": curve.points,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "load": os.getloadavg()[0],
                **({"processes": 2, "schedule": "simultaneous"} if args.processes == 2 else {}),
                **({"network_points": network.points} if network else {}),
            }
        )
        args.out.write_text(json.dumps(runs, indent=1))
        _, seconds, value = curve.final()
        print(f"# {args.game} {label} seed {seed}: {value:.4f} at {seconds:.0f} s", flush=True)


def levels_table(runs: list[dict]) -> str:
    """Median [min-max] over seeds of the level held from each checkpoint on."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["game"], run["label"]), []).append(run)
    head = ["game", "learner", "seeds", *[f"held from {c:.0f} s" for c in CHECKPOINTS]]
    head += ["typical in the second half", "iterations"]
    rows = []
    for (game, label), group in groups.items():
        row = [game, label, str(len(group))]
        for checkpoint in CHECKPOINTS:
            levels = [level_held(run["points"], checkpoint) for run in group]
            if any(level is None for level in levels):
                row.append("")
                continue
            row.append(_spread(levels))
        # The median evaluation of each run's second half: where a noisy last iterate hovers.
        halves = [
            float(np.median([v for _, t, v in run["points"] if t >= run["budget"] / 2]))
            for run in group
        ]
        row.append(_spread(halves))
        row.append(f"{int(np.median([run['points'][-1][0] for run in group])):,}")
        rows.append(row)
    return _markdown(head, rows)


def _spread(values: list[float]) -> str:
    return f"{np.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def report_levels(args: argparse.Namespace) -> None:
    runs = [run for file in args.files for run in json.loads(file.read_text())]
    table = levels_table(runs)
    configs = sorted({f"{r['label']}: {json.dumps(r['config'])}" for r in runs})
    dates = sorted({r["date"] for r in runs})
    loads = [r["load"] for r in runs]
    notes = [
        "Exploitability (NashConv / 2) held from each checkpoint on: per seed the worst exact "
        "evaluation at or after that training time, then the median over seeds and [min-max]; "
        "'typical in the second half' is each run's median evaluation over the second half of "
        "its budget (median [min-max] over seeds); 'iterations' is the median number of "
        "Trainer iterations at the end (one step of each seat's learner each). "
        "Training time only, single-threaded (`nashzoo.train.threads.limit_threads`: BLAS, "
        "OpenMP and torch); evaluation off the clock. Self-play in the Trainer: one learner per "
        "seat (`ppo`, `mmd_ppo`: each seat's learner self-plays, the joint policy takes seat 0 "
        "from the first and seat 1 from the second), so a learner gets half of the training time. "
        "Rows whose label says 'two processes' ran with `--processes 2` (`Trainer(processes=2)`, "
        "the simultaneous schedule): the two seats stepped side by side in two processes of one "
        "thread each, so such a run had both cores to itself (its seeds ran one after another).",
        "",
        "- Configurations (`None` = defaults): " + "; ".join(configs) + ".",
        f"- Runs between {dates[0]} and {dates[-1]}; {os.cpu_count()}-core "
        f"{platform.machine()} CPU, {platform.system()}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, stable-baselines3 {version('stable-baselines3')}. The "
        "machine was shared with other jobs (load average at the end of each run "
        f"{min(loads):.1f}-{max(loads):.1f} on 2 cores): with the load above 2, a run got less "
        "than a core, so these times are wall-clock times on a crowded machine.",
        "- Reproduce: `.venv/bin/python benchmarks/bench_neural.py levels GAME LEARNER --seeds 0 "
        "1 2 --budget 600 --out FILE` per row (`--config` and `--label` as above; evaluated "
        "every 15 to 60 s, the times are in the files), then `.venv/bin/python "
        f"benchmarks/bench_neural.py levels-report {' '.join(map(str, args.files))} --markdown "
        "BENCHMARKS.md`; the curves behind this table are in those files.",
    ]
    if args.note:
        notes.append(f"- {args.note}")
    print(table + "\n" + "\n".join(notes))
    if args.markdown:
        write_section(args.markdown, LEVELS_SECTION, table + "\n\n" + "\n".join(notes))


# learner -> (its config field choosing how episodes are played, (the envs' value, the tree's))
_PLAY_OPTION = {"nfsp": ("play", ("env", "tree"))}


def _alternating_parser(
    prog: str, per_round: str, per_round_default: int, warmup_default: int = 5
) -> argparse.ArgumentParser:
    """The options of an in-process A/B timing: the game (positional), ``--config``,
    ``--rounds``, the units timed per round and side (``per_round``), ``--warmup``."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("game", nargs="?", default="leduc_poker")
    parser.add_argument("--config", default="{}", help="learner config as JSON")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument(
        f"--{per_round}", type=int, default=per_round_default, help="units per round and side"
    )
    parser.add_argument(
        "--warmup", type=int, default=warmup_default, help="untimed units per side first"
    )
    return parser


def _time_alternating(
    sides: dict[str, Any], unit: Any, rounds: int, per_round: int, warmup: int
) -> dict[str, float]:
    """Median thread-CPU seconds per ``unit(side)`` for each side, after ``warmup`` untimed
    units each (first-use tables, torch's first calls, memories full enough to learn), the
    sides timed in alternation, ``per_round`` units at a time, for ``rounds`` rounds."""
    for side in sides.values():
        for _ in range(warmup):
            unit(side)
    times: dict[str, list[float]] = {kind: [] for kind in sides}
    for _ in range(rounds):
        for kind, side in sides.items():
            start = time.thread_time()
            for _ in range(per_round):
                unit(side)
            times[kind].append((time.thread_time() - start) / per_round)
    return {kind: statistics.median(values) for kind, values in times.items()}


def _machine_line(extra: str = "") -> str:
    """When and where an A/B timing ran (printed under its table)."""
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()}-core "
        f"{platform.machine()} CPU; torch {torch.__version__}, stable-baselines3 "
        f"{version('stable-baselines3')}{extra}; load average at the end "
        f"{os.getloadavg()[0]:.1f}"
    )


def vec_env_main(argv: list[str]) -> None:
    """Seconds per learner step with the learner's episodes played in envs (an SB3 learner's
    ``n_envs`` ``SingleAgentEnv`` copies under ``DummyVecEnv``; NFSP's lock-stepped PettingZoo
    lanes) and over the compiled tree (``TreeVecEnv``; NFSP's ``TreePlay``), the two timed in
    alternation in one process (thread CPU time; the median of the rounds)."""
    parser = _alternating_parser("bench_neural.py vec-env", "steps", 3)
    parser.add_argument("learner", nargs="?", default="mmd_ppo")
    args = parser.parse_args(argv)
    limit_threads()  # BLAS, OpenMP and torch: one thread (nashzoo.train.threads)
    config = json.loads(args.config)
    option, kinds = _PLAY_OPTION.get(args.learner, ("vec_env", ("copies", "tree")))
    sides = {
        kind: make_learner(args.learner, args.game, 0, {**config, option: kind}, seed=0)
        for kind in kinds
    }
    opponent = sides["tree"].current_policy()
    timing = (args.rounds, args.steps, args.warmup)
    step = _time_alternating(sides, lambda side: side.step(opponent), *timing)
    envs, tree = (step[k] for k in kinds)
    cfg = sides["tree"].config
    if args.learner in _PLAY_OPTION:
        work, envs_label = f"{cfg.episodes_per_step} episodes", "envs (PettingZoo lanes)"
    else:
        work = f"{cfg.n_envs} copies x {cfg.steps_per_iteration // cfg.n_envs} decisions"
        envs_label = "copies (DummyVecEnv)"
    print(f"| game | learner | a step plays | {envs_label} s/step | tree s/step | ratio |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    print(
        f"| {args.game} | {args.learner} | {work} | {envs:.4f} | {tree:.4f} | {envs / tree:.2f}x |"
    )
    if args.learner in _PLAY_OPTION:  # NFSP: the play alone (its _play), without the updates
        play = _time_alternating(sides, lambda side: side._play(opponent), *timing)
        envs_play, tree_play = (play[k] * 1e3 for k in kinds)
        print(
            f"Play alone (no updates), ms per step: envs {envs_play:.2f}, tree {tree_play:.2f}, "
            f"{envs_play / tree_play:.2f}x"
        )
    print(_machine_line())


def _autograd_nfsp() -> type:
    """NFSP with its losses' gradients from autograd (the textbook way), for the comparison
    with :class:`~nashzoo.agents.torch_networks.ManualMLP` in :func:`autograd_main`."""
    import torch.nn.functional as F

    from nashzoo.agents._torch_utils import check_loss
    from nashzoo.agents.nfsp import NFSP

    class AutogradNFSP(NFSP):
        def _q_gradients(self, b: dict[str, torch.Tensor]) -> float:
            cfg = self.config
            with torch.enable_grad():
                q = self.q_net(b["s"]).gather(1, b["a"].unsqueeze(1)).squeeze(1)
                with torch.no_grad():
                    q2 = self.target_net(b["s2"]).masked_fill(~b["mask2"], -torch.inf)
                    q2 = torch.where(b["done"], torch.zeros_like(q), q2.amax(dim=1))
                    target = b["r"] + cfg.discount * q2
                loss_fn = F.mse_loss if cfg.rl_loss == "mse" else F.smooth_l1_loss
                loss = loss_fn(q, target)
                rl = check_loss(loss, learner=self.name, iteration=self.iterations, what="Q")
                loss.backward()
            return rl

        def _average_gradients(self, b: dict[str, torch.Tensor]) -> float:
            with torch.enable_grad():
                logits = self.avg_net(b["s"]).masked_fill(~b["mask"], -1e9)
                loss = F.cross_entropy(logits, b["a"])
                sl = check_loss(loss, learner=self.name, iteration=self.iterations, what="avg")
                loss.backward()
            return sl

    return AutogradNFSP


def autograd_main(argv: list[str]) -> None:
    """Milliseconds per NFSP Trainer-style iteration (both seats' steps) with the gradients
    from ``ManualMLP`` against autograd's, the two pairs of learners (same seeds and config)
    timed in alternation in one process (thread CPU time; the median of the rounds)."""
    from nashzoo.agents.nfsp import NFSP

    parser = _alternating_parser("bench_neural.py autograd", "iterations", 4, warmup_default=8)
    args = parser.parse_args(argv)
    limit_threads()  # BLAS, OpenMP and torch: one thread (nashzoo.train.threads)
    config = json.loads(args.config)
    kinds = {"autograd": _autograd_nfsp(), "ManualMLP": NFSP}
    sides = {k: [cls(args.game, p, config, seed=p) for p in (0, 1)] for k, cls in kinds.items()}

    def iteration(pair: list[Any]) -> None:
        pair[0].step(pair[1].current_policy())
        pair[1].step(pair[0].current_policy())

    seconds = _time_alternating(sides, iteration, args.rounds, args.iterations, args.warmup)
    slow, fast = (seconds[k] * 1e3 for k in kinds)
    print("| game | learner | autograd ms/iteration | ManualMLP ms/iteration | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    print(f"| {args.game} | nfsp | {slow:.1f} | {fast:.1f} | {slow / fast:.2f}x |")
    print(_machine_line(f"; config {config or 'defaults'}"))


def levels_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench_neural.py levels|levels-report")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("levels", help="train one learner for several seeds")
    run.add_argument("game")
    run.add_argument("learner")
    run.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    run.add_argument("--budget", type=float, default=600.0, help="training seconds per seed")
    run.add_argument("--eval-every", type=float, default=15.0, help="training seconds")
    run.add_argument("--config", help="learner config as JSON (both seats)")
    run.add_argument("--label", help="row label (default: the learner name)")
    run.add_argument("--out", type=Path, required=True, help="JSON file the curves go to")
    run.add_argument(
        "--network-too",
        action="store_true",
        help="also record the exploitability of the networks being trained (network_points), "
        "for a learner whose output is another policy (mmd_ppo with output='ema')",
    )
    run.add_argument(
        "--processes",
        type=int,
        choices=(1, 2),
        default=1,
        help="2: the two seats step side by side, seat 1 in a worker process (Trainer "
        "processes=2, the simultaneous schedule); run seeds one after another then",
    )
    report = sub.add_parser("levels-report", help="table of levels held from JSON files")
    report.add_argument("files", type=Path, nargs="+")
    report.add_argument("--markdown", type=Path)
    report.add_argument("--note", default="", help="a reading of the results, added as a note")
    args = parser.parse_args(argv)
    limit_threads()  # BLAS, OpenMP and torch: one thread (nashzoo.train.threads)
    (run_levels if args.command == "levels" else report_levels)(args)


def threads_main(argv: list[str]) -> None:
    """Iterations of NFSP self-play in a fixed wall time with numpy's and torch's default
    thread pools against one thread each (:func:`limit_threads`), one process alone and two
    side by side: what busy-waiting BLAS workers cost runs that share the cores."""
    parser = argparse.ArgumentParser(prog="bench_neural.py threads")
    parser.add_argument("game", nargs="?", default="leduc_poker")
    parser.add_argument("--seconds", type=float, default=40.0, help="timed wall seconds a run")
    parser.add_argument("--warmup", type=int, default=50, help="iterations before the clock")
    parser.add_argument("--child", choices=("default", "one"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.child == "one":
            limit_threads()
        else:  # torch's own pool held to one thread, as every run here did before
            torch.set_num_threads(1)
        pair = [make_learner("nfsp", args.game, p, seed=p) for p in range(2)]

        def iteration() -> None:
            views = (pair[1].current_policy(), pair[0].current_policy())
            pair[0].step(views[0])
            pair[1].step(views[1])

        for _ in range(args.warmup):
            iteration()
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            iteration()
            done += 1
        print(done)
        return
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    command = [sys.executable, __file__, "threads", args.game, "--seconds", str(args.seconds)]
    command += ["--warmup", str(args.warmup), "--child"]
    rows = []
    for processes in (1, 2):
        cells = []
        for mode in ("default", "one"):
            runs = [
                subprocess.Popen([*command, mode], stdout=subprocess.PIPE, text=True, env=env)
                for _ in range(processes)
            ]
            counts = [int(run.communicate()[0].split()[-1]) for run in runs]
            cells.append(" and ".join(f"{c:,}" for c in counts))
        rows.append(["one alone" if processes == 1 else "two side by side", *cells])
    print(f"NFSP self-play on {args.game}: iterations in {args.seconds:.0f} s of wall time")
    print(_markdown(["processes", "default pools", "one thread each"], rows))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def processes_main(argv: list[str]) -> None:
    """Trainer iterations in a fixed training time with one process and with two
    (``Trainer(processes=2)``), alternating rounds in one process, both on the simultaneous
    schedule: what stepping the seats side by side buys."""
    parser = argparse.ArgumentParser(prog="bench_neural.py processes")
    parser.add_argument("game", nargs="?", default="leduc_poker")
    parser.add_argument("learner", nargs="?", default="nfsp")
    parser.add_argument("--config", default="{}", help="learner config as JSON (both seats)")
    parser.add_argument("--seconds", type=float, default=60.0, help="training seconds a run")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds")
    args = parser.parse_args(argv)
    config = json.loads(args.config)
    counts: dict[int, list[int]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for processes in (1, 2):
            with limit_threads():
                trainer = Trainer(
                    args.game,
                    args.learner,
                    args.learner,
                    configs=(config, config),
                    schedule="simultaneous",
                    evaluate_seats=False,
                    final_eval=False,
                    progress=False,
                    processes=processes,
                )
                trainer.run(seconds=args.seconds)
            counts[processes].append(trainer.iteration)
    rows = [[str(p), " and ".join(f"{c:,}" for c in counts[p])] for p in (1, 2)]
    ratio = statistics.median(counts[2]) / statistics.median(counts[1])
    print(f"{args.learner} self-play on {args.game}: iterations in {args.seconds:.0f} training s")
    print(_markdown(["processes", "iterations (each round)"], rows))
    print(f"two processes / one: {ratio:.2f}x (medians); {_machine_line()}")


def _greedy_table(game: str, seat: int, values: np.ndarray) -> Any:
    """The greedy policy on ``values`` (``[infosets, actions]``) at ``seat``'s information sets
    (uniform at the other seat's), as a TabularPolicy."""
    from nashzoo.agents.adapters import greedy

    tree = compile_tree(load_game(game))
    rows = tree.infosets_of(seat)
    probs = np.array(TabularPolicy.uniform(game).probs)
    probs[rows] = greedy(values[rows], tree.legal_mask[rows])
    return TabularPolicy(game, probs)


def br_gap_main(argv: list[str]) -> None:
    """How good NFSP's best responses are while it trains: every ``--every`` iterations, per
    seat, the exact best-response value against the opponent's behaviour policy (what the
    Q-network learns to answer) minus the value of the Q-network's greedy policy against it,
    and the same against the opponent's average policy (what fictitious play answers), next to
    the exploitability of the average policies. A gap of 0 is an exact best response.

    With ``memory="infoset"`` two more columns say which part of the learning is short:
    ``window means``, per seat, the gap (to the average) of the greedy policy on the replay
    window's mean target per information set and action (the Q-network's where the window
    has no transition), that is of the Q-network's own regression targets without the network;
    and ``counts' average``, the exploitability of the best-response play's frequencies that
    the average network is fitted to (the network's where there is no play)."""
    from nashzoo.agents.nfsp import NFSPBehaviourPolicy
    from nashzoo.agents.replay_memory import InfosetReplay
    from nashzoo.eval import best_response, expected_returns, exploitability

    parser = argparse.ArgumentParser(prog="bench_neural.py br-gap")
    parser.add_argument("game", nargs="?", default="leduc_poker")
    parser.add_argument("--config", default="{}", help="NFSP config as JSON (both seats)")
    parser.add_argument("--iterations", type=int, default=6000)
    parser.add_argument("--every", type=int, default=750)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    limit_threads()
    config = json.loads(args.config)
    trainer = Trainer(
        args.game, "nfsp", "nfsp", configs=(config, config), seed=args.seed, progress=False
    )
    pair = trainer.learners
    infoset = isinstance(pair[0].replay, InfosetReplay)
    tree = compile_tree(load_game(args.game))

    def greedy(learner: Any) -> NFSPBehaviourPolicy:
        return NFSPBehaviourPolicy(
            learner.q_net,
            learner.avg_net,
            eta=1.0,
            epsilon=0.0,
            game_id=learner.game.id,
            input_size=learner.input_size,
            num_actions=learner.num_actions,
            seat=learner.seat,
        )

    def gap(seat: int, own: Any, opponent: Any) -> float:
        joint: list[Any] = [None, None]
        joint[seat], joint[1 - seat] = own, opponent
        return (
            best_response(args.game, joint, seat).value - expected_returns(args.game, joint)[seat]
        )

    def window_means(learner: Any) -> np.ndarray:
        """The window's mean targets (bootstrapping from the Q-network's own values) where it
        has transitions, else the Q-network's values; on a copy of the replay, so training
        goes on untouched."""
        with torch.no_grad():
            values = learner.q_net(learner._all_inputs).double().numpy()
        replay = copy.deepcopy(learner.replay)
        replay.refresh(
            learner.replay_window,
            np.where(tree.legal_mask, values, -np.inf).max(axis=1),
            learner.config.discount,
        )
        rows, counts, sums, _, _ = replay.batch(tree.num_infosets, np.random.default_rng(0))
        seen = counts > 0
        means = values[rows]
        means[seen] = sums[seen] / counts[seen]
        values[rows] = means
        return values

    def counts_average(learner: Any) -> np.ndarray:
        rows = tree.infosets_of(learner.seat)
        probs = np.array(TabularPolicy.from_policy(args.game, learner.average_policy()).probs)
        memory = learner.reservoir
        played = rows[memory.weight[rows] > 0]
        probs[played] = memory.sums[played] / memory.weight[played, None]
        return probs

    head = ["iteration", "training s", "exploitability"]
    head += [f"seat {s} gap to {w}" for s in (0, 1) for w in ("behaviour", "average")]
    if infoset:
        head += [f"seat {s} window means" for s in (0, 1)] + ["counts' average"]
    rows = []
    while trainer.iteration < args.iterations:
        trainer.run(iterations=args.every)
        averages = [lr.average_policy() for lr in pair]
        row = [f"{trainer.iteration:,}", f"{trainer.train_seconds:.0f}"]
        row.append(f"{exploitability(args.game, averages):.3f}")
        for seat in (0, 1):
            for opponent in (pair[1 - seat].current_policy(), averages[1 - seat]):
                row.append(f"{gap(seat, greedy(pair[seat]), opponent):.3f}")
        if infoset:
            for seat in (0, 1):
                means = _greedy_table(args.game, seat, window_means(pair[seat]))
                row.append(f"{gap(seat, means, averages[1 - seat]):.3f}")
            tables = [TabularPolicy(args.game, counts_average(lr)) for lr in pair]
            row.append(f"{exploitability(args.game, tables):.3f}")
        rows.append(row)
        print(" | ".join(row), flush=True)
    print(f"NFSP on {args.game}, config {config or 'defaults'}, seed {args.seed}: best-response")
    print("gaps in chips (exact best response minus the greedy Q-policy, same opponent)")
    print(_markdown(head, rows))
    print(_machine_line())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("levels", "levels-report"):
        levels_main(sys.argv[1:])
        return
    subcommands = {
        "vec-env": vec_env_main,
        "autograd": autograd_main,
        "threads": threads_main,
        "processes": processes_main,
        "br-gap": br_gap_main,
    }
    if len(sys.argv) > 1 and sys.argv[1] in subcommands:
        subcommands[sys.argv[1]](sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="short budgets (about 8 minutes; the full run takes about 40)",
    )
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    parser.add_argument("--note", default="", help="extra line for the markdown notes")
    budgets = parser.add_argument_group("budgets in training seconds (override the mode's)")
    for flag in ("nfsp", "nfsp-peer", "dcfr", "dcfr-peer", "leduc", "ppo"):
        budgets.add_argument(f"--{flag}-budget", type=float)
    args = parser.parse_args()
    require_openspiel()  # before a minute of nashzoo's training, not after
    limit_threads()  # BLAS, OpenMP and torch: one thread (nashzoo.train.threads)
    quick = args.quick

    def budget(given: float | None, quick_value: float, full_value: float) -> float:
        return given if given is not None else (quick_value if quick else full_value)

    b_nfsp = budget(args.nfsp_budget, 60.0, 300.0)
    # OpenSpiel's NFSP sits at 0.13-0.15 for minutes
    b_nfsp_peer = budget(args.nfsp_peer_budget, 60.0, 600.0)
    b_dcfr = budget(args.dcfr_budget, 60.0, 300.0)
    b_dcfr_peer = budget(args.dcfr_peer_budget, b_dcfr, b_dcfr)
    b_leduc = budget(args.leduc_budget, 60.0, 600.0)
    b_ppo = budget(args.ppo_budget, 30.0, 120.0)
    load_before = os.getloadavg()
    sections: list[str] = []

    def show(title: str, table: str) -> None:
        print(f"\n{title}\n{table}", flush=True)
        sections.append(f"{title}\n\n{table}")

    # 1. NFSP on Kuhn
    ours = run_nashzoo("kuhn_poker", "nfsp", b_nfsp, 2.0, "exploitability", 0.05)
    print(f"# nashzoo nfsp: {ours.final()}", file=sys.stderr, flush=True)
    peer = run_openspiel_nfsp(b_nfsp_peer, 10_000, 0.05)
    print(f"# OpenSpiel nfsp: {peer.final()}", file=sys.stderr, flush=True)
    show(
        f"NFSP self-play on Kuhn poker (training budget {b_nfsp:.0f} s nashzoo, "
        f"{b_nfsp_peer:.0f} s OpenSpiel; evaluated every 2 s / every 10,000 episodes):",
        threshold_table([ours, peer], [0.10, 0.05]),
    )
    # 2. Deep CFR on Kuhn
    ours = run_nashzoo("kuhn_poker", "deep_cfr", b_dcfr, 1.0, "nash_conv", 0.05)
    example = run_openspiel_deep_cfr_example("kuhn_poker")
    peer = run_openspiel_deep_cfr("kuhn_poker", b_dcfr_peer, 2, 0.05)
    print(
        f"# deep cfr kuhn: {ours.final()} {example.final()} {peer.final()}",
        file=sys.stderr,
        flush=True,
    )
    show(
        f"Deep CFR self-play on Kuhn poker (budget {b_dcfr:.0f} s nashzoo, {b_dcfr_peer:.0f} s "
        "OpenSpiel checkpointed; evaluated every second (nashzoo) / every 2 iterations "
        "(OpenSpiel checkpointed)):",
        threshold_table([ours, example, peer], [0.10, 0.05]),
    )
    # 3. Deep CFR on Leduc
    ours = run_nashzoo("leduc_poker", "deep_cfr", b_leduc, b_leduc / 8, "nash_conv", None)
    peer = run_openspiel_deep_cfr("leduc_poker", b_leduc, 1 if quick else 3, None)
    show(
        f"Deep CFR self-play on Leduc hold'em, NashConv against iterations and training time "
        f"(budget {b_leduc:.0f} s each):",
        curve_table([ours, peer]),
    )
    # 4. PPO baseline (self-play against frozen snapshots)
    ppo = run_nashzoo(
        "kuhn_poker", "ppo", b_ppo, b_ppo / 4, "exploitability", None, {"mode": "self_play"}
    )
    nfsp_same = run_nashzoo("kuhn_poker", "nfsp", b_ppo, b_ppo / 4, "exploitability", None)
    show(
        f"Plain RL baseline on Kuhn poker: PPO (MaskablePPO, self-play against frozen snapshots) "
        f"next to NFSP, {b_ppo:.0f} s of training each; exploitability (NashConv / 2):",
        curve_table([ppo, nfsp_same], max_rows=5),
    )
    load_after = os.getloadavg()
    notes = [
        "- Measured "
        + provenance(
            load_before[0],
            load_after[0],
            ("numpy", "torch", "stable-baselines3", "open_spiel"),
        )
        + f"; {'quick' if quick else 'full'} mode"
        + (
            " with the budgets in the headings"
            if any(a.endswith("-budget") for a in sys.argv)
            else ""
        )
        + "."
        + (f" {args.note}" if args.note else ""),
    ]
    print("\n".join(notes))
    if args.markdown:
        intro = __doc__.split("\n\nRun:")[0].split("\n\n", 1)[1]
        body = "\n\n".join([intro, *sections, "\n".join(notes)])
        write_section(args.markdown, SECTION, body)
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
