"""A researcher's own learner plugged in through every surface: the registry, ``step``'s
metrics, checkpoints read without the plugin, worker processes and settings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nashzoo.agents import Learner, TabularPolicy, learner_class, register
from nashzoo.agents.registry import _REGISTRY
from nashzoo.games import treemath


class _Responder(Learner):
    """Best-responds to the opponent; outputs its last response (a small tabular plugin)."""

    name = "_plugin_responder_for_tests"

    def _setup(self):
        self.table = TabularPolicy.uniform(self.game).probs.copy()

    def _step(self, opponent):
        _, self.table = treemath.best_response(
            self.tree, self.opponent_strategy(opponent), self.seat
        )
        return {"nodes_touched": self.tree.num_nodes}

    def current_policy(self):
        return TabularPolicy(self.game, self.table)

    average_policy = current_policy

    def _state_arrays(self):
        return {"table": self.table}

    def _load_state_arrays(self, arrays):
        from nashzoo.io import ArraySpec

        spec = {"table": ArraySpec(self.table.shape, nonnegative=True)}
        self.table = self.checked_state_arrays(arrays, spec)["table"]


@pytest.fixture
def registered():
    """Registers learner classes for one test and takes them out afterwards."""
    added: list[str] = []

    def add(cls):
        register(cls)
        added.append(cls.name)
        return cls

    yield add
    for name in added:
        _REGISTRY.pop(name, None)


def test_a_plugin_cannot_take_a_built_in_learners_name():
    """Registering another class as "cfr" replaced nashzoo's CFR silently: every train, race
    and checkpoint that said cfr then ran the plugin's code."""
    cfr = learner_class("cfr")
    for taken in ("cfr", "nfsp"):  # a built-in; one whose module needs an extra

        class Clash(_Responder):
            name = taken

        with pytest.raises(ValueError, match=f"learner '{taken}': that name is taken by nashzoo"):
            register(Clash)
    assert learner_class("cfr") is cfr
    assert "nfsp" not in _REGISTRY or _REGISTRY["nfsp"].__module__ == "nashzoo.agents.nfsp"


def test_a_plugin_cannot_take_another_plugins_name_but_may_define_itself_again(registered):
    registered(_Responder)

    class Other(_Responder):
        name = _Responder.name

    with pytest.raises(ValueError, match=r"taken by \S*_Responder; give your learner another name"):
        register(Other)
    assert learner_class(_Responder.name) is _Responder
    again = type("_Responder", (_Responder,), {"__module__": _Responder.__module__})
    again.__qualname__ = _Responder.__qualname__  # the same class defined again (a cell rerun)
    assert register(again) is again and learner_class(_Responder.name) is again


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ({"nodes_touched": float("nan")}, "returned nodes_touched=nan; it must be a non-negative"),
        ({"nodes_touched": -5}, "returned nodes_touched=-5; it must be a non-negative whole"),
        ({"env_steps": 2.5}, "returned env_steps=2.5; it must be a non-negative whole"),
        ({"env_steps": float("inf")}, "returned env_steps=inf"),
        ({"nodes_touched": "12"}, "returned nodes_touched='12'"),
        (None, r"_step \(_plugin_bad_metrics\) must return a dict of metrics .* got NoneType"),
        ([1, 2], "must return a dict of metrics"),
    ],
)
def test_a_step_that_reports_no_count_of_work_is_named(registered, returned, message):
    """A plugin's step returning NaN work crashed in int() with no word of the learner; a
    negative count silently lowered the work done (a work budget ran longer, work/s fell); a
    string or a fraction was read as a number; a non-dict gave dict()'s own error."""

    class BadMetrics(_Responder):
        name = "_plugin_bad_metrics"

        def _step(self, opponent):
            super()._step(opponent)
            return returned

    registered(BadMetrics)
    learner = BadMetrics("kuhn_poker", 0)
    with pytest.raises((ValueError, TypeError), match=message):
        learner.step(TabularPolicy.uniform("kuhn_poker"))
    assert learner.work() == {"iterations": 0, "nodes_touched": 0, "env_steps": 0}


def test_whole_numbers_of_any_numeric_type_count_as_work():
    learner = _Responder("kuhn_poker", 0)
    learner._step = lambda opponent: {"nodes_touched": np.int64(3), "env_steps": 2.0, "x": 1}
    assert learner.step(TabularPolicy.uniform("kuhn_poker")) == {
        "x": 1,
        "iterations": 1,
        "nodes_touched": 3,
        "env_steps": 2,
    }


def test_a_checkpoint_of_a_plugin_read_without_it_names_the_module_to_import(tmp_path):
    """It said only 'load the plugin that registers it first', with no word of which."""
    from nashzoo.agents import load_learner, load_policy_file
    from nashzoo.io import CheckpointError
    from nashzoo.train import Trainer

    register(_Responder)
    try:
        _Responder("kuhn_poker", 0).save(tmp_path / "one.npz")
        Trainer("kuhn_poker", _Responder.name, "cfr").save(tmp_path / "run.npz")
    finally:
        _REGISTRY.pop(_Responder.name, None)
    named = r"registered by the module '(tests\.)?test_plugins': import it first .*--plugin "
    with pytest.raises(
        CheckpointError, match=f"unknown learner ._plugin_responder.*; it was {named}"
    ):
        load_learner(tmp_path / "one.npz")
    with pytest.raises(
        CheckpointError, match=f"run.npz, seat 0 names an unknown .*; it was {named}"
    ):
        Trainer.load(tmp_path / "run.npz")
    with pytest.raises(CheckpointError, match=named):
        load_policy_file(tmp_path / "run.npz")


def test_a_config_field_without_a_default_is_named_with_the_ways_to_give_it(registered):
    """A plugin whose Config has a field without a default gave the dataclass's own
    ``Req.__init__() missing 1 required positional argument: 'damping'``, from Python and
    from ``nashzoo train`` / ``race`` alike."""
    import dataclasses

    from nashzoo.agents import make_learner
    from nashzoo.agents.base import LearnerConfig
    from nashzoo.train.settings import SettingsError, seat_settings

    @dataclasses.dataclass(frozen=True)
    class Req(LearnerConfig):
        damping: float

    class NeedsDamping(_Responder):
        name = "_plugin_needs_damping"
        Config = Req

    registered(NeedsDamping)
    named = r"_plugin_needs_damping: settings without a default must be given, \['damping'\]"
    with pytest.raises(ValueError, match=named + r": e.g. config=\{'damping': ...\}"):
        make_learner(NeedsDamping.name, "kuhn_poker", 0)
    with pytest.raises(SettingsError, match=named + r".*--set _plugin_needs_damping.damping="):
        seat_settings([NeedsDamping.name])
    (setting,) = seat_settings([f"{NeedsDamping.name}(damping=0.5)"])
    assert setting.config() == Req(0.5)
    assert make_learner(NeedsDamping.name, "kuhn_poker", 0, {"damping": 2}).config == Req(2)


def test_a_training_run_keeps_its_plugins_for_resume(tmp_path, monkeypatch, capsys):
    """`nashzoo --plugin MOD train --out DIR` then `train --out DIR --resume` failed with 'names
    an unknown learner' unless --plugin was typed again (a race stored its plugins; a run did
    not). The run's config now stores them, as a race's does, and a resume imports them."""
    import json
    import sys

    from nashzoo.cli import main

    (tmp_path / "my_run_plugin.py").write_text(
        "from nashzoo.agents import UniformLearner, register\n"
        "@register\n"
        "class Idle(UniformLearner):\n"
        "    name = '_run_plugin_idle'\n"
    )
    base_path = list(sys.path)
    monkeypatch.setattr(sys, "path", list(base_path))
    monkeypatch.chdir(tmp_path)

    def forget():  # as in a new process: the module and its learner unknown
        _REGISTRY.pop("_run_plugin_idle", None)
        sys.modules.pop("my_run_plugin", None)

    def result():
        return json.loads((tmp_path / "run" / "result.json").read_text())["iterations"]

    train = ["train", "--out", "run", "--no-progress"]
    try:
        first = ["--plugin", "my_run_plugin", *train, "--learner", "_run_plugin_idle"]
        assert main([*first, "--opponent", "cfr", "--iterations", "3"]) == 0
        config = json.loads((tmp_path / "run" / "train_config.json").read_text())
        assert config["plugins"] == ["my_run_plugin"]
        forget()
        assert main([*train, "--resume", "--iterations", "5"]) == 0  # not typed: the stored one
        assert result() == 5
        forget()  # typed again, the same: accepted
        assert main(["--plugin", "my_run_plugin", *train, "--resume", "--iterations", "6"]) == 0
        assert result() == 6
        capsys.readouterr()
        assert main(["--plugin", "json", *train, "--resume", "--iterations", "7"]) == 1
        err = capsys.readouterr().err
        assert "you typed --plugin json (the run has my_run_plugin): leave these options out" in err
        assert result() == 6
        # Resumed where the module cannot be imported: the run's stored plugin is named.
        forget()
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        monkeypatch.setattr(sys, "path", list(base_path))
        argv = ["train", "--out", "../run", "--no-progress", "--resume", "--iterations", "7"]
        assert main(argv) == 1
        assert "the run in ../run was started with --plugin my_run_plugin: cannot import" in (
            capsys.readouterr().err
        )
        # A run folder from before plugins were stored: the typed ones are taken, and kept.
        monkeypatch.chdir(tmp_path)
        config_file = tmp_path / "run" / "train_config.json"
        old = json.loads(config_file.read_text())
        del old["plugins"]
        config_file.write_text(json.dumps(old))
        assert main(["--plugin", "my_run_plugin", *train, "--resume", "--iterations", "8"]) == 0
        assert json.loads(config_file.read_text())["plugins"] == ["my_run_plugin"]
        assert result() == 8
    finally:
        forget()


def test_plugin_lists_name_modules_in_any_order_once():
    from nashzoo.agents.registry import plugin_modules, same_plugins

    assert plugin_modules(["a,b", "a", " c "]) == ("a", "b", "c")  # first naming kept
    assert same_plugins(("a", "b"), ["b", "a", "a"])
    assert not same_plugins(("a", "b"), ("a",))
    with pytest.raises(ValueError, match="plugin '' is not a module name"):
        plugin_modules(["a,,b"])


@pytest.fixture
def two_plugins(tmp_path, monkeypatch):
    """Two plugin modules in the current folder, each registering an idle learner; forgotten
    (module and learner) afterwards, as in a new process."""
    import sys

    for module, learner in (("my_plugin_a", "_plugin_idle_a"), ("my_plugin_b", "_plugin_idle_b")):
        (tmp_path / f"{module}.py").write_text(
            "from nashzoo.agents import UniformLearner, register\n"
            "@register\n"
            "class Idle(UniformLearner):\n"
            f"    name = {learner!r}\n"
        )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for module, learner in (("my_plugin_a", "_plugin_idle_a"), ("my_plugin_b", "_plugin_idle_b")):
        _REGISTRY.pop(learner, None)
        sys.modules.pop(module, None)


def test_a_run_resumes_with_its_plugins_in_any_order(two_plugins, capsys):
    """`--plugin a --plugin b` then `train --resume` with `--plugin b,a` (or a twice) was
    refused: 'you typed --plugin b,a (the run has a,b)'; `--plugin a,b` itself was 'not a
    module name'. The same modules are the same run; other modules are still refused."""
    import json

    from nashzoo.cli import main

    train = ["train", "--out", "run", "--no-progress"]
    first = ["--plugin", "my_plugin_a,my_plugin_b", *train, "--learner", "_plugin_idle_a"]
    assert main([*first, "--opponent", "_plugin_idle_b", "--iterations", "3"]) == 0
    config_file = two_plugins / "run" / "train_config.json"
    assert json.loads(config_file.read_text())["plugins"] == ["my_plugin_a", "my_plugin_b"]
    again = ["--plugin", "my_plugin_b", "--plugin", "my_plugin_a", "--plugin", "my_plugin_b"]
    assert main([*again, *train, "--resume", "--iterations", "5"]) == 0
    assert json.loads(config_file.read_text())["plugins"] == ["my_plugin_a", "my_plugin_b"]
    assert json.loads((two_plugins / "run" / "result.json").read_text())["iterations"] == 5
    capsys.readouterr()
    assert main(["--plugin", "my_plugin_b", *train, "--resume", "--iterations", "6"]) == 1
    assert "you typed --plugin my_plugin_b (the run has my_plugin_a,my_plugin_b)" in (
        capsys.readouterr().err
    )


def test_a_race_resumed_with_its_plugins_in_another_order_keeps_its_runs(two_plugins, capsys):
    """A race started with `--plugin a --plugin b` and resumed with `--plugin b --plugin a` ran
    every run again ('2 stored run(s) had other settings'); from Python too
    (`RaceConfig(plugins=('b', 'a'), resume=True)`)."""
    from nashzoo.cli import main
    from nashzoo.train.race import RaceConfig, run_race

    race = ["race", "--learners", "_plugin_idle_a,_plugin_idle_b", "--seeds", "1"]
    race += ["--budget-seconds", "0", "--budget-iterations", "2", "--no-progress", "--no-plots"]
    race += ["--backend", "serial", "--out", "r"]
    assert main(["--plugin", "my_plugin_a", "--plugin", "my_plugin_b", *race]) == 0
    capsys.readouterr()
    assert main(["--plugin", "my_plugin_b,my_plugin_a", *race, "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "resuming: 2 of 2 runs already finished" in printed
    assert "--plugin" not in printed and "other settings" not in printed
    config = RaceConfig(
        game="kuhn_poker",
        learners=("_plugin_idle_a", "_plugin_idle_b"),
        seeds=1,
        budget_seconds=None,
        budget_iterations=2,
        plots=False,
        backend="serial",
        out="r",
        plugins=("my_plugin_b", "my_plugin_a", "my_plugin_b"),
        resume=True,
    )
    assert config.plugins == ("my_plugin_b", "my_plugin_a")
    run_race(config, progress=False)
    printed = capsys.readouterr().out
    assert "resuming: 2 of 2 runs already finished" in printed
    assert "other settings" not in printed


def test_a_race_resumed_with_other_plugins_is_refused_and_keeps_its_own(two_plugins, capsys):
    """README: a resume with other --plugin modules is refused. `train --resume` refused them;
    `race --resume --plugin b` over a race started with `--plugin a,b` ran both finished runs
    again (with workers they failed as 'unknown learner') and stored `b` alone, so the next
    plain `race --resume` could not import the race's learners."""
    import json

    from nashzoo.cli import main

    race = ["race", "--learners", "_plugin_idle_a,_plugin_idle_b", "--seeds", "1"]
    race += ["--budget-seconds", "0", "--budget-iterations", "2", "--no-progress", "--no-plots"]
    race += ["--backend", "serial", "--out", "r"]
    assert main(["--plugin", "my_plugin_a,my_plugin_b", *race]) == 0
    stored = (two_plugins / "r" / "race_config.json").read_text()
    capsys.readouterr()
    for other in ("my_plugin_b", "my_plugin_a,my_plugin_b,json"):
        assert main(["--plugin", other, *race, "--resume"]) == 2
        err = capsys.readouterr().err
        assert (
            "--resume finishes the race in r/ with the --plugin modules it was started with "
            f"(my_plugin_a,my_plugin_b), but you typed --plugin {other}: leave --plugin out"
        ) in err
        assert (two_plugins / "r" / "race_config.json").read_text() == stored
    assert main(["race", "--out", "r", "--resume", "--no-progress"]) == 0
    assert "resuming: 2 of 2 runs already finished" in capsys.readouterr().out
    assert json.loads(stored)["plugins"] == ["my_plugin_a", "my_plugin_b"]


def _plugin_race(**fields):
    """A two-iteration, one-seed race into ``r`` without plots, with ``fields`` on top."""
    from nashzoo.train.race import RaceConfig

    base = dict(seeds=1, budget_seconds=None, budget_iterations=2, plots=False, out="r")
    return RaceConfig(**{**base, **fields})


def test_a_race_resumed_from_python_with_other_plugins_is_refused(two_plugins):
    """From Python, ``run_race(RaceConfig(..., resume=True))`` with the plugins left out (the
    default ``()``) ran the finished runs again, each failing as 'unknown learner', and
    replaced their results with the errors."""
    import dataclasses
    import sys

    from nashzoo.train.race import run_race

    sys.path.append(str(two_plugins))  # (the command line searches the current folder itself)
    config = _plugin_race(
        learners=("_plugin_idle_a", "_plugin_idle_b"),
        backend="serial",
        plugins=("my_plugin_a", "my_plugin_b"),
    )
    run_race(config, progress=False)
    results = sorted((two_plugins / "r" / "runs").glob("*/result.json"))
    kept = [path.read_bytes() for path in results]
    for other in ((), ("my_plugin_b",)):
        with pytest.raises(ValueError, match=r"plugins=\('my_plugin_a', 'my_plugin_b'\), but"):
            run_race(dataclasses.replace(config, plugins=other, resume=True), progress=False)
    assert [path.read_bytes() for path in results] == kept and len(kept) == 2
    again = run_race(dataclasses.replace(config, resume=True), progress=False)
    assert len(again.results) == 2 and not again.failures


def test_a_learner_from_a_module_not_given_as_a_plugin_is_refused_before_a_race(
    two_plugins, monkeypatch
):
    """``import my_learners`` in a notebook, then a race with workers and no ``plugins``: every
    run failed in its worker with ``unknown learner``, after the folder was claimed, without
    naming the fix. Not refused (a first version of the check refused them): a plugin that
    registers a class defined in another module, a script (whose workers run its imports
    again), and a learner whose extra is missing (skipped, as before)."""
    import importlib
    import sys
    import types

    from nashzoo.agents.registry import _LAZY, register_lazy
    from nashzoo.train.race import backends, run_race

    sys.path.append(str(two_plugins))
    (two_plugins / "elsewhere.py").write_text(
        "from nashzoo.agents import UniformLearner\n"
        "class Sib(UniformLearner):\n"
        "    name = '_plugin_sibling'\n"
    )
    (two_plugins / "registers_elsewhere.py").write_text(
        "import elsewhere\nfrom nashzoo.agents import register\nregister(elsewhere.Sib)\n"
    )
    importlib.import_module("my_plugin_a")
    notebook = types.ModuleType("__main__")  # no __file__, as in a notebook
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    config = _plugin_race(learners=("_plugin_idle_a", "cfr"), backend="process", workers=2)
    with pytest.raises(
        ValueError, match=r"'_plugin_idle_a' from my_plugin_a; pass plugins=\('my_plugin_a',\)"
    ):
        run_race(config, progress=False)
    assert not (two_plugins / "r").exists()
    check = backends.check_workers_can_import
    try:
        sibling = dataclasses.replace(
            config, learners=("_plugin_sibling", "cfr"), plugins=("registers_elsewhere",)
        )
        check(sibling, 2)  # registered by the plugin's import: the workers find it too
        register_lazy("_needs_an_extra", "_no_such_module_anywhere", "some_extra")
        lazy = dataclasses.replace(config, learners=("_needs_an_extra", "cfr"))
        check(lazy, 2, skipped=("_needs_an_extra",))
        monkeypatch.setattr(notebook, "__file__", str(two_plugins / "script.py"), raising=False)
        check(config, 2)  # a script's workers run its top level, imports included, again
    finally:
        _LAZY.pop("_needs_an_extra", None)
        _REGISTRY.pop("_plugin_sibling", None)
        sys.modules.pop("elsewhere", None)
        sys.modules.pop("registers_elsewhere", None)


def test_a_race_over_a_plugins_game_resumes_without_the_plugin_typed(tmp_path, monkeypatch, capsys):
    """The stored race's game was checked before its stored --plugin modules were imported:
    `race --out DIR --resume` over a game a plugin registers said "unknown game ...; fix it or
    start over with --force" (a fine file, and --force would delete the finished runs)."""
    import contextlib
    import json
    import sys

    from nashzoo.cli import main
    from nashzoo.games import unregister_game

    base_path = list(sys.path)
    (tmp_path / "my_game_plugin.py").write_text(
        "from nashzoo.games import KuhnPokerGame, register_game\n"
        "class MyKuhn(KuhnPokerGame):\n"
        "    name = '_plugin_kuhn'\n"
        "register_game('_plugin_kuhn', MyKuhn)\n"
    )
    monkeypatch.setattr(sys, "path", list(base_path))
    monkeypatch.chdir(tmp_path)

    def forget():  # as in a new process: the module and its game unknown
        with contextlib.suppress(KeyError):  # not registered again since the last forget()
            unregister_game("_plugin_kuhn")
        sys.modules.pop("my_game_plugin", None)

    race = ["race", "--out", "r", "--learners", "cfr", "--seeds", "1", "--no-plots"]
    try:
        first = ["--plugin", "my_game_plugin", *race, "--game", "_plugin_kuhn"]
        assert main([*first, "--budget-iterations", "3", "--no-progress"]) == 0
        forget()
        assert main(["race", "--out", "r", "--resume", "--no-progress"]) == 0
        summary = json.loads((tmp_path / "r" / "race_config.json").read_text())
        assert summary["game"] == "_plugin_kuhn" and summary["plugins"] == ["my_game_plugin"]
        forget()
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        monkeypatch.setattr(sys, "path", list(base_path))
        capsys.readouterr()
        assert main(["race", "--out", "../r", "--resume", "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert "the race in ../r was started with --plugin my_game_plugin" in err
        assert "--force" not in err
    finally:
        forget()


def test_a_learner_renamed_in_a_notebook_takes_its_name_after_unregister():
    """A class renamed in a notebook cell under a name its earlier version holds was refused
    until the kernel restarted (learners had no unregister, games had); nashzoo's own stay."""
    from nashzoo.agents import UniformLearner, unregister

    class First(UniformLearner):
        name = "_renamed_in_a_cell"

    class Second(UniformLearner):
        name = "_renamed_in_a_cell"

    register(First)
    try:
        with pytest.raises(ValueError, match=r"unregister\('_renamed_in_a_cell'\) first"):
            register(Second)
        assert unregister("_renamed_in_a_cell") is First
        register(Second)
        assert learner_class("_renamed_in_a_cell") is Second
    finally:
        _REGISTRY.pop("_renamed_in_a_cell", None)
    with pytest.raises(ValueError, match="nashzoo's own learners"):
        unregister("cfr")
    with pytest.raises(KeyError, match="no learner '_never_registered'"):
        unregister("_never_registered")
    with pytest.raises(ValueError) as taken:
        register(type("Mine", (UniformLearner,), {"name": "cfr"}))
    assert "unregister" not in str(taken.value)
