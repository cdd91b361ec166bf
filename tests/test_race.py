"""The race runner: outputs, resume after an interruption, failures, process pool and Ray."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nashzoo.agents import UniformLearner
from nashzoo.agents.registry import _REGISTRY, register
from nashzoo.train import race as race_mod
from nashzoo.train.race import RaceConfig, backends, plan, run_race, runner

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
COLUMNS = {
    "game",
    "learner",
    "seat",
    "seed",
    "checkpoint",
    "wall_seconds",
    "total_work",
    "nodes_touched",
    "env_steps",
    "nash_conv",
    "exploitability",
    "seat_exploitability",
}


def _config(tmp_path: Path, **kw) -> RaceConfig:
    base = dict(
        game="kuhn_poker",
        learners=("cfr", "cfr_plus"),
        seeds=2,
        budget_seconds=None,
        budget_iterations=40,
        out=str(tmp_path / "race"),
        backend="serial",
        plots=False,
    )
    base.update(kw)
    return RaceConfig(**base)


def test_plan_self_and_cross_play(tmp_path):
    jobs, skipped = plan(_config(tmp_path, cross_play=True))
    ids = [j.run_id for j in jobs]
    assert "self-cfr-seed0" in ids and "cross-cfr-vs-cfr_plus-seed1" in ids
    assert "cross-cfr_plus-vs-cfr-seed0" in ids  # each algorithm holds each seat
    assert len(jobs) == 2 * 2 + 2 * 2 and not skipped


def test_default_learners_skip_what_cannot_play(tmp_path):
    jobs, skipped = plan(_config(tmp_path, learners=None))
    names = {j.learners[0] for j in jobs}
    assert {"cfr", "cfr_plus", "dcfr", "xfp"} <= names
    assert "regret_matching" in skipped and "uniform" not in names


def test_bad_config_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown learner"):
        _config(tmp_path, learners=("nope",))
    with pytest.raises(ValueError, match="valid games"):
        _config(tmp_path, game="chess")
    with pytest.raises(ValueError, match="budget"):
        _config(tmp_path, budget_iterations=None)

    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        _config(tmp_path, seeds=True)


def test_numpy_numbers_are_stored_as_plain_numbers(tmp_path):
    """race_config.json is JSON: numpy scalars given by a script become Python numbers."""
    cfg = _config(
        tmp_path,
        seeds=np.int64(2),
        budget_seconds=np.float32(0.5),
        thresholds=(np.float64(0.1), 1),
    )
    assert (type(cfg.seeds), type(cfg.budget_seconds)) == (int, float)
    assert [type(t) for t in cfg.thresholds] == [float, int]
    json.dumps(dataclasses.asdict(cfg))


def test_outputs_and_results(tmp_path):
    cfg = _config(tmp_path, cross_play=True, plots=True)
    outcome = run_race(cfg, progress=False)
    out = Path(cfg.out)
    assert not outcome.failures and len(outcome.results) == 8
    with open(out / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert set(rows[0]) >= COLUMNS
    assert {r["mode"] for r in rows} == {"self", "cross"}
    summary = json.loads((out / "summary.json").read_text())
    assert [e["learner"] for e in summary["leaderboard"]] == ["cfr_plus", "cfr"]
    assert summary["cross_play"]["learners"] == ["cfr", "cfr_plus"]
    md = (out / "summary.md").read_text()
    assert "Self-play leaderboard" in md and "which side gets closer" in md
    assert "- cfr vs cfr_plus: **" in md and " while learning (" not in md.split("plain words")[0]
    assert "per game from" in md or "neither earns from the other" in md
    for name in (
        "exploitability_vs_time.png",
        "exploitability_vs_work.png",
        "crossplay_heatmap.png",
    ):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    run = out / "runs" / "self-cfr-seed0"
    assert (run / "average_policy.json").exists() and (run / "checkpoint.npz").exists()
    # every number in results.csv can be re-checked from the saved policy
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import exploitability

    last = [r for r in rows if r["run_id"] == "self-cfr-seed0" and r["seat"] == "0"][-1]
    policy = TabularPolicy.load(run / "average_policy.json")
    assert exploitability("kuhn_poker", policy) == pytest.approx(float(last["exploitability"]))


def test_interrupted_race_keeps_results_and_resumes(tmp_path, monkeypatch):
    cfg = _config(tmp_path)
    real = race_mod.run_job
    calls = []

    def interrupt_second(job, out, *rest):
        calls.append(job.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(job, out, *rest)

    monkeypatch.setattr(backends, "run_job", interrupt_second)
    outcome = run_race(cfg, progress=False)
    assert outcome.interrupted and len(outcome.results) == 1
    done = Path(cfg.out) / "runs" / calls[0] / "result.json"
    stamp = done.stat().st_mtime_ns
    monkeypatch.setattr(backends, "run_job", real)
    resumed = run_race(RaceConfig(**{**cfg.__dict__, "resume": True}), progress=False)
    assert not resumed.interrupted and len(resumed.results) == 4
    assert done.stat().st_mtime_ns == stamp  # the finished run was skipped, not re-run


@register
class _BrokenLearner(UniformLearner):
    """A learner whose step fails: the race must survive it."""

    name = "_broken_for_tests"

    def _step(self, opponent):
        raise RuntimeError("deliberate failure")


def test_failing_learner_does_not_sink_the_race(tmp_path):
    register(_BrokenLearner)  # (again: another test may have taken it out)
    try:
        cfg = _config(tmp_path, learners=("cfr", "_broken_for_tests"), seeds=1)
        outcome = run_race(cfg, progress=False)
    finally:
        _REGISTRY.pop("_broken_for_tests", None)
    assert [r["run_id"] for r in outcome.results] == ["self-cfr-seed0"]
    assert [f["run_id"] for f in outcome.failures] == ["self-_broken_for_tests-seed0"]
    error = json.loads(
        (Path(cfg.out) / "runs" / "self-_broken_for_tests-seed0" / "error.json").read_text()
    )
    assert "deliberate failure" in error["error"]
    assert "Failed runs" in outcome.markdown


def test_the_command_line_exits_non_zero_when_a_run_failed(tmp_path, capsys):
    """The report holds the finished runs, and the exit status says some did not finish (a
    script or CI running the race must be able to tell)."""
    from nashzoo.cli import main

    register(_BrokenLearner)
    try:
        argv = ["race", "--learners", "cfr,_broken_for_tests", "--seeds", "1"]
        argv += ["--budget-iterations", "5", "--workers", "1", "--no-progress", "--no-plots"]
        assert main([*argv, "--out", str(tmp_path / "r")]) == 1
    finally:
        _REGISTRY.pop("_broken_for_tests", None)
    err = capsys.readouterr().err
    assert "1 run(s) failed (self-_broken_for_tests-seed0)" in err
    assert (tmp_path / "r" / "summary.md").exists()


def test_process_pool_matches_serial(tmp_path):
    serial = run_race(_config(tmp_path / "a", learners=("cfr",)), progress=False)
    pooled = run_race(
        _config(tmp_path / "b", learners=("cfr",), backend="process", workers=2), progress=False
    )
    key = lambda r: r["run_id"]  # noqa: E731
    for s, p in zip(sorted(serial.results, key=key), sorted(pooled.results, key=key), strict=True):
        assert [h["nash_conv"] for h in s["history"]] == [h["nash_conv"] for h in p["history"]]


def _die_on_seed1(job, out):
    """A run whose worker process dies (as if killed or out of memory) on seed 1."""
    if job.seed == 1:
        os._exit(1)
    return race_mod.run_job(job, out)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_dying_worker_fails_only_its_run(tmp_path, workers):
    """With two workers, the run beside the one whose worker died is not failed with it: the
    runs in flight run again one at a time, and only the one that dies again fails, named."""
    jobs, _ = plan(_config(tmp_path, learners=("cfr",), seeds=3))
    reports = []
    backends._run_process_pool(jobs, str(tmp_path / "race"), workers, reports.append, _die_on_seed1)
    status = {r["run_id"]: r["status"] for r in reports}
    assert status == {
        "self-cfr-seed0": "ok",
        "self-cfr-seed1": "failed",
        "self-cfr-seed2": "ok",  # run in a fresh pool after the crash
    }
    assert len(reports) == 3  # each run reported once
    crashed = next(r for r in reports if r["status"] == "failed")
    assert crashed["error"].startswith("worker crashed: the process running self-cfr-seed1 died")


def _long_on_seed1(job, out):
    """Seed 1: a run as long as a big budget (20 s), which leaves a mark if it gets to its end."""
    if job.seed == 1:
        for _ in range(400):
            time.sleep(0.05)
        Path(out, "seed1-ran-to-its-end").write_text("")
    return race_mod.run_job(job, out)


def test_an_interruption_of_the_race_process_alone_stops_the_runs_in_flight(tmp_path):
    """A Ctrl-C that only the race's process sees (Jupyter's interrupt, ``kill -INT PID``; here
    raised where the first report arrives) stops the run in flight in the other worker: it used
    to run to the end of its budget, and the race then called it unsaved though it was."""
    jobs, _ = plan(_config(tmp_path, learners=("cfr",), seeds=2))
    out = tmp_path / "race"
    reports = []

    def interrupted(report):
        reports.append(report)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backends._run_process_pool(jobs, str(out), 2, interrupted, _long_on_seed1)
    assert [r["run_id"] for r in reports] == ["self-cfr-seed0"]
    assert not (out / "seed1-ran-to-its-end").exists()
    assert not (out / "runs" / "self-cfr-seed1" / "result.json").exists()


def _report_then_break(reports):
    """A report callback that records each report, then raises on a finished run's."""

    def on_done(report):
        reports.append(report)
        if report["status"] == "ok":
            raise ValueError("the report callback broke")

    return on_done


BROKEN_REPORT = (  # the first run to finish: either, with two workers
    r"the race's report of run (self-cfr-seed[01]) failed \(ValueError: the report callback "
    r"broke\); the run itself finished and is saved in .*\1\. The race stopped"
)


@pytest.mark.parametrize("backend", ["serial", "process", "ray"])
def test_a_raising_report_callback_is_its_own_failure_not_the_runs(tmp_path, monkeypatch, backend):
    """A report callback that raised was caught as the run's failure: the process pool and
    Ray reported the finished run a second time, as crashed, with the callback's error, and
    went on; now the callback's failure is raised once, naming the run, which stays saved."""
    if backend == "ray":
        monkeypatch.setitem(sys.modules, "ray", _RayOutlivingTheRace())
    config = _config(tmp_path, learners=("cfr",), seeds=2, backend=backend, workers=2)
    jobs, _ = plan(config)
    reports = []
    with pytest.raises(backends.RaceReportError, match=BROKEN_REPORT) as raised:
        backends._execute(config, jobs, _report_then_break(reports))
    first = reports[0]["run_id"]
    assert f"report of run {first} failed" in str(raised.value)
    assert all(r["status"] == "ok" for r in reports)  # never reported as crashed
    assert len({r["run_id"] for r in reports}) == len(reports)  # each run at most once
    if backend != "ray":  # the stand-in runs nothing
        run = tmp_path / "race" / "runs" / first
        assert (run / "result.json").exists() and not (run / "error.json").exists()


def test_a_race_whose_report_fails_stops_once_and_its_finished_run_is_kept(tmp_path):
    """The race's own report callback writing to a closed stream: one error naming the run;
    the run is saved, and resuming the race keeps it."""
    import io

    closed = io.StringIO()
    closed.close()
    config = _config(tmp_path, learners=("cfr",), seeds=2)
    with pytest.raises(backends.RaceReportError, match="I/O operation on closed file"):
        run_race(config, progress=False, stream=closed)
    stream = io.StringIO()
    outcome = run_race(dataclasses.replace(config, resume=True), progress=False, stream=stream)
    assert "resuming: 1 of 2 runs already finished" in stream.getvalue()
    assert len(outcome.results) == 2 and not outcome.failures


def test_a_race_script_without_a_main_guard_is_named_by_its_workers(tmp_path):
    """Every worker imports the script again; a race call at its top level then ran again in
    each, found the folder locked, and the race blamed a crash or lack of memory alone."""
    script = tmp_path / "no_guard.py"
    script.write_text(
        "from nashzoo.train.race import RaceConfig, run_race\n"
        "run_race(RaceConfig(out='race', learners=('cfr',), seeds=2, budget_iterations=2, "
        "workers=2, plots=False), progress=False)\n"
    )
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert 'put the call under if __name__ == "__main__":' in done.stderr
    summary = (tmp_path / "race" / "summary.md").read_text()
    assert 'a race call not under if __name__ == "__main__": also ends every worker' in summary


def test_resume_reruns_runs_stored_with_other_settings(tmp_path):
    first = run_race(_config(tmp_path, learners=("cfr",), seeds=1), progress=False)
    assert first.results[0]["job"]["budget_iterations"] == 40
    changed = _config(tmp_path, learners=("cfr",), seeds=1, budget_iterations=7, resume=True)
    second = run_race(changed, progress=False)
    assert second.results[0]["iterations"] == 7  # not the stored 40-iteration run
    again = run_race(changed, progress=False)
    assert again.results[0]["elapsed_seconds"] == second.results[0]["elapsed_seconds"]


def test_a_race_resumed_with_other_code_says_its_times_do_not_compare(tmp_path, capsys):
    """A race started before an upgrade (or an edit) and resumed after it pooled runs timed by
    both codes, silently (old seed-0 runs at 16 ms an iteration, new ones at 0.2 ms: "falls
    like t^-49"). Every run records the code that made it; the resume and the summary say
    when they differ."""
    from nashzoo.io.provenance import code_id
    from nashzoo.train.race.storage import _digest

    run_race(_config(tmp_path, learners=("cfr",), seeds=1), progress=False)
    (path,) = Path(tmp_path / "race").glob("runs/*/result.json")
    stored = json.loads(path.read_text())
    assert stored["code"] == code_id() and code_id().startswith("0.1.0+")
    del stored["code"], stored["checksum"]  # as an older nashzoo wrote it
    stored["checksum"] = _digest(stored)
    path.write_text(json.dumps(stored))
    outcome = run_race(_config(tmp_path, learners=("cfr",), seeds=2, resume=True))
    said = "".join(capsys.readouterr())
    assert "1 of the finished runs were timed by other nashzoo code" in said
    assert outcome.markdown.startswith("> **Timed by different code**: these runs were made")
    assert f"{code_id()} (1 run), unknown (1 run)" in outcome.markdown
    assert outcome.summary["code"] == sorted([code_id(), "unknown"])
    again = run_race(_config(tmp_path, learners=("cfr",), seeds=1, force=True), progress=False)
    assert "Timed by different code" not in again.markdown


def test_work_budget_alone_bounds_the_runs(tmp_path):
    cfg = _config(tmp_path, learners=("cfr",), seeds=1, budget_iterations=None, budget_work=3000)
    outcome = run_race(cfg, progress=False)
    (result,) = outcome.results
    assert result["stopped_by"] == "work"
    work = sum(result["history"][-1][f"seat{p}_nodes_touched"] for p in range(2))
    assert 3000 <= work < 3000 + 2 * 58  # stops within one iteration of the budget (58 nodes)


def test_interrupted_summary_says_partial_and_stale_outputs_go(tmp_path):
    cfg = _config(tmp_path, learners=("cfr", "cfr_plus"), seeds=1, cross_play=True, plots=True)
    run_race(cfg, progress=False)
    out = Path(cfg.out)
    assert (out / "crossplay_heatmap.png").exists()
    outcome = race_mod.write_reports(
        RaceConfig(**{**cfg.__dict__, "cross_play": False}),
        [r for r in json_results(out) if r["mode"] == "self"],
        [],
        {},
        interrupted=True,
        planned=4,
    )
    assert outcome.markdown.startswith(
        "> **Partial results**: the race was interrupted after 2 of 4"
    )
    assert not (out / "crossplay_heatmap.png").exists()  # no cross-play now: no stale heatmap


def json_results(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("runs/*/result.json"))]


def test_ray_backend_local(tmp_path):
    pytest.importorskip("ray")
    outcome = run_race(
        _config(tmp_path, learners=("cfr",), backend="ray", workers=2), progress=False
    )
    assert len(outcome.results) == 2 and not outcome.failures


class _RayOutlivingTheRace:
    """A stand-in for a Ray the race did not start (a cluster given by ``address``, or one this
    process started before): its tasks run on after the race unless cancelled. The first task
    finishes; the others stay running until cancelled."""

    def __init__(self):
        self.refs, self.cancelled = [], set()

    def is_initialized(self):
        return True

    def init(self, **kwargs):
        pass

    def shutdown(self):
        raise AssertionError("a Ray the race did not start is not the race's to shut down")

    def remote(self, **kwargs):
        ray = self

        class Ref:  # hashable by identity, as Ray's references are
            def __init__(self, run_id):
                self.run_id = run_id

        class Task:
            def remote(self, job, out):
                ray.refs.append(Ref(job.run_id))
                return ray.refs[-1]

        return lambda function: Task()

    def _done(self, ref):
        return ref is self.refs[0] or ref in self.cancelled

    def wait(self, refs, num_returns=1, timeout=None):
        ready = [ref for ref in refs if self._done(ref)]
        return ready[:num_returns], [ref for ref in refs if ref not in ready[:num_returns]]

    def get(self, ref, timeout=None):
        if ref in self.cancelled or not self._done(ref):
            raise RuntimeError("cancelled")
        return {"status": "ok", "run_id": ref.run_id}

    def cancel(self, ref, force=False):
        self.cancelled.add(ref)


def test_an_interrupted_race_on_a_ray_it_did_not_start_cancels_its_tasks(tmp_path, monkeypatch):
    """Ctrl-C on a race whose Ray outlives it: the tasks still queued or running are cancelled
    before the race lets go of its folder (they used to run on, writing into it)."""
    ray = _RayOutlivingTheRace()
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = _config(tmp_path, learners=("cfr",), seeds=3, backend="ray", workers=2)
    jobs, _ = plan(config)
    reports = []

    def interrupted(report):
        reports.append(report)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backends._execute(config, jobs, interrupted)
    assert [r["run_id"] for r in reports] == [jobs[0].run_id]
    assert ray.cancelled == set(ray.refs[1:]) and len(ray.refs) == 3


def test_progress_bar_shows_the_live_leaders():
    def run(name, value):
        return {"job": {"learners": [name, name]}, "history": [{"exploitability": value}]}

    cross = {"job": {"learners": ["cfr", "xfp"]}, "history": [{"exploitability": 0.0}]}
    results = [run("cfr", 0.02), run("xfp", 0.5), run("cfr", 0.04), run("dcfr", 0.001), cross]
    assert runner._standings(results) == "leaders: dcfr 0.001, cfr 0.03, xfp 0.5"


def test_report_verdicts_and_statistics():
    from nashzoo.train.race.summary import mean_ci, trend_slope, verdict

    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.302653 * 1.0 / 3**0.5, rel=1e-5)
    points = [{"wall_seconds": t, "exploitability": 1.0 / t} for t in (1, 2, 4, 8, 16, 32)]
    assert trend_slope(points) == pytest.approx(-1.0)
    assert trend_slope(points[:3]) is None  # too few points for a trend
    assert verdict(0.0005, -1.0, 0.5, (0.1, 0.001)).startswith("converges")
    assert verdict(0.2, -0.5, 0.5, (0.1, 0.001)).startswith("converging")
    assert verdict(0.5, 0.0, 0.5, (0.1, 0.001)).startswith("not converging")
    # "reaches" only when every seed does; no trend claimed from too few points
    assert verdict(0.0005, -1.0, 0.5, (0.1, 0.001), 0.002).startswith("converging")
    assert "too few evaluation points" in verdict(0.003, None, 0.27, (0.1, 0.001))
    # whichever way the level moved: 0.25 -> 1.29 -> 0.60 was "not converging: stays near"
    few = verdict(0.604, None, 0.254, (0.1, 0.001))
    assert few == "went from 0.254 to 0.604; too few evaluation points for a trend"
    assert "too few evaluation points" in verdict(0.27, None, 0.27, (0.1, 0.001))


def test_cross_play_plain_words_state_closeness_and_payoff_without_contradiction():
    import numpy as np

    from nashzoo.train.race.summary import CrossPlay, markdown_summary

    nan = float("nan")
    cross = CrossPlay(
        learners=("a", "b", "c"),
        seat_exploitability=np.array([[nan, 0.01, 2e-4], [0.02, nan, 0.1], [1e-4, 0.3, nan]]),
        payoff=np.array([[nan, 0.05, 0.0001], [-0.05, nan, -0.2], [-0.0001, 0.2, nan]]),
        wins=np.array([[nan, 1.0, 1.0], [0.0, nan, 0.5], [0.0, 0.5, nan]]),
    )
    md = markdown_summary("kuhn_poker", [], cross, budget="1 s")
    assert (
        "- a vs b: **a** gets closer to equilibrium (0.01 vs 0.02; on 100% of the seats, each "
        "compared with its rival on the same seat); a earns 0.050 per game from b while "
        "learning." in md
    )
    # a is closer on both seats but c's pooled mean is lower: said, not contradicted
    assert "**a** is closer to equilibrium on 100% of the seats, but the mean favours c" in md
    assert "- b vs c: each is closer to equilibrium on one seat (0.1 vs 0.3 over both)" in md


def test_cross_play_compares_each_learner_with_its_rival_on_the_same_seat():
    """Kuhn's seats are not alike: a learner better than its rival on both seats wins, even
    when its worse seat is worse than the rival's better one (which a run-by-run comparison
    of the two seats of one run called a draw)."""
    from nashzoo.train.race.summary import cross_play

    def rows(first, second, seed, exploit0, exploit1):
        return {
            "mode": "cross",
            "run_id": f"cross-{first}-vs-{second}-seed{seed}",
            "seed": seed,
            "learner_seat0": first,
            "learner_seat1": second,
            "iteration": 10,
            "wall_seconds": 1.0,
            "exploitability": 0.1,
            "total_work": 1,
            "seat": 0,
            "checkpoint": 0,
            "seat_exploitability_seat0": exploit0,
            "seat_exploitability_seat1": exploit1,
            "current_value_seat0": 0.0,
            "current_value_seat1": 0.0,
        }

    # good on seat 0: 0.278 (vs 0.361 for bad); on seat 1: 0.389 (vs 0.556 for bad)
    cross = cross_play([rows("good", "bad", 0, 0.278, 0.556), rows("bad", "good", 0, 0.361, 0.389)])
    assert cross.learners == ("bad", "good") and cross.wins[1, 0] == 1.0
    nan_cross = cross_play([rows("good", "bad", 0, "", ""), rows("bad", "good", 0, "", "")])
    assert np.isnan(nan_cross.wins[1, 0])  # not evaluated: no winner named


def _spy_heatmap(monkeypatch) -> dict:
    """Capture the cross-play heatmap's title and cell texts as the race draws it."""
    from nashzoo.eval import plots

    captured: dict = {}
    real = plots.heatmap_figure

    def spy(matrix, rows, cols, **kw):
        fig = real(matrix, rows, cols, **kw)
        captured["title"] = fig.axes[0].get_title()
        captured["texts"] = [t.get_text() for t in fig.axes[0].texts]
        return fig

    monkeypatch.setattr(plots, "heatmap_figure", spy)
    return captured


def _tiny_cross_play(
    tmp_path, seeds: int, learners: tuple[str, ...] = ("cfr", "os_mccfr"), plots: bool = False
) -> RaceConfig:
    """A cross-play race on Kuhn of 20 iterations a run, without self-play."""
    return _config(
        tmp_path,
        learners=learners,
        seeds=seeds,
        budget_iterations=20,
        self_play=False,
        cross_play=True,
        plots=plots,
    )


def test_cross_play_cells_carry_their_spread_over_seeds(tmp_path, monkeypatch):
    """Each cross-play cell was a mean over seeds with no spread: summary.json, summary.md and
    the heatmap now give the seed count and the lowest and highest seed (min to max)."""
    pytest.importorskip("matplotlib")
    drawn = _spy_heatmap(monkeypatch)
    cfg = _tiny_cross_play(tmp_path, seeds=3, plots=True)
    outcome = run_race(cfg, progress=False)
    assert not outcome.failures and len(outcome.results) == 6
    cross = json.loads((Path(cfg.out) / "summary.json").read_text())["cross_play"]
    assert cross["learners"] == ["cfr", "os_mccfr"] and cross["seeds"] == [[0, 3], [3, 0]]
    low, high = cross["seat_exploitability_min"], cross["seat_exploitability_max"]
    assert low[0][0] is None and high[1][1] is None  # the diagonal is self-play
    assert (low[0][1], high[0][1]) == pytest.approx((0.0274513, 0.0312576), rel=1e-5)
    assert (low[1][0], high[1][0]) == pytest.approx((0.0104884, 0.0180629), rel=1e-5)
    for i, j in ((0, 1), (1, 0)):  # the mean (the key earlier races wrote) lies inside
        assert low[i][j] < cross["seat_exploitability"][i][j] < high[i][j]
        payoff = cross["payoff_while_learning"][i][j]
        assert cross["payoff_while_learning_min"][i][j] < payoff
        assert payoff < cross["payoff_while_learning_max"][i][j]
    md = (Path(cfg.out) / "summary.md").read_text()
    assert "mean over 3 seeds (both seatings pooled), then in brackets the lowest" in md
    assert "| cfr | — | 0.0298 [0.0275, 0.0313] |" in md
    assert "| os_mccfr | 0.0142 [0.0105, 0.0181] | — |" in md
    assert "| cfr | — | -0.017 [-0.018, -0.016] |" in md
    caption = "mean over 3 seeds (both seatings pooled); under it: lowest to highest seed"
    assert caption in drawn["title"]
    assert {"0.0298", "[0.0275, 0.0313]", "0.0142", "[0.0105, 0.0181]"} <= set(drawn["texts"])


def test_a_one_seed_cross_play_shows_no_spread_and_says_so(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    drawn = _spy_heatmap(monkeypatch)
    cfg = _tiny_cross_play(tmp_path, seeds=1, plots=True)
    run_race(cfg, progress=False)
    cross = json.loads((Path(cfg.out) / "summary.json").read_text())["cross_play"]
    assert cross["seeds"] == [[0, 1], [1, 0]]
    for key in ("seat_exploitability", "payoff_while_learning"):
        assert cross[f"{key}_min"] == cross[f"{key}_max"] == [[None, None], [None, None]]
    md = (Path(cfg.out) / "summary.md").read_text()
    assert "Each cell is one seed's number (both seatings pooled); one seed: no spread." in md
    assert "[" not in md.split("In plain words")[0].split("## Different")[1]
    assert "one seed (both seatings pooled): no spread over seeds" in drawn["title"]
    assert not [text for text in drawn["texts"] if text.startswith("[")]


def test_a_cross_play_matrix_without_seed_counts_keeps_the_old_keys():
    """A CrossPlay built without seeds (as by an older caller) writes what it always wrote."""
    from nashzoo.train.race.summary import CrossPlay

    nan = float("nan")
    cross = CrossPlay(
        ("a", "b"),
        np.array([[nan, 0.1], [0.2, nan]]),
        np.array([[nan, 0.5], [-0.5, nan]]),
        np.array([[nan, 1.0], [0.0, nan]]),
    )
    assert set(cross.to_dict()) == {
        "learners",
        "seat_exploitability",
        "payoff_while_learning",
        "closer_to_equilibrium_fraction",
    }


def test_a_cross_play_race_without_seat_values_still_reports(tmp_path, monkeypatch):
    # A game too big for the LP gives no seat exploitability: the race still writes its
    # leaderboard, and the cross-play matrix says n/a instead of failing.
    from nashzoo.eval import lp

    monkeypatch.setattr(lp, "CHEAP_LP_TERMINALS", 0)
    cfg = _config(tmp_path, cross_play=True, seeds=1, budget_iterations=10)
    outcome = run_race(cfg, progress=False)
    assert not outcome.failures and len(outcome.results) == 4
    summary = json.loads((Path(cfg.out) / "summary.json").read_text())
    assert [e["learner"] for e in summary["leaderboard"]] == ["cfr_plus", "cfr"]
    assert "Self-play leaderboard" in (Path(cfg.out) / "summary.md").read_text()


@pytest.mark.parametrize(
    ("game", "words"),
    [
        (
            "matrix:prisoners_dilemma",
            [
                "closeness to equilibrium not evaluated (seat exploitability needs the game value,"
                " and matrix(preset='prisoners_dilemma') is general-sum",
                "cfr averages +1.000 per game and xfp +1.000 while learning",
            ],
        ),
        (
            "matrix(row_payoffs=[[1,2],[3,0]],col_payoffs=[[2,1],[0,3]])",
            ["the two seats' payoffs sum to 3, so an even split is 1.5 each", "per game from"],
        ),
    ],
)
def test_cross_play_words_fit_a_general_sum_and_a_constant_sum_game(tmp_path, game, words):
    """A general-sum game was said to be 'too big for the LP' (it has no value at all) and its
    learners to earn 'from' each other; a constant-sum game's +1.5 each read as a win."""
    cfg = _config(
        tmp_path, game=game, learners=("cfr", "xfp"), seeds=1, cross_play=True, budget_iterations=5
    )
    run_race(cfg, progress=False)
    text = (Path(cfg.out) / "summary.md").read_text()
    for phrase in words:
        assert phrase in text
    assert "too big for the LP" not in text


def test_a_game_defined_in_a_notebook_is_refused_before_workers_start(tmp_path, monkeypatch):
    """Worker processes import modules; a game registered from an interactive __main__ (a
    notebook, python -c) is in none, so the race says so up front and writes nothing."""
    import types

    from nashzoo.games import KuhnPokerGame, register_game, unregister_game

    notebook = types.ModuleType("__main__")  # no __file__, as in a notebook
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    cell_game = type("CellKuhn", (KuhnPokerGame,), {"name": "cell_kuhn", "__module__": "__main__"})
    register_game("cell_kuhn", cell_game)
    try:
        config = _config(tmp_path, game="cell_kuhn", backend="process", workers=2)
        with pytest.raises(ValueError, match="defined in this interactive session"):
            run_race(config, progress=False)
        assert not Path(config.out).exists()
        serial = _config(tmp_path, game="cell_kuhn", learners=("cfr",), seeds=1)
        assert not run_race(serial, progress=False).failures  # in-process runs see it
    finally:
        unregister_game("cell_kuhn")


def test_a_long_game_id_is_shortened_where_people_read_it_and_whole_where_it_is_read_back(
    tmp_path,
):
    """A 20x20 matrix game (an id of 2,750 characters; a 200x300 one's is 1.2 MB): the
    summary line, the evaluation header, the summary.md title and every results.csv row show
    its display form; summary.json, race_config.json and the policy file keep what gives the
    game back."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import evaluate
    from nashzoo.games import load_game
    from nashzoo.train import train

    spec = f"matrix(row_payoffs={np.arange(400.0).reshape(20, 20).tolist()})"
    game = load_game(spec)
    shown = game.display_id
    assert len(shown) < 120 < len(game.id)
    result = train(game, "cfr_plus", iterations=3)
    assert str(result).startswith(f"cfr_plus vs cfr_plus on {shown}: 3 iterations")
    assert {row["game"] for row in result.to_rows()} == {shown}
    assert result.summary()["game"] == game.id
    assert str(evaluate(game, result.average_policy)).startswith(f"{shown}: NashConv")
    result.average_policy.save(tmp_path / "policy.json")
    assert TabularPolicy.load(tmp_path / "policy.json").game.id == game.id

    cfg = _config(tmp_path, game=spec, learners=("cfr_plus",), seeds=1, budget_iterations=3)
    run_race(cfg, progress=False)
    out = Path(cfg.out)
    with open(out / "results.csv") as handle:
        assert {row["game"] for row in csv.DictReader(handle)} == {shown}
    assert (out / "summary.md").read_text().startswith(f"# nashzoo race on {shown}\n")
    assert json.loads((out / "summary.json").read_text())["game"] == game.id
    assert load_game(json.loads((out / "race_config.json").read_text())["game"]) == game


def test_seed_ranges_name_a_winner_only_when_they_do_not_overlap():
    """The race's rule for a winner, on hand-made ranges: every seed of one below every seed
    of the other; overlapping or touching ranges, or a bound that is not a number, name none."""
    from nashzoo.train.race.summary import separated_by_seeds

    nan = float("nan")
    assert separated_by_seeds(0.1, 0.2, 0.3, 0.4) == 0
    assert separated_by_seeds(0.3, 0.4, 0.1, 0.2) == 1
    # kuhn_crossplay's cfr vs xfp: means 0.000762 vs 0.00107, but the seeds overlap
    assert separated_by_seeds(0.000639, 0.000885, 0.000871, 0.00126) is None
    assert separated_by_seeds(0.1, 0.2, 0.2, 0.3) is None  # touching is not apart
    assert separated_by_seeds(0.1, 0.5, 0.2, 0.3) is None  # one inside the other
    assert separated_by_seeds(0.1, nan, 0.3, 0.4) is None
    assert separated_by_seeds(0.2, 0.2, 0.3, 0.3) == 0  # deterministic learners: points
    with pytest.raises(ValueError, match="low to high"):
        separated_by_seeds(0.2, 0.1, 0.3, 0.4)


def _plain_words(md: str) -> str:
    return md.split("In plain words:")[1]


def test_cross_play_verdicts_name_no_winner_inside_seed_noise(tmp_path):
    """Kuhn, 3 seeds, 20 iterations: es_mccfr's mean (0.0136) is below os_mccfr's (0.0143)
    on both seats, but its seeds span [0.00757, 0.0203] and os_mccfr's [0.01, 0.0166], so the
    pair is level within seed noise; against cfr, both MCCFR variants win on every seed."""
    cfg = _tiny_cross_play(tmp_path, seeds=3, learners=("cfr", "es_mccfr", "os_mccfr"))
    outcome = run_race(cfg, progress=False)
    assert not outcome.failures
    words = _plain_words((Path(cfg.out) / "summary.md").read_text())
    assert "A learner is named closer to equilibrium only when every seed of it is below" in words
    assert (
        "- es_mccfr vs os_mccfr: level within seed noise (0.0136 [0.00757, 0.0203] vs 0.0143 "
        "[0.01, 0.0166]: the seeds' ranges overlap); es_mccfr earns 0.007 per game from "
        "os_mccfr while learning." in words
    )
    assert (
        "- cfr vs os_mccfr: **os_mccfr** gets closer to equilibrium (0.0142 [0.0105, 0.0181] "
        "vs 0.0298 [0.0275, 0.0313]; on 100% of the seats, each compared with its rival on the "
        "same seat; the seeds' ranges do not overlap); os_mccfr earns 0.017 per game from cfr "
        "while learning." in words
    )
    assert "- cfr vs es_mccfr: **es_mccfr** gets closer to equilibrium (0.016 [" in words
    # the tables keep their numbers: the means (and ranges) are as before
    cross = json.loads((Path(cfg.out) / "summary.json").read_text())["cross_play"]
    assert cross["closer_to_equilibrium_fraction"][1][2] == 1.0


def test_a_one_seed_cross_play_verdict_says_it_had_no_spread(tmp_path):
    cfg = _tiny_cross_play(tmp_path, seeds=1)
    run_race(cfg, progress=False)
    words = _plain_words((Path(cfg.out) / "summary.md").read_text())
    assert (
        "- cfr vs os_mccfr: **os_mccfr** gets closer to equilibrium (0.0181 vs 0.0313; on 100% "
        "of the seats, each compared with its rival on the same seat; one seed: no spread to "
        "judge noise by); os_mccfr earns 0.018 per game from cfr while learning." in words
    )


def _entry(learner: str, times: list[float], runs: int | None = None):
    """A hand-made leaderboard entry whose seeds held exploitability 0.1 from ``times`` on
    (of ``runs`` seeds: the others never held it)."""
    from nashzoo.train.race.summary import LeaderboardEntry

    runs = len(times) if runs is None else runs
    held = tuple(times) + (None,) * (runs - len(times))
    return LeaderboardEntry(
        learner=learner,
        finals=(0.01,) * runs,
        held_from={0.1: held},
        work_per_second=1.0,
        slope=None,
        verdict="converges",
    )


def test_the_fastest_learner_is_named_only_when_its_seeds_beat_the_others():
    """A winner is named only when every seed of it held the level before every seed of the
    others (ten seeds with one slow seed of the leader and one quick of the runner-up are level
    within seed noise), not by intervals: two seeds each, 1.0-1.1 s against 5-6 s, are apart
    although a two-seed Student-t interval would span both."""
    from nashzoo.train.race.summary import markdown_summary

    quick = [1.0] * 9 + [1.5]
    slow = [1.4] + [2.0] * 9
    md = markdown_summary(
        "kuhn_poker", [_entry("a", quick), _entry("b", slow)], None, budget="-", thresholds=(0.1,)
    )
    assert (
        "- No learner is clearly fastest to exploitability 0.1: a (median 1 s) and b "
        "(2 s) are level within seed noise: the seeds' ranges overlap (a's slowest seed "
        "1.5 s, b's fastest 1.4 s)." in md
    )
    apart = [1.6] + [2.0] * 9
    md = markdown_summary(
        "kuhn_poker", [_entry("a", quick), _entry("b", apart)], None, budget="-", thresholds=(0.1,)
    )
    assert (
        "every seed got there before every seed of the others): **a** (median 1 s [1 s, 1.5 s], "
        "next b (2 s))." in md
    )
    board = [_entry("a", quick), _entry("b", apart), _entry("c", [1.2] + [3.0] * 9)]
    md = markdown_summary(
        "kuhn_poker", board, None, budget="-", thresholds=(0.1,)
    )  # c's fastest seed beat a's
    assert "a (median 1 s) and c (3 s) are level within seed noise" in md
    # a learner that missed 0.1 in some runs is not ranked, but its quick seed still counts
    board = [_entry("a", quick), _entry("b", apart), _entry("d", [1.3, 4.0], runs=10)]
    md = markdown_summary("kuhn_poker", board, None, budget="-", thresholds=(0.1,))
    assert "d's fastest 1.3 s" in md and "Fastest to" not in md
    md = markdown_summary(
        "kuhn_poker",
        [_entry("a", [1.0, 1.1]), _entry("b", [5, 6]), _entry("e", [], runs=2)],
        None,
        budget="-",
        thresholds=(0.1,),
    )
    assert "**a** (median 1.05 s [1 s, 1.1 s], next b (5.5 s); never held by e)." in md
    md = markdown_summary(
        "kuhn_poker", [_entry("a", [1.0]), _entry("b", [5])], None, budget="-", thresholds=(0.1,)
    )
    assert "a held it soonest (1 s) on one run, which shows no spread over seeds" in md


def _curve_rows(learner: str, seed: int, curve: list[tuple[float, float]]) -> list[dict]:
    """A self-play run's rows as results.csv holds them: (wall seconds, exploitability)."""
    return [
        {
            "run_id": f"self-{learner}-seed{seed}",
            "mode": "self",
            "seat": 0,
            "seed": seed,
            "checkpoint": i,
            "iteration": i + 1,
            "learner_seat0": learner,
            "exploitability": value,
            "wall_seconds": seconds,
            "total_work": 10 * (i + 1),
        }
        for i, (seconds, value) in enumerate(curve)
    ]


def test_time_to_a_level_is_when_a_run_began_to_hold_it():
    """A noisy curve is credited with the level it holds: a dip below it that came back up does
    not count (the table gave ES-MCCFR's first touch of 0.001 at 0.26 s where it held it from
    0.72 s, and a learner at uniform play for 99 of 100 iterations "reached" 0.001 in 656 us),
    and a run whose last point is above it has not reached it."""
    from nashzoo.train.race.summary import leaderboard, markdown_summary, time_to

    dipper = [(0.1, 0.5), (0.2, 0.0005), (0.3, 0.5), (0.4, 0.0004), (0.5, 0.0011), (0.6, 0.0009)]
    points = [{"exploitability": v, "wall_seconds": s} for s, v in dipper]
    assert time_to(points, 0.001, "wall_seconds") == 0.6
    assert time_to(points, 0.1, "wall_seconds") == 0.4
    assert time_to(points[:3], 0.1, "wall_seconds") is None  # ends above it
    rows = _curve_rows("dipper", 0, dipper) + _curve_rows("dipper", 1, dipper[:3])
    rows += _curve_rows("steady", 0, [(0.1, 0.2), (0.3, 0.05)])
    rows += _curve_rows("steady", 1, [(0.1, 0.2), (0.5, 0.05)])
    board = {entry.learner: entry for entry in leaderboard(rows, (0.1, 0.001))}
    held = board["dipper"].time_to(0.1)
    assert (held.median, held.count) == (0.4, 1)
    assert board["dipper"].to_dict()["time_to_threshold"]["0.1"]["first_below_seconds"] == [
        0.2,
        0.2,
    ]
    md = markdown_summary(
        "kuhn_poker", list(board.values()), None, budget="-", thresholds=(0.1, 0.001)
    )
    assert "| dipper | 2 | 0.2505 [0.0009, 0.5] | 400 ms (1/2) | 600 ms (1/2) |" in md
    assert "| steady | 2 | 0.05 | 400 ms [300 ms, 500 ms] | not reached |" in md
    assert "a dip below X that came back up does not count" in md


def test_learners_with_equal_finals_share_a_rank():
    """Identical twins ranked 1 and 2 by their names."""
    from nashzoo.train.race.summary import leaderboard, markdown_summary

    rows = []
    for name in ("b_twin", "a_twin", "worse"):
        final = 0.2 if name == "worse" else 0.1
        rows += _curve_rows(name, 0, [(0.1, 0.3), (0.2, final)])
    md = markdown_summary(
        "kuhn_poker", leaderboard(rows, (0.1,)), None, budget="-", thresholds=(0.1,)
    )
    assert "| 1 | a_twin |" in md and "| 1 | b_twin |" in md and "| 3 | worse |" in md


def test_a_race_whose_every_run_failed_names_only_the_files_it_wrote(tmp_path, capsys):
    """ "results written to ... (results.csv, summary.json, summary.md, plots)" where neither
    results.csv nor the plots existed."""
    register(_BrokenLearner)
    try:
        run_race(_config(tmp_path, learners=("_broken_for_tests",), seeds=1), progress=False)
    finally:
        _REGISTRY.pop("_broken_for_tests", None)
    out = capsys.readouterr().out
    assert "(summary.json, summary.md)" in out
    assert not (tmp_path / "race" / "results.csv").exists()


def test_the_default_workers_are_the_cpus_this_process_may_use(tmp_path, monkeypatch):
    """``os.cpu_count()`` counts the machine's CPUs: under ``taskset -c 0`` a race ran two runs
    on one core, each at half speed, and ranked them below a run that had the core alone.
    More runs side by side than CPUs are warned of, and the report says how they ran."""
    from nashzoo.train import threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert threads.usable_cpus() == 1
    cfg = _config(tmp_path, learners=("cfr",), seeds=2)
    assert backends.race_workers(cfg, 2) == 1
    pooled = dataclasses.replace(
        cfg, backend="process", workers=2, budget_seconds=0.05, budget_iterations=None
    )
    with pytest.warns(UserWarning, match="2 runs side by side on 1 usable CPU"):
        outcome = run_race(pooled, progress=False)
    assert "2 runs at a time on 1 usable CPU (more runs than CPUs" in outcome.markdown
    assert outcome.summary["workers"] == 2 and outcome.summary["usable_cpus"] == 1


def test_each_run_records_how_it_ran_and_a_resume_reports_each_way(tmp_path, monkeypatch):
    """The budget line said how the current invocation ran its runs: a race run two at a
    time on one CPU, then resumed one at a time, was reported as one at a time, its shared
    runs' seconds unflagged. Each run records its own way; the report gives each."""
    from nashzoo.train import threads
    from nashzoo.train.race.storage import _digest

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    cfg = _config(tmp_path, learners=("cfr",), seeds=2)
    first = run_race(cfg, progress=False)
    assert threads.usable_cpus() == 1
    assert all(r["placement"] == {"runs_at_a_time": 1, "usable_cpus": 1} for r in first.results)
    assert "; 1 run at a time on 1 usable CPU." in first.markdown
    # As if seed 1 had run two at a time on one CPU, in an earlier invocation.
    stored = Path(cfg.out) / "runs" / "self-cfr-seed1" / "result.json"
    payload = json.loads(stored.read_text())
    payload["placement"] = {"runs_at_a_time": 2, "usable_cpus": 1}
    payload["checksum"] = _digest(payload)
    stored.write_text(json.dumps(payload))
    resumed = run_race(dataclasses.replace(cfg, resume=True), progress=False)
    assert len(resumed.results) == 2  # both kept, neither run again
    assert (
        "the runs went side by side in different ways (a resume runs the runs left with the "
        "workers and CPUs it has): 1 run 1 at a time on 1 usable CPU, 1 run 2 at a time on 1 "
        "usable CPU (more runs than CPUs in some: their seconds do not compare)" in resumed.markdown
    )
    assert sorted(resumed.summary["placements"], key=lambda p: p["runs_at_a_time"]) == [
        {"runs_at_a_time": 1, "usable_cpus": 1, "runs": 1},
        {"runs_at_a_time": 2, "usable_cpus": 1, "runs": 1},
    ]
    # A run written before runs recorded it is said to be so, not taken for this invocation's
    # way (its seconds may have been shared: nobody knows).
    del payload["placement"]
    payload["checksum"] = _digest(payload)
    stored.write_text(json.dumps(payload))
    again = run_race(dataclasses.replace(cfg, resume=True), progress=False)
    assert (
        "1 run 1 at a time on 1 usable CPU, 1 run with no placement recorded (on Ray, or by an "
        "older nashzoo)." in again.markdown
    )
    assert sorted(again.summary["placements"], key=lambda p: p["runs_at_a_time"] or 0) == [
        {"runs_at_a_time": None, "usable_cpus": None, "runs": 1},
        {"runs_at_a_time": 1, "usable_cpus": 1, "runs": 1},
    ]
    assert again.summary["workers"] == 1 and again.summary["usable_cpus"] == 1
    # Every run written so: said once, without a count of its own.
    first_payload = json.loads(
        (Path(cfg.out) / "runs" / "self-cfr-seed0" / "result.json").read_text()
    )
    del first_payload["placement"]
    first_payload["checksum"] = _digest(first_payload)
    (Path(cfg.out) / "runs" / "self-cfr-seed0" / "result.json").write_text(
        json.dumps(first_payload)
    )
    old = run_race(dataclasses.replace(cfg, resume=True), progress=False)
    assert "; 2 runs with no placement recorded (on Ray, or by an older nashzoo)." in old.markdown


def test_a_damaged_placement_in_a_signed_result_runs_that_run_again(tmp_path):
    """A resume checked every field of a run's result the reports read but its placement,
    which the report read with int(): a count of 10**400 or 0 went into the budget line as
    it was, 1.5 or true as 1, and other damage silently became this invocation's way. The
    placement is now checked with the other fields: a run whose placement is not two counts
    of at least one is run again, as any damaged result is."""
    from nashzoo.train.race.storage import _digest

    cfg = _config(tmp_path, learners=("cfr",), seeds=1)
    run_race(cfg, progress=False)
    stored = Path(cfg.out) / "runs" / "self-cfr-seed0" / "result.json"
    good = json.loads(stored.read_text())
    damaged = [
        {"runs_at_a_time": float("inf"), "usable_cpus": 1},
        {"runs_at_a_time": 10**400, "usable_cpus": 1},
        {"runs_at_a_time": 0, "usable_cpus": 1},
        {"runs_at_a_time": True, "usable_cpus": 1},
        {"runs_at_a_time": 1.5, "usable_cpus": 1},
        {"usable_cpus": 1},
        [1, 1],
        "1 at a time",
    ]
    for placement in damaged:
        payload = {**good, "placement": placement}
        payload["checksum"] = _digest(payload)
        stored.write_text(json.dumps(payload))
        again = run_race(dataclasses.replace(cfg, resume=True), progress=False)
        assert again.summary["runs_finished"] == 1, placement
        assert json.loads(stored.read_text())["placement"] == good["placement"], placement


def test_a_cpu_quota_limits_the_usable_cpus(tmp_path, monkeypatch):
    """A container's ``--cpus 1.5`` (cgroup v2 ``cpu.max``: 150000 100000) gives two CPUs'
    worth of runs, not one per core of the machine; "max" is no quota."""
    from nashzoo.games import limits
    from nashzoo.train import threads

    own = tmp_path / "self-cgroup"
    own.write_text("0::/\n")
    monkeypatch.setattr(limits, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(limits, "PROC_CGROUP", own)
    monkeypatch.setattr(limits, "PROC_MOUNTINFO", tmp_path / "no-mountinfo")  # by name
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.usable_cpus() == 2
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.usable_cpus() == 8


def test_a_cpu_quota_on_a_group_above_the_mount_root_counts(tmp_path, monkeypatch):
    """systemd's ``CPUQuota=`` sets the quota on the service's own group, deep in the
    hierarchy: reading the mount root alone gave every core of the machine. The smallest
    quota from the process's group up to the root is the one that holds, in v2 and in v1."""
    from nashzoo.games import limits
    from nashzoo.train import threads

    own = tmp_path / "self-cgroup"
    monkeypatch.setattr(limits, "PROC_CGROUP", own)
    monkeypatch.setattr(limits, "PROC_MOUNTINFO", tmp_path / "no-mountinfo")  # by name
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    v2 = tmp_path / "v2"
    group = v2 / "system.slice" / "lab.service"
    group.mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "cpu.max").write_text("max 100000\n")
    (v2 / "system.slice" / "cpu.max").write_text("600000 100000\n")
    (group / "cpu.max").write_text("300000 100000\n")
    monkeypatch.setattr(limits, "CGROUP_ROOT", v2)
    own.write_text("0::/system.slice/lab.service\n")
    assert threads.usable_cpus() == 3
    (group / "cpu.max").write_text("max 100000\n")
    assert threads.usable_cpus() == 6  # the slice above still limits it
    # A path this process cannot see under its mount (no cgroup namespace): the root alone.
    own.write_text("0::/elsewhere/deep\n")
    assert threads.usable_cpus() == 16
    # cgroup v1: the cpu controller's folder, quota over period.
    v1 = tmp_path / "v1"
    job = v1 / "cpu" / "slurm" / "job_7"
    job.mkdir(parents=True)
    (job / "cpu.cfs_quota_us").write_text("200000\n")
    (job / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    monkeypatch.setattr(limits, "CGROUP_ROOT", v1)
    own.write_text("12:memory:/slurm/job_7\n4:cpu,cpuacct:/slurm/job_7\n0::/\n")
    assert threads.usable_cpus() == 2
    own.write_text("garbage without colons\n")  # no group named: no quota read
    assert threads.usable_cpus() == 16


def test_control_groups_are_read_where_mountinfo_says_they_are_mounted(tmp_path, monkeypatch):
    """The groups were looked for under ``/sys/fs/cgroup`` by name: on a hybrid machine, whose
    v2 hierarchy is mounted at ``/sys/fs/cgroup/unified``, a v2 quota was never read, and
    neither was a v1 controller mounted anywhere else. ``/proc/self/mountinfo`` now says where
    each hierarchy is, and which folder of it a mount shows (a container without a cgroup
    namespace is shown its own subtree but names its group by the host's path)."""
    from nashzoo.games import limits
    from nashzoo.train import threads

    own, info = tmp_path / "self-cgroup", tmp_path / "mountinfo"
    monkeypatch.setattr(limits, "PROC_CGROUP", own)
    monkeypatch.setattr(limits, "PROC_MOUNTINFO", info)
    monkeypatch.setattr(limits, "CGROUP_ROOT", tmp_path / "nothing-here")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    unified, cpu = tmp_path / "unified", tmp_path / "cpu and acct"  # a space, escaped
    (unified / "job").mkdir(parents=True)
    (unified / "job" / "cpu.max").write_text("400000 100000\n")
    (cpu / "task").mkdir(parents=True)
    (cpu / "task" / "cpu.cfs_quota_us").write_text("300000\n")
    (cpu / "task" / "cpu.cfs_period_us").write_text("100000\n")
    escaped = str(cpu).replace(" ", "\\040")
    info.write_text(
        f"31 23 0:28 / {tmp_path} rw,relatime - tmpfs tmpfs rw,mode=755\n"
        f"32 31 0:29 /host/box {escaped} rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        f"41 31 0:38 / {unified} rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
    )
    assert [m.point for m in limits.cgroup_mounts()] == [cpu, unified]  # tmpfs left out
    own.write_text("0::/job\n")
    assert threads.usable_cpus() == 4  # v2 beside v1, found only through mountinfo
    # v1 shared by two controllers and mounted as a subtree: /host/box/task is task/ there.
    own.write_text("4:cpu,cpuacct:/host/box/task\n0::/job\n")
    assert threads.usable_cpus() == 3
    assert (cpu / "task", False) in limits.cgroup_folders("cpu")
    # A path outside what the mount shows, or one climbing out of the namespace: the mount's
    # own folder, never a folder beside or above it.
    for path in ("/elsewhere/task", "/host/box/../../x"):
        own.write_text(f"4:cpu,cpuacct:{path}\n")
        assert limits.cgroup_folders("cpu") == [(cpu, False)]
    # No mountinfo (not Linux, or /proc not mounted): by name under /sys/fs/cgroup.
    info.unlink()
    own.write_text("0::/job\n")
    assert limits.cgroup_folders("cpu") == [
        (tmp_path / "nothing-here" / "job", True),
        (tmp_path / "nothing-here", True),
    ]


def test_a_race_outcome_shows_itself_in_a_line(tmp_path):
    """A notebook cell ending with run_race(...) printed every run's whole history."""
    outcome = run_race(_config(tmp_path, learners=("cfr",)), progress=False)
    shown = repr(outcome)
    assert len(shown) < 300 and "runs_finished=2" in shown and "interrupted=False" in shown


def test_learners_that_trained_past_a_seconds_budget_are_named():
    """A seconds budget is checked between steps: PPO trained 12.9 s on a 10 s budget and
    the report did not say so, though its times and final are over that longer training."""
    from nashzoo.train.race.summary import leaderboard, markdown_summary

    rows = _curve_rows("ppo", 0, [(3.0, 0.5), (12.9, 0.3)])
    rows += _curve_rows("ppo", 1, [(3.0, 0.5), (12.1, 0.3)])
    rows += _curve_rows("cfr", 0, [(0.1, 0.5), (10.0, 0.001)])
    board = leaderboard(rows, (0.1,))
    md = markdown_summary(
        "kuhn_poker", board, None, budget="-", thresholds=(0.1,), budget_seconds=10.0
    )
    assert "Note: trained past the 10 s budget" in md and "ppo (12.5 s [12.1 s, 12.9 s])" in md
    assert "cfr (" not in md
    assert "trained past" not in markdown_summary(
        "kuhn_poker", board, None, budget="-", thresholds=(0.1,)
    )


def test_an_iteration_budgets_report_says_which_numbers_repeat(tmp_path):
    """Two races with the same seeds and an iteration budget: every run the same, bit for bit,
    yet every time in the tables differed and nothing said which numbers repeat; the held
    iterations do, and the report points to them."""
    first = run_race(_config(tmp_path / "a", learners=("cfr", "os_mccfr")), progress=False)
    second = run_race(_config(tmp_path / "b", learners=("cfr", "os_mccfr")), progress=False)
    assert "summary.json gives each seed's iteration from which it held" in first.markdown

    def held(outcome):
        return [
            (entry["learner"], t, cell["seed_iterations"])
            for entry in outcome.summary["leaderboard"]
            for t, cell in entry["time_to_threshold"].items()
        ]

    assert held(first) == held(second)
    assert any(iterations[0] is not None for _, _, iterations in held(first))


def test_a_race_with_both_a_seconds_and_an_iteration_budget_says_which_runs_repeat(tmp_path):
    """With both budgets, a run ends at whichever comes first: the report said nothing of
    which numbers repeat (the clock note was for counted budgets alone, the overshoot note for
    seconds alone)."""
    from nashzoo.train.race.summary import BOTH_BUDGETS_NOTE, CLOCK_NOTE

    both = run_race(
        _config(tmp_path / "both", learners=("cfr",), budget_seconds=30.0, budget_iterations=5),
        progress=False,
    )
    assert BOTH_BUDGETS_NOTE in both.markdown and CLOCK_NOTE not in both.markdown
    assert "(whichever comes first)" in both.markdown
    assert "Here the clock stopped 0 of 2 runs." in both.markdown  # 5 iterations in 30 s
    cut = run_race(
        _config(tmp_path / "cut", learners=("cfr",), budget_seconds=1e-4, budget_iterations=10**9),
        progress=False,
    )
    assert "Here the clock stopped 2 of 2 runs." in cut.markdown
    counted = run_race(_config(tmp_path / "counted", learners=("cfr",)), progress=False)
    assert CLOCK_NOTE in counted.markdown and BOTH_BUDGETS_NOTE not in counted.markdown
    clock = run_race(
        _config(tmp_path / "clock", learners=("cfr",), budget_seconds=0.05, budget_iterations=None),
        progress=False,
    )
    assert BOTH_BUDGETS_NOTE not in clock.markdown and CLOCK_NOTE not in clock.markdown


def test_a_learner_quicker_on_every_seed_that_held_a_level_is_not_called_level():
    """A learner that held 0.1 sooner on every seed that held it, though not in every run, was
    said to be "level within seed noise: the seeds' ranges overlap" with ranges apart."""
    from nashzoo.train.race.summary import markdown_summary

    board = [_entry("a_steady", [0.004, 0.005, 0.006]), _entry("b_quick", [0.001, 0.0012], runs=3)]
    md = markdown_summary("kuhn_poker", board, None, budget="-", thresholds=(0.1,))
    assert "b_quick held it sooner on every seed that held it (1.2 ms at the latest" in md
    assert "but only in 2 of its 3 runs; a_steady held it in every run." in md
    assert "overlap" not in md


def test_summary_json_says_its_format(tmp_path):
    """Its threshold keys changed meaning (held times, medians): a script reading an older
    summary.json beside a newer one could not tell."""
    outcome = run_race(_config(tmp_path, learners=("cfr",)), progress=False)
    stored = json.loads((Path(outcome.out) / "summary.json").read_text())
    assert stored["format"] == "nashzoo.RaceSummary/2" == outcome.summary["format"]


def test_a_stop_whose_interrupt_was_lost_ends_the_run_at_its_next_step(tmp_path, monkeypatch):
    """A race worker is told to stop by an interrupt of its main thread, which Python only
    prints ("Exception ignored in") where it lands in a weak reference's callback or a
    ``__del__`` (an import's module lock has one): the run went on to the end of its budget,
    the race waiting on it. The stop is now also looked at after every step. Here it was asked
    for and its interrupt lost: a run of a thousand iterations ends at its first step."""
    from nashzoo.train.race import backends

    monkeypatch.setattr(backends, "_STOP_ASKED", True)
    monkeypatch.setattr(backends, "_IN_RUN", True)
    job = race_mod.RaceJob("kuhn_poker", ("cfr", "cfr"), 0, None, 1000, None)
    with pytest.raises(KeyboardInterrupt):
        backends.run_job(job, str(tmp_path))
    assert not (tmp_path / "runs" / job.run_id / "result.json").exists()
    monkeypatch.setattr(backends, "_STOP_ASKED", False)  # not asked: the run is whole
    assert backends.run_job(job, str(tmp_path))["status"] == "ok"
