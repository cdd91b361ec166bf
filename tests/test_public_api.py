"""The public API as a user's type checker and ``help()`` meet it: every exported name imports
and says what it is, and the signatures a plugin or a typed script leans on keep their types."""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Mapping

import pytest

from nashzoo.agents import CFRPlus, Learner, register, unregister
from nashzoo.train import TrainResult

PACKAGES = [
    "nashzoo",
    "nashzoo.agents",
    "nashzoo.eval",
    "nashzoo.games",
    "nashzoo.envs",
    "nashzoo.io",
    "nashzoo.train",
]


def _exported(package: str) -> list[tuple[str, object]]:
    module = importlib.import_module(package)
    return [(f"{package}.{name}", getattr(module, name)) for name in module.__all__]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_exists(package):
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing
    assert len(set(module.__all__)) == len(module.__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_class_function_and_public_method_has_a_docstring(package):
    undocumented = []
    for label, obj in _exported(package):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not inspect.getdoc(obj):
            undocumented.append(label)
        if not inspect.isclass(obj) or not obj.__module__.startswith("nashzoo"):
            continue
        for name, member in inspect.getmembers(obj):
            owner = next((c for c in obj.__mro__ if name in vars(c)), None)
            if name.startswith("_") or owner is None or not owner.__module__.startswith("nashzoo"):
                continue  # private, or inherited from PettingZoo / Gymnasium / object
            static = inspect.getattr_static(obj, name)
            if (callable(member) or isinstance(static, property)) and not inspect.getdoc(
                static if isinstance(static, property) else member
            ):
                undocumented.append(f"{label}.{name}")
    assert not undocumented


def test_register_and_load_keep_the_learner_subclass_for_type_checkers():
    # ``@register`` returns the class it is given, typed so: a TypeVar, not type[Learner], which
    # turned a decorated plugin into a plain Learner for pyright.
    hints = typing.get_type_hints(register)
    assert isinstance(hints["return"], typing.TypeVar)
    assert hints["return"] is hints["cls"]

    class Probe(CFRPlus):
        name = "public_api_probe"

    try:
        assert register(Probe) is Probe
    finally:  # a tabular learner left registered is one test_learner_copies finds no case for
        unregister(Probe.name)
    # ``CFRPlus.load(path)`` is a CFRPlus to a type checker, not a Learner.
    for method in (Learner.load, Learner.from_checkpoint):
        returned = typing.get_type_hints(method)["return"]
        assert isinstance(returned, typing.TypeVar)
        assert returned.__bound__ is Learner or returned.__bound__ == typing.ForwardRef("Learner")


def test_a_plugin_step_may_return_a_mapping_of_ints():
    # dict is invariant: a plugin's ``_step(...) -> dict[str, int]`` (work counts are ints) was
    # an incompatible override of ``-> dict[str, float]``; Mapping is covariant.
    returned = typing.get_type_hints(Learner._step)["return"]
    assert typing.get_origin(returned) is Mapping
    assert typing.get_args(returned) == (str, float)


def test_train_result_has_seat_exploitability_without_going_through_final():
    from nashzoo.train import train

    result = train("kuhn_poker", "cfr_plus", iterations=2)
    assert result.final is not None
    assert result.seat_exploitability == result.final.seat_exploitability
    hints = typing.get_type_hints(TrainResult.seat_exploitability.fget)
    assert hints["return"] == tuple[float, ...] | None


def test_from_sb3_and_load_sb3_return_their_types_not_any():
    pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.base_class import BaseAlgorithm

    from nashzoo.agents import adapters
    from nashzoo.agents.sb3_baseline import SB3Policy

    names = {**vars(adapters), "SB3Policy": SB3Policy, "BaseAlgorithm": BaseAlgorithm}
    assert typing.get_type_hints(adapters.from_sb3, names)["return"] is SB3Policy
    assert typing.get_type_hints(adapters.load_sb3, names)["return"] is BaseAlgorithm


@pytest.mark.skipif(not hasattr(typing, "get_overloads"), reason="typing.get_overloads: 3.11+")
def test_make_env_is_overloaded_on_parallel():
    # Without overloads make_env returned AECEnv | ParallelEnv, so make_env("kuhn_poker_v0")
    # .agent_iter() / .last() failed pyright (no such attribute on ParallelEnv).
    from pettingzoo import AECEnv, ParallelEnv

    import nashzoo.envs

    returns = [
        typing.get_origin(typing.get_type_hints(f, vars(nashzoo.envs))["return"])
        for f in typing.get_overloads(nashzoo.envs.make_env)
    ]
    assert returns[:2] == [AECEnv, ParallelEnv]


def test_what_a_notebook_prints_stays_short_on_a_game_with_a_long_id():
    """The results were dataclasses whose repr held the whole game id: 670,000 characters for
    a 300x300 matrix game (``compile_tree``, ``evaluate``, ``solve_game``, ``round_robin``,
    ``train``), and a compiled tree's listed all its arrays even on Kuhn. The envs showed
    ``<... object at 0x...>``."""
    import numpy as np

    from nashzoo.agents import TabularPolicy
    from nashzoo.envs import env
    from nashzoo.eval import evaluate, solve_game
    from nashzoo.eval.tournament import Entrant, round_robin
    from nashzoo.games import compile_tree
    from nashzoo.games.infoset import UniformPolicy
    from nashzoo.games.matrix import MatrixGame
    from nashzoo.train import train

    game = MatrixGame(row_payoffs=np.random.default_rng(0).normal(size=(60, 60)).tolist())
    assert len(game.id) > 20_000
    uniform = UniformPolicy()
    table = TabularPolicy.uniform(game)
    shown = {
        "tree": repr(compile_tree(game)),
        "report": repr(evaluate(game, uniform)),
        "solution": repr(solve_game(game)),
        "tournament": repr(round_robin(game, [Entrant("u", table), Entrant("v", table)])),
        "train": repr(train(game, "cfr", iterations=2)),
        "env": repr(env(game)),
    }
    for what, text in shown.items():
        assert len(text) < 800 and game.display_id in text, (what, len(text))
        assert "object at 0x" not in text, what
    assert shown["tree"].endswith(": 3,661 histories, 2 information sets, 60 actions>")
    assert repr(compile_tree("kuhn_poker")) == (
        "<CompiledTree kuhn_poker: 58 histories, 12 information sets, 2 actions>"
    )
    rps = TabularPolicy.uniform("rps")
    result = round_robin("rps", [Entrant("u", rps), Entrant("v", rps)])
    assert str(result) == result.table()
