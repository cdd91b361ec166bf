"""Outcome- and external-sampling MCCFR: unbiased sampled regrets, the averaging schemes, work
metering, convergence in self-play, cross-play, checkpoints and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.agents import (
    ESMCCFRConfig,
    ExternalSamplingMCCFR,
    OSMCCFRConfig,
    OutcomeSamplingMCCFR,
    TabularPolicy,
    learner_names,
    load_learner,
    make_learner,
    mccfr_sampling,
)
from nashzoo.agents.mccfr_sampling import CountSampler
from nashzoo.agents.policy import check_distributions
from nashzoo.eval import nash_conv
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm
from nashzoo.train import train

LEARNERS = [OutcomeSamplingMCCFR, ExternalSamplingMCCFR]
# NashConv after train("kuhn_poker", name, iterations=300, seed=0) with the default configs
# (exact averaging, linear weighting; ES_UNIFORM_PIN: weighting="uniform", the paper's equal
# weights; OS_SAMPLED_PIN: the earlier defaults, 4096 walks per step, stochastically-weighted
# averaging and equal weights).
OS_PIN = 0.0009136713704133714
ES_PIN = 0.002353495971791464
ES_UNIFORM_PIN = 0.00797547733693809
OS_SAMPLED_PIN = 0.005487242388360063


@pytest.fixture(params=["scenarios", "levels"])
def es_sampler(request, monkeypatch) -> str:
    """Run external sampling with either exact sampler: one multinomial over the walk outcomes
    (the default on small trees) or one multinomial per sampled depth (forced here)."""
    if request.param == "levels":
        monkeypatch.setattr(mccfr_sampling, "MAX_SCENARIOS", 0)
    return request.param


def _random_profile(tree, rng: np.random.Generator, seat: int) -> tuple[np.ndarray, np.ndarray]:
    """Random regrets for ``seat`` and a random fully mixed opponent strategy."""
    regrets = np.where(tree.legal_mask, rng.normal(size=tree.legal_mask.shape), 0.0)
    regrets[tree.infoset_player != seat] = 0.0
    opponent = tm.regret_matching(rng.uniform(0.1, 1.0, size=regrets.shape), tree.legal_mask)
    return regrets, opponent


def _one_big_step(cls, game_name: str, seat: int, batch: int, seed: int, **config):
    """One step of ``batch`` walks from random regrets; returns (learner, joint, before).

    Both run with uniform weights here, so that the tables hold the raw sampled sums (linear
    weighting only rescales them; tested separately)."""
    game = load_game(game_name)
    tree = compile_tree(game)
    regrets, opponent = _random_profile(tree, np.random.default_rng(seed), seat)
    config = {"weighting": "uniform", **config}
    learner = cls(game, seat, {"trajectories_per_step": batch, **config}, seed=seed)
    learner._load_state_arrays({"regrets": regrets, "average": np.zeros_like(regrets)})
    sigma = tm.regret_matching(regrets, tree.legal_mask)
    mine = (tree.infoset_player == seat)[:, None]
    joint = np.where(mine, sigma, opponent)
    metrics = learner.step(TabularPolicy(game, opponent))
    return learner, tree, joint, regrets, metrics


def _exact_regret(tree, joint: np.ndarray, seat: int) -> np.ndarray:
    q, _ = tm.counterfactual_values(tree, joint, seat)
    regret = (q - (q * joint).sum(axis=1, keepdims=True)) * tree.legal_mask
    return np.where((tree.infoset_player == seat)[:, None], regret, 0.0)


def _self_play(name: str, game: str, iterations: int, seed: int = 0, **config):
    a = make_learner(name, game, 0, config, seed=seed)
    b = make_learner(name, game, 1, config, seed=seed + 1)
    for _ in range(iterations):
        a.step(b.current_policy())
        b.step(a.current_policy())
    return a, b


# --- registry and interface ----------------------------------------------------------------------
def test_both_learners_are_registered_with_documented_defaults() -> None:
    assert {"os_mccfr", "es_mccfr"} <= set(learner_names())
    assert isinstance(make_learner("os_mccfr", "kuhn_poker", 0), OutcomeSamplingMCCFR)
    assert isinstance(make_learner("es_mccfr", "kuhn_poker", 1), ExternalSamplingMCCFR)
    assert OSMCCFRConfig() == OSMCCFRConfig(0.6, 2**20, "exact", "linear")
    # numpy numbers are numbers (a float32 from a sweep's array included)
    assert OSMCCFRConfig(exploration=np.float32(0.5)).exploration == 0.5
    assert ESMCCFRConfig() == ESMCCFRConfig(1024, "exact", "linear")
    assert OutcomeSamplingMCCFR.opponent_view == ExternalSamplingMCCFR.opponent_view == "current"


def test_a_tiny_exploration_gives_no_nan_and_a_huge_batch_is_refused() -> None:
    """exploration=1e-170: sampling probabilities of Leduc's longer paths underflow to 0.
    Those terminals are never drawn, so their weight is 0 (it was 0 / 0: NaN regrets, then a
    checkpoint the loader refused as corrupt)."""
    learner = make_learner("os_mccfr", "leduc_poker", 0, {"exploration": 1e-170}, seed=0)
    other = make_learner("os_mccfr", "leduc_poker", 1, seed=1)
    with np.errstate(invalid="raise"):  # no 0 / 0 on the way
        for _ in range(3):
            learner.step(other.current_policy())
    assert all(np.isfinite(a).all() for a in learner._state_arrays().values())
    for bad in (2**63, 2**70):
        with pytest.raises(ValueError, match=r"trajectories_per_step must be .* to 2\*\*62"):
            OSMCCFRConfig(trajectories_per_step=bad)
    make_learner("os_mccfr", "kuhn_poker", 0, {"trajectories_per_step": 2**62}).step(
        make_learner("uniform", "kuhn_poker", 1).current_policy()
    )


@pytest.mark.parametrize("cls", LEARNERS)
def test_current_policy_is_regret_matching_on_own_rows_uniform_elsewhere(cls) -> None:
    learner, tree, _, _, _ = _one_big_step(cls, "kuhn_poker", 1, 64, seed=3)
    mine = tree.infoset_player == 1
    current = learner.current_policy()
    assert current is learner.current_policy()  # cached until the next step
    regrets = learner._state_arrays()["regrets"]
    expected = tm.regret_matching(regrets, tree.legal_mask)
    np.testing.assert_allclose(current.probs[mine], expected[mine])
    np.testing.assert_allclose(current.probs[~mine], tm.uniform_strategy(tree)[~mine])
    average = learner.average_policy()
    check_distributions(tree, average.probs)
    np.testing.assert_allclose(average.probs[~mine], tm.uniform_strategy(tree)[~mine])


# --- the sampled regrets are unbiased -----------------------------------------------------------
@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("seat", [0, 1])
def test_kuhn_sampled_regrets_average_to_the_exact_counterfactual_regrets(
    cls, seat, es_sampler
) -> None:
    if cls is OutcomeSamplingMCCFR and es_sampler == "levels":
        pytest.skip("outcome sampling has one sampler")
    batch = 10_000_000
    learner, tree, joint, before, _ = _one_big_step(cls, "kuhn_poker", seat, batch, seed=7)
    estimate = (learner._state_arrays()["regrets"] - before) / batch
    exact = _exact_regret(tree, joint, seat)
    assert np.abs(exact).max() > 0.1  # a non-trivial profile
    np.testing.assert_allclose(estimate, exact, atol=0.004)


@pytest.mark.parametrize("cls", LEARNERS)
def test_leduc_sampled_regrets_average_to_the_exact_counterfactual_regrets(cls) -> None:
    # A step costs the same whatever the batch, so 10^8 walks are cheap; the error shrinks
    # like 1/sqrt(batch) (max error at 10^8: 0.0025 for OS, 0.0003 for ES; max |regret| 0.40).
    batch = 100_000_000
    learner, tree, joint, before, _ = _one_big_step(cls, "leduc_poker", 0, batch, seed=11)
    estimate = (learner._state_arrays()["regrets"] - before) / batch
    exact = _exact_regret(tree, joint, 0)
    assert np.abs(exact).max() > 0.3
    np.testing.assert_allclose(estimate, exact, atol=0.01)


# --- averaging schemes ---------------------------------------------------------------------------
def _own_reach(tree, joint: np.ndarray, seat: int) -> np.ndarray:
    return tm.counterfactual_values(tree, joint, seat)[1]


def _node_chance_reach(tree) -> np.ndarray:
    reach = np.ones(tree.num_nodes)
    for n in range(1, tree.num_nodes):  # parents come first
        reach[n] = reach[tree.parent[n]] * tree.chance_prob[n]
    return reach


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_os_stochastic_average_is_unbiased_for_reach_times_history_count(game) -> None:
    """E[increment of I] = |I| * pi_i(I) * sigma(I) per walk, against a fully mixed opponent."""
    batch = 100_000_000
    learner, tree, joint, _, _ = _one_big_step(
        OutcomeSamplingMCCFR, game, 0, batch, 5, averaging="stochastic"
    )
    mine = tree.infoset_player == 0
    histories = np.bincount(tree.infoset[tree.infoset >= 0], minlength=tree.num_infosets)
    expected = (histories * _own_reach(tree, joint, 0))[:, None] * joint
    average = learner._state_arrays()["average"] / batch
    # max |error| at this seed: Kuhn 0.0004 (of 2.0), Leduc 0.016 (of 5.0)
    np.testing.assert_allclose(average[mine], expected[mine], atol=0.01 * expected.max())
    assert not average[~mine].any()


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_es_simple_average_visits_own_infosets_at_reach_times_chance_mass(game, es_sampler) -> None:
    """E[visits of I] = pi_i(I) * sum_{h in I} pi_c(h) per walk."""
    batch = 100_000_000
    learner, tree, joint, _, _ = _one_big_step(
        ExternalSamplingMCCFR, game, 1, batch, 5, averaging="simple"
    )
    mine = tree.infoset_player == 1
    decision = tree.infoset >= 0
    chance_mass = np.bincount(
        tree.infoset[decision],
        weights=_node_chance_reach(tree)[decision],
        minlength=tree.num_infosets,
    )
    expected = (chance_mass * _own_reach(tree, joint, 1))[:, None] * joint
    average = learner._state_arrays()["average"] / batch
    # max |error| at this seed: 7e-5 (of 0.33 on Kuhn, of 0.17 on Leduc)
    np.testing.assert_allclose(average[mine], expected[mine], atol=5e-4)
    assert not average[~mine].any()


@pytest.mark.parametrize("cls", LEARNERS)
def test_exact_averaging_adds_the_realization_plan(cls) -> None:
    learner, tree, joint, _, _ = _one_big_step(cls, "leduc_poker", 1, 8, 2, averaging="exact")
    np.testing.assert_allclose(
        learner._state_arrays()["average"], tm.realization_plan(tree, joint, 1), atol=1e-15
    )


def test_es_samplers_are_chosen_by_the_number_of_walk_outcomes() -> None:
    kuhn = make_learner("es_mccfr", "kuhn_poker", 0)._tables
    leduc = make_learner("es_mccfr", "leduc_poker", 0)._tables
    # Kuhn, seat 0: 6 deals x (2 x 2 replies of seat 1) = 24 regret-pass outcomes; average pass:
    # 6 deals x (bet, or check then (seat 1 checks, or bets and seat 0 answers 2 ways)) = 18.
    assert kuhn.regret_pass.reach.shape[0] == 24
    assert kuhn.average_pass.reach.shape[0] == 18
    assert isinstance(leduc.regret_pass, CountSampler)
    assert isinstance(leduc.average_pass, CountSampler)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_linear_weighting_gives_step_t_the_weight_t(game, name) -> None:
    """With exact averaging the increment of step t is the realization plan of its sigma, so
    the average must be sum_t t * plan(sigma_t) / (T + 1)."""
    tree = compile_tree(load_game(game))
    config = {"trajectories_per_step": 8, "averaging": "exact"}
    a = make_learner(name, game, 0, config, seed=1)
    b = make_learner(name, game, 1, config, seed=2)
    expected = np.zeros((tree.num_infosets, tree.num_actions))
    steps = 6
    for t in range(1, steps + 1):
        sigma = a.current_policy().probs
        expected += t * tm.realization_plan(tree, sigma, 0)
        a.step(b.current_policy())
        b.step(a.current_policy())
    np.testing.assert_allclose(a._state_arrays()["average"], expected / (steps + 1), atol=1e-12)


@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_linear_weighting_only_rescales_the_first_step(name) -> None:
    """Step 1 samples the same walks under both weightings; linear then halves the tables."""
    uniform = _self_play(name, "kuhn_poker", 1, seed=3, weighting="uniform")[0]
    linear = _self_play(name, "kuhn_poker", 1, seed=3)[0]
    for key, value in uniform._state_arrays().items():
        np.testing.assert_array_equal(linear._state_arrays()[key], value / 2)
    assert linear.work() == uniform.work()


# --- work metering -------------------------------------------------------------------------------
def test_os_nodes_touched_is_the_length_of_the_sampled_trajectories() -> None:
    batch = 200_000
    _, tree, joint, _, metrics = _one_big_step(OutcomeSamplingMCCFR, "kuhn_poker", 0, batch, 9)
    exploring = np.where((tree.infoset_player == 0)[:, None], 0.4 * joint + 0.6 * 0.5, joint)
    sampled = tree.terminal_chance_reach * tm.terminal_reach(tree, exploring).prod(axis=0)
    expected = batch * float(sampled @ (tree.depth[tree.terminal_nodes] + 1))
    assert metrics["nodes_touched"] == pytest.approx(expected, rel=0.01)
    lengths = tree.depth[tree.terminal_nodes] + 1
    assert batch * lengths.min() <= metrics["nodes_touched"] <= batch * lengths.max()


def test_es_nodes_touched_counts_both_passes(es_sampler) -> None:
    """Per walk, the regret pass visits node n with probability pi_-i(n) pi_c(n) and the
    average pass with pi_i(n) pi_c(n)."""
    batch = 200_000
    _, tree, joint, _, metrics = _one_big_step(
        ExternalSamplingMCCFR, "kuhn_poker", 0, batch, 9, averaging="simple"
    )
    reach = np.ones((2, tree.num_nodes))  # own, others (incl. chance) reach of every node
    for n in range(1, tree.num_nodes):
        p = tree.parent[n]
        reach[:, n] = reach[:, p]
        who = tree.player[p]
        prob = tree.chance_prob[n] if who < 0 else joint[tree.infoset[p], tree.action[n]]
        reach[0 if who == 0 else 1, n] *= prob
    chance = _node_chance_reach(tree)
    expected = batch * (reach[1].sum() + (reach[0] * chance).sum())
    assert metrics["nodes_touched"] == pytest.approx(expected, rel=0.01)


# --- convergence ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kuhn_self_play_reaches_nash_conv_below_0_05(name, seed) -> None:
    result = train("kuhn_poker", name, iterations=300, seed=seed)
    assert result.nash_conv < 0.05
    assert abs(result.final.values[0] + 1 / 18) < 0.02  # the game value


def _numpy_draws_as_when_pinned() -> bool:
    """Whether this numpy draws what the pins' numpy (2.4) drew. NumPy keeps a Generator's
    stream only within one release (its random compatibility policy, NEP 19): 2.5 changed some
    large binomial draws, which multinomial sampling is made of, and 4,096 walks per step meet
    one by iteration 275. A sum of 2,000 such draws tells the two streams apart."""
    draws = np.random.default_rng(0).binomial(4096, 0.03, size=2000)
    return int(draws.sum()) == 245485


PINNED_RUNS = {
    "os": ("os_mccfr", None, OS_PIN),
    "es": ("es_mccfr", None, ES_PIN),
    "es_uniform": ("es_mccfr", {"weighting": "uniform"}, ES_UNIFORM_PIN),
    "os_sampled": (
        "os_mccfr",
        {"trajectories_per_step": 4096, "averaging": "stochastic", "weighting": "uniform"},
        OS_SAMPLED_PIN,
    ),
}


@pytest.mark.parametrize("run", list(PINNED_RUNS))
def test_kuhn_self_play_pinned_values(run) -> None:
    """Seeded runs are reproducible to the last bit on one platform and numpy stream (pins
    regressions); on another numpy stream, run to run, and at the pin's level."""
    name, config, pin = PINNED_RUNS[run]
    value = train("kuhn_poker", name, iterations=300, seed=0, config=config).nash_conv
    if _numpy_draws_as_when_pinned():
        assert value == pytest.approx(pin, rel=1e-9)
    else:
        again = train("kuhn_poker", name, iterations=300, seed=0, config=config).nash_conv
        assert value == again
        assert pin / 3 < value < 3 * pin


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("os_mccfr", {"averaging": "stochastic", "weighting": "uniform"}),  # the paper's
        ("es_mccfr", {"averaging": "simple", "weighting": "uniform"}),  # the paper's
        ("os_mccfr", {}),
        ("es_mccfr", {}),
    ],
)
def test_kuhn_one_walk_per_step_is_the_papers_algorithm_and_converges(name, config) -> None:
    a, b = _self_play(name, "kuhn_poker", 3000, seed=4, trajectories_per_step=1, **config)
    value = nash_conv("kuhn_poker", [a.average_policy(), b.average_policy()])
    assert value < 0.1
    assert a.work()["nodes_touched"] > 0


@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_rps_converges_to_uniform(name) -> None:
    result = train("rps", name, iterations=200, seed=0)
    assert result.nash_conv < 0.03
    np.testing.assert_allclose(result.average_policy.probs, 1 / 3, atol=0.03)


@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_leduc_smoke(name) -> None:
    result = train("leduc_poker", name, iterations=30, seed=0)
    check_distributions(compile_tree(load_game("leduc_poker")), result.average_policy.probs)
    assert result.nash_conv < 2.0  # uniform play: 4.747222
    work = result.final.work
    assert all(w["iterations"] == 30 and w["nodes_touched"] > 0 for w in work)


# --- cross-play ----------------------------------------------------------------------------------
def test_cross_play_os_against_es() -> None:
    result = train("kuhn_poker", "os_mccfr", "es_mccfr", iterations=300, seed=1)
    assert result.nash_conv < 0.05


@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_cross_play_against_cfr_plus(name) -> None:
    result = train("kuhn_poker", "cfr_plus", name, iterations=300, seed=2)
    assert result.nash_conv < 0.05


@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_learns_a_best_response_to_a_fixed_uniform_opponent(name) -> None:
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    result = train(game, name, "uniform", iterations=300, seed=0)
    uniform = tm.uniform_strategy(tree)
    best, _ = tm.best_response(tree, uniform, 0)
    achieved = tm.expected_returns(tree, result.average_policy.probs)[0]
    assert best - achieved < 0.01, (best, achieved)


# --- checkpoints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
@pytest.mark.parametrize("averaging", ["default", "sampled"])
def test_save_load_resumes_bit_identically(tmp_path, game, name, averaging) -> None:
    config = {"trajectories_per_step": 16}
    if averaging == "sampled":
        config["averaging"] = "stochastic" if name == "os_mccfr" else "simple"
    straight = _self_play(name, game, 12, seed=5, **config)
    first = _self_play(name, game, 7, seed=5, **config)
    for seat, learner in enumerate(first):
        learner.save(tmp_path / f"seat{seat}.npz")
    resumed = tuple(load_learner(tmp_path / f"seat{seat}.npz") for seat in range(2))
    assert all(type(r) is type(s) for r, s in zip(resumed, straight, strict=True))
    a, b = resumed
    for _ in range(5):
        a.step(b.current_policy())
        b.step(a.current_policy())
    for r, s in zip(resumed, straight, strict=True):
        for key, value in s._state_arrays().items():
            np.testing.assert_array_equal(r._state_arrays()[key], value)
        assert r.work() == s.work()
        assert r.rng.bit_generator.state == s.rng.bit_generator.state
        assert r.config == s.config


def test_numpy_scalars_in_the_config_are_stored_as_plain_numbers(tmp_path) -> None:
    config = {"trajectories_per_step": np.int64(8), "exploration": np.float64(0.5)}
    learner = make_learner("os_mccfr", "kuhn_poker", 0, config)
    assert type(learner.config.trajectories_per_step) is int
    assert type(learner.config.exploration) is float
    learner.save(tmp_path / "numpy.npz")  # the config goes into JSON metadata
    assert load_learner(tmp_path / "numpy.npz").config == learner.config


def test_a_checkpoint_with_the_wrong_table_shape_is_refused(tmp_path) -> None:
    learner = make_learner("es_mccfr", "kuhn_poker", 0)
    learner.save(tmp_path / "kuhn.npz")
    with np.load(tmp_path / "kuhn.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["regrets"] = np.zeros((3, 3))
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="array 'regrets' has shape"):
        load_learner(tmp_path / "bad.npz")


def test_a_checkpoint_with_values_on_the_opponents_rows_is_refused(tmp_path) -> None:
    learner = make_learner("os_mccfr", "kuhn_poker", 0)
    learner.save(tmp_path / "kuhn.npz")
    with np.load(tmp_path / "kuhn.npz") as data:
        arrays = {k: data[k] for k in data.files}
    seat1_row = int(np.flatnonzero(compile_tree(load_game("kuhn_poker")).infoset_player == 1)[0])
    arrays["average"][seat1_row, 0] = 1.0
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="another seat's information sets"):
        load_learner(tmp_path / "bad.npz")


# --- determinism and bad input -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["os_mccfr", "es_mccfr"])
def test_same_seed_same_run_other_seed_other_run(name) -> None:
    one = _self_play(name, "kuhn_poker", 5, seed=0, trajectories_per_step=4)
    two = _self_play(name, "kuhn_poker", 5, seed=0, trajectories_per_step=4)
    three = _self_play(name, "kuhn_poker", 5, seed=1, trajectories_per_step=4)
    regrets = [run[0]._state_arrays()["regrets"] for run in (one, two, three)]
    np.testing.assert_array_equal(regrets[0], regrets[1])
    assert not np.array_equal(regrets[0], regrets[2])


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("os_mccfr", {"exploration": 0.0}, r"exploration must be a number in \(0, 1\]"),
        ("os_mccfr", {"exploration": 1.5}, "exploration must be"),
        ("os_mccfr", {"exploration": True}, "exploration must be"),
        ("os_mccfr", {"exploration": "0.6"}, "exploration must be"),
        (
            "os_mccfr",
            {"trajectories_per_step": 0},
            "trajectories_per_step must be an integer from 1",
        ),
        (
            "es_mccfr",
            {"trajectories_per_step": 2.5},
            "trajectories_per_step must be an integer from 1",
        ),
        (
            "es_mccfr",
            {"trajectories_per_step": True},
            "trajectories_per_step must be an integer from 1",
        ),
        ("os_mccfr", {"averaging": "simple"}, r"averaging must be one of \['stochastic'"),
        ("es_mccfr", {"averaging": "optimistic"}, r"averaging must be one of \['simple'"),
        ("es_mccfr", {"weighting": "dcfr"}, "weighting must be 'linear'"),
        ("os_mccfr", {"weighting": "uniform "}, "os_mccfr: weighting must be 'linear'"),
        ("es_mccfr", {"exploration": 0.6}, "unknown es_mccfr config fields"),
    ],
)
def test_bad_config_is_refused_with_a_clear_message(name, config, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_learner(name, "kuhn_poker", 0, config)


def test_three_player_games_are_refused() -> None:
    with pytest.raises(ValueError, match="two-player"):
        OutcomeSamplingMCCFR.check_game(_ThreePlayers())


class _ThreePlayers:
    num_players = 3
    id = display_id = "three"


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])  # scenario and count samplers
def test_the_largest_batch_counts_its_work_past_64_bits(game):
    """At 2**60 walks a step touches more than 2**63 nodes: the int64 count wrapped to a
    negative number and the step was refused as if the learner had miscounted."""
    from nashzoo.train import train

    result = train(game, "es_mccfr", iterations=1, config={"trajectories_per_step": 2**62})
    touched = result.history[-1].work[0]["nodes_touched"]
    assert isinstance(touched, int) and touched > 2**64  # every walk touches 4+ nodes
    assert result.exploitability < 2.5
