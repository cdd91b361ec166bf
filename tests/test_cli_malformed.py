"""Every subcommand, fed malformed values of every option: one line on stderr, no traceback.

The README promises that bad input gives a one-line error and a non-zero exit status; these
cases are the ones a new user types by mistake (wrong type, out of range, a path that is a file,
a plugin given as a path, a game or learner that does not exist, contradictory options).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nashzoo.cli import main

TRAIN_BUDGET = ["--iterations", "2", "--no-progress"]
RACE_BUDGET = ["--seeds", "1", "--budget-seconds", "0", "--budget-iterations", "2"]
RACE_QUIET = ["--no-progress", "--no-plots", "--learners", "cfr"]
RELIABILITY = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
SHOWN_CHARACTERS = 140  # longer messages appear in the table cut to 137 characters and "..."


def _files(tmp: Path) -> dict[str, str]:
    """Paths the cases refer to: a plain file, a folder, files of bytes that are not what they
    claim to be."""
    (tmp / "plain_file").write_text("x")
    (tmp / "a_folder").mkdir(exist_ok=True)
    (tmp / "garbage.npz").write_bytes(b"\x00\x01 not a zip")
    (tmp / "garbage.json").write_bytes(b"\xff\xfe{")
    (tmp / "empty.json").write_text("")
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "nan.json").write_text('{"format": "nashzoo.TabularPolicy/1", "game": NaN}')
    np.save(tmp / "array.npy", np.zeros(3))
    (tmp / "array.npz").write_bytes((tmp / "array.npy").read_bytes())
    (tmp / "policy.txt").write_text("{}")
    return {
        "FILE": str(tmp / "plain_file"),
        "DIR": str(tmp / "a_folder"),
        "UNDER_FILE": str(tmp / "plain_file" / "sub"),
        **{
            name.upper().replace(".", "_"): str(tmp / name)
            for name in (
                "garbage.npz",
                "garbage.json",
                "empty.json",
                "list.json",
                "nan.json",
                "array.npz",
                "policy.txt",
            )
        },
        "MISSING": str(tmp / "missing.json"),
    }


CASES = [
    # global options
    ["--plugin", "../x", "eval", "MISSING"],
    ["--plugin", "x.py", "race"],
    ["--plugin", "", "race"],
    ["--plugin", "no_such_plugin_module_xyz", "race"],
    ["--plugin", "os.path..x", "race"],
    ["--nope"],
    ["nope"],
    ["--debug=1", "eval", "MISSING"],
    # race
    ["race", "--game", "chess"],
    ["race", "--game", ""],
    ["race", "--game", "matrix:nope"],
    ["race", "--learners", ","],
    ["race", "--learners", "nope"],
    ["race", "--learners", "cfr,cfr"],
    ["race", "--seeds", "x"],
    ["race", "--seeds", "0"],
    ["race", "--seeds", "-1"],
    ["race", "--seeds", "1.5"],
    ["race", "--budget-seconds", "x"],
    ["race", "--budget-seconds", "-1"],
    ["race", "--budget-seconds", "nan"],
    ["race", "--budget-seconds", "inf"],
    ["race", "--budget-iterations", "0"],
    ["race", "--budget-iterations", "x"],
    ["race", "--budget-work", "-5"],
    ["race", "--budget-work", "1e3"],
    ["race", "--budget-seconds", "0"],
    ["race", "--out", "FILE", *RACE_BUDGET, *RACE_QUIET],
    ["race", "--out", "UNDER_FILE", *RACE_BUDGET, *RACE_QUIET],
    ["race", "--workers", "0"],
    ["race", "--workers", "x"],
    ["race", "--backend", "nope"],
    ["race", "--address", "auto"],
    ["race", "--no-self-play"],
    ["race", "--resume", "--force", "--out", "DIR", *RACE_BUDGET, *RACE_QUIET],
    ["race", "--cross-play", "--no-self-play", "--learners", "cfr", *RACE_BUDGET],
    ["race", "--cross-play=yes"],
    ["race", "--no-plots=no"],
    ["race", "--no-progress=0"],
    # train
    ["train"],
    ["train", "--learner", "nope", *TRAIN_BUDGET],
    ["train", "--learner", "", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--opponent", "nope", *TRAIN_BUDGET],
    ["train", "--opponent", "cfr", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--game", "chess", *TRAIN_BUDGET],
    ["train", "--learner", "regret_matching", "--game", "kuhn_poker", *TRAIN_BUDGET],
    ["train", "--learner", "cfr"],
    ["train", "--learner", "cfr", "--iterations", "0"],
    ["train", "--learner", "cfr", "--iterations", "x"],
    ["train", "--learner", "cfr", "--seconds", "-1"],
    ["train", "--learner", "cfr", "--seconds", "nan"],
    ["train", "--learner", "cfr", "--work", "0"],
    ["train", "--learner", "cfr", "--seed", "-1", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--seed", "x", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--eval-every", "x", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--eval-every", "0", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--eval-every", "-3", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--out", "FILE", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--out", "UNDER_FILE", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--checkpoint-every", "0", "--out", "DIR", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--checkpoint-every", "3", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--resume", *TRAIN_BUDGET],
    ["train", "--resume", "--out", "DIR", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--force", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--resume=yes", "--out", "DIR", *TRAIN_BUDGET],
    ["train", "--learner", "cfr", "--iterations", "2", "--no-progress=no"],
    # duel
    ["duel", "cfr"],
    ["duel", "cfr", "nope", *TRAIN_BUDGET],
    ["duel", "nope", "cfr", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--game", "chess", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--iterations", "-1"],
    ["duel", "cfr", "xfp", "--seconds", "x"],
    ["duel", "cfr", "xfp", "--work", "x"],
    ["duel", "cfr", "xfp", "--seed", "1.5", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--eval-every", "often", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--out", "FILE", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--resume", "--out", "DIR", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--checkpoint-every", "x", *TRAIN_BUDGET],
    ["duel", "cfr", "xfp", "--force", *TRAIN_BUDGET],
    # eval
    ["eval"],
    ["eval", "MISSING"],
    ["eval", "DIR"],
    ["eval", "FILE"],
    ["eval", "GARBAGE_NPZ"],
    ["eval", "GARBAGE_JSON"],
    ["eval", "EMPTY_JSON"],
    ["eval", "LIST_JSON"],
    ["eval", "NAN_JSON"],
    ["eval", "ARRAY_NPZ"],
    ["eval", "POLICY_TXT"],
    ["eval", "GARBAGE_NPZ", "--game", "chess"],
    ["eval", "MISSING", "--json=1"],
    # tournament
    ["tournament"],
    ["tournament", "uniform"],
    ["tournament", "uniform", "nope"],
    ["tournament", "uniform", "x="],
    ["tournament", "uniform", "fixed:a,b"],
    ["tournament", "uniform", "fixed:0.5", "--game", "rps"],
    ["tournament", "uniform", "GARBAGE_JSON"],
    ["tournament", "uniform", "equilibrium", "--game", "chess"],
    ["tournament", "uniform", "equilibrium", "--episodes", "-5"],
    ["tournament", "uniform", "equilibrium", "--episodes", "x"],
    ["tournament", "uniform", "equilibrium", "--seed", "x"],
    ["tournament", "uniform", "equilibrium", "--episodes", "0", "--out", "FILE"],
    ["tournament", "uniform", "equilibrium", "--no-plots=1"],
    ["tournament", "uniform", "equilibrium", "--no-progress=1"],
    # play
    ["play", "--agent", "nope"],
    ["play", "--agent", "GARBAGE_NPZ"],
    ["play", "--game", "chess"],
    ["play", "--seat", "2"],
    ["play", "--seat", "x"],
    ["play", "--hands", "0"],
    ["play", "--hands", "x"],
    ["play", "--seed", "x"],
]


def _documented_messages() -> dict[str, str]:
    """docs/reliability.md's command-line table: the "after (stderr)" cell of each command."""
    section = RELIABILITY.read_text().split("## Command lines", 1)[1]
    row = re.compile(r"^\| `nashzoo (.*)` \| .* \| (.*) \|$")
    return {m[1]: m[2] for m in map(row.match, section.splitlines()) if m is not None}


def _as_shown(message: str, tmp: Path) -> str:
    """``message`` as the table shows it: paths relative to the case's folder, long ones cut."""
    message = message.replace(f"{tmp}/", "")
    if len(message) > SHOWN_CHARACTERS:
        message = message[: SHOWN_CHARACTERS - 3] + "..."
    return message


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) or "-" for c in CASES])
def test_malformed_options_give_one_line_and_no_traceback(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    # Only nashzoo's own games and learners, whatever other tests registered in this process:
    # the messages list them, and the table shows what a fresh process prints.
    from nashzoo.agents import registry as learners
    from nashzoo.games import registry as games

    own = {k: v for k, v in learners._REGISTRY.items() if v.__module__.startswith("nashzoo.")}
    monkeypatch.setattr(learners, "_REGISTRY", own)
    monkeypatch.setattr(games, "_REGISTERED", {})
    files = _files(tmp_path)
    code = main([files.get(arg, arg) for arg in argv])
    captured = capsys.readouterr()
    assert code in (1, 2), captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    # The table in docs/reliability.md shows this message; it must not drift from the code.
    command = " ".join(argv)
    shown = _as_shown(lines[0], tmp_path)
    documented = _documented_messages()
    assert command in documented, f"add a row for `nashzoo {command}` to {RELIABILITY.name}"
    assert documented[command] == shown, (
        f"{RELIABILITY.name}: the row of `nashzoo {command}` should end with | {shown} |"
    )


def test_an_unexpected_failure_is_one_line_with_a_hint_and_debug_shows_it(
    tmp_path, capsys, monkeypatch
):
    import nashzoo.eval as nz_eval

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(nz_eval, "evaluate", broken)
    policy = tmp_path / "p.json"
    from nashzoo.agents import TabularPolicy

    TabularPolicy.uniform("kuhn_poker").save(policy)
    assert main(["eval", str(policy)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError" in err and "--debug" in err
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "eval", str(policy)])


def test_a_failure_whose_message_holds_control_characters_is_one_escaped_line(
    tmp_path, capsys, monkeypatch
):
    """A plugin's (or any library's) error may carry a line break or a terminal escape
    sequence: the command line's one line shows them escaped (games.base.error_text), as the
    file readers' errors do."""
    (tmp_path / "evil_plugin.py").write_text('raise ValueError("evil\\x1b[2J here\\nsecond")\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert main(["--plugin", "evil_plugin", "learners"]) == 1
    err = capsys.readouterr().err
    assert err == "error: evil\\x1b[2J here second\n"


def test_the_installed_entry_point_prints_one_line_for_a_corrupt_checkpoint(tmp_path):
    from nashzoo.agents import CFR

    path = tmp_path / "cfr.npz"
    CFR("kuhn_poker", 0).save(path)
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["regrets"][0, 0] = np.nan
    np.savez(path, **arrays)
    done = subprocess.run(
        [sys.executable, "-m", "nashzoo", "eval", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "non-finite" in done.stderr, done.stderr
