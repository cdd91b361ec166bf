"""A researcher's own learner plugged in through every surface: the registry, ``step``'s
metrics, checkpoints read without the plugin, worker processes and settings."""

from __future__ import annotations

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
    assert learner_class("nfsp").__module__ == "nashzoo.agents.nfsp"


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
