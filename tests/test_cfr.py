"""Full-width CFR, CFR+ and DCFR: convergence, the regret bound, checkpoints, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.agents import (
    CFR,
    DCFR,
    CFRPlus,
    CFRPlusConfig,
    CheckpointError,
    DCFRConfig,
    load_learner,
    make_learner,
)
from nashzoo.eval import expected_returns, nash_conv
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.train import train

KUHN_VALUE = -1 / 18


def _self_play(cls, game, iterations: int, config=None):
    a, b = cls(game, 0, config), cls(game, 1, config)
    for _ in range(iterations):
        a.step(b.current_policy())
        b.step(a.current_policy())
    return a, b


def test_kuhn_cfr_converges_and_finds_the_game_value() -> None:
    result = train("kuhn_poker", "cfr", iterations=1000, eval_every=100)
    conv = [r.nash_conv for r in result.history]
    assert min(conv) < 2e-3
    assert result.nash_conv < 2e-3
    # Pinned (deterministic full-width run; alternating updates).
    assert result.nash_conv == pytest.approx(1.8752332939877825e-3, rel=1e-6)
    value = expected_returns("kuhn_poker", result.average_policy)[0]
    assert abs(value - KUHN_VALUE) < 1e-3


def test_kuhn_cfr_plus_beats_cfr_at_equal_iterations() -> None:
    plain = train("kuhn_poker", "cfr", iterations=1000, eval_every=100)
    plus = train("kuhn_poker", "cfr_plus", iterations=1000, eval_every=100)
    for a, b in zip(plain.history, plus.history, strict=True):
        assert a.iteration == b.iteration
        assert b.nash_conv < a.nash_conv, (a.iteration, a.nash_conv, b.nash_conv)
    assert plus.nash_conv < 3e-4


def test_kuhn_dcfr_converges() -> None:
    result = train("kuhn_poker", "dcfr", iterations=1000, eval_every=250)
    conv = [r.nash_conv for r in result.history]
    assert conv == sorted(conv, reverse=True)  # monotone on this schedule
    assert result.nash_conv < 5e-4
    assert abs(result.final.values[0] - KUHN_VALUE) < 1e-4


def test_leduc_cfr_plus_reaches_1e_2_within_500_iterations() -> None:
    result = train("leduc_poker", "cfr_plus", iterations=500)
    assert result.nash_conv < 0.01
    # Pinned. CFR+'s floor makes the trajectory depend on the rounding of q - sum_a sigma q,
    # so the infoset values are summed action by action, in order (treemath.row_sums), on the
    # numpy and the compiled path alike.
    assert result.nash_conv == pytest.approx(1.7735021250823851e-3, rel=1e-6)


def test_cfr_average_regret_stays_under_the_zinkevich_bound() -> None:
    """R_i^T = max_s' sum_t u_i(s', tau_t) - sum_t u_i(sigma_t, tau_t), measured exactly.

    ``tau_t`` is what seat i faced at its t-th update (alternating updates). The max over pure
    and mixed ``s'`` of a sum of payoffs linear in the opponent's realization plan is the
    best-response value against the opponent's time-averaged realization plan, times T.
    """
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    seats = (CFR(game, 0), CFR(game, 1))
    faced = [np.zeros((tree.num_infosets, tree.num_actions)) for _ in range(2)]
    earned = [0.0, 0.0]
    delta = float(np.ptp(tree.terminal_utility[:, 0]))  # utility range: 4 in Kuhn
    checked = 0
    for t in range(1, 1001):
        for seat in (0, 1):
            view = seats[1 - seat].current_policy()
            faced[seat] += tm.realization_plan(tree, view.probs, 1 - seat)
            earned[seat] += seats[seat].step(view)["value"]
        if t not in (1, 10, 100, 1000):
            continue
        for seat in (0, 1):
            opponent_rows = tree.infosets_of(1 - seat)
            average = tm.behaviour_strategy(tree, faced[seat], rows=opponent_rows)
            best, _ = tm.best_response(tree, average, seat)
            regret = (best * t - earned[seat]) / t
            own = tree.infosets_of(seat)
            actions = int(tree.legal_mask[own].sum(axis=1).max())
            bound = delta * own.size * np.sqrt(actions) / np.sqrt(t)
            assert regret <= bound, (t, seat, regret, bound)
            # Tighter: Zinkevich et al.'s Theorem 3, R <= sum_I max_a R_imm(I, a)^+, read
            # from the learner's cumulative counterfactual regrets.
            immediate = np.maximum(seats[seat].cumulative_regrets()[own].max(axis=1), 0.0)
            assert regret <= immediate.sum() / t + 1e-12, (t, seat)
            checked += 1
        if t == 1000:
            # and the regret really is shrinking, as the 1/sqrt(T) rate says
            assert regret < 0.01
    assert checked == 8


def test_cfr_plus_uses_linear_averaging_and_floors_regrets() -> None:
    game = load_game("kuhn_poker")
    a, b = _self_play(CFRPlus, game, 50)
    assert (a.cumulative_regrets() >= 0).all() and (b.cumulative_regrets() >= 0).all()
    # Linear averaging: sum of weights t over 50 iterations at the root infosets (reach 1).
    root = [compile_tree(game).index_of(k) for k in ("J|", "Q|", "K|")]
    np.testing.assert_allclose(a.strategy_sum()[root].sum(axis=1), 50 * 51 / 2)
    delayed = CFRPlus(game, 0, CFRPlusConfig(averaging_delay=10))
    other = CFRPlus(game, 1)
    for _ in range(50):
        delayed.step(other.current_policy())
        other.step(delayed.current_policy())
    np.testing.assert_allclose(delayed.strategy_sum()[root].sum(axis=1), 40 * 41 / 2)


def test_dcfr_discounting_by_hand() -> None:
    game = load_game("kuhn_poker")
    config = DCFRConfig(alpha=1.5, beta=0.0, gamma=2.0)
    a, b = _self_play(DCFR, game, 3, config)
    root = compile_tree(game).index_of("K|")
    # Average weights: S_t = (S_{t-1} + x_t)(t/(t+1))^2 with x_t summing to 1 at a root infoset.
    s = 0.0
    for t in (1, 2, 3):
        s = (s + 1.0) * (t / (t + 1)) ** 2
    assert a.strategy_sum()[root].sum() == pytest.approx(s)
    # Negative regrets are halved every iteration (beta = 0), positive ones shrink by
    # t^1.5 / (t^1.5 + 1): one more step from a known state checks both factors.
    before = a.cumulative_regrets()
    view = b.current_policy()
    instant = _instant_regrets(a, view)
    a.step(view)
    t = 4
    raw = before + instant
    expected = np.where(raw > 0, raw * t**1.5 / (t**1.5 + 1), raw * 0.5)
    np.testing.assert_allclose(a.cumulative_regrets(), expected, rtol=1e-12, atol=1e-15)


def test_dcfr_with_a_large_exponent_runs_past_the_largest_float() -> None:
    """alpha=400: t^alpha passes the largest float at t=6, where the weight is 1 to the last
    bit; the run goes on (it used to stop with OverflowError), bit for bit as alpha=1000."""
    game = load_game("kuhn_poker")
    big, bigger = DCFRConfig(alpha=400.0), DCFRConfig(alpha=1000.0)
    a = _self_play(DCFR, game, 20, big)
    b = _self_play(DCFR, game, 20, bigger)
    np.testing.assert_array_equal(a[0].cumulative_regrets(), b[0].cumulative_regrets())
    assert np.isfinite(a[0].cumulative_regrets()).all()


def _instant_regrets(learner, view) -> np.ndarray:
    tree = learner.tree
    joint = np.array(view.probs)
    mine = tree.infosets_of(learner.seat)
    joint[mine] = learner.current_policy().probs[mine]
    q, _ = tm.counterfactual_values(tree, joint, learner.seat)
    instant = q - (joint * q).sum(axis=1, keepdims=True)
    mask = np.zeros_like(instant)
    mask[mine] = tree.legal_mask[mine]
    return instant * mask


def _full_width_learners() -> list[str]:
    """Every built-in full-width CFR variant (a new one is tested here without a list)."""
    from nashzoo.agents.cfr import _FullWidthCFR
    from nashzoo.agents.registry import learner_class, learner_names

    found = []
    for name in learner_names():
        try:
            cls = learner_class(name)
        except ImportError:  # a learner of an extra not installed (the lowest-versions run)
            continue
        if issubclass(cls, _FullWidthCFR):
            found.append(name)
    return found


FULL_WIDTH = _full_width_learners()


def test_the_full_width_variants_are_found():
    assert {"cfr", "cfr_plus", "dcfr"} <= set(FULL_WIDTH)


@pytest.mark.parametrize("name", FULL_WIDTH)
def test_policies_are_copies_not_live_views(name: str) -> None:
    a = make_learner(name, "kuhn_poker", 0)
    b = make_learner(name, "kuhn_poker", 1)
    a.step(b.current_policy())
    average, current = a.average_policy(), a.current_policy()
    frozen_avg, frozen_cur = average.probs.copy(), current.probs.copy()
    for _ in range(5):
        b.step(a.current_policy())
        a.step(b.current_policy())
    np.testing.assert_array_equal(average.probs, frozen_avg)
    np.testing.assert_array_equal(current.probs, frozen_cur)
    assert not np.array_equal(a.average_policy().probs, frozen_avg)
    with pytest.raises(ValueError):
        average.probs[0, 0] = 1.0  # read-only


@pytest.mark.parametrize("name", FULL_WIDTH)
def test_resume_is_bit_identical(name: str, tmp_path) -> None:
    game = load_game("leduc_poker")
    straight = [make_learner(name, game, s) for s in (0, 1)]
    for _ in range(12):
        straight[0].step(straight[1].current_policy())
        straight[1].step(straight[0].current_policy())
    first = [make_learner(name, game, s) for s in (0, 1)]
    for _ in range(5):
        first[0].step(first[1].current_policy())
        first[1].step(first[0].current_policy())
    for s in (0, 1):
        first[s].save(tmp_path / f"seat{s}.npz")
    resumed = [load_learner(tmp_path / f"seat{s}.npz", game) for s in (0, 1)]
    assert [r.iterations for r in resumed] == [5, 5]
    for _ in range(7):
        resumed[0].step(resumed[1].current_policy())
        resumed[1].step(resumed[0].current_policy())
    for r, s in zip(resumed, straight, strict=True):
        assert type(r) is type(s) and r.work() == s.work()
        np.testing.assert_array_equal(r.cumulative_regrets(), s.cumulative_regrets())
        np.testing.assert_array_equal(r.strategy_sum(), s.strategy_sum())
        np.testing.assert_array_equal(r.average_policy().probs, s.average_policy().probs)


def test_checkpoint_errors(tmp_path) -> None:
    learner = CFR("kuhn_poker", 0)
    learner.step(CFR("kuhn_poker", 1).current_policy())
    path = tmp_path / "cfr.npz"
    learner.save(path)
    with pytest.raises(CheckpointError, match="'cfr' checkpoint, not 'cfr_plus'"):
        CFRPlus.load(path)
    with pytest.raises(CheckpointError, match="trained on kuhn_poker, not on leduc_poker"):
        load_learner(path, "leduc_poker")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="not a readable nashzoo checkpoint"):
        load_learner(corrupt)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"definitely not a zip file")
    with pytest.raises(CheckpointError):
        CFR.load(garbage)
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        CFR.load(tmp_path / "missing.npz")


def test_checkpoint_with_wrong_arrays_is_refused(tmp_path) -> None:
    import io
    import json
    import zipfile

    learner = CFR("kuhn_poker", 0)
    path = tmp_path / "cfr.npz"
    learner.save(path)
    with zipfile.ZipFile(path) as z:
        meta = json.loads(str(np.load(io.BytesIO(z.read("__meta__.npy")))))
    buffer = io.BytesIO()
    np.savez(
        buffer,
        __meta__=np.array(json.dumps(meta)),
        regrets=np.zeros((3, 3)),
        strategy_sum=np.zeros((3, 3)),
    )
    bad = tmp_path / "bad.npz"
    bad.write_bytes(buffer.getvalue())
    with pytest.raises(CheckpointError, match=r"regrets.*shape"):
        CFR.load(bad)


def test_bad_input_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown learner 'cfr_pls'.*cfr_plus"):
        make_learner("cfr_pls", "kuhn_poker", 0)
    with pytest.raises(ValueError, match=r"command line's.*config=\{\.\.\.\}"):
        make_learner("cfr_plus(averaging_delay=2)", "kuhn_poker", 0)
    with pytest.raises(ValueError, match="averaging_delay"):
        CFRPlusConfig(averaging_delay=-1)
    with pytest.raises(ValueError, match="averaging_delay"):
        CFRPlusConfig(averaging_delay=True)  # a bool is not a count
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        DCFRConfig(alpha=True)
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        DCFRConfig(gamma=-1.0)
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        DCFRConfig(alpha=float("nan"))
    with pytest.raises(ValueError, match="player must be an integer"):
        CFR("kuhn_poker", 2)


def test_work_metrics_count_full_width_passes() -> None:
    game = load_game("leduc_poker")
    a, b = _self_play(CFR, game, 3)
    nodes = compile_tree(game).num_nodes
    assert a.work() == {"iterations": 3, "nodes_touched": 3 * nodes, "env_steps": 0}
    metrics = a.step(b.current_policy())
    assert metrics["iterations"] == 4 and metrics["nodes_touched"] == 4 * nodes
    assert "value" in metrics


def test_cfr_on_a_matrix_game() -> None:
    # The CFR family accepts any two-player game; on RPS it is regret matching in disguise.
    result = train("rps", "cfr_plus", iterations=300)
    assert result.nash_conv < 0.01
    assert nash_conv("rps", result.average_policy) == pytest.approx(result.nash_conv)
