"""Fixed policies and the non-learning ``uniform`` / ``fixed`` learners."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nashzoo.agents import (
    CheckpointError,
    FixedLearner,
    PolicyError,
    TabularPolicy,
    UniformLearner,
    fixed_policy,
    learner_class,
    learner_names,
    learning_learner_names,
    load_learner,
    make_learner,
    uniform_policy,
)
from nashzoo.eval import best_response, nash_conv, seat_exploitability
from nashzoo.games import compile_tree, load_game


def test_uniform_policy() -> None:
    assert nash_conv("kuhn_poker", uniform_policy("kuhn_poker")) == pytest.approx(11 / 12)
    np.testing.assert_array_equal(
        uniform_policy("leduc").probs, TabularPolicy.uniform("leduc_poker").probs
    )


def test_fixed_mixed_strategy_for_rps() -> None:
    both = fixed_policy("rps", [0.3, 0.3, 0.4])
    np.testing.assert_allclose(both.probs, [[0.3, 0.3, 0.4], [0.3, 0.3, 0.4]])
    seat1 = fixed_policy("rps", [0.3, 0.3, 0.4], seats=1)
    np.testing.assert_allclose(seat1.probs, [[1 / 3] * 3, [0.3, 0.3, 0.4]])
    assert best_response("rps", seat1, 0).value == pytest.approx(0.1)
    # seat 1 loses 0.1 to a best responder; seat 0 (uniform) loses nothing
    assert seat_exploitability("rps", seat1, 1) == pytest.approx(0.1)
    assert seat_exploitability("rps", seat1, 0) == pytest.approx(0.0, abs=1e-12)


def test_fixed_strategy_on_non_square_matrix_game() -> None:
    game = load_game("matrix", row_payoffs=[[1, 0, 2], [0, 1, -1]])
    short = fixed_policy(game, [0.25, 0.75], seats=0)  # only the legal actions
    padded = fixed_policy(game, [0.25, 0.75, 0.0], seats=0)
    np.testing.assert_array_equal(short.probs, padded.probs)
    with pytest.raises(PolicyError, match="puts probability on an illegal action"):
        fixed_policy(game, [0.2, 0.4, 0.4], seats=0)
    with pytest.raises(PolicyError, match="has 2 legal actions"):
        fixed_policy(game, [0.5, 0.25, 0.125, 0.125], seats=0)


def test_fixed_dict_strategy_for_kuhn() -> None:
    tree = compile_tree(load_game("kuhn_poker"))
    always_bet = {tree.infoset_keys[i]: [0.0, 1.0] for i in tree.infosets_of(1)}
    policy = fixed_policy("kuhn_poker", always_bet, seats=1)
    np.testing.assert_array_equal(policy.probs[tree.infosets_of(1)], [[0.0, 1.0]] * 6)
    np.testing.assert_array_equal(policy.probs[tree.infosets_of(0)], [[0.5, 0.5]] * 6)


def test_fixed_policy_errors() -> None:
    with pytest.raises(PolicyError, match="seat 0 of kuhn_poker has 6"):
        fixed_policy("kuhn_poker", [0.5, 0.5])
    with pytest.raises(PolicyError, match="1-D list of probabilities"):
        fixed_policy("rps", [[0.5, 0.5, 0.0]])
    with pytest.raises(PolicyError, match="does not sum to one"):
        fixed_policy("rps", [0.5, 0.6, 0.0])
    with pytest.raises(PolicyError, match=r"'J\|p' belongs to seat 1"):
        fixed_policy("kuhn_poker", {"J|p": [1.0, 0.0]}, seats=0)
    with pytest.raises(PolicyError, match=r"'X' does not exist in kuhn_poker"):
        fixed_policy("kuhn_poker", {"X": [1.0, 0.0]}, seats=0)
    with pytest.raises(PolicyError, match=r"no probabilities for information set .*5 missing"):
        fixed_policy("kuhn_poker", {"J|": [1.0, 0.0]}, seats=0)
    with pytest.raises(ValueError, match="player must be an integer"):
        fixed_policy("rps", [1.0, 0.0, 0.0], seats=2)


def test_learners_are_registered() -> None:
    assert {"uniform", "fixed"} <= set(learner_names())
    assert isinstance(make_learner("uniform", "kuhn_poker", 0), UniformLearner)
    assert isinstance(make_learner("fixed", "rps", 1, {"strategy": [1.0, 0.0, 0.0]}), FixedLearner)
    # the non-learning baselines say so (a race leaves them out unless named)
    assert not UniformLearner.learns and not FixedLearner.learns
    assert learner_class("cfr").learns and learner_class("xfp").learns
    learning = learning_learner_names()
    assert "uniform" not in learning and "fixed" not in learning
    assert {"cfr", "nfsp", "ppo"} <= set(learning)


def test_uniform_learner_does_no_work(tmp_path: Path) -> None:
    learner = make_learner("uniform", "leduc_poker", 1, seed=3)
    before = learner.average_policy()
    metrics = learner.step(uniform_policy("leduc_poker"))
    assert metrics == {"iterations": 1, "nodes_touched": 0, "env_steps": 0}
    assert learner.current_policy() is learner.average_policy() is before
    learner.save(tmp_path / "u.npz")
    loaded = load_learner(tmp_path / "u.npz")
    assert isinstance(loaded, UniformLearner) and loaded.seat == 1 and loaded.iterations == 1
    np.testing.assert_array_equal(loaded.average_policy().probs, before.probs)


def test_fixed_learner_plays_its_strategy_on_its_seat() -> None:
    learner = make_learner("fixed", "rps", 1, {"strategy": [0.3, 0.3, 0.4]})
    learner.step(uniform_policy("rps"))
    policy = learner.average_policy()
    np.testing.assert_allclose(policy.probs, [[1 / 3] * 3, [0.3, 0.3, 0.4]])
    assert learner.current_policy() is policy
    assert best_response("rps", policy, 0).value == pytest.approx(0.1)


def test_fixed_learner_from_a_joint_table_uses_its_seat_rows() -> None:
    solution_like = TabularPolicy.from_policy(
        "kuhn_poker", lambda info: np.array([0.0, 1.0]) if "K" in info.key else np.array([1, 0])
    )
    learner = make_learner("fixed", "kuhn_poker", 0, {"strategy": solution_like.to_dict()})
    tree = compile_tree(load_game("kuhn_poker"))
    mine, theirs = tree.infosets_of(0), tree.infosets_of(1)
    np.testing.assert_array_equal(learner.average_policy().probs[mine], solution_like.probs[mine])
    np.testing.assert_array_equal(learner.average_policy().probs[theirs], 0.5)


def test_fixed_learner_from_a_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    source = fixed_policy("rps", [0.1, 0.2, 0.7])
    source.save(path)
    learner = make_learner("fixed", "rps", 0, {"path": str(path)})
    np.testing.assert_allclose(learner.average_policy().probs, [[0.1, 0.2, 0.7], [1 / 3] * 3])
    learner.save(tmp_path / "fixed.npz")
    path.unlink()  # the checkpoint holds the rows: it loads without the policy file
    loaded = load_learner(tmp_path / "fixed.npz", "rps")
    assert isinstance(loaded, FixedLearner)
    np.testing.assert_array_equal(loaded.average_policy().probs, learner.average_policy().probs)
    assert loaded.config.path == str(path)
    with pytest.raises(PolicyError, match="no policy JSON file at"):
        make_learner("fixed", "rps", 0, {"path": str(path)})


def test_fixed_learner_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"exactly one of strategy= .* or path="):
        make_learner("fixed", "rps", 0)
    with pytest.raises(ValueError, match="exactly one of"):
        make_learner("fixed", "rps", 0, {"strategy": [1, 0, 0], "path": "x.json"})
    with pytest.raises(ValueError, match="unknown fixed config fields"):
        make_learner("fixed", "rps", 0, {"strategi": [1, 0, 0]})
    with pytest.raises(PolicyError, match="does not sum to one"):
        make_learner("fixed", "rps", 0, {"strategy": [0.5, 0.0, 0.0]})
    with pytest.raises(ValueError, match=r"strategy must be .* got 'a.json' \(a policy file"):
        make_learner("fixed", "rps", 0, {"strategy": "a.json"})
    with pytest.raises(ValueError, match=r"strategy must be .* got \{'p0': \[1, 'x', 0\]\}"):
        make_learner("fixed", "rps", 0, {"strategy": {"p0": [1, "x", 0]}})
    with pytest.raises(ValueError, match="path must be a file path, got 5"):
        make_learner("fixed", "rps", 0, {"path": 5})
    with pytest.raises(PolicyError, match=r"'nope' does not exist in kuhn_poker"):
        make_learner("fixed", "kuhn_poker", 0, {"strategy": {"nope": [1.0, 0.0]}})
    other = tmp_path / "leduc.json"
    uniform_policy("leduc_poker").save(other)
    with pytest.raises(PolicyError, match="not for kuhn_poker"):
        make_learner("fixed", "kuhn_poker", 0, {"path": str(other)})


def test_fixed_config_is_json_ready_and_round_trips(tmp_path: Path) -> None:
    learner = make_learner("fixed", "rps", 0, {"strategy": np.array([0.2, 0.3, 0.5])})
    assert learner.config.strategy == [0.2, 0.3, 0.5]
    learner.save(tmp_path / "c.npz")
    loaded = load_learner(tmp_path / "c.npz")
    assert loaded.config == learner.config


def test_checkpoint_for_another_learner_is_refused(tmp_path: Path) -> None:
    make_learner("uniform", "rps", 0).save(tmp_path / "u.npz")
    with pytest.raises(CheckpointError, match="'uniform' checkpoint, not 'fixed'"):
        FixedLearner.load(tmp_path / "u.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="not a readable nashzoo checkpoint"):
        load_learner(tmp_path / "bad.npz")
