"""Full-width extensive-form fictitious play (XFP)."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.agents import XFP, CheckpointError, load_learner
from nashzoo.eval import best_response
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.train import train


def test_kuhn_xfp_reaches_nash_conv_below_0_1_within_100_iterations() -> None:
    result = train("kuhn_poker", "xfp", iterations=100, eval_every="log")
    assert min(r.nash_conv for r in result.history) < 0.1
    assert result.nash_conv < 0.1
    assert result.history[0].iteration == 1
    assert result.history[0].nash_conv > 0.1  # it did have to learn
    # Pinned. Best responses break ties within 1e-12 (relative) towards the lowest action, so
    # this trajectory does not depend on the order the kernels sum in.
    assert result.nash_conv == pytest.approx(0.015676567656765658, rel=1e-6)


def test_average_is_the_realization_weighted_mixture() -> None:
    """The behaviour average must be equivalent to the uniform mixture of the strategies played
    (the uniform start and every best response), not a per-infoset average of probabilities."""
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    seat0, seat1 = XFP(game, 0), XFP(game, 1)
    played = [tm.realization_plan(tree, tm.uniform_strategy(tree), 0)]
    naive = [tm.uniform_strategy(tree)]
    for _ in range(7):
        seat0.step(seat1.average_policy())
        seat1.step(seat0.average_policy())
        best = seat0.current_policy().probs
        played.append(tm.realization_plan(tree, best, 0))
        naive.append(best)
    mixture = np.mean(played, axis=0)
    average = seat0.average_policy().probs
    np.testing.assert_allclose(tm.realization_plan(tree, average, 0), mixture, atol=1e-15)
    np.testing.assert_allclose(seat0.realization_plan(), mixture, atol=1e-15)
    # Same payoff as the mixture against any opponent (linearity in the plan).
    rng = np.random.default_rng(0)
    opponent = rng.random((tree.num_infosets, tree.num_actions)) * tree.legal_mask
    opponent /= opponent.sum(axis=1, keepdims=True)
    mine = tree.infosets_of(0)
    joint = opponent.copy()
    joint[mine] = average[mine]
    mixed_value = 0.0
    for plan in played:
        pure = opponent.copy()
        pure[mine] = tm.behaviour_strategy(tree, plan, rows=mine)[mine]
        mixed_value += tm.expected_returns(tree, pure)[0] / len(played)
    assert tm.expected_returns(tree, joint)[0] == pytest.approx(mixed_value, abs=1e-14)
    # The naive per-infoset average of probabilities is a different strategy here.
    naive_avg = np.mean(naive, axis=0)
    assert not np.allclose(naive_avg[mine], average[mine], atol=1e-3)


def test_step_plays_the_exact_best_response_to_the_opponent_average() -> None:
    game = load_game("leduc_poker")
    seat0, seat1 = XFP(game, 0), XFP(game, 1)
    for _ in range(3):
        seat0.step(seat1.average_policy())
        seat1.step(seat0.average_policy())
    opponent = seat1.average_policy()
    metrics = seat0.step(opponent)
    exact = best_response(game, opponent, 0)
    assert metrics["br_value"] == pytest.approx(exact.value, abs=1e-12)
    mine = compile_tree(game).infosets_of(0)
    np.testing.assert_array_equal(seat0.current_policy().probs[mine], exact.policy.probs[mine])
    assert XFP.opponent_view == "average"


def test_resume_is_bit_identical(tmp_path) -> None:
    game = load_game("kuhn_poker")
    straight = (XFP(game, 0), XFP(game, 1))
    for _ in range(9):
        straight[0].step(straight[1].average_policy())
        straight[1].step(straight[0].average_policy())
    first = (XFP(game, 0), XFP(game, 1))
    for _ in range(4):
        first[0].step(first[1].average_policy())
        first[1].step(first[0].average_policy())
    for s in (0, 1):
        first[s].save(tmp_path / f"xfp{s}.npz")
    resumed = [load_learner(tmp_path / f"xfp{s}.npz") for s in (0, 1)]
    for _ in range(5):
        resumed[0].step(resumed[1].average_policy())
        resumed[1].step(resumed[0].average_policy())
    for r, s in zip(resumed, straight, strict=True):
        np.testing.assert_array_equal(r.realization_plan(), s.realization_plan())
        np.testing.assert_array_equal(r.current_policy().probs, s.current_policy().probs)
        assert r.work() == s.work()


def test_checkpoint_of_cfr_is_not_an_xfp_checkpoint(tmp_path) -> None:
    from nashzoo.agents import CFR

    CFR("kuhn_poker", 0).save(tmp_path / "cfr.npz")
    with pytest.raises(CheckpointError, match="'cfr' checkpoint, not 'xfp'"):
        XFP.load(tmp_path / "cfr.npz")


@pytest.mark.parametrize("scale", [1e-300, 1e-13, 1e12])
def test_xfp_learns_the_same_at_any_payoff_scale(scale) -> None:
    """[[3, -1], [-2, 4]] times ``scale`` (equilibrium row (0.6, 0.4)): the same average policy
    as at scale 1. Best-response ties were within an absolute 1e-12, so at 1e-13 every
    response was the first action and XFP learnt nothing (NashConv / scale 3.99)."""
    payoffs = np.array([[3.0, -1.0], [-2.0, 4.0]])
    reference = train(load_game("matrix", row_payoffs=payoffs.tolist()), "xfp", iterations=300)
    scaled = load_game("matrix", row_payoffs=(payoffs * scale).tolist())
    result = train(scaled, "xfp", iterations=300)
    np.testing.assert_allclose(result.average_policy.probs, reference.average_policy.probs)
    assert result.final.nash_conv / scale == pytest.approx(reference.final.nash_conv, rel=1e-9)
