"""Torch learners and devices: a checkpoint written on a GPU machine read on one without CUDA,
devices named in configs, and (where torch sees a GPU) what training there must keep: seeds,
the caller's generators, checkpoints that move between devices."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nashzoo.agents import (  # noqa: E402
    CheckpointError,
    TabularPolicy,
    load_learner,
    make_learner,
    uniform_policy,
)
from nashzoo.agents.loading import load_policy_file  # noqa: E402
from nashzoo.eval import seat_exploitability  # noqa: E402
from nashzoo.train import Trainer  # noqa: E402

CUDA = torch.cuda.is_available()
NFSP = {"episodes_per_step": 64, "lanes": 16, "min_buffer_to_learn": 64, "learn_every": 16}
DEEP_CFR = {
    "traversals": 100,
    "strategy_traversals": 20,
    "advantage_steps": 4,
    "strategy_steps": 4,
    "batch_size": 32,
}
PPO = {"steps_per_iteration": 128, "n_steps": 64, "batch_size": 32}


def _pair(name, config, device="cpu", seed=0):
    return [
        make_learner(name, "kuhn_poker", p, {**config, "device": device}, seed=seed + p)
        for p in range(2)
    ]


def _run(pair, steps):
    for _ in range(steps):
        pair[0].step(pair[1].current_policy())
        pair[1].step(pair[0].current_policy())


def _joint(pair):
    return TabularPolicy.joint("kuhn_poker", [lr.average_policy() for lr in pair]).probs


def _as_if_trained_on_a_gpu(learner):
    """The learner, its config saying it ran on ``cuda`` (what a checkpoint written on a GPU
    machine records); the state is the same on every device."""
    learner.config = dataclasses.replace(learner.config, device="cuda")
    return learner


@pytest.mark.skipif(CUDA, reason="checks what a machine without CUDA says")
@pytest.mark.parametrize(("name", "config"), [("nfsp", NFSP), ("deep_cfr", DEEP_CFR)])
def test_a_gpu_checkpoint_loads_on_a_cpu_machine_when_asked_and_its_policy_reads_anyway(
    tmp_path, name, config
):
    pair = _pair(name, config)
    _run(pair, 1)
    expected = _joint(pair)
    files = []
    for learner in pair:
        files.append(tmp_path / f"seat{learner.seat}.npz")
        _as_if_trained_on_a_gpu(learner).save(files[-1])

    with pytest.raises(CheckpointError, match=r"device='cuda'.*device='cpu'"):
        load_learner(files[0])
    loaded = [load_learner(file, device="cpu") for file in files]
    assert loaded[0].config.device == "cpu"
    assert np.array_equal(_joint(loaded), expected)
    # Reading the policy needs no choice: it is the same on any device.
    seat0 = load_policy_file(files[0])
    own = TabularPolicy.from_policy("kuhn_poker", loaded[0].average_policy())
    assert np.array_equal(seat0.probs, own.probs)
    # Training goes on from where it stopped, now on the CPU.
    _run(loaded, 1)
    assert all(lr.iterations == 2 for lr in loaded)


@pytest.mark.skipif(CUDA, reason="checks what a machine without CUDA says")
def test_a_gpu_training_run_resumes_on_the_cpu_when_asked(tmp_path):
    trainer = Trainer("kuhn_poker", *_pair("nfsp", NFSP), progress=False, final_eval=False)
    trainer.run(iterations=1)
    for learner in trainer.learners:
        _as_if_trained_on_a_gpu(learner)
    path = tmp_path / "run.npz"
    trainer.save(path)
    with pytest.raises(CheckpointError, match=r"seat 0 was trained with device='cuda'"):
        Trainer.load(path)
    resumed = Trainer.load(path, progress=False, device="cpu")
    assert [lr.config.device for lr in resumed.learners] == ["cpu", "cpu"]
    assert np.array_equal(load_policy_file(path).probs, _joint(resumed.learners))
    resumed.run(iterations=2)
    assert resumed.iteration == 3  # "2 more"


# Written by benchmarks/check_cuda.py on an NVIDIA H200 (torch 2.11.0+cu130), 2026-11-27: NFSP
# (the check's tiny settings) for seat 0 of Kuhn poker after 3 self-play steps with
# device="cuda". Its networks and Adam moments were saved from GPU tensors.
CUDA_CHECKPOINT = Path(__file__).parent / "data" / "nfsp_kuhn_seat0_trained_on_cuda.npz"


def test_a_checkpoint_written_on_a_gpu_reads_and_resumes_here():
    if not CUDA:
        with pytest.raises(CheckpointError, match=r"trained with device='cuda'.*device='cpu'"):
            load_learner(CUDA_CHECKPOINT)
    learner = load_learner(CUDA_CHECKPOINT, device="cpu")
    assert (learner.iterations, learner.env_steps, learner.config.device) == (3, 432, "cpu")
    policy = load_policy_file(CUDA_CHECKPOINT)  # no device to choose: the policy is the same
    assert np.array_equal(
        policy.probs, TabularPolicy.from_policy("kuhn_poker", learner.average_policy()).probs
    )
    # What `nashzoo eval` printed for this file on the CPU machine (GPU and CPU arithmetic
    # differ in the last bits of float32, so to 1e-6).
    assert seat_exploitability("kuhn_poker", policy, 0) == pytest.approx(0.354775, abs=1e-6)
    learner.step(uniform_policy("kuhn_poker"))
    assert learner.iterations == 4


def _train(*argv):
    from nashzoo.cli import main

    return main(["train", "--no-progress", *argv])


def _no_cuda_error(where, folder):
    return (
        f"error: {where} was trained with device='cuda' and torch sees no CUDA device here; "
        f"resume the run on the CPU: nashzoo train --out {folder} --resume --device cpu\n"
    )


def _gpu_trainer_checkpoint() -> bytes:
    """A trainer checkpoint after 3 iterations whose seat 0 is the learner an H200 wrote and
    whose seat 1 says it ran on ``cuda`` too (an NFSP learner trained here)."""
    from nashzoo.io import trainer_checkpoint_bytes

    seat0 = load_learner(CUDA_CHECKPOINT, device="cpu")
    seat1 = make_learner("nfsp", "kuhn_poker", 1, seat0.config, seed=1)
    for _ in range(3):
        seat1.step(seat0.current_policy())
    trainer = Trainer("kuhn_poker", seat0, seat1, progress=False)
    trainer.iteration = 3
    seat_files = [CUDA_CHECKPOINT.read_bytes(), _as_if_trained_on_a_gpu(seat1).checkpoint_bytes()]
    return trainer_checkpoint_bytes(trainer._state(), seat_files)


def test_a_run_folder_holding_the_gpu_checkpoint_resumes_here_with_device_cpu(tmp_path, capsys):
    """`nashzoo train --resume` of a run trained on a GPU failed on a machine without CUDA,
    naming only Python's way (``Trainer.load(path, device='cpu')``). The folder here holds the
    learner an H200 wrote (seat 0, its networks saved from GPU tensors) beside a seat 1 that
    says it ran on ``cuda`` too."""
    from nashzoo.train.run_folder import RunConfig

    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.npz").write_bytes(_gpu_trainer_checkpoint())
    RunConfig("kuhn_poker", ("nfsp", "nfsp"), iterations=3).write(run)
    if not CUDA:
        assert _train("--out", str(run), "--resume", "--iterations", "4") == 1
        assert capsys.readouterr().err == _no_cuda_error(f"{run}/checkpoint.npz, seat 0", run)
    assert _train("--out", str(run), "--resume", "--iterations", "4", "--device", "cpu") == 0
    resumed = Trainer.load(run / "checkpoint.npz")  # on the CPU now: no device to choose
    assert resumed.iteration == 4
    assert [lr.config.device for lr in resumed.learners] == ["cpu", "cpu"]


def test_a_resume_with_device_stores_the_device_in_the_runs_settings(tmp_path, capsys):
    """`train --out D --resume --device cpu` of a run whose stored settings say
    device='cuda' left train_config.json saying 'cuda' (only the checkpoint said cpu), so a
    start-over before the next checkpoint went back to CUDA. The device typed now is stored
    with the budget, once the resume is known to go on: not by a resume that is refused."""
    from nashzoo.train.run_folder import RunConfig

    run = tmp_path / "run"
    run.mkdir()
    checkpoint = _gpu_trainer_checkpoint()
    on_cuda = {**NFSP, "device": "cuda"}
    RunConfig("kuhn_poker", ("nfsp", "nfsp"), iterations=3, settings=(on_cuda, on_cuda)).write(run)
    config_file = run / "train_config.json"
    before = config_file.read_bytes()
    (run / "checkpoint.npz").write_bytes(checkpoint[: len(checkpoint) // 2])  # damaged
    assert _train("--out", str(run), "--resume", "--iterations", "4", "--device", "cpu") == 1
    assert config_file.read_bytes() == before  # refused: nothing stored
    (run / "checkpoint.npz").write_bytes(checkpoint)
    capsys.readouterr()
    assert _train("--out", str(run), "--resume", "--iterations", "4", "--device", "cpu") == 0
    stored = json.loads(config_file.read_text())
    assert stored["settings"] == [{**NFSP, "device": "cpu"}] * 2
    assert stored["iterations"] == 4
    # Killed before its next checkpoint: started over from the stored settings, on the CPU
    # without --device (on a machine without CUDA, 'cuda' stored here was refused).
    for name in ("checkpoint.npz", "average_policy.json", "history.csv", "result.json"):
        (run / name).unlink()
    capsys.readouterr()
    assert _train("--out", str(run), "--resume") == 0
    assert "starting the run over with its settings" in capsys.readouterr().out
    again = Trainer.load(run / "checkpoint.npz")
    assert [lr.config.device for lr in again.learners] == ["cpu", "cpu"]


def test_a_gpu_run_resumed_with_device_cpu_goes_on_as_a_cpu_run(tmp_path, capsys):
    """From its checkpoint, and from its stored settings when killed before the first one:
    the same numbers as a run that was on the CPU all along."""
    learner = "nfsp(" + ", ".join(f"{k}={v}" for k, v in NFSP.items()) + ")"
    assert _train("--learner", learner, "--iterations", "2", "--out", str(tmp_path / "cpu")) == 0
    straight = load_policy_file(tmp_path / "cpu" / "average_policy.json").probs
    run = tmp_path / "run"
    assert _train("--learner", learner, "--iterations", "1", "--out", str(run)) == 0
    trainer = Trainer.load(run / "checkpoint.npz")
    for seat in trainer.learners:
        _as_if_trained_on_a_gpu(seat)
    trainer.save(run / "checkpoint.npz")
    capsys.readouterr()
    if not CUDA:
        assert _train("--out", str(run), "--resume", "--iterations", "2") == 1
        assert capsys.readouterr().err == _no_cuda_error(f"{run}/checkpoint.npz, seat 0", run)
    assert _train("--out", str(run), "--resume", "--iterations", "2", "--device", "cpu") == 0
    assert np.array_equal(load_policy_file(run / "average_policy.json").probs, straight)

    # Killed before its first checkpoint: started over from train_config.json's settings.
    config_file = run / "train_config.json"
    config = json.loads(config_file.read_text())
    config["settings"] = [{**seat, "device": "cuda"} for seat in config["settings"]]
    config_file.write_text(json.dumps(config))
    for name in ("checkpoint.npz", "average_policy.json", "history.csv", "result.json"):
        (run / name).unlink()
    capsys.readouterr()
    if not CUDA:
        assert _train("--out", str(run), "--resume") == 1
        assert capsys.readouterr().err == _no_cuda_error(f"{config_file}, seat 0", run)
    assert _train("--out", str(run), "--resume", "--device", "cpu") == 0
    assert np.array_equal(load_policy_file(run / "average_policy.json").probs, straight)


def test_device_on_the_command_line_is_checked_and_says_when_it_moves_nothing(tmp_path, capsys):
    assert _train("--learner", "cfr", "--iterations", "2", "--device", "cpu") == 2
    assert "a new run's device is a learner setting: --set LEARNER.device=cpu" in (
        capsys.readouterr().err
    )
    assert _train("--out", str(tmp_path), "--resume", "--device", "tpu") == 2
    assert "--device: expected cpu, cuda, cuda:N or auto, got 'tpu'" in capsys.readouterr().err
    assert _train("--learner", "cfr", "--iterations", "2", "--out", str(tmp_path / "cfr")) == 0
    capsys.readouterr()
    argv = ["--out", str(tmp_path / "cfr"), "--resume", "--iterations", "3", "--device", "cpu"]
    assert _train(*argv) == 0
    assert "note: --device cpu changes nothing: this run's learners compute with numpy" in (
        capsys.readouterr().out
    )


def test_device_is_ignored_by_learners_that_compute_with_numpy(tmp_path):
    learner = make_learner("cfr_plus", "kuhn_poker", 0)
    learner.step(make_learner("cfr_plus", "kuhn_poker", 1).current_policy())
    learner.save(tmp_path / "cfr.npz")
    loaded = load_learner(tmp_path / "cfr.npz", device="cuda")
    assert np.array_equal(loaded.average_policy().probs, learner.average_policy().probs)


def test_a_gpu_checkpoints_policy_without_torch_is_left_to_name_the_extra(monkeypatch):
    """Reading the policy of a checkpoint trained on CUDA where torch is not installed raised
    a bare ``No module named 'torch'`` from the device check, before building the learner
    could say which extra to install."""
    from nashzoo.agents import loading

    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    assert loading._policy_device([{"device": "cuda"}]) is None
    assert loading._policy_device([{"device": "cpu"}, None]) is None


def test_devices_that_do_not_exist_are_refused_by_name():
    with pytest.raises(ValueError, match="'cpu', 'cuda', 'cuda:N' or 'auto', got 'tpu'"):
        make_learner("nfsp", "kuhn_poker", 0, {**NFSP, "device": "tpu"})
    with pytest.raises(ValueError, match="cuda:99"):
        make_learner("nfsp", "kuhn_poker", 0, {**NFSP, "device": "cuda:99"})


# --- the caller's generators, on every device --------------------------------------------------
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
TORCH_LEARNERS = [
    ("nfsp", NFSP),
    ("deep_cfr", DEEP_CFR),
    ("ppo", {"steps_per_iteration": 128, "batch_size": 32, "n_epochs": 2}),
    ("dqn", {"steps_per_iteration": 128, "learning_starts": 64, "exploration_steps": 256}),
    (  # a magnet from the first step on: a frozen copy of the policy, on the learner's device
        "mmd_ppo",
        {
            "steps_per_iteration": 128,
            "n_envs": 8,
            "batch_size": 64,
            "n_epochs": 2,
            "magnet_every": 1,
        },
    ),
    (  # and a moving average of the policy as the magnet, also on the learner's device
        "mmd_ppo",
        {
            "steps_per_iteration": 128,
            "n_envs": 8,
            "batch_size": 64,
            "ema_rate": 0.1,
            "magnet": "ema",
        },
    ),
]


def _global_states():
    """Every global generator a learner could draw from: Python's, numpy's, torch's (CPU and
    each GPU's)."""
    states = [random.getstate(), np.random.get_state()[1].tolist(), torch.get_rng_state().tolist()]
    return states + [s.tolist() for s in torch.cuda.get_rng_state_all()] if CUDA else states


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
@pytest.mark.parametrize(("name", "config"), TORCH_LEARNERS)
def test_torch_learners_keep_their_seeds_and_leave_the_callers_generators_alone(
    name, config, device
):
    if name in ("ppo", "dqn", "mmd_ppo"):
        pytest.importorskip("sb3_contrib")
    from nashzoo.agents import learner_class

    learner_class(name)  # imported first: some packages draw from `random` as they load
    before = _global_states()
    first = _pair(name, config, device)
    _run(first, 2)
    assert _global_states() == before  # building the networks too (nn.Linear's own init)
    again = _pair(name, config, device)
    _run(again, 2)
    assert np.array_equal(_joint(again), _joint(first))


@needs_cuda
@pytest.mark.parametrize(("name", "config"), [("nfsp", NFSP), ("deep_cfr", DEEP_CFR)])
def test_a_cuda_checkpoint_resumes_exactly_on_the_gpu_and_reads_the_same_on_the_cpu(
    tmp_path, name, config
):
    pair = _pair(name, config, "cuda")
    _run(pair, 1)
    files = []
    for learner in pair:
        files.append(tmp_path / f"seat{learner.seat}.npz")
        learner.save(files[-1])
    on_cpu = [load_learner(file, device="cpu") for file in files]
    assert np.allclose(_joint(on_cpu), _joint(pair), atol=1e-6)
    loaded = [load_learner(file) for file in files]
    assert loaded[0].device.type == "cuda"
    _run(loaded, 1)
    _run(pair, 1)
    assert np.array_equal(_joint(loaded), _joint(pair))


@needs_cuda
def test_a_gpu_learner_steps_in_a_worker_process_with_the_serial_results():
    from nashzoo.train.threads import limit_threads

    config = {"hidden_sizes": [16], "episodes_per_step": 16, "device": "cuda"}
    options = dict(configs=(config, config), schedule="simultaneous", eval_every=2, progress=False)
    with limit_threads():
        serial = Trainer("kuhn_poker", "nfsp", "nfsp", **options).run(iterations=4)
    both = Trainer("kuhn_poker", "nfsp", "nfsp", **options, processes=2).run(iterations=4)
    history = [[(r.iteration, r.nash_conv) for r in result.history] for result in (serial, both)]
    assert history[0] == history[1]
