"""Learner hyperparameters from --config files, learner specs and --set (nashzoo.train.settings),
and the full config of every run recorded in the results files."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from nashzoo.agents import learner_class, learner_names, make_learner
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
    with pytest.raises(
        SettingsError, match=r"nfsp.hidden_sizes: expected a list of int, got 64 \(an int\)"
    ):
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
    # ... and says what to type to run it
    with pytest.raises(
        SettingsError, match=r"add it to the learners \(race: --learners cfr_plus,late"
    ):
        resolve_settings(["cfr_plus"], config_file=path)


def test_a_setting_for_an_algorithm_raced_under_labels_names_the_labels():
    """`--set dcfr.alpha=3` with labels x=dcfr and y=dcfr was refused as a learner the run does
    not use, without saying that settings name labels."""
    with pytest.raises(SettingsError, match=r"dcfr runs here as x, y: set x.FIELD and y.FIELD"):
        resolve_settings(["x=dcfr", "y=dcfr"], sets=["dcfr.alpha=3"])
    # a misspelt label is named as one, not sent to --learners as a learner of its own
    with pytest.raises(SettingsError, match=r"cfr_pluss: did you mean cfr_plus\?$"):
        resolve_settings(["cfr_plus", "xfp"], sets=["cfr_pluss.averaging_delay=3"])


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
    err = capsys.readouterr().err
    assert (
        "keeps the settings in its train_config.json" in err and "--force or another --out" in err
    )
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


# --- every way a setting arrives gives one config ------------------------------------------------
def test_python_config_dicts_are_checked_as_the_command_line_checks_them(tmp_path):
    """config={...} in Python takes the command line's type check: an int for a float field is
    stored as a float (as --set stores it), numpy numbers as Python ones, and a bool is never a
    number (it was stored as `true` in train_config.json, where --set refused it)."""
    dcfr = learner_class("dcfr")
    from_python = make_learner("dcfr", "kuhn_poker", 0, {"alpha": 2, "beta": np.int64(1)})
    (from_cli,) = resolve_settings(["dcfr(alpha=2)"], sets=["dcfr.beta=1"]).values()
    assert from_python.config == from_cli.config()
    assert from_python.config.to_dict() == {"alpha": 2.0, "beta": 1.0, "gamma": 2.0}
    assert type(from_python.config.alpha) is float and type(from_python.config.beta) is float
    regrets = learner_class("regret_matching").coerce_config({"initial_regrets": np.ones(2)})
    assert regrets.initial_regrets == (1.0, 1.0)  # a numpy array for a list, as before
    delay = learner_class("cfr_plus").coerce_config({"averaging_delay": np.int64(3)})
    assert type(delay.averaging_delay) is int and delay.averaging_delay == 3
    with pytest.raises(ValueError, match="DCFR alpha must be a finite number, got True"):
        dcfr.coerce_config({"alpha": True})  # the learner's own message, where it has one
    with pytest.raises(SettingsError, match=r"dcfr.gamma: expected float, got an integer of abou"):
        resolve_settings(["dcfr"], sets=["dcfr.gamma=1" + "0" * 400])  # was an OverflowError
    with pytest.raises(  # the item that does not fit (was: "expected tuple or NoneType")
        SettingsError,
        match=r"^regret_matching.initial_regrets\[1\]: expected float, got 'a' \(a str\); "
        r"regret_matching.initial_regrets takes a list of float or None$",
    ):
        resolve_settings(["regret_matching"], sets=["regret_matching.initial_regrets=[1, 'a']"])
    policy = tmp_path / "p.json"
    policy.write_text("{}")
    fixed = learner_class("fixed").coerce_config({"path": policy})  # a Path is still a path
    assert fixed.path == str(policy)


def test_python_config_dicts_refuse_what_the_learners_checks_let_through():
    """True for an int or a float field, an int for a device: NFSPConfig took them (and stored
    `true` in train_config.json, where --set refused it)."""
    pytest.importorskip("torch")
    nfsp = learner_class("nfsp")
    for field, value, kind in (
        ("min_buffer_to_learn", True, "int"),
        ("discount", False, "float"),
        ("device", 1, "str"),
    ):
        with pytest.raises(ValueError, match=rf"^nfsp.{field}: expected {kind}, got {value!r}"):
            nfsp.coerce_config({field: value})
    assert nfsp.coerce_config({"discount": 1}).discount == 1.0


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [("min_buffer_to_learn", True, "int"), ("discount", False, "float"), ("device", 1, "str")],
)
def test_a_python_config_instance_is_checked_as_its_dict_is(field, value, kind):
    """make_learner("nfsp", game, 0, config=NFSPConfig(min_buffer_to_learn=True)) was taken
    while the same value in a dict was refused; the instance now gets the dict's check, with
    the dict's message."""
    pytest.importorskip("torch")
    nfsp = learner_class("nfsp")
    with pytest.raises(ValueError) as from_dict:
        make_learner("nfsp", "kuhn_poker", 0, config={field: value})
    with pytest.raises(ValueError, match=rf"^nfsp.{field}: expected {kind}, got {value!r}") as err:
        make_learner("nfsp", "kuhn_poker", 0, config=nfsp.Config(**{field: value}))
    assert str(err.value) == str(from_dict.value)


def test_a_python_config_instance_with_an_int_for_a_float_equals_the_dicts_config():
    """DCFRConfig(alpha=2) kept the int 2 (written `2` in train_config.json, where the dict
    and --set store `2.0`); it is now stored as the dict's config is, a float."""
    dcfr = learner_class("dcfr")
    from_instance = make_learner("dcfr", "kuhn_poker", 0, config=dcfr.Config(alpha=2)).config
    from_dict = make_learner("dcfr", "kuhn_poker", 0, config={"alpha": 2}).config
    assert type(from_instance.alpha) is float
    assert json.dumps(from_instance.to_dict()) == json.dumps(from_dict.to_dict())
    regrets = learner_class("regret_matching")
    assert regrets.coerce_config(regrets.Config(initial_regrets=(1, np.int64(2)))) == (
        regrets.coerce_config({"initial_regrets": [1, 2]})
    )


_EXTRA_MODULE = {"nfsp": "torch", "deep_cfr": "torch", "mmd_ppo": "torch"}
_EXTRA_MODULE |= {"ppo": "stable_baselines3", "dqn": "stable_baselines3"}


def test_every_learners_default_config_instance_passes_unchanged(builtin_learner):
    """A config instance now goes through the type check: every built-in learner's default
    one passes as itself (fixed has no default: it is given a strategy)."""
    name = builtin_learner
    if name in _EXTRA_MODULE:
        pytest.importorskip(_EXTRA_MODULE[name])
    cls = learner_class(name)
    config = cls.Config(strategy=[0.5, 0.5]) if name == "fixed" else cls.Config()
    assert cls.coerce_config(config) is config


def test_a_plugin_config_instance_is_checked_where_its_types_can_be_read():
    """coerce_instance on a frozen dataclass rebuilds it with the coerced values; a field whose
    annotation cannot be resolved (a name imported only for type checkers) passes as given."""
    import dataclasses

    from nashzoo.agents.config_fields import ConfigFieldError, coerce_instance

    @dataclasses.dataclass(frozen=True)
    class Mine:
        rate: float = 0.5
        sizes: tuple[int, ...] = (4,)

    @dataclasses.dataclass(frozen=True)
    class Unreadable:
        rate: float = 0.5
        shape: NotImportedHere = None  # type: ignore[name-defined]  # noqa: F821

    rebuilt = coerce_instance(Mine(rate=1, sizes=[2, np.int64(3)]), "mine")
    assert rebuilt == Mine(1.0, (2, 3)) and type(rebuilt.rate) is float
    assert type(rebuilt.sizes[1]) is int
    with pytest.raises(ConfigFieldError, match=r"^mine.rate: expected float, got 'x' \(a str\)$"):
        coerce_instance(Mine(rate="x"), "mine")
    odd = Unreadable(rate=1, shape=object())
    assert coerce_instance(odd, "plugin") is odd


def test_a_value_reads_back_the_same_through_every_way():
    """The same value through --set, a learner spec, a YAML file, a TOML file and a Python dict
    gives one config (checked over many values, the float text as repr writes it)."""
    pytest.importorskip("yaml")
    powers = st.integers(-320, 308).map(lambda e: float(f"1e{e}"))  # repr: 1e-05, 1e+16
    finite = st.floats(allow_nan=False, allow_infinity=False, min_value=0) | powers

    @given(alpha=finite, gamma=finite, delay=st.integers(0, 10**9))
    @example(alpha=1e-05, gamma=1e16, delay=0)  # PyYAML read both as strings
    @hypothesis_settings(max_examples=60, deadline=None)
    def check(alpha, gamma, delay):
        configs = _through_every_way({"alpha": alpha, "gamma": gamma}, "dcfr")
        assert all(c == configs[0] for c in configs), configs
        assert configs[0].alpha == alpha and configs[0].gamma == gamma
        configs = _through_every_way({"averaging_delay": delay}, "cfr_plus")
        assert all(c == configs[0] for c in configs) and configs[0].averaging_delay == delay

    check()


def _through_every_way(fields, name):
    """``name``'s config with ``fields`` given each way there is."""
    import tempfile

    texts = {k: repr(v) for k, v in fields.items()}
    sets = [f"{name}.{k}={t}" for k, t in texts.items()]
    spec = f"{name}({', '.join(f'{k}={t}' for k, t in texts.items())})"
    yaml_text = f"learners:\n  {name}:\n" + "".join(f"    {k}: {t}\n" for k, t in texts.items())
    toml_text = f"[learners.{name}]\n" + "".join(f"{k} = {t}\n" for k, t in texts.items())
    configs = [learner_class(name).coerce_config(dict(fields))]
    configs.append(resolve_settings([name], sets=sets)[name].config())
    configs.append(resolve_settings([spec])[name].config())
    with tempfile.TemporaryDirectory() as folder:
        for suffix, text in ((".yaml", yaml_text), (".toml", toml_text)):
            path = Path(folder) / f"c{suffix}"
            path.write_text(text)
            configs.append(resolve_settings([name], config_file=path)[name].config())
    return configs


def test_the_same_setting_on_the_command_line_and_in_python_stores_one_train_config(tmp_path):
    """train --set and train --config store what Trainer(configs=[{...}]) builds."""
    (tmp_path / "c.yaml").write_text("learners:\n  dcfr:\n    alpha: 2\n    beta: 1e-1\n")
    runs = {
        "set": ["--set", "dcfr.alpha=2", "--set", "dcfr.beta=0.1"],
        "file": ["--config", str(tmp_path / "c.yaml")],
    }
    stored = []
    for name, options in runs.items():
        out = tmp_path / name
        argv = ["train", "--learner", "dcfr", "--iterations", "1", "--no-progress"]
        assert main([*argv, *options, "--out", str(out)]) == 0
        config = json.loads((out / "train_config.json").read_text())
        stored.append(config["settings"])
        assert json.loads((out / "result.json").read_text())["configs"][0]["beta"] == 0.1
    python = make_learner("dcfr", "kuhn_poker", 0, {"alpha": 2, "beta": 0.1}).config
    assert stored[0] == stored[1] == [{"alpha": 2.0, "beta": 0.1}] * 2
    assert learner_class("dcfr").Config(**stored[0][0]) == python


# --- files: encodings, shapes and YAML's traps ---------------------------------------------------
def test_config_file_encodings_and_folders(tmp_path):
    """A byte-order mark is read (TOML's reader refused it at line 1, column 1); text that is
    not UTF-8 and a folder get messages that say so (they said 'not valid TOML' and 'no such
    file')."""
    pytest.importorskip("yaml")
    for suffix, text in (
        (".toml", "[learners.cfr_plus]\naveraging_delay = 3\n"),
        (".yaml", "learners:\n  cfr_plus:\n    averaging_delay: 3\n"),
    ):
        path = tmp_path / f"bom{suffix}"
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert resolve_settings(["cfr_plus"], config_file=path)["cfr_plus"].overrides == {
            "averaging_delay": 3
        }
        latin = tmp_path / f"latin{suffix}"
        latin.write_bytes(text.encode() + "# café\n".encode("latin-1"))
        with pytest.raises(
            SettingsError, match=r"not UTF-8 text \(byte 0xe9 at offset \d+\); save"
        ):
            resolve_settings(["cfr_plus"], config_file=latin)
    (tmp_path / "folder.toml").mkdir()
    with pytest.raises(SettingsError, match=r"folder.toml: is a folder; give the YAML or TOML"):
        resolve_settings(["cfr_plus"], config_file=tmp_path / "folder.toml")
    for empty in ("empty.yaml", "empty.toml"):  # an empty file sets nothing
        (tmp_path / empty).write_text("")
        assert resolve_settings(["cfr"], config_file=tmp_path / empty)["cfr"].overrides == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alpha: 1e-3", {"alpha": 0.001}),  # PyYAML's YAML 1.1 read the string '1e-3'
        ("alpha: 2E+2\n    gamma: -1.5e1", None),  # the negative gamma: DCFR's own message
        ("alpha: 1.0e3", {"alpha": 1000.0}),
        ("alpha: 1_0.5e1", {"alpha": 105.0}),
        ("alpha: 3", {"alpha": 3.0}),
    ],
)
def test_yaml_reads_exponents_as_numbers(tmp_path, text, expected):
    pytest.importorskip("yaml")
    path = tmp_path / "c.yaml"
    path.write_text(f"learners:\n  dcfr:\n    {text}\n")
    if expected is None:
        with pytest.raises(SettingsError, match="DCFR gamma must be >= 0"):
            resolve_settings(["dcfr"], config_file=path)
        return
    assert resolve_settings(["dcfr"], config_file=path)["dcfr"].overrides == expected


def test_yaml_duplicate_keys_are_refused_and_merge_keys_overridden(tmp_path):
    """A key written twice kept the last value silently; a merged anchor's key may still be
    overridden (that is what merge keys are for)."""
    pytest.importorskip("yaml")
    twice = tmp_path / "twice.yaml"
    twice.write_text("learners:\n  cfr_plus:\n    averaging_delay: 3\n    averaging_delay: 4\n")
    with pytest.raises(
        SettingsError, match=r"twice.yaml: 'averaging_delay' is given twice in one table \(line 4\)"
    ):
        resolve_settings(["cfr_plus"], config_file=twice)
    merged = tmp_path / "merged.yaml"
    merged.write_text(
        "learners:\n  cfr_plus: &base\n    averaging_delay: 3\n"
        "  late:\n    <<: *base\n    algorithm: cfr_plus\n    averaging_delay: 9\n"
    )
    settings = resolve_settings(["cfr_plus", "late"], config_file=merged)
    assert settings["late"] == LearnerSetting("late", "cfr_plus", {"averaging_delay": 9})
    assert settings["cfr_plus"].overrides == {"averaging_delay": 3}


def test_a_file_cannot_run_another_algorithm_under_a_learners_name(tmp_path):
    """`cfr_plus: {algorithm: xfp}` trained xfp and reported it as cfr_plus."""
    path = tmp_path / "c.toml"
    path.write_text('[learners.cfr_plus]\nalgorithm = "xfp"\n')
    with pytest.raises(
        SettingsError, match="label 'cfr_plus' is a learner's name but runs algorithm 'xfp'"
    ):
        resolve_settings(["cfr_plus"], config_file=path)
    path.write_text('[learners.cfr_plus]\nalgorithm = "cfr_plus"\naveraging_delay = 2\n')
    assert resolve_settings(["cfr_plus"], config_file=path)["cfr_plus"].overrides == {
        "averaging_delay": 2
    }


@pytest.mark.parametrize(
    ("spec", "sets", "match"),
    [
        ("dcfr(alpha=2, alpha=3)", (), r"learner spec .*: 'alpha' is given twice; give it once"),
        ("dcfr", ("dcfr.alpha=2", "dcfr.alpha=3"), r"--set dcfr.alpha is given twice \(2 and 3\)"),
        ("nfsp_x=cfr_plus(averaging_delay=64,64)", (), r"a list value needs brackets: field=\["),
        ("dcfr(alpha=2,)", (), r"learner spec 'dcfr\(alpha=2,\)': unbalanced brackets/quotes or"),
    ],
)
def test_a_field_given_twice_in_one_way_is_refused(spec, sets, match):
    """The last of two values won silently; a list without brackets gets the fix."""
    with pytest.raises(SettingsError, match=match) as err:
        resolve_settings([spec], sets=sets)
    assert "\n" not in str(err.value)


def test_a_race_resumes_with_its_config_file_moved(tmp_path, capsys, monkeypatch):
    """race_config.json stored --config as typed (relative), and a stored file that had moved
    could not be replaced: the only way on was --force, which deletes the runs."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.yaml").write_text("learners:\n  cfr_plus:\n    averaging_delay: 3\n")
    monkeypatch.chdir(tmp_path / "a")
    argv = ["race", "--learners", "cfr_plus", "--config", "s.yaml", "--seeds", "1"]
    argv += ["--budget-iterations", "2", "--backend", "serial", "--no-plots", "--no-progress"]
    assert main([*argv, "--out", "../race"]) == 0
    stored = json.loads((tmp_path / "race" / "race_config.json").read_text())
    assert stored["config_file"] == str(tmp_path / "a" / "s.yaml")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a" / "s.yaml").rename(tmp_path / "moved.yaml")
    resume = ["race", "--out", "race", "--resume", "--no-progress"]
    capsys.readouterr()
    assert main(resume) == 1
    err = capsys.readouterr().err
    assert "the race's --config file" in err and "--resume --config FILE" in err
    assert main([*resume, "--config", "moved.yaml"]) == 0
    out = capsys.readouterr().out
    assert "--config " in out and "1 of 1 runs already finished" in out
    assert main(resume) == 0  # the new place is stored


def test_a_race_resumed_with_its_config_file_edited_names_what_changed(tmp_path, capsys):
    """The runs a changed file changes run again, and the resume says which setting changed
    (it said only that some runs 'had other settings')."""
    config = tmp_path / "s.yaml"
    config.write_text("learners:\n  cfr_plus:\n    averaging_delay: 3\n")
    argv = ["race", "--learners", "cfr_plus,xfp", "--config", str(config), "--seeds", "1"]
    argv += ["--budget-iterations", "2", "--backend", "serial", "--no-plots", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "race")]) == 0
    config.write_text("learners:\n  cfr_plus:\n    averaging_delay: 1\n")
    capsys.readouterr()
    assert main(["race", "--out", str(tmp_path / "race"), "--resume", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "resuming: 1 of 2 runs already finished" in out
    assert (
        "resuming: 1 stored run(s) had other settings and will be run again: "
        "cfr_plus.averaging_delay 3 -> 1 (1 run)\n"
    ) in out


@pytest.mark.parametrize(
    ("hint", "message", "listing"),
    [
        (int, "int", "int"),
        (tuple[int, ...], "a list of int", "list of int"),
        (tuple[int, float], "a list of 2 (int, float)", "list of 2 (int, float)"),
        (float | None, "float or None", "float | None"),
        (int | Literal["auto"], "int or one of 'auto'", "int | 'auto'"),
    ],
)
def test_a_type_is_put_into_words_one_way_for_messages_and_one_for_listings(hint, message, listing):
    """One function words every declared type, in the two styles its readers need."""
    from nashzoo.agents.config_fields import describe

    assert describe(hint) == message
    assert describe(hint, listing=True) == listing


def test_the_command_that_started_a_run_resumes_it_when_typed_again(tmp_path, capsys):
    """Rerunning the same command with --resume (settings typed as at the start) continues the
    run; other settings are refused naming both; a duel resumes from its folder alone."""
    out = str(tmp_path / "t")
    argv = ["train", "--game", "kuhn_poker", "--learner", "cfr_plus(averaging_delay=2)"]
    assert main([*argv, "--iterations", "2", "--out", out, "--no-progress"]) == 0
    assert main([*argv, "--iterations", "4", "--out", out, "--resume", "--no-progress"]) == 0
    assert json.loads((tmp_path / "t" / "result.json").read_text())["iterations"] == 4
    capsys.readouterr()
    changed = ["train", "--learner", "cfr_plus", "--set", "cfr_plus.averaging_delay=3"]
    assert main([*changed, "--iterations", "5", "--out", out, "--resume"]) == 1
    err = capsys.readouterr().err
    assert (
        "you typed the learners' settings cfr_plus(averaging_delay=3) vs "
        "cfr_plus(averaging_delay=3) (the run has cfr_plus(averaging_delay=2) vs "
        "cfr_plus(averaging_delay=2))" in err
    )
    assert json.loads((tmp_path / "t" / "result.json").read_text())["iterations"] == 4

    duel = str(tmp_path / "d")
    start = ["duel", "cfr_plus(averaging_delay=2)", "xfp", "--out", duel, "--no-progress"]
    assert main([*start, "--iterations", "2"]) == 0
    assert main(["duel", "--resume", "--out", duel, "--iterations", "3", "--no-progress"]) == 0
    assert main([*start, "--iterations", "4", "--resume"]) == 0
    result = json.loads((tmp_path / "d" / "result.json").read_text())
    assert result["iterations"] == 4 and result["configs"] == [{"averaging_delay": 2}, {}]
    capsys.readouterr()
    assert main(["duel", "cfr_plus", "--out", duel, "--iterations", "5"]) == 2
    assert "nashzoo duel needs two learners" in capsys.readouterr().err
