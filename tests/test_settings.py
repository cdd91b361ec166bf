"""Learner hyperparameters from --config files, learner specs and --set (nashzoo.train.settings),
and the full config of every run recorded in the results files."""

from __future__ import annotations

import csv
import json

import pytest

from nashzoo.agents import learner_class, learner_names
from nashzoo.cli import main
from nashzoo.train.settings import (
    LearnerSetting,
    SettingsError,
    parse_learner_spec,
    parse_set,
    parse_value,
    resolve_settings,
    seat_settings,
    split_specs,
)


def test_values_and_specs_parse():
    assert parse_value("0.01") == 0.01 and parse_value("true") is True
    assert parse_value("[32, 32]") == [32, 32] and parse_value("(1, 2)") == (1, 2)
    assert parse_value("self_play") == "self_play" and parse_value('"7"') == "7"
    assert split_specs("cfr, small=nfsp(hidden_sizes=[32, 32], rl_loss='mse'),xfp") == [
        "cfr",
        "small=nfsp(hidden_sizes=[32, 32], rl_loss='mse')",
        "xfp",
    ]
    assert parse_learner_spec("cfr_plus") == ("cfr_plus", "cfr_plus", {})
    assert parse_learner_spec("nfsp(batch_size=64)") == ("nfsp", "nfsp", {"batch_size": 64})
    assert parse_learner_spec(" late = cfr_plus( averaging_delay = 5 ) ") == (
        "late",
        "cfr_plus",
        {"averaging_delay": 5},
    )
    assert parse_set(["a.x=1", "a.y=[1]", "b.z=on"]) == {"a": {"x": 1, "y": [1]}, "b": {"z": "on"}}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cfr,(", "unbalanced"),
        ("cfr,,xfp", "empty entry"),
    ],
)
def test_bad_lists_are_one_line_errors(text, match):
    with pytest.raises(SettingsError, match=match):
        split_specs(text)


@pytest.mark.parametrize(
    ("spec", "sets", "match"),
    [
        ("cfr_plus(delay=3)", (), r"cfr_plus has no setting 'delay'; valid: averaging_delay"),
        ("late=cfr_plus(delay=3)", (), r"late \(cfr_plus\) has no setting 'delay'"),
        ("cfr_plus", ("cfr_plus.averaging_delay=x",), r"averaging_delay: expected int, got 'x'"),
        ("cfr_plus", ("cfr_plus.averaging_delay=1.5",), "expected int, got 1.5"),
        ("cfr_plus", ("cfr_plus.averaging_delay=-1",), "cfr_plus: averaging_delay must be"),
        ("cfr_plus", ("xfp.foo=1",), "--set sets xfp, which this run does not use"),
        ("cfr_plus", ("cfr_plus=1",), "write --set LEARNER.FIELD=VALUE"),
        ("nope", (), "unknown learner 'nope'"),
        ("cfr_plus(averaging_delay)", (), "is not field=value"),
        ("cfr_plus(averaging_delay=1", (), r"write name\(field=value"),
        ("cfr plus", (), "is not a name"),
    ],
)
def test_bad_settings_are_one_line_errors(spec, sets, match):
    with pytest.raises(SettingsError, match=match) as err:
        resolve_settings([spec], sets=sets)
    assert "\n" not in str(err.value)


def test_types_are_checked_and_coerced():
    pytest.importorskip("torch")
    (nfsp,) = resolve_settings(
        ["nfsp(hidden_sizes=[16, 8], sl_learning_rate=1)"], sets=["nfsp.optimizer=adam"]
    ).values()
    config = nfsp.config()
    assert config.hidden_sizes == (16, 8) and config.sl_learning_rate == 1.0
    with pytest.raises(
        SettingsError, match=r"nfsp.optimizer: expected one of 'adam', 'sgd', got 'rmsprop'"
    ):
        resolve_settings(["nfsp"], sets=["nfsp.optimizer=rmsprop"])
    with pytest.raises(SettingsError, match=r"nfsp.hidden_sizes: expected a list of int, got 64 \(an int\)"):
        resolve_settings(["nfsp"], sets=["nfsp.hidden_sizes=64"])


def test_every_learners_full_config_round_trips():
    for name in learner_names():
        if name == "fixed":
            continue  # no default: it needs a strategy
        try:
            cls = learner_class(name)
        except ImportError:
            continue
        full = LearnerSetting(name, name).full_config()
        assert cls.Config(**full) == cls.Config(), name
        json.dumps(full)  # plain JSON values


YAML = """
learners:
  cfr_plus:
    averaging_delay: 2
  late:
    algorithm: cfr_plus
    averaging_delay: 7
"""

TOML = """
[learners.cfr_plus]
averaging_delay = 2

[learners.late]
algorithm = "cfr_plus"
averaging_delay = 7
"""


@pytest.mark.parametrize(("suffix", "text"), [(".yaml", YAML), (".toml", TOML)])
def test_config_files_and_precedence(tmp_path, suffix, text):
    if suffix == ".yaml":
        pytest.importorskip("yaml")
    path = tmp_path / f"race{suffix}"
    path.write_text(text)
    settings = resolve_settings(["cfr_plus", "late"], config_file=path)
    assert settings["late"] == LearnerSetting("late", "cfr_plus", {"averaging_delay": 7})
    assert settings["cfr_plus"].overrides == {"averaging_delay": 2}
    # the spec's own fields beat the file's; --set beats both
    seats = seat_settings(
        ["cfr_plus(averaging_delay=3)", "late"], config_file=path, sets=["late.averaging_delay=9"]
    )
    assert [s.overrides["averaging_delay"] for s in seats] == [3, 9]
    with pytest.raises(SettingsError, match="--config sets late, which this run does not use"):
        resolve_settings(["cfr_plus"], config_file=path)


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("c.json", "{}", "expected a .yaml, .yml or .toml file"),
        ("c.toml", "learners = 3", "'learners' must map each learner label"),
        ("c.toml", "[race]\nseeds = 3", r"expected only a 'learners' table, found \['race'\]"),
        ("c.toml", "[learners.cfr\nx=1", "not valid TOML"),
    ],
)
def test_bad_config_files_are_one_line_errors(tmp_path, name, text, match):
    (tmp_path / name).write_text(text)
    with pytest.raises(SettingsError, match=match) as err:
        resolve_settings(["cfr"], config_file=tmp_path / name)
    assert "\n" not in str(err.value)
    with pytest.raises(SettingsError, match="no such file"):
        resolve_settings(["cfr"], config_file=tmp_path / "missing.toml")


# --- command line and results files ------------------------------------------------------------
def test_self_play_with_a_spec_sets_both_seats(tmp_path, capsys):
    """train --learner NAME(FIELD=VALUE) without --opponent names the spec for both seats: one
    setting, not the same label given twice."""
    for spec, config in (
        ("cfr_plus(averaging_delay=4)", {"averaging_delay": 4}),
        ("late=cfr_plus(averaging_delay=5)", {"averaging_delay": 5}),
    ):
        out = tmp_path / spec.split("=")[0]
        argv = ["train", "--game", "kuhn_poker", "--learner", spec, "--iterations", "3"]
        assert main([*argv, "--no-progress", "--out", str(out)]) == 0, capsys.readouterr().err
        assert json.loads((out / "result.json").read_text())["configs"] == [config, config]
    with pytest.raises(SettingsError, match="given twice"):
        resolve_settings(["cfr_plus(averaging_delay=1)", "cfr_plus(averaging_delay=2)"])


def test_a_run_resumed_before_its_first_checkpoint_keeps_its_settings(tmp_path, capsys):
    """A run killed before any checkpoint has only train_config.json: --resume starts it over,
    and with the settings it was started with, not the defaults."""
    out = tmp_path / "run"
    argv = ["train", "--game", "kuhn_poker", "--learner", "late=cfr_plus(averaging_delay=4)"]
    argv += ["--opponent", "xfp", "--iterations", "5", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    for name in ("checkpoint.npz", "average_policy.json", "history.csv", "result.json"):
        (out / name).unlink()  # as if killed before its first save
    capsys.readouterr()
    assert main(["train", "--resume", "--out", str(out), "--no-progress"]) == 0
    assert "no checkpoint yet" in capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    assert result["iterations"] == 5 and result["configs"] == [{"averaging_delay": 4}, {}]


def test_train_and_duel_record_the_full_config(tmp_path, capsys):
    (tmp_path / "c.toml").write_text("[learners.xfp]\n")
    argv = ["train", "--game", "kuhn_poker", "--learner", "cfr_plus(averaging_delay=4)"]
    argv += ["--opponent", "xfp", "--config", str(tmp_path / "c.toml"), "--iterations", "20"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "t")]) == 0
    result = json.loads((tmp_path / "t" / "result.json").read_text())
    assert result["configs"] == [{"averaging_delay": 4}, {}]
    with open(tmp_path / "t" / "history.csv") as handle:
        row = next(csv.DictReader(handle))
    assert json.loads(row["config0"]) == {"averaging_delay": 4}
    argv = ["duel", "cfr", "cfr_plus", "--set", "cfr_plus.averaging_delay=1", "--iterations", "10"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "d")]) == 0
    assert json.loads((tmp_path / "d" / "result.json").read_text())["configs"][1] == {
        "averaging_delay": 1
    }
    capsys.readouterr()
    resume = ["train", "--resume", "--out", str(tmp_path / "t"), "--iterations", "40"]
    assert main([*resume, "--set", "cfr_plus.averaging_delay=1"]) == 2  # a resumed run keeps its
    assert "a resumed run keeps its own" in capsys.readouterr().err
    assert main([*resume, "--no-progress"]) == 0
    result = json.loads((tmp_path / "t" / "result.json").read_text())
    assert result["iterations"] == 40 and result["configs"] == [{"averaging_delay": 4}, {}]
    assert main(["train", "--learner", "cfr_plus", "--set", "cfr_plus.x=1", "--iterations", "1"])
    err = capsys.readouterr().err
    assert err.startswith("error: cfr_plus has no setting 'x'") and err.count("\n") == 1


def test_race_runs_one_algorithm_under_two_configs(tmp_path, capsys):
    out = tmp_path / "race"
    argv = [
        "race",
        "--game",
        "kuhn_poker",
        "--learners",
        "cfr_plus,late=cfr_plus(averaging_delay=20)",
    ]
    argv += ["--set", "cfr_plus.averaging_delay=1", "--budget-iterations", "30", "--seeds", "1"]
    argv += ["--backend", "serial", "--no-plots", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["learner_configs"] == {
        "cfr_plus": {"algorithm": "cfr_plus", "config": {"averaging_delay": 1}},
        "late": {"algorithm": "cfr_plus", "config": {"averaging_delay": 20}},
    }
    assert {e["learner"] for e in summary["leaderboard"]} == {"cfr_plus", "late"}
    run = json.loads((out / "runs" / "self-late-seed0" / "result.json").read_text())
    assert run["configs"] == [{"averaging_delay": 20}] * 2
    with open(out / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    late = [r for r in rows if r["learner"] == "late"]
    assert late and {(r["algorithm"], r["config"]) for r in late} == {
        ("cfr_plus", '{"averaging_delay": 20}')
    }
    # --resume keeps both runs (same settings: the stored race config is re-read)
    capsys.readouterr()
    assert main(["race", "--resume", "--out", str(out), "--no-progress"]) == 0
    assert "2 of 2 runs already finished" in capsys.readouterr().out
    assert main([*argv[:5], "--set", "late.averaging_delay=oops", *argv[7:]]) == 1
    assert "late.averaging_delay: expected int" in capsys.readouterr().err
