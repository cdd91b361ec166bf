"""The command line end to end on tiny budgets: files, columns, PNGs, clean errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nashzoo.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_race_end_to_end(tmp_path, capsys):
    out = tmp_path / "race"
    code = main(
        [
            "race",
            "--learners",
            "cfr,cfr_plus",
            "--seeds",
            "2",
            "--budget-seconds",
            "0",
            "--budget-iterations",
            "30",
            "--cross-play",
            "--out",
            str(out),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "Self-play leaderboard" in printed and "| 1 | cfr_plus |" in printed
    with open(out / "results.csv") as handle:
        header = next(csv.reader(handle))
    for column in (
        "game",
        "learner",
        "seat",
        "seed",
        "checkpoint",
        "wall_seconds",
        "total_work",
        "nash_conv",
        "exploitability",
        "seat_exploitability",
    ):
        assert column in header
    for png in (
        "exploitability_vs_time.png",
        "exploitability_vs_work.png",
        "crossplay_heatmap.png",
    ):
        assert (out / png).read_bytes()[:8] == PNG_MAGIC
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exploitability_convention"] == "NashConv / 2"


def test_train_eval_and_resume(tmp_path, capsys):
    out = tmp_path / "cfr"
    assert (
        main(
            [
                "train",
                "--learner",
                "cfr",
                "--iterations",
                "20",
                "--out",
                str(out),
                "--no-progress",
                "--eval-every",
                "10",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "train",
                "--learner",
                "cfr",
                "--iterations",
                "20",
                "--out",
                str(out),
                "--no-progress",
                "--resume",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["eval", str(out / "checkpoint.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["eval", str(out / "average_policy.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nash_conv"] == pytest.approx(report["nash_conv"])
    history = json.loads((out / "result.json").read_text())
    assert history["iterations"] == 40


def test_duel_and_tournament(tmp_path, capsys):
    assert (
        main(
            [
                "duel",
                "cfr",
                "xfp",
                "--iterations",
                "10",
                "--out",
                str(tmp_path / "d"),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "seat" in printed
    assert (
        main(
            [
                "tournament",
                "equilibrium",
                f"duel={tmp_path / 'd' / 'average_policy.json'}",
                "uniform",
                "--episodes",
                "200",
                "--out",
                str(tmp_path / "t"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "Ranking on kuhn_poker" in capsys.readouterr().out
    assert (tmp_path / "t" / "tournament_heatmap.png").read_bytes()[:8] == PNG_MAGIC


def test_play_reasks_illegal_input(capsys):
    from nashzoo.cli import _cmd_play, build_parser

    args = build_parser().parse_args(["play", "--game", "rps", "--agent", "uniform"])
    assert _cmd_play(args, stdin=io.StringIO("lizard\n7\nrock\n")) == 0
    printed = capsys.readouterr().out
    assert "'lizard' is not a legal move" in printed and "'7' is not a legal move" in printed
    assert "your information set: p0" in printed and "result" in printed


@pytest.mark.parametrize(
    "argv",
    [
        ["race", "--seeds", "x"],
        ["race", "--game", "chess"],
        ["race", "--learners", "nope"],
        ["eval", "/no/such/file.json"],
        ["train", "--learner", "cfr"],
        ["train", "--learner", "regret_matching", "--game", "leduc_poker", "--iterations", "1"],
        ["tournament", "uniform"],
    ],
)
def test_bad_arguments_give_one_line_errors(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (1, 2)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_corrupt_checkpoint_is_refused(tmp_path, capsys):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a zip file")
    assert main(["eval", str(bad)]) == 1
    assert "not a readable" in capsys.readouterr().err


def test_module_entry_point_help():
    done = subprocess.run(
        [sys.executable, "-m", "nashzoo", "race", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--cross-play" in done.stdout and "--resume" in done.stdout
    assert Path(sys.executable).exists()
