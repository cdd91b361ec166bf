"""The Trainer and train(): schedules, views, evaluation records, callbacks, seeding,
checkpoints, results and errors."""

from __future__ import annotations

import csv
import json
import sys
import time
import warnings

import numpy as np
import pytest

from nashzoo.agents import CFR, XFP, CheckpointError, TabularPolicy, make_learner
from nashzoo.eval import nash_conv, seat_exploitability
from nashzoo.games import load_game
from nashzoo.train import (
    Callback,
    EvalRecord,
    EvalSchedule,
    LambdaCallback,
    PrintEval,
    StopOnExploitability,
    Trainer,
    TrainResult,
    seat_seeds,
    train,
)


class SpyCFR(CFR):
    """CFR that remembers every opponent policy it was handed."""

    def _setup(self) -> None:
        super()._setup()
        self.seen: list[np.ndarray] = []

    def _step(self, opponent):
        self.seen.append(np.array(opponent.probs))
        return super()._step(opponent)


class SpyXFP(XFP):
    def _setup(self) -> None:
        super()._setup()
        self.seen: list[np.ndarray] = []

    def _step(self, opponent):
        self.seen.append(np.array(opponent.probs))
        return super()._step(opponent)


# --- schedules and views ---------------------------------------------------------------------
def test_alternating_schedule_is_seat0_then_seat1_against_the_new_policy() -> None:
    game = load_game("kuhn_poker")
    trainer = Trainer(game, SpyCFR(game, 0), SpyCFR(game, 1))
    first, second = trainer.learners
    for _ in range(3):
        before1 = first.current_policy().probs.copy()
        trainer.step()
        # seat 1 saw seat 0's policy AFTER seat 0's update
        np.testing.assert_array_equal(second.seen[-1], first.current_policy().probs)
        assert not np.array_equal(second.seen[-1], before1) or trainer.iteration == 1
    # Bit-identical to the hand-written alternating loop.
    a, b = CFR(game, 0), CFR(game, 1)
    for _ in range(3):
        a.step(b.current_policy())
        b.step(a.current_policy())
    np.testing.assert_array_equal(first.cumulative_regrets(), a.cumulative_regrets())
    np.testing.assert_array_equal(second.cumulative_regrets(), b.cumulative_regrets())


def test_simultaneous_schedule_uses_views_from_before_the_iteration() -> None:
    game = load_game("kuhn_poker")
    trainer = Trainer(game, SpyCFR(game, 0), SpyCFR(game, 1), schedule="simultaneous")
    first, second = trainer.learners
    for _ in range(4):
        view_of_first = first.current_policy().probs.copy()
        trainer.step()
        np.testing.assert_array_equal(second.seen[-1], view_of_first)
    a, b = CFR(game, 0), CFR(game, 1)
    for _ in range(4):
        va, vb = a.current_policy(), b.current_policy()
        a.step(vb)
        b.step(va)
    np.testing.assert_array_equal(second.cumulative_regrets(), b.cumulative_regrets())


def test_cross_play_gives_each_learner_its_own_view() -> None:
    game = load_game("kuhn_poker")
    cfr, xfp = SpyCFR(game, 0), SpyXFP(game, 1)
    trainer = Trainer(game, cfr, xfp, eval_every=5)
    assert not trainer.self_play
    for _ in range(5):
        xfp_current = xfp.current_policy().probs.copy()
        trainer.step()
        np.testing.assert_array_equal(cfr.seen[-1], xfp_current)  # CFR: opponent's current
        np.testing.assert_array_equal(xfp.seen[-1], cfr.average_policy().probs)  # XFP: average
    result = trainer.run(iterations=45)
    assert result.learners == ("cfr", "xfp")
    # step() alone never evaluates; run() evaluates on the schedule (every 5 iterations)
    assert [r.iteration for r in result.history] == list(range(10, 51, 5))
    for record in result.history:
        assert record.seat_exploitability is not None
        assert sum(record.seat_exploitability) == pytest.approx(record.nash_conv, abs=1e-12)
    final = result.final
    for seat in (0, 1):
        exact = seat_exploitability(game, result.average_policy, seat)
        assert final.seat_exploitability[seat] == pytest.approx(exact, abs=1e-12)
    assert final.nash_conv < 0.1


def test_self_play_and_cross_play_share_one_code_path() -> None:
    # A 'cross-play' of two separately built CFR learners equals self-play by name.
    by_name = train("kuhn_poker", "cfr", iterations=20, seed=3)
    game = load_game("kuhn_poker")
    seeds = seat_seeds(3)
    by_objects = train(game, CFR(game, 0, seed=seeds[0]), CFR(game, 1, seed=seeds[1]),
                       iterations=20, seed=3)  # fmt: skip
    np.testing.assert_array_equal(by_name.average_policy.probs, by_objects.average_policy.probs)
    assert by_name.seeds == by_objects.seeds == seeds


# --- evaluation points and the time axis -------------------------------------------------------
def test_eval_every_none_runs_one_final_evaluation_outside_the_loop() -> None:
    calls = []
    cb = LambdaCallback(on_eval=lambda trainer, record: calls.append(record.iteration))
    result = train("kuhn_poker", "cfr_plus", iterations=30, callbacks=cb)
    assert [r.iteration for r in result.history] == [30] == calls
    assert result.final.work[0]["iterations"] == 30


def test_eval_every_k_and_log_spaced_points() -> None:
    every = train("kuhn_poker", "cfr", iterations=25, eval_every=10)
    assert [r.iteration for r in every.history] == [10, 20, 25]
    logged = train("kuhn_poker", "cfr", iterations=100, eval_every="log")
    expected = [1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50, 63, 79, 100]
    assert [r.iteration for r in logged.history] == expected
    schedule = EvalSchedule(every=7, per_decade=2)
    both = train("kuhn_poker", "cfr", iterations=30, eval_every=schedule)
    assert [r.iteration for r in both.history] == [1, 3, 7, 10, 14, 21, 28, 30]


def test_seconds_budget_and_eval_seconds_trigger(monkeypatch) -> None:
    """The trainer's clock is replaced by one that moves 0.01 s a reading, so an iteration
    counts 0.01 s however loaded the machine is: 15 iterations fill the budget of 0.15 s and
    an evaluation falls every 0.05 s of training."""
    import itertools
    import types

    from nashzoo.train import trainer as trainer_module

    ticks = itertools.count()
    clock = types.SimpleNamespace(perf_counter=lambda: next(ticks) * 0.01)
    monkeypatch.setattr(trainer_module, "time", clock)
    result = train("kuhn_poker", "cfr", seconds=0.15, eval_seconds=0.05)
    assert result.stopped_by == "seconds"
    assert result.train_seconds >= 0.15
    assert len(result.history) >= 3
    times = [r.train_seconds for r in result.history]
    assert times == sorted(times)


def test_evaluation_and_callbacks_are_off_the_time_axis() -> None:
    class Slow(Callback):
        def on_eval(self, trainer, record):
            time.sleep(0.05)

    start = time.perf_counter()
    result = train("kuhn_poker", "cfr", iterations=50, eval_every=10, callbacks=Slow())
    wall = time.perf_counter() - start
    assert wall > 0.25  # five slow evaluations happened...
    assert result.train_seconds < wall - 0.24  # ...and none of them is on the time axis
    assert result.eval_seconds == pytest.approx(sum(r.eval_seconds for r in result.history))
    assert all(r.eval_seconds > 0 for r in result.history)


def test_records_match_the_exact_evaluator() -> None:
    result = train("leduc_poker", "cfr_plus", iterations=20, eval_every=10)
    final = result.final
    assert final.nash_conv == pytest.approx(nash_conv("leduc_poker", result.average_policy))
    assert final.exploitability == pytest.approx(final.nash_conv / 2)
    nodes = make_learner("cfr", "leduc_poker", 0).tree.num_nodes
    assert final.work == (
        {"iterations": 20, "nodes_touched": 20 * nodes, "env_steps": 0},
        {"iterations": 20, "nodes_touched": 20 * nodes, "env_steps": 0},
    )
    assert final.values[0] == pytest.approx(-final.values[1])


# --- callbacks ---------------------------------------------------------------------------------
def test_callbacks_can_stop_training() -> None:
    stop = StopOnExploitability(0.01)
    result = train("kuhn_poker", "cfr_plus", iterations=10_000, eval_every=5, callbacks=stop)
    assert result.stopped_by == "callback"
    assert stop.reached_at is not None and stop.reached_at.nash_conv <= 0.01
    assert result.iterations == stop.reached_at.iteration < 10_000
    assert result.history[-1] is stop.reached_at  # no extra final evaluation needed
    with pytest.raises(ValueError, match="StopOnExploitability acts on evaluations"):
        train("kuhn_poker", "cfr_plus", iterations=10, callbacks=StopOnExploitability(0.01))

    steps = []

    def on_step(trainer, metrics):
        steps.append(metrics["iteration"])
        assert set(metrics) == {"iteration", "train_seconds", "seats"}
        assert metrics["seats"][0]["iterations"] == metrics["iteration"]
        return metrics["iteration"] < 7

    result = train("kuhn_poker", "cfr", iterations=100, callbacks=[LambdaCallback(on_step)])
    assert result.iterations == 7 and steps == list(range(1, 8))
    assert result.stopped_by == "callback"
    assert result.final.iteration == 7  # the final evaluation still happens


def test_callback_hooks_order_and_print_eval(capsys) -> None:
    events = []

    class Recorder(Callback):
        def on_training_start(self, trainer):
            events.append("start")

        def on_eval(self, trainer, record):
            events.append(f"eval{record.iteration}")

        def on_training_end(self, trainer, result):
            events.append(f"end{result.iterations}")

    train("kuhn_poker", "cfr", iterations=4, eval_every=2, callbacks=[Recorder(), PrintEval()])
    assert events == ["start", "eval2", "eval4", "end4"]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "NashConv" in out[0] and out[1].startswith("iter        4")


def test_bad_callbacks_are_refused() -> None:
    with pytest.raises(TypeError, match="LambdaCallback"):
        train("kuhn_poker", "cfr", iterations=1, callbacks=[print])
    with pytest.raises(ValueError, match="metric must be"):
        StopOnExploitability(0.1, metric="regret")


# --- progress bar ------------------------------------------------------------------------------
def test_progress_bar_on_a_terminal_or_when_asked(monkeypatch) -> None:
    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    assert trainer._progress_bar(10) is None  # pytest's stderr is not a TTY
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = trainer._progress_bar(10)
    assert bar is not None
    bar.close()
    assert Trainer("kuhn_poker", "cfr", "cfr", progress=False)._progress_bar(10) is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    forced = Trainer("kuhn_poker", "cfr", "cfr", progress=True)._progress_bar(10)
    assert forced is not None  # progress=True: a bar even off a terminal (notebooks, logs)
    forced.close()
    result = Trainer("kuhn_poker", "cfr", "cfr", progress=True).run(iterations=3)
    assert result.iterations == 3


# --- seeding -----------------------------------------------------------------------------------
def test_seat_seeds_come_from_seed_sequence() -> None:
    seeds = seat_seeds(42)
    children = np.random.SeedSequence(42).spawn(2)
    assert seeds == tuple(int(c.generate_state(1, dtype=np.uint32)[0]) for c in children)
    assert seeds[0] != seeds[1] and seat_seeds(43) != seeds
    trainer = Trainer("rps", "regret_matching", "regret_matching", seed=42)
    assert tuple(lr.seed for lr in trainer.learners) == seeds


def test_same_seed_same_run_for_a_sampled_learner() -> None:
    config = {"mode": "sampled"}
    a = train("rps", "regret_matching", iterations=300, seed=5, config=config)
    b = train("rps", "regret_matching", iterations=300, seed=5, config=config)
    c = train("rps", "regret_matching", iterations=300, seed=6, config=config)
    np.testing.assert_array_equal(a.average_policy.probs, b.average_policy.probs)
    assert not np.array_equal(a.average_policy.probs, c.average_policy.probs)


# --- checkpoints -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("game", "seat0", "seat1", "config"),
    [
        ("leduc_poker", "cfr_plus", "cfr_plus", None),
        ("kuhn_poker", "cfr", "xfp", None),
        ("kuhn_poker", "dcfr", "dcfr", None),
        ("rps", "regret_matching", "regret_matching", {"mode": "sampled"}),
    ],
)
def test_trainer_resume_is_bit_identical(game, seat0, seat1, config, tmp_path) -> None:
    configs = (config, config if seat1 == seat0 else None)
    straight = Trainer(game, seat0, seat1, configs=configs, seed=9, eval_every=4)
    straight.run(iterations=10)
    path = tmp_path / "run.ckpt"
    first = Trainer(game, seat0, seat1, configs=configs, seed=9, eval_every=4,
                    checkpoint_path=path, checkpoint_every=3)  # fmt: skip
    first.run(iterations=7)  # periodic checkpoints at 3 and 6, then one at the end (7)
    resumed = Trainer.load(path)
    assert resumed.iteration == 7 and resumed.seed == 9
    assert [r.iteration for r in resumed.history] == [4, 7]
    resumed.run(iterations=3)
    np.testing.assert_array_equal(resumed.average_policy().probs, straight.average_policy().probs)
    for a, b in zip(resumed.learners, straight.learners, strict=True):
        for key, value in b._state_arrays().items():
            np.testing.assert_array_equal(a._state_arrays()[key], value)
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
    assert [r.iteration for r in resumed.history] == [4, 7, 8, 10]
    assert resumed.history[-1].nash_conv == pytest.approx(straight.history[-1].nash_conv)


def test_periodic_checkpoint_is_written(tmp_path) -> None:
    path = tmp_path / "sub" / "run.ckpt"
    seen = []

    def on_step(trainer, metrics):
        if path.exists():
            seen.append((metrics["iteration"], Trainer.load(path).iteration))

    Trainer("kuhn_poker", "cfr", "cfr", checkpoint_path=path, checkpoint_every=2,
            callbacks=LambdaCallback(on_step)).run(iterations=5)  # fmt: skip
    # on_step runs before the checkpoint of its own iteration is written
    assert seen == [(3, 2), (4, 2), (5, 4)]
    assert Trainer.load(path).iteration == 5
    assert not list(path.parent.glob("*.tmp"))  # atomic writes leave no temp files


def test_trainer_checkpoint_errors(tmp_path) -> None:
    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    trainer.run(iterations=2)
    path = tmp_path / "t.ckpt"
    trainer.save(path)
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(path.read_bytes()[:300])
    with pytest.raises(CheckpointError, match="not a readable nashzoo checkpoint"):
        Trainer.load(truncated)
    learner_file = tmp_path / "learner.npz"
    trainer.learners[0].save(learner_file)
    with pytest.raises(CheckpointError, match="not a nashzoo Trainer checkpoint"):
        Trainer.load(learner_file)
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        Trainer.load(tmp_path / "missing.ckpt")


# --- results -----------------------------------------------------------------------------------
def test_result_is_plain_data_and_writes_long_form_csv(tmp_path) -> None:
    result = train("kuhn_poker", "cfr", "xfp", iterations=20, eval_every=10, seed=1)
    assert isinstance(result, TrainResult) and isinstance(result.history[0], EvalRecord)
    assert isinstance(result.average_policy, TabularPolicy)
    joint = TabularPolicy.joint(
        "kuhn_poker", [result.average_policy, result.average_policy]
    )  # rows per seat
    np.testing.assert_array_equal(joint.probs, result.average_policy.probs)
    rows = result.to_rows()
    assert len(rows) == 2
    assert list(rows[0])[:5] == ["game", "learner0", "learner1", "seed", "schedule"]
    assert rows[0]["learner1"] == "xfp" and rows[0]["iteration"] == 10
    result.to_csv(tmp_path / "run.csv")
    with open(tmp_path / "run.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [int(r["iteration"]) for r in table] == [10, 20]
    assert float(table[1]["nash_conv"]) == pytest.approx(result.nash_conv)
    assert float(table[1]["seat1_exploitability"]) == pytest.approx(
        result.final.seat_exploitability[1]
    )
    result.to_json(tmp_path / "run.json")
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["final"]["iteration"] == 20 and summary["learner0"] == "cfr"
    assert EvalRecord.from_dict(rows[1]) == result.history[1]
    assert "cfr vs xfp on kuhn_poker: 20 iterations" in str(result)


def test_non_zero_sum_games_have_no_seat_exploitability() -> None:
    game = load_game("matrix", preset="prisoners_dilemma")
    result = train(game, "regret_matching", iterations=200)
    assert result.final.seat_exploitability is None
    assert result.to_rows()[0]["seat0_exploitability"] is None
    # Regret matching learns to defect (dominant strategy): NashConv goes to 0.
    assert result.average_policy.row("p0")[1] > 0.99
    assert result.nash_conv < 0.05


# --- bad input ---------------------------------------------------------------------------------
def test_bad_input_errors() -> None:
    with pytest.raises(ValueError, match="unknown learner 'cfrr'"):
        train("kuhn_poker", "cfrr", iterations=1)
    with pytest.raises(ValueError, match="matrix games"):
        train("leduc_poker", "regret_matching", iterations=1)
    with pytest.raises(ValueError, match="owns seat 1 but is placed on seat 0"):
        Trainer("kuhn_poker", CFR("kuhn_poker", 1), "cfr")
    with pytest.raises(ValueError, match="built for leduc_poker"):
        Trainer("kuhn_poker", CFR("leduc_poker", 0), "cfr")
    with pytest.raises(ValueError, match="give iterations=, seconds= or work="):
        Trainer("kuhn_poker", "cfr", "cfr").run()
    with pytest.raises(ValueError, match="schedule must be one of"):
        Trainer("kuhn_poker", "cfr", "cfr", schedule="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eval_every must be"):
        train("kuhn_poker", "cfr", iterations=1, eval_every=0)
    with pytest.raises(ValueError, match="eval_every must be"):
        train("kuhn_poker", "cfr", iterations=1, eval_every="sometimes")
    with pytest.raises(ValueError, match="checkpoint_every needs checkpoint_path"):
        Trainer("kuhn_poker", "cfr", "cfr", checkpoint_every=5)
    with pytest.raises(ValueError, match="learner name"):
        Trainer("kuhn_poker", 3, "cfr")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already built Learner"):
        Trainer("kuhn_poker", CFR("kuhn_poker", 0), "cfr", configs=({"x": 1}, None))


def test_learner_instance_keeps_its_seat_and_self_play_copies_its_config() -> None:
    game = load_game("kuhn_poker")
    seat1 = make_learner("dcfr", game, 1, {"gamma": 1.0})
    result = train(game, seat1, iterations=10, seed=2)
    assert result.learners == ("dcfr", "dcfr")
    assert result.seeds[1] == seat1.seed and result.seeds[0] == seat_seeds(2)[0]
    assert seat1.iterations == 10


def test_numpy_numbers_are_accepted_and_saved_as_plain_json(tmp_path) -> None:
    # Parameter sweeps hand over numpy scalars: configs, budgets and schedules take them, and the
    # checkpoint metadata (JSON) stores them as plain numbers.
    path = tmp_path / "ckpt.npz"
    result = train(
        "kuhn_poker",
        "cfr_plus",
        opponent="dcfr",
        iterations=np.int64(3),
        eval_every=np.int64(2),
        config={"averaging_delay": np.int64(1)},
        opponent_config={"alpha": np.float32(1.5)},
        checkpoint_path=path,
    )
    assert result.iterations == 3 and [r.iteration for r in result.history] == [2, 3]
    resumed = Trainer.load(path)
    assert resumed.learners[0].config.to_dict()["averaging_delay"] == 1
    assert type(resumed.learners[1].config.to_dict()["alpha"]) is float


def test_booleans_are_not_budgets() -> None:
    with pytest.raises(ValueError, match="iterations must be a non-negative int"):
        Trainer("kuhn_poker", "cfr", "cfr").run(iterations=True)
    with pytest.raises(ValueError, match="work must be a positive int"):
        Trainer("kuhn_poker", "cfr", "cfr").run(work=0)

    for seconds in (True, float("inf"), float("nan")):  # inf would run forever
        with pytest.raises(ValueError, match="seconds must be a positive number"):
            Trainer("kuhn_poker", "cfr", "cfr").run(seconds=seconds)


@pytest.mark.parametrize(
    "schedule", [{"every": True}, {"per_decade": np.True_}, {"seconds": True}, {"every": 0}]
)
def test_booleans_are_not_evaluation_schedules(schedule) -> None:
    from nashzoo.train.schedule import EvalSchedule

    with pytest.raises(ValueError, match="EvalSchedule"):
        EvalSchedule(**schedule)
    assert EvalSchedule(every=np.int64(5)).every == 5  # numpy numbers are numbers


def test_a_work_budget_stops_within_one_iteration() -> None:
    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    result = trainer.run(work=1000)
    assert result.stopped_by == "work"
    assert 1000 <= trainer.work_done() < 1000 + 2 * 58  # Kuhn: 58 nodes per seat per pass
    before = trainer.work_done()
    more = trainer.run(work=500, iterations=1000)  # budgets count from where a run starts
    assert more.stopped_by == "work"
    assert before + 500 <= trainer.work_done() < before + 500 + 2 * 58


def test_a_work_budget_overshot_by_one_big_iteration_says_so() -> None:
    """One CFR iteration on Leduc does about 19,000 units of work: a budget of 100 runs one
    and warns, naming the budget and the work done; a budget met within 2x says nothing."""
    trainer = Trainer("leduc_poker", "cfr", "cfr")
    with pytest.warns(UserWarning, match=r"work budget of 100 was overshot: the run did 18,914"):
        trainer.run(work=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Trainer("kuhn_poker", "cfr", "cfr").run(work=1000)


def test_learners_at_different_points_are_paired_with_a_warning() -> None:
    trained = make_learner("cfr", "kuhn_poker", 0)
    trained.step(TabularPolicy.uniform("kuhn_poker"))
    with pytest.warns(UserWarning, match="have done 1 and 0 steps"):
        Trainer("kuhn_poker", trained, "cfr")


def test_a_checkpoint_whose_state_names_other_learners_is_refused(tmp_path) -> None:
    path = tmp_path / "ckpt.npz"
    train("kuhn_poker", "cfr", opponent="xfp", iterations=2, checkpoint_path=path)
    with np.load(path) as data:
        files = {k: data[k] for k in data.files}
    state = json.loads(str(files["__trainer__"]))
    state["learners"] = ["cfr", "cfr"]
    files["__trainer__"] = np.array(json.dumps(state))
    np.savez(path, **files)
    with pytest.raises(CheckpointError, match=r"names learners \['cfr', 'cfr'\]"):
        Trainer.load(path)


def test_seats_are_evaluated_by_default_only_where_the_game_value_lp_is_quick(monkeypatch):
    from nashzoo.eval import lp

    assert Trainer("kuhn_poker", "cfr", "cfr").evaluate_seats  # 30 terminals: solved
    monkeypatch.setattr(lp, "CHEAP_LP_TERMINALS", 29)
    trainer = Trainer("kuhn_poker", "cfr", "cfr", progress=False)
    assert not trainer.evaluate_seats
    result = trainer.run(iterations=5)
    assert result.final.seat_exploitability is None and result.nash_conv > 0.0
    assert Trainer("kuhn_poker", "cfr", "cfr", evaluate_seats=True).evaluate_seats  # asked for


@pytest.mark.parametrize("seed", [-1, 1.9, "5", None, True])
def test_a_seed_that_is_not_a_non_negative_integer_is_refused(seed):
    from nashzoo.train import Trainer

    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        make_learner("cfr", "kuhn_poker", 0, seed=seed)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        Trainer("kuhn_poker", "cfr", "cfr", seed=seed)


@pytest.mark.parametrize("seconds", [True, "1", 0, -2.0])
def test_a_time_budget_that_is_not_a_positive_number_is_refused(seconds):
    from nashzoo.train import train

    with pytest.raises(ValueError, match="seconds must be a positive number"):
        train("kuhn_poker", "cfr", seconds=seconds)


def test_a_callback_answering_numpys_false_stops_the_run() -> None:
    """``np.mean(x) > t`` is numpy's bool: its False asks to stop like Python's."""
    from nashzoo.train import LambdaCallback

    stop = LambdaCallback(on_eval=lambda trainer, record: np.float64(record.nash_conv) > 0.1)
    result = Trainer("kuhn_poker", "cfr_plus", "cfr_plus", eval_every=1, callbacks=stop).run(
        iterations=500
    )
    assert result.stopped_by == "callback" and result.iterations < 500


def test_print_eval_lets_the_run_go_on_when_its_reader_goes_away() -> None:
    """``nashzoo train ... | head``: the first line after head leaves raises BrokenPipeError;
    the run must still finish (and write its outputs)."""
    from nashzoo.train import PrintEval

    class GonePipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    trainer = Trainer("kuhn_poker", "cfr", "cfr", eval_every=1, callbacks=PrintEval(GonePipe()))
    assert trainer.run(iterations=5).iterations == 5


class _SignalsDuringStep(CFR):
    """A CFR learner that sends its own process SIGINT inside its ``at``-th step (a notebook's
    interrupt, or Ctrl-C, landing mid-iteration): after its work, or ``before`` it."""

    def __init__(self, *args, at: int = 3, before: bool = False, **kw):
        super().__init__(*args, **kw)
        self.at, self.before = at, before

    def _step(self, opponent):
        import os
        import signal

        if self.before and self.iterations + 1 == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        out = super()._step(opponent)
        if not self.before and self.iterations + 1 == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return out


def test_a_ctrl_c_inside_a_step_takes_effect_when_both_seats_have_stepped(
    tmp_path, default_ctrl_c, capsys
):
    """Interrupted between its seats' steps, a trainer in a notebook had seat 0 an iteration
    ahead (16,615 against 16,611 after four interrupts), and the checkpoint it saved was then
    refused by Trainer.load as inconsistent."""
    seat0 = _SignalsDuringStep("kuhn_poker", 0, at=3)
    trainer = Trainer("kuhn_poker", seat0, make_learner("cfr", "kuhn_poker", 1), progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=10)
    assert trainer.iteration == 3
    assert [learner.iterations for learner in trainer.learners] == [3, 3]
    assert "interrupting after this step" in capsys.readouterr().err
    trainer.save(tmp_path / "t.npz")
    assert Trainer.load(tmp_path / "t.npz").iteration == 3
    trainer.run(iterations=2)  # and it goes on
    assert [learner.iterations for learner in trainer.learners] == [5, 5]


def test_a_step_cut_short_is_not_saved_as_if_whole(tmp_path, default_ctrl_c):
    """A second Ctrl-C interrupts at once, here after seat 0 had stepped and before seat 1
    had: saving that trainer would write a checkpoint Trainer.load refuses, so save and run
    say what happened and how to go on."""
    seat0 = _SignalsDuringStep("kuhn_poker", 0, at=3)
    seat1 = _SignalsDuringStep("kuhn_poker", 1, at=3, before=True)  # the second Ctrl-C
    trainer = Trainer("kuhn_poker", seat0, seat1, progress=False)
    with pytest.raises(KeyboardInterrupt):
        trainer.run(iterations=10)
    assert [learner.iterations for learner in trainer.learners] == [3, 2]
    with pytest.raises(RuntimeError, match=r"iteration 3 was cut short .* after seat 0 had"):
        trainer.save(tmp_path / "t.npz")
    assert not (tmp_path / "t.npz").exists()
    with pytest.raises(RuntimeError, match=r"Trainer.run: .*\(Trainer.load\)"):
        trainer.run(iterations=1)


def test_a_ctrl_c_of_an_earlier_run_does_not_stop_the_next():
    """After one Ctrl-C under StopOnInterrupt, every later run of the trainer (armed again or
    not) stopped after a single iteration: the flag was never cleared."""
    from nashzoo.train import StopOnInterrupt

    stop = StopOnInterrupt()
    trainer = Trainer("kuhn_poker", "cfr", "cfr", callbacks=[stop], progress=False)
    stop.interrupted = True  # as a Ctrl-C in an earlier armed run left it
    with stop.armed():
        assert not stop.interrupted
        trainer.run(iterations=3)
    assert trainer.iteration == 3
    stop.interrupted = True
    result = trainer.run(iterations=4)  # not armed: the earlier Ctrl-C is not this run's
    assert trainer.iteration == 7 and result.stopped_by == "iterations"


def test_a_notebook_without_ipywidgets_gets_a_text_bar_and_no_warning(monkeypatch) -> None:
    """``tqdm.auto`` in a notebook without ``ipywidgets`` warned "IProgress not found. Please
    update jupyter and ipywidgets", then drew text anyway. The bars now ask for the notebook
    widget only where ``ipywidgets`` is installed."""
    import importlib.util
    import io
    import types
    import warnings

    import tqdm.std

    from nashzoo.games.progress import progress_bar

    shell = type("ZMQInteractiveShell", (), {})()
    fake_ipython = types.ModuleType("IPython")
    fake_ipython.get_ipython = lambda: shell
    fake_display = types.ModuleType("IPython.display")
    fake_display.display = lambda *args, **kwargs: None
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", fake_display)
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed: imports fail
    chosen = ("tqdm.auto", "tqdm.autonotebook", "tqdm.notebook")  # imported again below
    saved = {name: sys.modules.pop(name, None) for name in chosen}
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ipywidgets" else real_find_spec(name, *a),
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            bar = progress_bar(total=3, file=io.StringIO())
        assert type(bar) is tqdm.std.tqdm
        bar.close()
        with pytest.warns(tqdm.std.TqdmWarning, match="IProgress not found"):  # what it was
            importlib.import_module("tqdm.auto")
    finally:  # the modules as they were: chosen in this fake notebook, they would stay so
        for name, module in saved.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


def test_a_trainer_checkpoint_streams_its_seats_through_files(tmp_path, monkeypatch) -> None:
    """Learners in this process write their checkpoints to unnamed temporary files that are
    copied into the trainer's file (their bytes are never held: on rung 5 they raised a save's
    peak by 1.4 GB); the file loads as before; a seat whose state cannot be saved leaves the
    last checkpoint and no temporary file; a learner class with its own checkpoint bytes
    keeps them."""
    from nashzoo.agents.base import Learner, TrainingDivergedError

    def no_bytes(self):
        raise AssertionError("a local learner's checkpoint is streamed, not held as bytes")

    path = tmp_path / "run" / "checkpoint.npz"
    trainer = Trainer("kuhn_poker", "cfr_plus", "xfp", seed=4)
    trainer.run(iterations=5)
    with monkeypatch.context() as patch:
        patch.setattr(Learner, "checkpoint_bytes", no_bytes)
        trainer.save(path)
    resumed = Trainer.load(path)
    for a, b in zip(resumed.learners, trainer.learners, strict=True):
        for key, value in b._state_arrays().items():
            assert a._state_arrays()[key].tobytes() == value.tobytes()
    # One seat's temporary file at a time: the disk holds half a checkpoint more, not a whole.
    import tempfile

    real = tempfile.TemporaryFile
    open_files = []

    def one_at_a_time(*args, **kwargs):
        assert all(f.closed for f in open_files), "a seat's file outlived its copy"
        open_files.append(real(*args, **kwargs))  # closed by the caller
        return open_files[-1]

    with monkeypatch.context() as patch:
        patch.setattr(tempfile, "TemporaryFile", one_at_a_time)
        trainer.save(path)
    assert len(open_files) == 2 and all(f.closed for f in open_files)
    assert Trainer.load(path).iteration == trainer.iteration
    saved = path.read_bytes()
    trainer.step()
    trainer.learners[0]._regrets[0, 0] = np.nan  # diverged: no checkpoint can hold it
    with pytest.raises(TrainingDivergedError, match="non-finite"):
        trainer.save(path)
    assert path.read_bytes() == saved
    assert sorted(p.name for p in path.parent.iterdir()) == ["checkpoint.npz"]

    class OwnBytes(CFR):
        name = "cfr"
        calls = 0

        def checkpoint_bytes(self) -> bytes:
            type(self).calls += 1
            return memoryview(super().checkpoint_bytes())  # bytes-like will do (review)

    own = Trainer("kuhn_poker", OwnBytes("kuhn_poker", 0), "cfr", seed=1)
    own.run(iterations=2)
    own.save(tmp_path / "own.npz")
    assert OwnBytes.calls == 1
    assert Trainer.load(tmp_path / "own.npz").iteration == 2
