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
                "40",
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
    # the trainer checkpoint that `duel`, `train` and `race` write plays too, as does play
    checkpoint = tmp_path / "d" / "checkpoint.npz"
    assert main(["tournament", str(checkpoint), "uniform", "--episodes", "0"]) == 0
    assert "1. d " in capsys.readouterr().out  # named after its run folder
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    args = build_parser().parse_args(["play", "--agent", str(checkpoint)])
    assert _cmd_play(args, stdin=io.StringIO("bet\n")) == 0


def test_play_reasks_illegal_input(capsys):
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    args = build_parser().parse_args(["play", "--game", "rps", "--agent", "uniform"])
    assert _cmd_play(args, stdin=io.StringIO("lizard\n7\nrock\n")) == 0
    printed = capsys.readouterr().out
    assert "'lizard' is not a legal move" in printed and "'7' is not a legal move" in printed
    assert "your information set: p0" in printed and "result" in printed


def test_play_against_uniform_on_a_game_too_big_to_compile(capsys):
    """A tournament's uniform entrant is a table over the whole tree, so play refused Liar's
    dice with two dice each (43 billion histories); uniform now plays from each position's
    legal actions, while an agent that needs the tree is still refused by name."""
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play
    from nashzoo.games import GameTooLarge

    argv = ["play", "--game", "liars_dice(numdice=2)", "--agent", "u=uniform", "--hands", "2"]
    assert _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO("0\nLiar\n" * 10)) == 0
    printed = capsys.readouterr().out
    assert "against u ===" in printed and "final result after 2 hand(s)" in printed
    argv = ["play", "--game", "liars_dice(numdice=2)", "--agent", "equilibrium"]
    with pytest.raises(GameTooLarge, match="43,486,542,835 histories"):
        _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO(""))


def test_play_reasks_a_digit_that_is_no_number(capsys):
    """'²' passes str.isdigit but not int(): the game ended with 'error: invalid literal for
    int() with base 10'; it is refused and asked again like any other illegal input."""
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    args = build_parser().parse_args(["play", "--game", "rps", "--agent", "uniform"])
    assert _cmd_play(args, stdin=io.StringIO("\u00b2\n\u0661\nrock\n")) == 0
    printed = capsys.readouterr().out
    assert "'\u00b2' is not a legal move" in printed and "'\u0661' is not a legal move" in printed
    assert "player 0: rock" in printed


def test_play_names_only_the_opponent_moves_the_human_sees(capsys):
    """In RPS seat 1 chooses without seeing seat 0's move; play printed 'uniform plays rock'
    before asking. A move the human's information set tells apart (Kuhn's bets) is named."""
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    argv = ["play", "--game", "rps", "--agent", "uniform", "--seat", "1"]
    assert _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO("paper\n")) == 0
    printed = capsys.readouterr().out
    assert "uniform has moved (a move you do not see)" in printed
    assert "uniform plays" not in printed
    argv = ["play", "--agent", "uniform", "--seat", "1", "--hands", "3"]
    assert _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO("0\n" * 6)) == 0
    printed = capsys.readouterr().out
    assert "uniform plays" in printed and "has moved" not in printed


def test_play_names_openspiel_moves_as_their_player_reads_them(capsys):
    """OpenSpiel names a move by who makes it; play named every move as seat 0 reads it, so
    the human playing o in tic-tac-toe was offered x(1,2) and told the opponent's x was o."""
    pytest.importorskip("pyspiel")
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    argv = ["play", "--game", "openspiel:tic_tac_toe", "--agent", "uniform", "--seat", "1"]
    moves = "".join(f"{a}\n" for a in range(9))
    assert _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO(moves)) == 0
    printed = capsys.readouterr().out
    assert "uniform plays x(" in printed and "uniform plays o(" not in printed
    assert "your move [" in printed and "=x(" not in printed.split("your move [", 1)[1]


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
        ["tournament", "uniform", "equilibrium", "--episodes", "-5"],
        ["race", "--budget-seconds", "-1"],
        ["race", "--address", "auto"],
        ["--plugin", "no_such_plugin_module", "race"],
        ["train", "--learner", "cfr", "--work", "0"],
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


def test_race_resume_finishes_the_stored_race(tmp_path, capsys):
    out = str(tmp_path / "race")
    common = ["--out", out, "--workers", "1", "--no-progress", "--no-plots"]
    first = ["race", "--game", "rps", "--learners", "regret_matching", "--seeds", "2"]
    assert main([*first, "--budget-seconds", "0", "--budget-iterations", "20", *common]) == 0
    capsys.readouterr()
    assert main(["race", "--resume", *common]) == 0  # no options: the stored race
    printed = capsys.readouterr().out
    assert "resuming: 2 of 2 runs already finished" in printed and "race on rps" in printed
    assert main(["race", "--resume", "--budget-iterations", "10", *common]) == 0
    assert (
        "resuming: 2 stored run(s) had other settings and will be run again: "
        "budget_iterations 20 -> 10 (2 runs)\n"
    ) in capsys.readouterr().out
    # A learner setting that differs from the stored runs' (as a newer nashzoo's changed
    # default would) makes them run again too, and is named: each job keeps its full config.
    changed = ["--set", "regret_matching.mode=sampled", "--budget-iterations", "10"]
    assert main(["race", "--resume", *changed, *common]) == 0
    printed = capsys.readouterr().out
    assert "--set regret_matching.mode=sampled (the stored race has none)" in printed
    assert (
        "2 stored run(s) had other settings and will be run again: "
        "regret_matching.mode 'full' -> 'sampled' (2 runs)\n"
    ) in printed


def test_train_with_a_work_budget(tmp_path, capsys):
    assert main(["train", "--learner", "cfr", "--work", "1000", "--no-progress"]) == 0
    assert "stopped by work" in capsys.readouterr().out
    argv = ["train", "--learner", "cfr", "--game", "leduc_poker", "--work", "10", "--no-progress"]
    assert main(argv) == 0
    err = capsys.readouterr().err  # nashzoo's warnings are one line on the command line
    assert err.startswith("warning: the work budget of 10 was overshot") and err.count("\n") == 1


NFSP_SMALL = {"episodes_per_step": 64, "lanes": 16, "min_buffer_to_learn": 64, "learn_every": 16}
NFSP_SETS = [arg for k, v in NFSP_SMALL.items() for arg in ("--set", f"nfsp.{k}={v}")]


@pytest.mark.parametrize(
    ("command", "learner", "opponent", "config"),
    [
        (["train", "--learner", "os_mccfr", "--seed", "3"], "os_mccfr", None, None),
        (["duel", "xfp", "os_mccfr", "--seed", "4"], "xfp", "os_mccfr", None),
        (["train", "--learner", "nfsp", "--seed", "5", *NFSP_SETS], "nfsp", None, NFSP_SMALL),
    ],
)
def test_train_and_duel_build_each_learner_once_and_train_as_python_does(
    tmp_path, monkeypatch, command, learner, opponent, config
):
    """`train --out` and `duel --out` built both learners to check their settings, threw them
    away, and the Trainer built them again. Now the checked ones are trained, seeded as the
    Trainer seeds them: the numbers are those of the Python API with the same seed."""
    import numpy as np

    from nashzoo.agents import Learner, load_policy_file
    from nashzoo.train import train

    if learner == "nfsp":
        pytest.importorskip("torch")
    built = []
    real_init = Learner.__init__

    def counting_init(self, *args, **kwargs):
        built.append(type(self).name)
        real_init(self, *args, **kwargs)

    run = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(Learner, "__init__", counting_init)
        argv = [*command, "--iterations", "6", "--out", str(run), "--no-progress"]
        assert main(argv) == 0
    assert len(built) == 2, built  # one per seat
    stored = json.loads((run / "result.json").read_text())
    seed = int(command[command.index("--seed") + 1])
    expected = train(
        "kuhn_poker", learner, opponent, iterations=6, seed=seed, eval_every="log", config=config
    )
    assert [r["exploitability"] for r in stored["history"]] == [
        r.exploitability for r in expected.history
    ]
    policy = load_policy_file(run / "average_policy.json")
    assert np.array_equal(policy.probs, expected.average_policy.probs)


def test_plugin_learners_run_in_every_command(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_plugin_learners.py").write_text(
        "from nashzoo.agents import UniformLearner, register\n"
        "@register\n"
        "class Idle(UniformLearner):\n"
        "    name = 'idle_plugin_learner'\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    argv = ["--plugin", "my_plugin_learners", "race", "--learners", "idle_plugin_learner,cfr"]
    argv += ["--seeds", "1", "--budget-seconds", "0", "--budget-iterations", "5", "--no-plots"]
    try:
        assert main([*argv, "--out", "r", "--workers", "2", "--no-progress"]) == 0
    finally:
        from nashzoo.agents.registry import _REGISTRY

        _REGISTRY.pop("idle_plugin_learner", None)
    assert "self-idle_plugin_learner-seed0: exploitability" in capsys.readouterr().out


def test_module_entry_point_help():
    done = subprocess.run(
        [sys.executable, "-m", "nashzoo", "race", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--cross-play" in done.stdout and "--resume" in done.stdout
    assert Path(sys.executable).exists()


def test_game_help_names_every_built_in_game():
    """--game's help is hand-written; a game added to BUILTIN_GAMES must appear in it."""
    from nashzoo.cli import GAME_HELP
    from nashzoo.games.registry import BUILTIN_GAMES

    missing = [name for name in BUILTIN_GAMES if name not in GAME_HELP]
    assert not missing, f"add {missing} to GAME_HELP in nashzoo/cli/common.py"


def test_eval_of_one_learner_names_its_seat_and_its_own_figure(tmp_path, capsys):
    """A single learner's checkpoint holds one seat's strategy: eval says so, and which of its
    numbers is the learner's own (the other seat's rows are uniform)."""
    from nashzoo.train import Trainer

    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    trainer.run(iterations=50)
    trainer.learners[1].save(tmp_path / "seat1.npz")
    assert main(["eval", str(tmp_path / "seat1.npz")]) == 0
    out = capsys.readouterr().out
    assert "trained for seat 1" in out and "seat 1's exploitability" in out
    assert main(["eval", str(tmp_path / "seat1.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["trained_seat"] == 1 and report["seat_exploitability_1"] < 0.05


def test_tournament_and_play_name_a_one_seat_learners_other_seat(tmp_path, capsys):
    """A single learner's checkpoint entered in a tournament plays both seats, one of them as
    it holds it (uniform): the table is followed by a note; play warns when the human takes
    the learner's own seat (leaving it the one it never learned)."""
    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play
    from nashzoo.train import Trainer

    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    trainer.run(iterations=20)
    trainer.learners[0].save(tmp_path / "seat0.npz")
    entrants = [f"mine={tmp_path / 'seat0.npz'}", "uniform", "--episodes", "0", "--no-progress"]
    assert main(["tournament", *entrants]) == 0
    out = capsys.readouterr().out
    assert "note: mine is one learner, trained for seat 0; in the other seat" in out
    assert main(["tournament", "uniform", "equilibrium", "--episodes", "0"]) == 0
    assert "note:" not in capsys.readouterr().out
    for seat, warned in (("0", True), ("1", False)):
        argv = ["play", "--agent", str(tmp_path / "seat0.npz"), "--seat", seat]
        assert _cmd_play(build_parser().parse_args(argv), stdin=io.StringIO("0\n" * 4)) == 0
        printed = capsys.readouterr().out
        assert ("Take --seat 1 to play against what it learned" in printed) is warned


def test_a_reader_that_goes_away_is_not_an_error(tmp_path):
    """``nashzoo eval ... | head``: stdout closed early ends the command quietly."""
    policy = tmp_path / "uniform.json"
    from nashzoo.agents import TabularPolicy

    TabularPolicy.uniform("kuhn_poker").save(policy)
    done = subprocess.Popen(
        [sys.executable, "-m", "nashzoo", "eval", str(policy), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    done.stdout.close()
    assert done.wait() == 1 and done.stderr.read() == b""


def test_eval_reads_checkpoints_and_policies_under_any_name(tmp_path, capsys):
    """Trainer.save and Learner.save take any file name; eval knows the file by its bytes."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.train import Trainer

    trainer = Trainer("kuhn_poker", "cfr", "cfr")
    trainer.run(iterations=5)
    trainer.save(tmp_path / "trainer.pt")
    trainer.learners[0].save(tmp_path / "seat0")
    TabularPolicy.uniform("kuhn_poker").save(tmp_path / "policy.txt")
    for name in ("trainer.pt", "seat0", "policy.txt"):
        assert main(["eval", str(tmp_path / name)]) == 0, capsys.readouterr().err
        assert "kuhn_poker: NashConv" in capsys.readouterr().out
    (tmp_path / "junk").write_text("hello")
    assert main(["eval", str(tmp_path / "junk")]) == 1
    assert "expected a policy .json" in capsys.readouterr().err


def test_force_also_removes_the_replaced_runs_logger_output(tmp_path, capsys):
    out = str(tmp_path / "run")
    base = ["train", "--iterations", "3", "--no-progress", "--out", out]
    assert main([*base, "--learner", "cfr", "--logger", "csv"]) == 0
    assert (tmp_path / "run" / "metrics.csv").exists()
    assert main([*base, "--learner", "cfr_plus", "--force"]) == 0
    assert not (tmp_path / "run" / "metrics.csv").exists()  # not the old run's rows beside it


def test_a_tournament_refused_for_its_entrants_makes_no_out_folder(tmp_path, capsys):
    """The --out folder was made before the entrants were read: an unknown or duplicate
    entrant left an empty folder behind."""
    for entrants in (["uniform", "nothing"], ["uniform", "uniform"]):
        out = tmp_path / "tour"
        assert main(["tournament", *entrants, "--out", str(out), "--no-progress"]) == 1
        assert not out.exists()
    assert "names must be unique" in capsys.readouterr().err


def test_an_interrupted_tournament_without_out_says_it_keeps_nothing(capsys, monkeypatch):
    """Ctrl-C mid-tournament said only 'interrupted'; without --out nothing can be kept, and
    the message says how to keep the pairings (--out) or finish sooner."""
    import nashzoo.eval.tournament as tournament

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tournament, "round_robin", interrupted)
    assert main(["tournament", "uniform", "equilibrium"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: a tournament without --out keeps nothing")
    assert "--out DIR" in err and "--episodes 0" in err and err.count("\n") == 1


TOURNAMENT = ["tournament", "uniform", "equilibrium", "a=fixed:0.3,0.3,0.4", "--game", "rps"]
TOURNAMENT += ["--episodes", "25", "--seed", "3", "--no-progress"]
FINISH = "to finish the tournament, run:"


def _interrupt_pairing(monkeypatch, call, error=KeyboardInterrupt):
    """The ``call``-th pairing played raises ``error`` (Ctrl-C by default), once."""
    import nashzoo.eval.tournament_folder as tournament_folder

    real, calls = tournament_folder.play_pairing, []

    def play(*args):
        calls.append(args)
        if len(calls) == call:
            raise error("stopped in a pairing")
        return real(*args)

    monkeypatch.setattr(tournament_folder, "play_pairing", play)


def test_an_interrupted_tournament_keeps_its_pairings_and_names_the_command_that_resumes(
    tmp_path, capsys, monkeypatch
):
    """Ctrl-C mid-tournament with --out kept nothing (its results existed once every pairing
    had played). Each pairing is now kept as it finishes; the message says how many and the
    exact command, which plays the rest and writes what an uninterrupted run writes."""
    import shlex

    straight = tmp_path / "straight"
    assert main([*TOURNAMENT, "--out", str(straight)]) == 0
    table = capsys.readouterr().out.split("\nwrote ")[0]
    _interrupt_pairing(monkeypatch, call=3)
    out = tmp_path / "tour"
    assert main([*TOURNAMENT, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    first, command = err.splitlines()
    assert (
        first == f"interrupted: 2 of 9 pairings are kept in {out}/; to finish the tournament, run:"
    )
    words = shlex.split(command)
    assert words[:2] == ["nashzoo", "tournament"] and words[-1] == "--resume"
    assert main(words[1:]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"resuming the tournament in {out}/: 2 of 9 pairings already played")
    assert table in said  # the same table
    for name in ("tournament.json", "tournament_heatmap.png"):
        assert (out / name).read_bytes() == (straight / name).read_bytes()


def test_a_tournament_whose_pairing_fails_keeps_the_others_and_says_how_to_go_on(
    tmp_path, capsys, monkeypatch
):
    _interrupt_pairing(monkeypatch, call=6, error=RuntimeError)
    out = tmp_path / "tour"
    assert main([*TOURNAMENT, "--out", str(out), "--no-plots"]) == 1
    error, kept, command = capsys.readouterr().err.splitlines()
    assert error.startswith("error: stopped in a pairing (RuntimeError: an unexpected failure")
    assert kept == f"5 of 9 pairings are kept in {out}/; " + FINISH
    assert command.endswith(f"--out {out} --no-plots --no-progress --resume")
    assert len(list((out / "pairings").iterdir())) == 5


def test_a_tournament_folder_is_resumed_refused_or_replaced_as_train_and_race_folders_are(
    tmp_path, capsys
):
    """--out on a folder with an earlier tournament overwrote its tournament.json silently;
    like train's and race's --out, it is now refused unless --resume (the same tournament:
    other options are refused, naming them) or --force (start over)."""
    out = tmp_path / "tour"
    argv = [*TOURNAMENT, "--out", str(out), "--no-plots"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "already holds a tournament" in err and "--resume" in err and "--force" in err
    assert main([*argv, "--resume", "--seed", "4"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --resume continues the tournament in")
    assert "--seed 4 (the tournament has 3)" in err and err.count("\n") == 1
    assert main([*argv, "--resume"]) == 0
    assert "9 of 9 pairings already played" in capsys.readouterr().out
    two = ["tournament", "uniform", "equilibrium", "--game", "rps", "--episodes", "0"]
    assert main([*two, "--out", str(out), "--no-plots", "--no-progress", "--force"]) == 0
    assert len(list((out / "pairings").iterdir())) == 4
    assert json.loads((out / "tournament.json").read_text())["names"] == ["uniform", "equilibrium"]
    for extra, said in (
        (["--resume", "--force"], "choose one"),
        (["--resume"], "--resume and --force need --out FOLDER"),
    ):
        folder = [] if extra == ["--resume"] else ["--out", str(out)]
        assert main([*two, *folder, *extra]) == 2
        assert said in capsys.readouterr().err
    new = tmp_path / "new"
    assert main([*two, "--out", str(new), "--no-plots", "--resume"]) == 0
    assert "no tournament to resume in" in capsys.readouterr().out
    assert (new / "tournament.json").exists()


def _tilted_rps_policy(path, rock):
    """A saved rps policy that plays rock with probability ``rock`` (the rest split evenly)."""
    from nashzoo.agents.fixed import fixed_policy
    from nashzoo.games import load_game

    rest = (1 - rock) / 2
    fixed_policy(load_game("rps"), [rock, rest, rest]).save(path)


def test_a_tournament_is_resumed_from_its_folder_alone_as_a_race_is(tmp_path, capsys, monkeypatch):
    """``tournament --out DIR --resume`` needed the whole command typed again (entrants, --game,
    --episodes, --seed); the folder now stores each entrant's spec as typed beside the game,
    episodes and seed, so the folder alone resumes it, and the command an interruption prints
    is that short form. It plays the table an uninterrupted run plays."""
    policy = tmp_path / "tilted.json"
    _tilted_rps_policy(policy, 0.5)
    argv = [*TOURNAMENT[:4], f"me={policy}", *TOURNAMENT[4:], "--no-plots"]
    straight = tmp_path / "straight"
    assert main([*argv, "--out", str(straight)]) == 0
    table = capsys.readouterr().out.split("\nwrote ")[0]
    _interrupt_pairing(monkeypatch, call=5)
    out = tmp_path / "tour"
    assert main([*argv, "--out", str(out)]) == 130
    stored = json.loads((out / "tournament_config.json").read_text())
    assert stored["specs"] == ["uniform", "equilibrium", "a=fixed:0.3,0.3,0.4", f"me={policy}"]
    assert (stored["game"], stored["episodes"], stored["seed"]) == ("rps", 25, 3)
    command = capsys.readouterr().err.splitlines()[-1]
    assert command == f"  nashzoo tournament --out {out} --no-plots --no-progress --resume"
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    # what is typed with it is checked against what is stored, the difference named
    for typed, named in (
        (["--seed", "4"], "--seed 4 (the tournament has 3)"),
        (["--episodes", "10"], "--episodes 10 (the tournament has 25)"),
        (["--game", "matrix:matching_pennies"], "--game "),
        (["uniform", "equilibrium"], "the entrants uniform, equilibrium (the tournament has"),
    ):
        assert main([*short, *typed]) == 1, typed
        err = capsys.readouterr().err
        assert err.startswith("error: --resume continues the tournament in") and named in err
        assert "nashzoo tournament --out DIR --resume takes the stored ones" in err
    _tilted_rps_policy(policy, 0.6)  # a policy file is still checked by its table
    assert main(short) == 1
    assert "entrant 'me' with another policy" in capsys.readouterr().err
    _tilted_rps_policy(policy, 0.5)
    assert len(list((out / "pairings").iterdir())) == 4  # nothing played by the refusals
    assert main(short) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"resuming the tournament in {out}/: 4 of 16 pairings already played")
    assert table in said
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()


def test_a_tournament_folder_without_stored_specs_says_to_type_the_entrants(tmp_path, capsys):
    """A folder written before the specs were stored cannot be resumed from the folder alone:
    the error names the exact command to type; a resume with the entrants typed works as
    before and stores them, after which the short form works too. No entrants and no
    tournament to resume are usage errors."""
    out = tmp_path / "tour"
    argv = [*TOURNAMENT, "--out", str(out), "--no-plots"]
    assert main(argv) == 0
    config = out / "tournament_config.json"
    old = json.loads(config.read_text())
    del old["specs"]
    config.write_text(json.dumps(old, indent=1))
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    capsys.readouterr()
    assert main(short) == 2
    err = capsys.readouterr().err
    assert "does not store how its entrants were given" in err
    assert "(uniform, equilibrium, a)" in err
    assert err.rstrip().endswith(
        f"nashzoo tournament ENTRANT ... --game rps --episodes 25 --seed 3 --out {out} --resume"
    )
    assert main([*argv, "--resume"]) == 0  # typed: resumed, its pairings kept
    assert "9 of 9 pairings already played" in capsys.readouterr().out
    assert json.loads(config.read_text())["specs"] == TOURNAMENT[1:4]
    assert main(short) == 0
    assert "9 of 9 pairings already played" in capsys.readouterr().out
    assert main(["tournament", "--out", str(out), "--no-plots"]) == 2
    assert "the following arguments are required: entrants" in capsys.readouterr().err
    empty = tmp_path / "empty"
    assert main(["tournament", "--out", str(empty), "--resume"]) == 2
    assert f"no tournament to resume in {empty}/" in capsys.readouterr().err
    assert not empty.exists()
    older = tmp_path / "older"  # an older nashzoo's folder: its result, no config
    older.mkdir()
    (older / "tournament.json").write_text((out / "tournament.json").read_text())
    assert main(["tournament", "--out", str(older), "--resume"]) == 2
    said = capsys.readouterr().err
    assert "holds tournament.json but no tournament_config.json (written by an older" in said
    assert "--force" in said and "give its entrants to start one" not in said


def test_a_damaged_pairing_is_played_again_and_the_command_says_so(tmp_path, capsys):
    out = tmp_path / "tour"
    argv = [*TOURNAMENT, "--out", str(out), "--no-plots"]
    assert main(argv) == 0
    before = (out / "tournament.json").read_bytes()
    (out / "pairings" / "2-0.json").write_text("{")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    shown = capsys.readouterr()
    assert "warning: " in shown.err and "2-0.json is not a readable tournament pairing" in shown.err
    assert "playing a vs uniform again" in shown.err
    assert "8 of 9 pairings already played, 1 to play" in shown.out
    assert (out / "tournament.json").read_bytes() == before
    (out / "tournament_config.json").write_text("[]")
    assert main([*argv, "--resume"]) == 1
    err = capsys.readouterr().err
    assert "is not a nashzoo tournament config" in err and "--force" in err


def test_eval_leaves_out_a_slow_value_lp_saying_why_and_solves_it_with_seats(
    tmp_path, capsys, monkeypatch
):
    """On a game whose value LP takes minutes (lowered here so that a 3x2 matrix game counts
    as one; a game no other test solves, as solve_game warns only before a first solve),
    `nashzoo eval` gives NashConv at once and says why the per-seat numbers are missing, in
    text and in JSON; `--seats` solves the LP for them."""
    from nashzoo import load_game
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import lp

    monkeypatch.setattr(lp, "CHEAP_LP_TERMINALS", 5)
    game = load_game("matrix", row_payoffs=[[2.0, -1.0], [-1.0, 1.0], [0.5, 0.375]])
    path = tmp_path / "uniform.json"
    TabularPolicy.uniform(game).save(path)
    assert main(["eval", str(path), "--json"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert "seat_exploitability_0" not in quick
    assert "nashzoo eval --seats" in quick["seat_note"]
    assert main(["eval", str(path), "--seats"]) == 0
    shown = capsys.readouterr()
    assert "seat exploitability (value lost to a best responder): seat 0" in shown.out
    assert "has 6 terminal histories, over the 5" in shown.err


def test_a_tournament_into_a_folder_another_one_is_writing_is_refused(tmp_path, capsys):
    """Two tournaments into one --out folder could leave one's tournament.json beside the
    other's heatmap; the folder is now locked while a tournament plays and writes."""
    from nashzoo.io import folder_lock

    out = tmp_path / "tour"
    command = ["tournament", "uniform", "equilibrium", "--episodes", "0", "--no-plots"]
    with folder_lock(out, "--out folder"):
        assert main([*command, "--out", str(out), "--no-progress"]) == 1
        assert "is being written by this process" in capsys.readouterr().err
        assert not (out / "tournament.json").exists()
    assert main([*command, "--out", str(out), "--no-progress"]) == 0
    assert (out / "tournament.json").exists()


def test_a_finished_tournament_grows_by_the_entrants_typed_after_its_own(
    tmp_path, capsys, monkeypatch
):
    """--resume with the stored entrants followed by a new one was refused ("the entrants
    uniform, equilibrium, a, rock (the tournament has uniform, equilibrium, a, in this
    order)"); the tournament now grows: only the new entrant's 7 pairings play, the folder
    then holds what a run of the whole list writes, byte for byte, its stored specs grow
    (the short form resumes the larger tournament), and any other change is still refused,
    the message saying that entrants may be added."""
    import nashzoo.eval.tournament_folder as tournament_folder

    grown = [*TOURNAMENT[:4], "rock=fixed:1,0,0", *TOURNAMENT[4:], "--no-plots"]
    straight = tmp_path / "straight"
    assert main([*grown, "--out", str(straight)]) == 0
    out = tmp_path / "tour"
    assert main([*TOURNAMENT, "--no-plots", "--out", str(out)]) == 0
    earlier = {p.name: p.read_bytes() for p in (out / "pairings").iterdir()}
    capsys.readouterr()
    reordered = [*TOURNAMENT[:2], "rock=fixed:1,0,0", *TOURNAMENT[2:], "--no-plots"]
    assert main([*reordered, "--out", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    assert "the entrants uniform, rock, equilibrium, a (the tournament has" in err
    assert "; new entrants may follow its own, in the same order (the tournament grows); or" in err
    real, played = tournament_folder.play_pairing, []

    def play(game, entrants, row, col, episodes, seed):
        played.append((row, col))
        return real(game, entrants, row, col, episodes, seed)

    monkeypatch.setattr(tournament_folder, "play_pairing", play)
    assert main([*grown, "--out", str(out), "--resume"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(
        f"adding 1 entrant (rock) to the tournament in {out}/: 7 new pairings; 9 kept\n"
    )
    assert played == [(0, 3), (1, 3), (2, 3), (3, 0), (3, 1), (3, 2), (3, 3)]
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()
    assert all((out / "pairings" / name).read_bytes() == data for name, data in earlier.items())
    stored = json.loads((out / "tournament_config.json").read_text())
    assert stored["specs"] == [*TOURNAMENT[1:4], "rock=fixed:1,0,0"]
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    assert main(short) == 0
    assert "16 of 16 pairings already played" in capsys.readouterr().out
    assert main([*TOURNAMENT, "--no-plots", "--out", str(out), "--resume"]) == 1  # one removed
    assert "the entrants uniform, equilibrium, a (the tournament has" in capsys.readouterr().err


def test_add_grows_a_kept_tournament_from_its_folder_alone(tmp_path, capsys, monkeypatch):
    """To grow a kept tournament, its whole list had to be typed again (--add was "unrecognized
    arguments"); `--out DIR --resume --add SPEC` now means the stored entrants, then these: only
    the new pairings play and the folder holds what the whole list typed writes, byte for byte
    (config included). A relative path added from another directory than the stored one is
    stored absolute, so the short form still resumes from anywhere."""
    import nashzoo.eval.tournament_folder as tournament_folder

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    _tilted_rps_policy(work / "tilted.json", 0.5)
    _tilted_rps_policy(elsewhere / "heavy.json", 0.8)
    monkeypatch.chdir(work)
    options = [*TOURNAMENT[4:], "--no-plots"]
    whole = [*TOURNAMENT[:4], "rock=fixed:1,0,0", "tilted.json", *options]
    straight, out = tmp_path / "straight", tmp_path / "tour"
    assert main([*whole, "--out", str(straight)]) == 0
    assert main([*TOURNAMENT, "--no-plots", "--out", str(out)]) == 0
    real, played = tournament_folder.play_pairing, []

    def play(game, entrants, row, col, episodes, seed):
        played.append((row, col))
        return real(game, entrants, row, col, episodes, seed)

    monkeypatch.setattr(tournament_folder, "play_pairing", play)
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    capsys.readouterr()
    assert main([*short, "--add", "rock=fixed:1,0,0", "tilted.json"]) == 0
    assert capsys.readouterr().out.startswith(
        f"adding 2 entrants (rock, tilted) to the tournament in {out}/: 16 new pairings; 9 kept\n"
    )
    assert len(played) == 16 and all(max(pair) >= 3 for pair in played)
    for name in ("tournament.json", "tournament_config.json"):
        assert (out / name).read_bytes() == (straight / name).read_bytes()
    monkeypatch.chdir(elsewhere)
    assert main([*short, "--add", "heavy.json"]) == 0
    stored = json.loads((out / "tournament_config.json").read_text())
    assert stored["working_directory"] == str(work)
    assert stored["specs"][-2:] == ["tilted.json", f"heavy={elsewhere}/heavy.json"]
    monkeypatch.chdir(tmp_path)
    assert main(short) == 0
    assert "36 of 36 pairings already played" in capsys.readouterr().out


def test_add_is_refused_where_it_cannot_say_which_entrants_it_follows(tmp_path, capsys):
    """--add needs --out DIR --resume and no entrants typed (a one-line usage error naming the
    command), a name already in the tournament is refused as typing it in the whole list is,
    and a folder that stores no specs says to type the whole list, the added ones in it; a
    refusal leaves the folder as it was."""
    out = tmp_path / "tour"
    assert main([*TOURNAMENT, "--no-plots", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main(["tournament", "--add", "rock=fixed:1,0,0"]) == 2
    assert capsys.readouterr().err == (
        "error: --add grows the tournament kept in a folder: nashzoo tournament --out DIR "
        "--resume --add rock=fixed:1,0,0\n"
    )
    assert main(["tournament", "--out", str(out), "--add", "rock=fixed:1,0,0"]) == 2
    assert f"nashzoo tournament --out {out} --resume --add rock" in capsys.readouterr().err
    typed = [*TOURNAMENT, "--no-plots", "--out", str(out), "--resume", "--add", "rock=uniform"]
    assert main(typed) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --add follows the entrants stored in --out, so type no entrants")
    assert err.count("\n") == 1
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    assert main([*short, "--add", "uniform"]) == 1
    err = capsys.readouterr().err
    assert "entrant names must be unique, got ['uniform', 'equilibrium', 'a', 'uniform']" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    config = out / "tournament_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "specs": None}, indent=1))
    assert main([*short, "--add", "rock=fixed:1,0,0"]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(
        "nashzoo tournament ENTRANT ... rock=fixed:1,0,0 --game rps --episodes 25 --seed 3 "
        f"--out {out} --resume"
    )


def test_a_tournament_started_in_python_resumes_from_its_folder_alone(
    tmp_path, capsys, monkeypatch
):
    """round_robin(out=...) stored no specs, so `nashzoo tournament --out DIR --resume` could
    not take up a folder started from Python. Entrants made by load_entrant keep their specs
    and the folder stores them; a folder whose Python entrants had none (built by hand) is
    refused in the short form with what happened and the command to type."""
    from nashzoo.agents.fixed import fixed_policy
    from nashzoo.eval.tournament import Entrant, load_entrant, round_robin
    from nashzoo.games import load_game

    straight = tmp_path / "straight"
    assert main([*TOURNAMENT, "--no-plots", "--out", str(straight)]) == 0
    entrants = [load_entrant("rps", spec) for spec in TOURNAMENT[1:4]]
    _interrupt_pairing(monkeypatch, call=3)
    out = tmp_path / "tour"
    with pytest.raises(KeyboardInterrupt):
        round_robin("rps", entrants, episodes=25, seed=3, out=out)
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    capsys.readouterr()
    assert main(short) == 0
    assert f"resuming the tournament in {out}/: 2 of 9 pairings already played" in (
        capsys.readouterr().out
    )
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()
    by_hand = [*entrants[:2], Entrant("a", fixed_policy(load_game("rps"), [0.3, 0.3, 0.4]))]
    round_robin("rps", by_hand, episodes=25, seed=3, out=tmp_path / "hand")
    short[2] = str(tmp_path / "hand")
    assert main(short) == 2
    err = capsys.readouterr().err
    assert "was started (or grown) from Python with entrants that have no spec" in err
    assert err.rstrip().endswith(
        "type them again, in the order it was started with (uniform, equilibrium, a): nashzoo "
        f"tournament ENTRANT ... --game rps --episodes 25 --seed 3 --out {tmp_path}/hand --resume"
    )
    assert main([*TOURNAMENT, "--no-plots", "--out", str(tmp_path / "hand"), "--resume"]) == 0
    assert main(short) == 0  # typed once, the specs are stored


def test_a_tournament_typed_with_relative_paths_resumes_from_another_directory(
    tmp_path, capsys, monkeypatch
):
    """The stored specs were relative to the directory they were typed in, so the short form
    run from another one could not find the policy files. The folder now stores that
    directory; a file that has moved since is named, with the way on (type the entrants)."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "runs" / "me").mkdir(parents=True)
    elsewhere.mkdir()
    _tilted_rps_policy(work / "tilted.json", 0.5)
    _tilted_rps_policy(work / "runs" / "me" / "average_policy.json", 0.7)  # named "me"
    monkeypatch.chdir(work)
    argv = [*TOURNAMENT[:2], "tilted.json", "runs/me/average_policy.json", *TOURNAMENT[4:]]
    argv += ["--no-plots"]
    straight, out = tmp_path / "straight", tmp_path / "tour"
    assert main([*argv, "--out", str(straight)]) == 0
    _interrupt_pairing(monkeypatch, call=6)
    assert main([*argv, "--out", str(out)]) == 130
    stored = json.loads((out / "tournament_config.json").read_text())
    assert stored["specs"] == argv[1:4] and stored["working_directory"] == str(work)
    monkeypatch.chdir(elsewhere)
    short = ["tournament", "--out", str(out), "--no-plots", "--no-progress", "--resume"]
    capsys.readouterr()
    assert main(short) == 0
    assert "5 of 9 pairings already played" in capsys.readouterr().out
    assert (out / "tournament.json").read_bytes() == (straight / "tournament.json").read_bytes()
    assert json.loads((out / "tournament_config.json").read_text()) == stored  # unchanged
    (work / "tilted.json").rename(work / "moved.json")
    assert main(short) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: entrant 'tilted.json' (stored in {out}/tournament_config.json, typed in "
        f"{work}): {work}/tilted.json is not there (moved or deleted?); type the entrants again"
    )
    typed = [*argv[:2], f"tilted={work}/moved.json", f"{work}/runs/me/average_policy.json"]
    assert main([*typed, *argv[4:], "--out", str(out), "--resume"]) == 0
    assert "9 of 9 pairings already played" in capsys.readouterr().out
    assert main(short) == 0  # the specs typed from here are stored with this directory


def test_a_run_that_diverged_is_not_called_a_bug():
    """A TrainingDivergedError's message names the cause and the fix: the command line adds no
    'perhaps a bug in nashzoo' to it, as it does for an unexpected error."""
    from nashzoo.agents.base import TrainingDivergedError
    from nashzoo.cli.common import failure_hint

    assert failure_hint(TrainingDivergedError("the loss became inf; lower the rate")) == ""
    assert "perhaps a bug" in failure_hint(RuntimeError("boom"))


def test_plugin_typed_after_the_command_says_where_it_goes(capsys):
    """`nashzoo eval FILE --plugin mod` was 'unrecognized arguments: --plugin mod' alone."""
    for argv in (["games", "--plugin", "json"], ["games", "--plugin=json"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "--plugin goes before the command: nashzoo --plugin MODULE COMMAND ..." in err
    assert main(["games", "--bogus"]) == 2
    assert "goes before" not in capsys.readouterr().err


def test_race_and_tournament_draw_no_bar_into_a_log(tmp_path, capsys):
    """Redirected to a file or a pipe (a CI or nohup log), race and tournament wrote their
    progress bar's redraws into it (50 carriage returns for a 12-run race, growing with the
    time it runs); train never did. A bar is now drawn only on a terminal; a race's log has
    one line per finished run instead."""
    race = ["race", "--game", "kuhn_poker", "--learners", "cfr,cfr_plus", "--seeds", "1"]
    race += ["--budget-seconds", "0", "--budget-iterations", "3", "--no-plots"]
    assert main([*race, "--out", str(tmp_path / "race")]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in out + err and "self-cfr-seed0: exploitability" in out
    tour = ["tournament", "uniform", "equilibrium", "--game", "rps", "--episodes", "2"]
    assert main(tour) == 0
    assert main([*tour, "--out", str(tmp_path / "tour"), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in out + err and "pairing" not in err
