"""Faults: ``kill -9`` (and SIGTERM) of a real ``nashzoo race`` / ``nashzoo train`` process.

* the race's pool workers die with it, and nothing is left in the system temp folder; the next
  command on the folder removes any temporary file of an interrupted write;
* ``--resume`` after the kill gives the same final results as an uninterrupted run (the
  wall-time columns aside), whenever the kill lands.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table from /proc (Linux)"
)

TIME_COLUMNS = {"wall_seconds", "train_seconds", "eval_seconds"}


def _env(tmp: Path) -> dict[str, str]:
    """The child's environment: its own temp folder (so leftovers there can be seen), and this
    checkout first on the import path."""
    private_tmp = tmp / "system_tmp"
    private_tmp.mkdir(exist_ok=True)
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "TMPDIR": str(private_tmp), "PYTHONPATH": path}


def _start(argv: list[str], tmp: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "nashzoo", *argv],
        env=_env(tmp),
        cwd=tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _run(argv: list[str], tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nashzoo", *argv],
        env=_env(tmp),
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def _wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _temp_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.nashzoo-tmp"))


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return [
            {k: v for k, v in row.items() if k not in TIME_COLUMNS}
            for row in csv.DictReader(handle)
        ]


def test_killed_race_leaves_no_process_and_no_temp_file(tmp_path):
    argv = ["race", "--learners", "cfr,xfp", "--seeds", "2", "--budget-seconds", "60"]
    argv += ["--workers", "2", "--out", "r", "--no-progress", "--no-plots"]
    race = _start(argv, tmp_path)
    try:  # both workers are inside a run (its folder exists) before the kill
        _wait_for(lambda: len(list((tmp_path / "r" / "runs").glob("*"))) >= 2)
        workers = _descendants(race.pid)
        assert len(workers) >= 2
    finally:
        _kill(race)
    _wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=10)
    assert list((tmp_path / "system_tmp").iterdir()) == []
    # the next command on the folder finishes the race and leaves no temporary file either
    _run(
        [
            "race",
            "--resume",
            "--out",
            "r",
            "--budget-seconds",
            "0",
            "--budget-iterations",
            "3",
            "--no-progress",
        ],
        tmp_path,
    )
    assert _temp_files(tmp_path / "r") == []
    assert (tmp_path / "r" / "summary.json").exists()


@pytest.mark.parametrize("to", ["the process group", "the race alone"])
def test_a_race_sent_sigterm_reports_its_finished_runs_and_leaves_no_process(tmp_path, to):
    """SIGTERM to the race's whole process group (what ``scancel`` or a terminal's hang-up
    sends) or to the race alone (``kill PID``): the race stops as on Ctrl-C, writes its report
    of the runs that finished, exits 143, and no worker outlives it. It used to die on the
    spot, with no report until a resume; and once it stopped as on Ctrl-C, the group's signal,
    which kills the workers, left it hanging in the multiprocessing Event that told them to
    stop (now the end of a pipe)."""
    argv = ["race", "--learners", "cfr,xfp", "--seeds", "2", "--budget-seconds", "60"]
    argv += ["--workers", "2", "--out", "r", "--no-progress", "--no-plots"]
    race = subprocess.Popen(
        [sys.executable, "-m", "nashzoo", *argv],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a group of its own, as a batch job has
    )
    try:  # both workers are inside a run before the signal
        _wait_for(lambda: len(list((tmp_path / "r" / "runs").glob("*"))) >= 2)
        workers = _descendants(race.pid)
    finally:
        if to == "the process group":
            os.killpg(race.pid, signal.SIGTERM)
        else:
            race.send_signal(signal.SIGTERM)
        said, _ = race.communicate(timeout=60)
    assert race.returncode == 143, said
    assert "run again with --resume (from Python: resume=True) to finish the rest" in said
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["interrupted"] is True
    _wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=10)
    assert _temp_files(tmp_path / "r") == []
    assert list((tmp_path / "system_tmp").iterdir()) == []


RACE = ["race", "--learners", "cfr,os_mccfr", "--seeds", "2", "--budget-seconds", "0"]
RACE += ["--budget-iterations", "400", "--workers", "2", "--no-progress", "--no-plots"]


@pytest.mark.parametrize("moment", ["during the first runs", "after the first result"])
def test_race_killed_then_resumed_gives_the_uninterrupted_results(tmp_path, moment, straight_race):
    race = _start([*RACE, "--out", "killed"], tmp_path)
    runs = tmp_path / "killed" / "runs"
    try:
        if moment == "during the first runs":
            _wait_for(lambda: len(list(runs.glob("*"))) >= 1)
        else:
            _wait_for(lambda: len(list(runs.glob("*/result.json"))) >= 1)
    finally:
        _kill(race)
    assert not (tmp_path / "killed" / "summary.json").exists()  # it was killed mid-race
    _run(["race", "--resume", "--out", "killed", "--no-progress"], tmp_path)
    assert _rows(tmp_path / "killed" / "results.csv") == _rows(straight_race / "results.csv")
    boards = [  # the columns that do not depend on wall time
        [
            {k: e[k] for k in ("learner", "runs", "final_exploitability_mean")}
            for e in json.loads((folder / "summary.json").read_text())["leaderboard"]
        ]
        for folder in (tmp_path / "killed", straight_race)
    ]
    assert boards[0] == boards[1]
    assert _temp_files(tmp_path / "killed") == []


TRAIN = ["train", "--learner", "os_mccfr", "--iterations", "6000", "--checkpoint-every", "200"]
TRAIN += ["--eval-every", "1000", "--no-progress"]


@pytest.fixture(scope="module")
def straight_train(tmp_path_factory) -> Path:
    """The uninterrupted run the killed ones are compared with."""
    tmp = tmp_path_factory.mktemp("train")
    _run([*TRAIN, "--out", "straight"], tmp)
    return tmp / "straight"


@pytest.fixture(scope="module")
def straight_race(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("race")
    _run([*RACE, "--out", "straight"], tmp)
    return tmp / "straight"


@pytest.mark.parametrize("moment", ["before the first checkpoint", "after a checkpoint"])
def test_train_killed_then_resumed_gives_the_uninterrupted_result(tmp_path, moment, straight_train):
    train = _start([*TRAIN, "--out", "killed"], tmp_path)
    folder = tmp_path / "killed"
    try:
        marker = (
            "train_config.json" if moment == "before the first checkpoint" else "checkpoint.npz"
        )
        _wait_for(lambda: (folder / marker).exists())
    finally:
        _kill(train)
    assert not (folder / "result.json").exists()  # it was killed mid-run
    _run(["train", "--resume", "--out", "killed", "--no-progress"], tmp_path)
    for name in ("average_policy.json", "history.csv"):
        killed, straight = folder / name, straight_train / name
        if name.endswith(".csv"):
            assert _rows(killed) == _rows(straight)
        else:
            assert killed.read_text() == straight.read_text()
    result = json.loads((folder / "result.json").read_text())
    assert result["iterations"] == 6000
    assert _temp_files(folder) == []


TOURNAMENT = ["tournament", "uniform", "equilibrium", "--game", "kuhn_poker"]
TOURNAMENT += ["--episodes", "6000", "--seed", "1", "--no-plots", "--no-progress"]
FINISH = "to finish the tournament, run:"


@pytest.fixture(scope="module")
def straight_tournament(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tournament")
    _run([*TOURNAMENT, "--out", "straight"], tmp)
    return tmp / "straight"


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"]
)
def test_tournament_stopped_then_resumed_gives_the_uninterrupted_table(
    tmp_path, sig, straight_tournament
):
    """A tournament stopped after its first pairing (Ctrl-C, or kill -9) kept nothing; it now
    keeps every finished pairing, says so on Ctrl-C with the command that resumes, and that
    command writes the uninterrupted run's tournament.json."""
    import shlex

    tournament = subprocess.Popen(
        [sys.executable, "-m", "nashzoo", *TOURNAMENT, "--out", "stopped"],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    pairings = tmp_path / "stopped" / "pairings"
    try:
        _wait_for(lambda: len(list(pairings.glob("*.json"))) >= 1)
    finally:
        tournament.send_signal(sig)
        _, err = tournament.communicate(timeout=60)
    assert not (tmp_path / "stopped" / "tournament.json").exists()  # stopped mid-tournament
    kept = len(list(pairings.glob("*.json")))
    assert 1 <= kept < 4
    resume = [*TOURNAMENT, "--out", "stopped", "--resume"]
    if sig != signal.SIGKILL:  # SIGTERM is handled as Ctrl-C is, with its own status
        assert tournament.returncode == (130 if sig == signal.SIGINT else 143)
        said, command = err.strip().splitlines()[-2:]
        assert said == f"interrupted: {kept} of 4 pairings are kept in stopped/; " + FINISH
        words = shlex.split(command)
        assert words[0] == "nashzoo" and words[-1] == "--resume"
        resume = words[1:]
    _run(resume, tmp_path)
    stopped = tmp_path / "stopped" / "tournament.json"
    assert stopped.read_bytes() == (straight_tournament / "tournament.json").read_bytes()
    assert _temp_files(tmp_path / "stopped") == []
