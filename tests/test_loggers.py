"""Experiment tracking (nashzoo.train.loggers): CSV, TensorBoard and Weights & Biases (offline)
through the Trainer's callbacks, and --logger on `nashzoo train` and `race`."""

from __future__ import annotations

import csv
import itertools

import pytest

from nashzoo.cli import main
from nashzoo.train import LambdaCallback, Trainer
from nashzoo.train.loggers import CSVLogger, make_logger


def _run(logger, iterations=40):
    callbacks = logger if isinstance(logger, list) else [logger]
    trainer = Trainer(
        "kuhn_poker", "cfr_plus", "xfp", seed=0, eval_every=10, callbacks=callbacks, progress=False
    )
    return trainer.run(iterations=iterations)


def test_csv_logger_records_evaluations_and_step_metrics(tmp_path):
    result = _run(CSVLogger(tmp_path, step_every=5))
    with open(tmp_path / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    evals = [r for r in rows if r["metric"] == "eval/exploitability"]
    assert [int(r["iteration"]) for r in evals] == [rec.iteration for rec in result.history]
    assert [float(r["value"]) for r in evals] == [rec.exploitability for rec in result.history]
    seat1 = [r for r in rows if r["metric"] == "eval/seat1_exploitability"]
    assert float(seat1[-1]["value"]) == result.final.seat_exploitability[1]
    work = [r for r in rows if r["metric"] == "work/seat0_nodes_touched"]
    assert int(float(work[-1]["value"])) == result.final.work[0]["nodes_touched"]
    steps = {int(r["iteration"]) for r in rows if r["metric"] == "seat0/iterations"}
    assert steps == {5, 10, 15, 20, 25, 30, 35, 40}
    assert all(float(r["train_seconds"]) >= 0 for r in rows)


def test_csv_logger_rows_are_on_disk_while_training_and_after_a_crash(tmp_path):
    """metrics.csv grows as the run trains (it can be followed) and keeps what was logged
    when the run dies (it used to be written only at the end)."""
    logger = CSVLogger(tmp_path, step_every=5)
    seen = []

    def look(trainer, metrics):
        if metrics["iteration"] == 17:
            with open(tmp_path / "metrics.csv") as handle:
                seen.extend(int(r["iteration"]) for r in csv.DictReader(handle))
            raise RuntimeError("the process dies here")

    with pytest.raises(RuntimeError, match="dies here"):
        _run([logger, LambdaCallback(on_step=look)])
    assert {5, 10, 15} <= set(seen) and max(seen) <= 17
    with open(tmp_path / "metrics.csv") as handle:
        steps = {
            int(r["iteration"]) for r in csv.DictReader(handle) if r["metric"] == "seat0/iterations"
        }
    assert steps == {5, 10, 15}
    logger.close()


def test_csv_logger_keeps_the_earlier_sessions_rows_of_a_resumed_run(tmp_path, capsys):
    """A resumed run's metrics.csv holds every iteration once: the first session's rows up to
    the iteration it resumes from, then its own (it used to hold only the last session's)."""
    from nashzoo.cli import main

    out = str(tmp_path / "run")
    base = ["train", "--out", out, "--logger", "csv", "--no-progress"]
    assert main([*base, "--learner", "cfr_plus", "--iterations", "30"]) == 0
    assert main([*base, "--resume", "--iterations", "60"]) == 0
    with open(tmp_path / "run" / "metrics.csv") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "seat0/iterations"]
    steps = [int(r["iteration"]) for r in rows]
    assert steps == sorted(set(steps)) and steps[0] == 10 and steps[-1] == 60


def test_bad_logger_arguments_are_clear():
    with pytest.raises(ValueError, match="logger must be one of tensorboard, wandb, csv"):
        make_logger("mlflow", "x")
    with pytest.raises(ValueError, match="step_every must be a positive integer"):
        CSVLogger("x", step_every=0)


def test_tensorboard_logger_writes_both_axes(tmp_path):
    pytest.importorskip("torch.utils.tensorboard")
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    result = _run(make_logger("tensorboard", tmp_path))
    events = accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    scalars = events.Scalars("eval/exploitability")
    assert [s.step for s in scalars] == [rec.iteration for rec in result.history]
    assert [s.value for s in scalars] == pytest.approx([r.exploitability for r in result.history])
    # the wall-time axis is the training time (evaluation excluded)
    gaps = [b.wall_time - a.wall_time for a, b in itertools.pairwise(scalars)]
    train = [b.train_seconds - a.train_seconds for a, b in itertools.pairwise(result.history)]
    assert gaps == pytest.approx(train, abs=1e-3)
    assert "seat0/iterations" in events.Tags()["scalars"]


def test_wandb_logger_offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    logger = make_logger("wandb", tmp_path, name="cfr_plus-vs-xfp", group="test")
    seen = {}

    def before_finish(trainer, result):  # runs before the logger closes the W&B run
        seen.update(summary=dict(logger.run.summary), config=dict(logger.run.config))

    trainer = Trainer(
        "kuhn_poker",
        "cfr_plus",
        "xfp",
        seed=0,
        eval_every=10,
        callbacks=[LambdaCallback(on_training_end=before_finish), logger],
        progress=False,
    )
    result = trainer.run(iterations=40)
    assert seen["summary"]["eval/exploitability"] == pytest.approx(result.exploitability)
    assert seen["summary"]["iteration"] == 40
    assert seen["config"]["configs"] == [{"averaging_delay": 0}, {}]
    assert list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))


def test_cli_train_and_race_take_logger(tmp_path, capsys):
    argv = ["train", "--learner", "cfr", "--iterations", "20", "--no-progress", "--logger", "csv"]
    assert main([*argv, "--out", str(tmp_path / "t")]) == 0
    assert (tmp_path / "t" / "metrics.csv").exists()
    argv = ["race", "--learners", "cfr,xfp", "--seeds", "1", "--budget-iterations", "20"]
    argv += ["--backend", "serial", "--no-plots", "--no-progress", "--logger", "csv"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "runs" / "self-xfp-seed0" / "metrics.csv").exists()
    capsys.readouterr()
    assert main(["train", "--learner", "cfr", "--iterations", "1", "--logger", "mlflow"]) == 2
    assert "--logger: logger must be one of tensorboard, wandb, csv" in capsys.readouterr().err


def test_cli_train_without_out_logs_each_run_to_a_folder_of_its_own(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["train", "--iterations", "5", "--no-progress", "--logger", "csv", "--learner"]
    assert main([*argv, "cfr"]) == 0 and main([*argv, "xfp"]) == 0
    files = sorted((tmp_path / "runs" / "train" / "logs").glob("*/metrics.csv"))
    assert len(files) == 2 and "metrics go to runs/train/logs/" in capsys.readouterr().out


def _tracked(folder, tag):
    """The TensorBoard points of ``tag`` in ``folder``, every event file read."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    events = accumulator.EventAccumulator(str(folder))
    events.Reload()
    return [(s.step, s.value) for s in events.Scalars(tag)]


def test_a_resumed_run_keeps_logging_to_its_own_trackers(tmp_path, capsys):
    """`train --resume` without --logger logged nothing more (the loggers were not stored with
    the run), although --resume says options not typed are the run's own; `--logger` given
    twice kept only the last one; several trackers at once are 'csv,tensorboard'."""
    pytest.importorskip("torch.utils.tensorboard")
    out = tmp_path / "run"
    base = ["train", "--out", str(out), "--no-progress", "--eval-every", "10"]
    assert main([*base, "--learner", "cfr", "--iterations", "30", "--logger", "csv"]) == 0
    stored = (out / "train_config.json").read_text()
    assert '"loggers": [\n  "csv"\n ]' in stored
    assert main([*base, "--resume", "--iterations", "60"]) == 0
    with open(out / "metrics.csv") as handle:
        steps = [
            int(r["iteration"]) for r in csv.DictReader(handle) if r["metric"] == "eval/nash_conv"
        ]
    assert steps == [10, 20, 30, 40, 50, 60]
    # typed again, the loggers replace the stored ones (and are stored): both, here
    again = [*base, "--resume", "--iterations", "80", "--logger", "tensorboard", "--logger", "csv"]
    assert main(again) == 0
    assert [step for step, _ in _tracked(out, "eval/nash_conv")] == [70, 80]
    assert main([*base, "--resume", "--iterations", "90"]) == 0
    assert [step for step, _ in _tracked(out, "eval/nash_conv")] == [70, 80, 90]
    with open(out / "metrics.csv") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "eval/nash_conv"]
    assert [int(r["iteration"]) for r in rows][-3:] == [70, 80, 90]
    capsys.readouterr()


def test_a_race_run_run_again_starts_its_trackers_afresh(tmp_path, capsys):
    """A race run run again (here: its settings changed on --resume) kept the first attempt's
    TensorBoard events beside the new ones, so TensorBoard drew both attempts as one curve
    (36 points for 18 evaluations)."""
    pytest.importorskip("torch.utils.tensorboard")
    argv = ["race", "--learners", "lo=dcfr", "--seeds", "1", "--budget-iterations", "20"]
    argv += ["--backend", "serial", "--no-plots", "--no-progress", "--logger", "tensorboard"]
    argv += ["--out", str(tmp_path / "r")]
    assert main(argv) == 0
    run = tmp_path / "r" / "runs" / "self-lo-seed0"
    first = _tracked(run, "eval/nash_conv")
    assert main([*argv, "--resume", "--set", "lo.alpha=5.0"]) == 0
    again = _tracked(run, "eval/nash_conv")
    assert [step for step, _ in again] == [step for step, _ in first]  # one curve, not two
    assert again != first  # the new settings' numbers
    assert len(list(run.glob("events.out.*"))) == 1
    capsys.readouterr()


def test_wandb_keeps_one_run_id_per_folder(tmp_path, monkeypatch):
    """Each session of a resumed run was a W&B run of its own (a new id every time)."""
    pytest.importorskip("wandb")
    from nashzoo.train.loggers import WANDB_ID_FILE, remove_logger_output

    monkeypatch.setenv("WANDB_PROJECT", "my_project")
    ids, projects = [], []

    def trainer_logging_to_the_folder():
        logger = make_logger("wandb", tmp_path)
        look = LambdaCallback(
            on_training_end=lambda trainer, result: (
                ids.append(logger.run.id),
                projects.append(logger.run.project),
            )
        )
        return Trainer("kuhn_poker", "cfr", "cfr", callbacks=[look, logger], progress=False)

    trainer = trainer_logging_to_the_folder()
    trainer.run(iterations=5)
    trainer.run(iterations=5)  # goes on: the same W&B run
    trainer_logging_to_the_folder().run(iterations=5)  # another run from its start: its own
    assert ids[0] == ids[1] != ids[2] == (tmp_path / WANDB_ID_FILE).read_text()
    assert projects == ["my_project"] * 3  # WANDB_PROJECT was ignored
    remove_logger_output(tmp_path)  # a run that starts over there gets a new one
    assert not (tmp_path / WANDB_ID_FILE).exists() and not (tmp_path / "wandb").exists()


def test_logger_lists():
    from nashzoo.train.loggers import logger_kinds

    assert logger_kinds(None) == ()
    # one order whatever the order typed: a race resumed with them typed otherwise re-ran
    assert logger_kinds("csv, tensorboard") == logger_kinds("tensorboard,csv")
    assert logger_kinds(["csv", "wandb,csv"]) == ("wandb", "csv")
    with pytest.raises(ValueError, match="got 'mlflow'"):
        logger_kinds("csv,mlflow")
    with pytest.raises(ValueError, match="got ''"):
        logger_kinds("csv,")


def test_a_function_given_as_callbacks_is_named():
    with pytest.raises(TypeError, match=r"got function; wrap a function with LambdaCallback"):
        Trainer("kuhn_poker", "cfr", "cfr", callbacks=lambda trainer, record: None)


def test_a_run_started_over_or_resumed_from_an_earlier_checkpoint_draws_each_point_once(
    tmp_path, capsys
):
    """A resume before the first checkpoint starts the run over, and kept the cut-off
    attempt's TensorBoard events beside the new ones; a resume from a checkpoint older than
    the last point logged drew the points after it twice."""
    pytest.importorskip("torch.utils.tensorboard")
    out = tmp_path / "run"
    base = ["train", "--out", str(out), "--no-progress", "--eval-every", "10"]
    start = [*base, "--learner", "cfr", "--logger", "tensorboard,csv"]
    assert main([*start, "--iterations", "20"]) == 0
    (out / "checkpoint.npz").unlink()  # as if killed before its first checkpoint
    assert main([*base, "--resume", "--iterations", "20"]) == 0
    assert [step for step, _ in _tracked(out, "eval/nash_conv")] == [10, 20]
    assert len(list(out.glob("events.out.*"))) == 1
    at_20 = (out / "checkpoint.npz").read_bytes()
    assert main([*base, "--resume", "--iterations", "30"]) == 0
    (out / "checkpoint.npz").write_bytes(at_20)  # as if killed after logging 30, saved at 20
    assert main([*base, "--resume", "--iterations", "40"]) == 0
    assert [step for step, _ in _tracked(out, "eval/nash_conv")] == [10, 20, 30, 40]
    capsys.readouterr()
