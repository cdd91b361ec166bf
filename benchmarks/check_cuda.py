"""What only a machine with a CUDA GPU can check: every torch learner trained with
``device="cuda"``, against the same learner on the CPU.

For each learner (NFSP, Deep CFR, MMD-PPO, PPO, DQN) a self-play pair on Kuhn poker takes a few
tiny steps, and the script checks and reports:

* ``rng``: the caller's global generators (Python's, numpy's, torch's CPU and CUDA ones) are
  left as they were, as the learners promise;
* ``same seed``: a second pair with the same seeds ends with the same average policies, bit for
  bit;
* ``resume``: a checkpoint written after the steps, loaded on the GPU, takes one more step
  exactly as the pair it came from;
* ``on CPU``: the same checkpoint loads on the CPU with ``device="cpu"`` and gives the same
  policy to float32 precision (what a researcher who trained on a GPU does on a laptop);
* the NashConv of the GPU pair's average policies and of a CPU pair trained with the same seeds
  (reported: float arithmetic differs between the devices, so the runs part ways), and the
  seconds the steps took on each device.

``--speed`` also times NFSP (300 self-play iterations) and Deep CFR (10) on Leduc hold'em with
their default settings on each device (torch on one CPU thread, as the learners' own benchmarks
run it), after one warm-up iteration, in ``--rounds`` rounds with the devices taking turns.
``--markdown BENCHMARKS.md`` writes the results into its section "Neural learners on a GPU".

Then a network built on the GPU is evaluated exactly through ``from_network`` and compared with
its CPU copy. The checkpoints are written to ``--out`` so that loading them on a machine without
CUDA can be tried there.

Run on a machine with CUDA:
``python benchmarks/check_cuda.py [--out DIR] [--steps N] [--speed] [--markdown BENCHMARKS.md]``.
Exits 0 when every check holds, 1 when one fails, 2 when torch sees no CUDA device.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - the neural extra is missing
    sys.exit("check_cuda.py needs torch: pip install 'nashzoo[neural,rl]'")

from _common import provenance, write_section

from nashzoo.agents import TabularPolicy, learner_class, load_learner, make_learner
from nashzoo.agents.adapters import from_network
from nashzoo.eval import nash_conv
from nashzoo.games import load_game

GAME = "kuhn_poker"
CONFIGS: dict[str, dict[str, Any]] = {
    "nfsp": {"episodes_per_step": 64, "lanes": 16, "min_buffer_to_learn": 64, "learn_every": 16},
    "deep_cfr": {
        "traversals": 200,
        "strategy_traversals": 50,
        "advantage_steps": 8,
        "strategy_steps": 8,
        "batch_size": 64,
    },
    "mmd_ppo": {"steps_per_iteration": 256, "n_envs": 8, "magnet_every": 2},
    "ppo": {"steps_per_iteration": 512, "learning_rate": 3e-3},
    "dqn": {"steps_per_iteration": 500, "learning_starts": 200, "exploration_steps": 1500},
}


def global_rng_states() -> list[Any]:
    """Every global generator a learner could touch, as comparable values."""
    states = [random.getstate(), np.random.get_state()[1].tolist(), torch.get_rng_state()]
    if torch.cuda.is_available():
        states.extend(torch.cuda.get_rng_state_all())
    return [s.tolist() if isinstance(s, torch.Tensor) else s for s in states]


def make_pair(name: str, device: str, seed: int = 0) -> list[Any]:
    config = {**CONFIGS[name], "device": device}
    return [make_learner(name, GAME, seat, config, seed=seed + seat) for seat in range(2)]


def run(pair: list[Any], steps: int) -> None:
    for _ in range(steps):
        pair[0].step(pair[1].current_policy())
        pair[1].step(pair[0].current_policy())


def joint(pair: list[Any]) -> np.ndarray:
    return TabularPolicy.joint(GAME, [learner.average_policy() for learner in pair]).probs


def check_learner(name: str, steps: int, out: Path, device: str) -> dict[str, Any]:
    """The checks of the module docstring for one learner on ``device``."""
    row: dict[str, Any] = {"learner": name}
    before = global_rng_states()
    start = time.perf_counter()
    gpu = make_pair(name, device)
    run(gpu, steps)
    if device != "cpu":
        torch.cuda.synchronize()
    row["cuda_s"] = time.perf_counter() - start
    row["rng"] = global_rng_states() == before
    gpu_table = joint(gpu)
    row["nash_conv_cuda"] = nash_conv(GAME, gpu_table)

    again = make_pair(name, device)
    run(again, steps)
    row["same seed"] = bool(np.array_equal(joint(again), gpu_table))

    files = []
    for learner in gpu:
        path = out / f"{name}_seat{learner.seat}_cuda.npz"
        learner.save(path)
        files.append(path)
    loaded = [load_learner(path) for path in files]
    run(gpu, 1)
    run(loaded, 1)
    row["resume"] = bool(np.array_equal(joint(loaded), joint(gpu)))

    try:
        on_cpu = [load_learner(path, device="cpu") for path in files]
        row["on CPU"] = float(np.abs(joint(on_cpu) - gpu_table).max()) <= 1e-6
    except Exception as err:
        row["on CPU"] = f"{type(err).__name__}: {err}"

    start = time.perf_counter()
    cpu = make_pair(name, "cpu")
    run(cpu, steps)
    row["cpu_s"] = time.perf_counter() - start
    row["nash_conv_cpu"] = nash_conv(GAME, joint(cpu))
    row["max |cuda - cpu| policy"] = float(np.abs(joint(cpu) - gpu_table).max())
    return row


SPEED = {"nfsp": 300, "deep_cfr": 10}


def speed(name: str, device: str) -> float:
    """Seconds for ``SPEED[name]`` self-play iterations on Leduc with default settings."""
    pair = [
        make_learner(name, "leduc_poker", seat, {"device": device}, seed=seat) for seat in range(2)
    ]
    run(pair, 1)
    start = time.perf_counter()
    run(pair, SPEED[name])
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def check_from_network(device: str) -> dict[str, Any]:
    """An MLP on the GPU, evaluated exactly, against its CPU copy."""
    game = load_game(GAME)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(game.infoset_tensor_size, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, game.num_actions),
    )
    on_cpu = nash_conv(game, from_network(net, game))
    on_gpu = nash_conv(game, from_network(net.to(device), game))
    return {
        "learner": "from_network",
        "nash_conv_cpu": on_cpu,
        "nash_conv_cuda": on_gpu,
        "same": abs(on_cpu - on_gpu) <= 1e-6,
    }


SECTION = "## Neural learners on a GPU"


def _mark(value: Any) -> str:
    return "yes" if value is True else ("no" if value is False else str(value))


def markdown(rows: list[dict[str, Any]], where: str, line: str, rounds: int, steps: int = 3) -> str:
    """The section's generated part: the checks per learner (``steps`` self-play steps each),
    then the speed table."""
    checks = [r for r in rows if "nash_conv_cuda" in r or "error" in r]
    lines = [
        f"Every torch learner on {where} against the same learner on the CPU (Kuhn poker, "
        f"a self-play pair, the tiny settings of `benchmarks/check_cuda.py`, {steps} "
        f"step{'s' if steps != 1 else ''}). "
        "Generators: the caller's Python, numpy and torch (CPU and GPU) generators untouched; "
        "same seed: a second pair ends bit for bit equal; resume: a checkpoint loaded on the "
        "GPU takes the next step exactly as the pair it came from; on CPU: the checkpoint "
        'loaded with `device="cpu"` gives the same policy to 1e-6. NashConv after the steps '
        "on each device: float arithmetic differs in the last bits, and a sampled learner "
        "whose runs part ways ends elsewhere.",
        "",
        "| learner | generators | same seed | resume | on CPU | NashConv GPU | NashConv CPU "
        "| max policy difference |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in checks:
        if "error" in r:
            lines.append(f"| {r['learner']} | failed: {r['error']} | | | | | | |")
        elif r["learner"] == "from_network":
            lines.append(
                f"| from_network (an MLP moved to the GPU) | | | | {_mark(r['same'])} "
                f"| {r['nash_conv_cuda']:.9f} | {r['nash_conv_cpu']:.9f} | |"
            )
        else:
            lines.append(
                f"| {r['learner']} | {_mark(r['rng'])} | {_mark(r['same seed'])} "
                f"| {_mark(r['resume'])} | {_mark(r['on CPU'])} | {r['nash_conv_cuda']:.6f} "
                f"| {r['nash_conv_cpu']:.6f} | {r['max |cuda - cpu| policy']:.2g} |"
            )
    speeds = [r for r in rows if "cpu_rounds" in r]
    if speeds:
        lines += [
            "",
            "Leduc hold'em, default settings, self-play iterations (both seats), seconds: "
            f"median of {rounds} rounds, the devices taking turns (range in brackets). "
            "Torch on one CPU thread.",
            "",
            "| learner | iterations | CPU s | GPU s | GPU / CPU time |",
            "| --- | --- | --- | --- | --- |",
        ]
        for r in speeds:
            cpu, gpu = np.median(r["cpu_rounds"]), np.median(r["gpu_rounds"])
            lines.append(
                f"| {r['learner'].split()[0]} | {r['iterations']} "
                f"| {cpu:.2f} ({min(r['cpu_rounds']):.2f}-{max(r['cpu_rounds']):.2f}) "
                f"| {gpu:.2f} ({min(r['gpu_rounds']):.2f}-{max(r['gpu_rounds']):.2f}) "
                f"| {gpu / cpu:.2f} |"
            )
    lines += ["", f"- Measured {line}; GPU: {where}.", ""]
    return "\n".join(lines)


def _attempt(label: str, check: Any, *args: Any) -> dict[str, Any]:
    """``check(*args)``'s row, or a row saying how it failed (one failure is one row); printed
    as it comes."""
    try:
        row = check(*args)
    except Exception as err:
        row = {
            "learner": label,
            "error": f"{type(err).__name__}: {err}",
            "traceback": traceback.format_exc(),
        }
    print(json.dumps(row, default=str), flush=True)
    return row


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse wrong options before any work, in one line naming the fix: GPU time is scarce,
    and a misspelt learner came back as a failed row (a KeyError) after the others had run.
    A ``--device cpu`` dry run may write its section into a scratch copy, not into the
    repository's BENCHMARKS.md, where it would replace the GPU's results with CPU ones."""
    unknown = [name for name in args.learners.split(",") if name not in CONFIGS]
    if unknown:
        parser.error(
            f"--learners {','.join(unknown)}: not a torch learner checked here; choose from "
            + ",".join(CONFIGS)
        )
    device = args.device
    if device != "cpu" and not (
        device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())
    ):
        parser.error(f"--device {device}: use cuda, cuda:N, or cpu for a dry run")
    for flag, value in (("--steps", args.steps), ("--rounds", args.rounds)):
        if value < 1:
            parser.error(f"{flag} must be at least 1, got {value}")
    repository_copy = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
    if device == "cpu" and args.markdown and args.markdown.resolve() == repository_copy:
        parser.error(
            "--device cpu is a dry run: it would replace the GPU results in BENCHMARKS.md "
            "with CPU ones; write into a scratch copy (--markdown /tmp/BENCHMARKS.md)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("cuda-check"))
    parser.add_argument("--steps", type=int, default=3, help="self-play steps per pair")
    parser.add_argument("--learners", default=",".join(CONFIGS))
    parser.add_argument("--speed", action="store_true", help="time NFSP and Deep CFR on Leduc")
    parser.add_argument("--rounds", type=int, default=3, help="--speed rounds per device")
    parser.add_argument("--markdown", type=Path, help="write the section into this file")
    parser.add_argument(
        "--device", default="cuda", help="cpu: a dry run of the script itself, CPU against CPU"
    )
    args = parser.parse_args()
    check_args(parser, args)
    if args.device != "cpu" and not torch.cuda.is_available():
        print("torch sees no CUDA device here: nothing to check", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    torch.set_num_threads(1)
    for name in CONFIGS:  # imported first: some packages draw from `random` as they load
        learner_class(name)
    args.out.mkdir(parents=True, exist_ok=True)
    where = torch.cuda.get_device_name() if args.device != "cpu" else "CPU (dry run)"
    print(f"torch {torch.__version__}, {where}, numpy {np.__version__}")
    rows = [
        _attempt(name, check_learner, name, args.steps, args.out, args.device)
        for name in args.learners.split(",")
    ]
    rows.append(_attempt("from_network", check_from_network, args.device))
    if args.speed:
        for name in SPEED:
            cpu, gpu = [], []
            for _ in range(args.rounds):
                cpu.append(speed(name, "cpu"))
                gpu.append(speed(name, args.device))
            rows.append(
                {
                    "learner": f"{name} speed",
                    "iterations": SPEED[name],
                    "cpu_rounds": cpu,
                    "gpu_rounds": gpu,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    (args.out / "cuda_check.json").write_text(json.dumps(rows, indent=1, default=str))
    checks = ("rng", "same seed", "resume", "on CPU", "same")
    failed = [r for r in rows if "error" in r or any(r.get(c) not in (None, True) for c in checks)]
    print(f"{len(rows) - len(failed)} of {len(rows)} rows hold every check")
    if args.markdown:
        line = provenance(load_before, os.getloadavg()[0], ("torch", "numpy", "stable_baselines3"))
        write_section(args.markdown, SECTION, markdown(rows, where, line, args.rounds, args.steps))
        print(f"# wrote {SECTION!r} to {args.markdown}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
