"""Regret matching on Rock-Paper-Scissors and other matrix games (full-width and sampled)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nashzoo.agents import (
    CheckpointError,
    RegretMatching,
    RegretMatchingConfig,
    fixed_policy,
    load_learner,
    make_learner,
)
from nashzoo.games import load_game
from nashzoo.games import treemath as tm
from nashzoo.train import train

OPPONENT = [0.3, 0.3, 0.4]  # rock, paper, scissors: the best response is rock, worth 0.1


def _against_fixed(config: dict, iterations: int, seed: int = 0) -> RegretMatching:
    learner = RegretMatching("rps", 0, config, seed=seed)
    opponent = fixed_policy("rps", OPPONENT)
    for _ in range(iterations):
        metrics = learner.step(opponent)
    learner.last_metrics = metrics  # type: ignore[attr-defined]
    return learner


@pytest.mark.parametrize(
    ("config", "iterations"),
    [
        ({"mode": "full"}, 2_000),
        ({"mode": "sampled"}, 20_000),
        ({"mode": "sampled", "sample_own": True}, 20_000),
    ],
)
def test_rps_against_fixed_opponent_converges_to_rock(config: dict, iterations: int) -> None:
    learner = _against_fixed(config, iterations)
    average = learner.average_strategy()
    assert average[0] >= 0.99, average
    metrics = learner.last_metrics  # type: ignore[attr-defined]
    # The average payoff of the strategies played approaches the best-response value 0.1 ...
    assert metrics["mean_payoff"] == pytest.approx(0.1, abs=0.01)
    assert metrics["mean_payoff"] < 0.1 + 1e-12  # ... from below: nothing beats the BR
    if config["mode"] == "sampled":
        assert metrics["mean_realised_payoff"] == pytest.approx(0.1, abs=0.02)
    # ... and the average strategy itself earns nearly 0.1 against the opponent.
    value = average @ np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]) @ np.array(OPPONENT)
    assert value == pytest.approx(0.1, abs=2e-3)


def test_full_mode_pinned_numbers() -> None:
    learner = _against_fixed({"mode": "full"}, 1_000)
    # Full-width RM against a fixed opponent is deterministic: regrets grow by U y - sigma.U y.
    np.testing.assert_allclose(learner.average_strategy(), [0.99933333, 1 / 3000, 1 / 3000])
    np.testing.assert_allclose(learner.cumulative_regrets(), [0.1, -199.9, -99.9], rtol=1e-9)


def test_sampled_mode_is_seeded() -> None:
    a = _against_fixed({"mode": "sampled"}, 500, seed=3)
    b = _against_fixed({"mode": "sampled"}, 500, seed=3)
    c = _against_fixed({"mode": "sampled"}, 500, seed=4)
    np.testing.assert_array_equal(a.cumulative_regrets(), b.cumulative_regrets())
    assert not np.array_equal(a.cumulative_regrets(), c.cumulative_regrets())


@pytest.mark.parametrize(
    ("config", "iterations"),
    [
        ({"mode": "full", "initial_regrets": (1.0, 0.0, 0.0)}, 10_000),
        ({"mode": "sampled"}, 10_000),
    ],
)
def test_self_play_average_is_uniform(config: dict, iterations: int) -> None:
    result = train("rps", "regret_matching", config=config, iterations=iterations, seed=0)
    probs = result.average_policy.probs
    assert np.abs(probs - 1 / 3).max() < 0.01, probs
    # Not trivially uniform: the current strategies moved away from uniform on the way.
    assert result.nash_conv < 0.02


def test_self_play_full_from_uniform_start_stays_uniform() -> None:
    # With zero regrets and a symmetric game nothing ever has positive regret: documented
    # behaviour, and the reason the self-play test above starts from pure rock.
    result = train("rps", "regret_matching", iterations=50)
    np.testing.assert_array_equal(result.average_policy.probs, np.full((2, 3), 1 / 3))


def test_train_against_registered_fixed_learner() -> None:
    result = train(
        "rps",
        "regret_matching",
        "fixed",
        opponent_config={"strategy": OPPONENT},
        iterations=2_000,
    )
    assert result.learners == ("regret_matching", "fixed")
    assert result.average_policy.row("p0")[0] >= 0.99
    assert result.final is not None
    assert result.final.values[0] == pytest.approx(0.1, abs=1e-3)
    # Seat 0 learned (almost) pure rock, which paper exploits by 1 against the game value 0.
    assert result.final.seat_exploitability[0] == pytest.approx(1.0, abs=2e-3)


def test_non_square_matrix_game() -> None:
    game = load_game("matrix", row_payoffs=[[3, -1], [-2, 1], [0, 0]])
    seat1 = RegretMatching(game, 1)
    seat0 = RegretMatching(game, 0)
    for _ in range(3_000):
        seat0.step(seat1.current_policy())
        seat1.step(seat0.current_policy())
    tree = seat0.tree
    joint = tm.uniform_strategy(tree)
    joint[tree.infosets_of(0)] = seat0.average_policy().probs[tree.infosets_of(0)]
    joint[tree.infosets_of(1)] = seat1.average_policy().probs[tree.infosets_of(1)]
    assert tm.nash_conv(tree, joint)[0] < 0.02
    # Seat 1 has 2 actions of the 3-wide action space: the third column stays zero.
    assert seat1.average_policy().row("p1")[2] == 0.0


def test_refuses_extensive_form_games() -> None:
    with pytest.raises(ValueError, match=r"matrix games.*leduc_poker.*cfr"):
        make_learner("regret_matching", "leduc_poker", 0)
    with pytest.raises(ValueError, match="matrix games"):
        train("kuhn_poker", "regret_matching", iterations=1)


def test_the_refusal_names_every_table_learner_that_plays_any_game() -> None:
    """The list is read from the registry (it was written out by hand, and a new learner,
    ``xfp`` among them, was missing from it)."""
    from nashzoo.agents.registry import learner_class, learner_names

    with pytest.raises(ValueError) as refused:
        make_learner("regret_matching", "kuhn_poker", 0)
    named = set(re.findall(r"'(\w+)'", str(refused.value).split("matrix game: use ")[1]))
    table = set()
    for name in learner_names():
        try:
            if learner_class(name).kind in ("tabular", "sampling"):
                table.add(name)
        except ImportError:
            continue
    assert named == table - {"regret_matching"}
    assert {"cfr", "cfr_plus", "dcfr", "os_mccfr", "es_mccfr", "xfp"} <= named


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        RegretMatchingConfig(mode="bandit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sample_own=True needs mode='sampled'"):
        RegretMatchingConfig(sample_own=True)
    with pytest.raises(ValueError, match="initial_regrets has 2 entries"):
        RegretMatching("rps", 0, {"initial_regrets": [1.0, 2.0]})
    for bad in ("abc", 5):
        with pytest.raises(ValueError, match="initial_regrets must be a list of numbers"):
            RegretMatchingConfig(initial_regrets=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sample_own must be True or False"):
        RegretMatchingConfig(mode="sampled", sample_own="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown regret_matching config fields"):
        RegretMatching("rps", 0, {"learning_rate": 0.1})


def test_resume_is_bit_identical(tmp_path) -> None:
    opponent = fixed_policy("rps", OPPONENT)
    config = {"mode": "sampled", "sample_own": True}
    straight = RegretMatching("rps", 0, config, seed=7)
    for _ in range(300):
        straight.step(opponent)
    first = RegretMatching("rps", 0, config, seed=7)
    for _ in range(120):
        first.step(opponent)
    first.save(tmp_path / "rm.npz")
    resumed = load_learner(tmp_path / "rm.npz", "rps")
    assert isinstance(resumed, RegretMatching) and resumed.iterations == 120
    for _ in range(180):
        resumed.step(opponent)
    for key, value in straight._state_arrays().items():
        np.testing.assert_array_equal(resumed._state_arrays()[key], value)
    assert resumed.rng.bit_generator.state == straight.rng.bit_generator.state


def test_checkpoint_of_another_game_is_refused(tmp_path) -> None:
    learner = RegretMatching("rps", 0)
    learner.save(tmp_path / "rm.npz")
    with pytest.raises(CheckpointError, match="trained on rps"):
        RegretMatching.load(tmp_path / "rm.npz", load_game("matrix", preset="matching_pennies"))
