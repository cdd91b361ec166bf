"""No silent wrong answer and no lost run: checkpoint arrays of every learner are checked,
resuming is explicit, output folders are guarded, stored results are validated."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from nashzoo.agents import (
    CheckpointError,
    TabularPolicy,
    learner_class,
    learner_names,
    load_learner,
    make_learner,
)
from nashzoo.cli import main
from nashzoo.games import load_game
from nashzoo.io import (
    FolderLockedError,
    atomic_write_bytes,
    folder_lock,
    remove_stale_temp_files,
)
from nashzoo.train import Trainer


# --- checkpoint arrays: every learner goes through Learner.checked_state_arrays ----------------
def _config(name: str) -> dict | None:
    """A config that builds ``name`` on Kuhn (only ``fixed`` needs one)."""
    if name != "fixed":
        return None
    return {"strategy": TabularPolicy.uniform("kuhn_poker").to_dict()}


def _learners() -> list[str]:
    """nashzoo's own learners that can play Kuhn (other test modules register more)."""
    names = []
    for name in learner_names():
        try:
            if not learner_class(name).__module__.startswith("nashzoo."):
                continue
            make_learner(name, "kuhn_poker", 0, _config(name))
        except ImportError:
            continue  # its optional extra is not installed
        except ValueError:
            continue  # it cannot play Kuhn (regret_matching: matrix games)
        names.append(name)
    return names


@pytest.fixture(params=_learners())
def saved_learner(request, tmp_path) -> tuple[str, dict[str, np.ndarray], Path]:
    name = request.param
    learner = make_learner(name, "kuhn_poker", 0, _config(name))
    learner.step(TabularPolicy.uniform("kuhn_poker"))
    path = tmp_path / "learner.npz"
    learner.save(path)
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    return name, arrays, tmp_path


def _write(tmp: Path, arrays: dict[str, np.ndarray]) -> Path:
    path = tmp / "edited.npz"
    np.savez(path, **arrays)
    return path


def test_every_learner_refuses_an_unexpected_array(saved_learner):
    _, arrays, tmp = saved_learner
    path = _write(tmp, {**arrays, "smuggled": np.zeros(3)})
    with pytest.raises(CheckpointError, match=r"unexpected \['smuggled'\]"):
        load_learner(path)


def test_every_learner_refuses_non_finite_numbers(saved_learner):
    name, arrays, tmp = saved_learner
    real = [k for k, v in arrays.items() if v.dtype.kind == "f" and v.size and k != "__meta__"]
    if not real:
        pytest.skip(f"{name} stores no real-valued arrays")
    for key in real:
        edited = {k: v.copy() for k, v in arrays.items()}
        edited[key].flat[0] = np.nan
        with pytest.raises(CheckpointError, match=f"'{key}' holds 1 non-finite value"):
            load_learner(_write(tmp, edited))


@pytest.mark.parametrize(
    ("name", "key", "value", "message"),
    [
        ("cfr", "strategy_sum", -1.0, "must be non-negative"),
        ("cfr_plus", "strategy_sum", -2.0, "must be non-negative"),
        ("xfp", "plan", -0.5, "must be non-negative"),
        ("os_mccfr", "average", -1.0, "must be non-negative"),
        ("regret_matching", "strategy_sum", -1.0, "must be non-negative"),
    ],
)
def test_negative_average_sums_are_refused(tmp_path, name, key, value, message):
    game = "rps" if name == "regret_matching" else "kuhn_poker"
    learner = make_learner(name, game, 0)
    learner.step(learner.current_policy())
    learner.save(tmp_path / "l.npz")
    with np.load(tmp_path / "l.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays[key] = np.where(arrays[key] > 0, value, arrays[key])
    with pytest.raises(CheckpointError, match=message):
        load_learner(_write(tmp_path, arrays))


def test_network_weights_with_nan_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    from nashzoo.agents._torch_utils import pack_torch, unpack_torch

    blob = pack_torch({"nets": {"w": torch.tensor([1.0, float("nan")])}})
    with pytest.raises(ValueError, match=r"torch_state\['nets'\]\['w'\] holds NaN"):
        unpack_torch(blob)


def test_values_on_the_other_seats_rows_are_refused(tmp_path):
    learner = make_learner("cfr", "kuhn_poker", 0)
    learner.save(tmp_path / "l.npz")
    with np.load(tmp_path / "l.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["regrets"][:] = 1.0
    with pytest.raises(CheckpointError, match="non-zero where it must be zero"):
        load_learner(_write(tmp_path, arrays))


def test_the_issue_examples_give_errors_not_the_uniform_policys_numbers(tmp_path, capsys):
    """A checkpoint with NaN regrets used to be evaluated as the uniform policy (0.916667)."""
    out = tmp_path / "run"
    assert main(["train", "--learner", "cfr", "--iterations", "5", "--out", str(out)]) == 0
    ckpt = out / "checkpoint.npz"
    with np.load(ckpt) as data:
        entries = {k: data[k] for k in data.files}
    seat = io.BytesIO(entries["seat0"].tobytes())
    with np.load(seat) as data:
        inner = {k: data[k] for k in data.files}
    inner["regrets"][0, 0] = np.nan
    buffer = io.BytesIO()
    np.savez(buffer, **inner)
    entries["seat0"] = np.frombuffer(buffer.getvalue(), dtype=np.uint8)
    np.savez(ckpt, **entries)
    capsys.readouterr()
    assert main(["eval", str(ckpt)]) == 1
    assert main(["train", "--resume", "--out", str(out), "--iterations", "9"]) == 1
    err = capsys.readouterr()
    assert "0.916667" not in err.out and err.err.count("non-finite") == 2


# --- train runs ---------------------------------------------------------------------------------
def _train(tmp: Path, *extra: str) -> int:
    return main(["train", "--out", str(tmp / "run"), "--no-progress", *extra])


def test_resume_refuses_options_that_contradict_the_run(tmp_path, capsys):
    assert _train(tmp_path, "--learner", "os_mccfr", "--iterations", "20") == 0
    capsys.readouterr()
    argv = ["--resume", "--learner", "cfr", "--game", "leduc_poker", "--seed", "5"]
    assert _train(tmp_path, *argv, "--iterations", "40") == 1
    err = capsys.readouterr().err
    assert "--game leduc_poker (the run has kuhn_poker)" in err
    assert "cfr vs cfr (the run has os_mccfr vs os_mccfr)" in err and "--seed 5" in err
    # the same options typed again are fine
    assert _train(tmp_path, "--resume", "--learner", "os_mccfr", "--iterations", "40") == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["iterations"] == 40


def test_a_run_started_over_keeps_its_settings_when_its_learner_is_typed_again(tmp_path):
    """A run killed before its first checkpoint is started over from train_config.json; with
    its learner typed again (allowed: the same name), it started over with that learner's
    defaults instead, and its checkpoint then disagreed with its folder's config."""
    learner = "cfr_plus(averaging_delay=5)"
    assert _train(tmp_path, "--learner", learner, "--iterations", "8") == 0
    run = tmp_path / "run"
    straight = json.loads((run / "result.json").read_text())
    (run / "checkpoint.npz").unlink()
    assert _train(tmp_path, "--resume", "--learner", "cfr_plus", "--iterations", "8") == 0
    again = json.loads((run / "result.json").read_text())
    assert again["configs"] == straight["configs"] == [{"averaging_delay": 5}] * 2
    assert [r["nash_conv"] for r in again["history"]] == [
        r["nash_conv"] for r in straight["history"]
    ]


def test_budgets_are_totals_and_checkpointing_survives_a_resume(tmp_path, capsys, monkeypatch):
    saves: list[int] = []
    real_save = Trainer.save

    def counting_save(self, path):
        saves.append(self.iteration)
        real_save(self, path)

    monkeypatch.setattr(Trainer, "save", counting_save)
    assert (
        _train(tmp_path, "--learner", "cfr", "--iterations", "10", "--checkpoint-every", "5") == 0
    )
    assert saves == [5, 10, 10]
    saves.clear()
    assert _train(tmp_path, "--resume", "--iterations", "20") == 0
    assert saves == [15, 20, 20]  # --checkpoint-every 5 came from the run folder
    assert json.loads((tmp_path / "run" / "result.json").read_text())["iterations"] == 20
    capsys.readouterr()
    assert _train(tmp_path, "--resume", "--iterations", "20") == 0  # the same command again
    assert "already at its budget (20 iterations in total)" in capsys.readouterr().out
    assert json.loads((tmp_path / "run" / "result.json").read_text())["iterations"] == 20


def test_a_resume_refused_for_a_damaged_checkpoint_keeps_the_stored_budget(tmp_path, capsys):
    """`train --resume --iterations N` stored the new budget before it read the checkpoint, so
    a damaged checkpoint left the folder's config changed though the command failed."""
    assert _train(tmp_path, "--learner", "cfr", "--iterations", "5") == 0
    config_file = tmp_path / "run" / "train_config.json"
    before = config_file.read_bytes()
    checkpoint = tmp_path / "run" / "checkpoint.npz"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    capsys.readouterr()
    assert _train(tmp_path, "--resume", "--iterations", "50") == 1
    assert "checkpoint" in capsys.readouterr().err
    assert config_file.read_bytes() == before


def test_a_checkpoint_that_is_not_the_folders_run_is_refused(tmp_path, capsys):
    assert _train(tmp_path, "--learner", "cfr", "--iterations", "5") == 0
    config = tmp_path / "run" / "train_config.json"
    config.write_text(config.read_text().replace('"cfr"', '"xfp"'))
    capsys.readouterr()
    assert _train(tmp_path, "--resume", "--iterations", "9") == 1
    assert "the folder was mixed up" in capsys.readouterr().err


def test_an_existing_run_is_not_overwritten_without_force(tmp_path, capsys):
    assert _train(tmp_path, "--learner", "cfr", "--iterations", "5") == 0
    before = (tmp_path / "run" / "checkpoint.npz").read_bytes()
    capsys.readouterr()
    assert _train(tmp_path, "--learner", "xfp", "--iterations", "5") == 1
    assert "already holds a run" in capsys.readouterr().err
    assert (tmp_path / "run" / "checkpoint.npz").read_bytes() == before
    assert _train(tmp_path, "--learner", "xfp", "--iterations", "5", "--force") == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["learner0"] == "xfp"


def test_settings_only_the_learner_can_check_are_refused_before_the_folder_is_claimed(
    tmp_path, capsys
):
    pytest.importorskip("torch")
    # NFSP's memory='infoset' needs play over the tree: refused when the learner is built, which
    # came after train_config.json was written, so the fixed command was refused as "already
    # holds a run", and --force had already deleted the run it was to replace.
    bad = "nfsp(memory='infoset', play='env')"
    assert _train(tmp_path, "--learner", bad, "--iterations", "1") == 1
    assert "memory='infoset' needs play over the compiled tree" in capsys.readouterr().err
    assert not (tmp_path / "run" / "train_config.json").exists()
    assert _train(tmp_path, "--learner", "cfr", "--iterations", "2") == 0
    before = (tmp_path / "run" / "checkpoint.npz").read_bytes()
    assert _train(tmp_path, "--learner", bad, "--iterations", "1", "--force") == 1
    assert (tmp_path / "run" / "checkpoint.npz").read_bytes() == before  # the run is kept
    capsys.readouterr()
    huge = "ppo(steps_per_iteration=1000000000000)"  # a rollout buffer of 7 TiB
    assert _train(tmp_path / "other", "--learner", huge, "--iterations", "1") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs more memory than this machine has" in err
    assert "perhaps a bug" not in err
    assert not (tmp_path / "other" / "run" / "train_config.json").exists()


def test_a_bad_out_is_refused_before_training(tmp_path, capsys, monkeypatch):
    trained = []
    monkeypatch.setattr(Trainer, "run", lambda self, **kw: trained.append(kw))
    (tmp_path / "file").write_text("x")
    argv = ["train", "--learner", "cfr", "--iterations", "5", "--out"]
    assert main([*argv, str(tmp_path / "file")]) == 1
    assert main([*argv, str(tmp_path / "file" / "sub")]) == 1
    assert trained == []


# --- output folders -----------------------------------------------------------------------------
RACE = ["race", "--learners", "cfr", "--seeds", "1", "--budget-seconds", "0"]
RACE += ["--budget-iterations", "3", "--no-progress", "--no-plots"]


def test_a_race_folder_is_locked_while_a_race_writes_it(tmp_path, capsys):
    out = tmp_path / "race"
    with folder_lock(out):  # another race holds it
        assert main([*RACE, "--out", str(out)]) == 1
        assert "being written by this process" in capsys.readouterr().err
        with pytest.raises(FolderLockedError), folder_lock(out):
            pass
    assert main([*RACE, "--out", str(out)]) == 0


def test_an_existing_race_needs_resume_or_force(tmp_path, capsys):
    out = str(tmp_path / "race")
    assert main([*RACE, "--out", out]) == 0
    capsys.readouterr()
    assert main([*RACE, "--out", out, "--learners", "xfp"]) == 1
    assert "already holds a race" in capsys.readouterr().err
    assert main([*RACE, "--out", out, "--learners", "xfp", "--force"]) == 0
    assert [p.name for p in (tmp_path / "race" / "runs").iterdir()] == ["self-xfp-seed0"]


def test_an_edited_result_is_run_again_on_resume(tmp_path, capsys):
    out = tmp_path / "race"
    assert main([*RACE, "--out", str(out)]) == 0
    result = out / "runs" / "self-cfr-seed0" / "result.json"
    payload = json.loads(result.read_text())
    payload["history"][-1]["exploitability"] = 0.0  # a "better" number typed in
    result.write_text(json.dumps(payload))
    capsys.readouterr()
    assert main(["race", "--resume", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "checksum does not match its contents" in printed
    assert json.loads(result.read_text())["history"][-1]["exploitability"] > 0


def test_a_race_with_a_plugin_resumes_without_typing_it_again(tmp_path):
    (tmp_path / "my_idle_plugin.py").write_text(
        "from nashzoo.agents import UniformLearner, register\n"
        "@register\n"
        "class Idle(UniformLearner):\n"
        "    name = 'idle_resume_plugin'\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    # like the installed `nashzoo` script: its own folder, not the current one, is on sys.path
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nashzoo_script.py").write_text(
        "from nashzoo.cli import main\nraise SystemExit(main())\n"
    )
    argv = [sys.executable, str(tmp_path / "bin" / "nashzoo_script.py")]
    env = {"PYTHONPATH": root, "PATH": "/usr/bin:/bin"}
    race = [*RACE[:2], "idle_resume_plugin,cfr", *RACE[3:], "--out", "r", "--workers", "1"]
    first = subprocess.run(
        [*argv, "--plugin", "my_idle_plugin", *race], cwd=tmp_path, env=env, capture_output=True
    )
    assert first.returncode == 0, first.stderr
    again = subprocess.run(
        [*argv, "race", "--resume", "--out", "r", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    assert "resuming: 2 of 2 runs already finished" in again.stdout


def test_resume_names_the_options_that_changed(tmp_path, capsys):
    out = str(tmp_path / "race")
    assert main([*RACE, "--out", out]) == 0
    capsys.readouterr()
    assert (
        main(["race", "--resume", "--out", out, "--budget-iterations", "4", "--no-progress"]) == 0
    )
    printed = capsys.readouterr().out
    assert "--budget-iterations 4 (the stored race has 3)" in printed


def test_a_damaged_race_config_is_named(tmp_path, capsys):
    out = tmp_path / "race"
    assert main([*RACE, "--out", str(out)]) == 0
    config = json.loads((out / "race_config.json").read_text())
    config["seeds"] = "three"
    (out / "race_config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert main(["race", "--resume", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "race_config.json: seeds must be a positive integer, got 'three'" in err


# --- atomic writes ------------------------------------------------------------------------------
def test_atomic_writes_keep_their_temporary_file_beside_the_target(tmp_path, monkeypatch):
    created = []
    real_open = __import__("os").open

    def spying_open(path, *args, **kwargs):
        created.append(Path(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("nashzoo.io.atomic.os.open", spying_open)
    atomic_write_bytes(tmp_path / "sub" / "x.json", b"{}")
    temps = [p for p in created if p.name.endswith(".nashzoo-tmp")]
    assert temps and all(p.parent == tmp_path / "sub" for p in temps)
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["x.json"]


def test_atomic_writes_flush_to_disk_unless_told_not_to(tmp_path, monkeypatch):
    """durable=False (a tournament's pairings: many small checked files) leaves out both
    fsyncs, about 7 ms a file, and is atomic all the same."""
    synced = []
    real_fsync = __import__("os").fsync
    monkeypatch.setattr("nashzoo.io.atomic.os.fsync", lambda fd: synced.append(real_fsync(fd)))
    atomic_write_bytes(tmp_path / "durable.json", b"{}")
    assert len(synced) == 2  # the file, then its folder (the rename)
    atomic_write_bytes(tmp_path / "quick.json", b"[]", durable=False)
    assert len(synced) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["durable.json", "quick.json"]
    assert (tmp_path / "quick.json").read_bytes() == b"[]"


def test_an_atomic_rewrite_keeps_the_files_permissions_when_asked(tmp_path):
    """The benchmarks kept their own atomic writer for BENCHMARKS.md because this one set a
    rewritten file's permissions from the umask; ``keep_mode`` keeps the file's own."""
    import stat

    from nashzoo.io.atomic import _UMASK

    path = tmp_path / "doc.md"
    path.write_bytes(b"old")
    for kept in (0o640, 0o600, 0o664):  # none of them what the umask gives
        path.chmod(kept)
        atomic_write_bytes(path, b"new", keep_mode=True)
        assert (stat.S_IMODE(path.stat().st_mode), path.read_bytes()) == (kept, b"new")
    atomic_write_bytes(path, b"newer")  # by default: what a plain open() gives a new file
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_UMASK
    atomic_write_bytes(tmp_path / "fresh.md", b"x", keep_mode=True)  # no file: nothing to keep
    assert stat.S_IMODE((tmp_path / "fresh.md").stat().st_mode) == 0o666 & ~_UMASK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.md", "fresh.md"]


def test_a_trainer_checkpoint_goes_straight_to_its_file_and_a_failed_one_leaves_the_old(
    tmp_path, monkeypatch
):
    """Trainer.save built the whole checkpoint as bytes before writing it: 2.5 times the file's
    size in allocations (a trainer's 1.4 GB checkpoint at the top of the scale ladder). It now
    writes through ``atomic_file``: the same bytes, and a write that fails midway leaves the
    last good checkpoint and no temporary file."""
    import tracemalloc

    import numpy as np

    from nashzoo.io import trainer_checkpoint_bytes
    from nashzoo.train import Trainer

    trainer = Trainer("liars_dice", "cfr_plus", "cfr_plus", final_eval=False, progress=False)
    trainer.run(iterations=1)
    path = tmp_path / "checkpoint.npz"
    trainer.save(path)  # once before: what a first save makes and keeps is not counted
    tracemalloc.start()
    trainer.save(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2.2 * path.stat().st_size  # 10 MB: 18 MB at the peak, 26 MB before
    seats = [learner.checkpoint_bytes() for learner in trainer.learners]
    assert path.read_bytes() == trainer_checkpoint_bytes(trainer._state(), seats)
    good = path.read_bytes()
    trainer.run(iterations=1)

    def savez_then_fail(handle, **arrays):
        handle.write(b"PK part of a zip")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "savez", savez_then_fail)
    with pytest.raises(OSError, match="No space left"):
        trainer.save(path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]


def test_a_learner_checkpoint_goes_straight_to_its_file_too(tmp_path, monkeypatch):
    """Learner.save also built its file as bytes first; it writes through ``atomic_file`` as
    Trainer.save does: the bytes of ``checkpoint_bytes()``, and a failed write (or a diverged
    learner) leaves the last good checkpoint."""
    import numpy as np

    from nashzoo.agents import TabularPolicy, make_learner

    learner = make_learner("cfr_plus", "kuhn_poker", 0, seed=0)
    learner.step(TabularPolicy.uniform("kuhn_poker"))
    path = tmp_path / "learner.npz"
    learner.save(path)
    assert path.read_bytes() == learner.checkpoint_bytes()
    good = path.read_bytes()
    learner.step(TabularPolicy.uniform("kuhn_poker"))

    def savez_then_fail(handle, **arrays):
        handle.write(b"PK part of a zip")
        raise OSError("No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(np, "savez", savez_then_fail)
        with pytest.raises(OSError, match="No space left"):
            learner.save(path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learner.npz"]


def test_stale_temporary_files_are_removed(tmp_path):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / ".result.json.0123abcd.nashzoo-tmp").write_bytes(b"partial")
    (tmp_path / "keep.json").write_text("{}")
    assert remove_stale_temp_files(tmp_path) == 1
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["keep.json"]


def test_checkpoints_never_touch_the_system_temp_folder(tmp_path, monkeypatch):
    private = tmp_path / "system_tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    trainer = Trainer(load_game("kuhn_poker"), "cfr", "os_mccfr")
    trainer.run(iterations=3)
    trainer.save(tmp_path / "t.npz")
    Trainer.load(tmp_path / "t.npz")
    assert list(private.iterdir()) == []


def test_a_race_and_a_training_run_never_share_a_folder(tmp_path, capsys):
    race, run = tmp_path / "race", tmp_path / "run"
    assert main([*RACE, "--out", str(race)]) == 0
    assert _train(tmp_path, "--learner", "cfr", "--iterations", "3") == 0
    capsys.readouterr()
    for force in ([], ["--force"]):
        argv = ["train", "--learner", "cfr", "--iterations", "3", "--out", str(race), *force]
        assert main(argv) == 1
        assert "holds a race (race_config.json), not a training run" in capsys.readouterr().err
        assert main([*RACE, "--out", str(run), *force]) == 1
        assert "holds a training run (train_config.json), not a race" in capsys.readouterr().err
    assert not (race / "train_config.json").exists() and not (run / "race_config.json").exists()


def test_resuming_a_folder_that_does_not_exist_leaves_nothing_behind(tmp_path, capsys):
    assert main(["train", "--resume", "--out", str(tmp_path / "none")]) == 2
    assert "no run to resume in" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_ends_a_training_run_at_a_step_and_keeps_it(tmp_path, capsys, monkeypatch, sig):
    """The first Ctrl-C lets the step finish, then the run ends as at a spent budget: the
    checkpoint and outputs hold every finished iteration, and --resume goes on from there.
    SIGTERM (``kill PID``, a batch scheduler's notice) and SIGHUP (the terminal closed) do the
    same, with the shell's status for them (143, 129); they used to end the process on the
    spot, writing none of the outputs."""
    import os
    import signal

    from nashzoo.train import Trainer

    if not hasattr(signal, sig):
        pytest.skip(f"no {sig} here")
    original = Trainer.step
    term_handler = signal.getsignal(signal.SIGTERM)
    # a suite started under nohup ignores SIGHUP, and then so does nashzoo: give it its default
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL) if sig == "SIGHUP" else None

    def step_then_ctrl_c(self):
        metrics = original(self)
        if self.iteration == 7:
            os.kill(os.getpid(), getattr(signal, sig))  # Ctrl-C (or a kill) inside the run
        return metrics

    monkeypatch.setattr(Trainer, "step", step_then_ctrl_c)
    try:
        status = _train(tmp_path, "--learner", "os_mccfr", "--iterations", "50")
    finally:
        if hangup is not None:
            signal.signal(signal.SIGHUP, hangup)
    assert status == {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}[sig]
    err = capsys.readouterr().err
    again = "Ctrl-C again" if sig == "SIGINT" else f"another {sig}"
    assert f"stopping after this step ({again} to interrupt at once, losing the steps" in err
    assert "interrupted at iteration 7; the same command with --resume trains on to 50" in err
    stored = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (stored["iterations"], stored["stopped_by"]) == (7, "interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    assert signal.getsignal(signal.SIGTERM) is term_handler
    monkeypatch.setattr(Trainer, "step", original)
    assert _train(tmp_path, "--resume") == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["iterations"] == 50
    before = (tmp_path / "run" / "result.json").read_bytes()
    assert _train(tmp_path, "--resume") == 0  # already at its budget: nothing is rewritten
    assert "already at its budget" in capsys.readouterr().out
    assert (tmp_path / "run" / "result.json").read_bytes() == before


def test_a_second_sigterm_interrupts_at_once_and_a_command_without_its_own_handling_says_so(
    tmp_path, capsys, monkeypatch
):
    """Two SIGTERMs (a scheduler's notice, then an impatient ``kill``): the second stops the
    step at once, as a second Ctrl-C does, with status 143 and "terminated" on stderr; the
    checkpoint written before stays. With SIGINT ignored (a background job of a
    non-interactive shell), SIGTERM still stops a run."""
    import os
    import signal

    from nashzoo.train import Trainer

    original = Trainer.step

    def step_then_two_kills(self):
        metrics = original(self)
        if self.iteration == 7:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)  # lands inside this step's end
        return metrics

    monkeypatch.setattr(Trainer, "step", step_then_two_kills)
    import importlib

    cli_main = importlib.import_module("nashzoo.cli.main")  # the module, not the function
    monkeypatch.setattr(cli_main, "SAME_EVENT_SECONDS", 0.0)  # the second is a second request
    argv = ["--learner", "cfr", "--iterations", "50", "--checkpoint-every", "5"]
    assert _train(tmp_path, *argv) == 143
    said = capsys.readouterr().err.splitlines()
    assert said[-1] == "terminated"
    assert said[-2].startswith("stopped inside iteration 8: ")
    assert "as of its last checkpoint (one every 5 iterations); the same command with" in said[-2]
    assert not (tmp_path / "run" / "result.json").exists()  # stopped inside the step
    assert (tmp_path / "run" / "checkpoint.npz").exists()  # the one of iteration 5 stays
    monkeypatch.setattr(Trainer, "step", original)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        monkeypatch.setattr(Trainer, "step", step_then_two_kills)
        assert _train(tmp_path / "ignored", "--learner", "cfr", "--iterations", "50") == 143
    finally:
        signal.signal(signal.SIGINT, previous)
    said = capsys.readouterr().err.splitlines()
    assert said[-1] == "terminated"
    assert "before any checkpoint: nothing of the run is saved in" in said[-2]
    assert "--resume starts it over (--checkpoint-every N saves" in said[-2]


def test_a_run_that_fails_before_writing_leaves_no_folder_behind(tmp_path, capsys, monkeypatch):
    """A train refused after it claimed --out (here a game past NASHZOO_MAX_HISTORIES) left a
    folder holding only ``.nashzoo.lock`` (review of the scale ladder); a folder that existed
    before is kept as it was, and a finished run keeps its lock file beside its outputs."""
    from nashzoo.games import limits
    from nashzoo.io import folder_lock

    monkeypatch.setenv(limits.MAX_HISTORIES_VARIABLE, "1000")
    # a game no other test compiles (a cached tree is not compiled again, so not refused)
    argv = ["--game", "liars_dice(dice_sides=11)", "--learner", "cfr", "--iterations", "2"]
    assert _train(tmp_path, *argv) == 1
    assert "over the cap of 1,000" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    (tmp_path / "run").mkdir()
    assert _train(tmp_path, *argv) == 1
    assert (tmp_path / "run").is_dir()
    with pytest.raises(RuntimeError), folder_lock(tmp_path / "new" / "deeper"):
        raise RuntimeError("failed before writing anything")
    assert not (tmp_path / "new" / "deeper").exists() and (tmp_path / "new").is_dir()
    monkeypatch.delenv(limits.MAX_HISTORIES_VARIABLE)
    assert _train(tmp_path / "done", "--learner", "cfr", "--iterations", "2") == 0
    assert (tmp_path / "done" / "run" / ".nashzoo.lock").exists()


def test_a_refused_lock_never_removes_the_holders_folder(tmp_path):
    """A process whose lock was refused removed the holder's lock file and folder on its way
    out when its own check had created the folder (review): the folder is the holder's."""
    import subprocess
    import sys

    from nashzoo.io import check_output_folder, folder_lock
    from nashzoo.io.atomic import FolderLockedError

    out = tmp_path / "shared"
    check_output_folder(out)  # this process created it
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom nashzoo.io import folder_lock\n"
            f"with folder_lock({str(out)!r}):\n"
            "    print('locked', flush=True)\n    sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderLockedError) as refused, folder_lock(out):
            pass
        assert f"by another nashzoo process (pid {holder.pid})" in str(refused.value)
        assert (out / ".nashzoo.lock").exists()
    finally:
        holder.communicate("\n", timeout=30)
