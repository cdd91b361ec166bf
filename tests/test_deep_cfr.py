"""Deep CFR: the vectorised traversals are unbiased, smoke runs, determinism, checkpoints,
bad input, and a fixed-seed convergence run on Kuhn."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nashzoo.agents import CheckpointError, TabularPolicy, load_learner, make_learner  # noqa: E402
from nashzoo.agents._torch_utils import TrainingDivergedError  # noqa: E402
from nashzoo.agents.deep_cfr import DeepCFR, DeepCFRConfig  # noqa: E402
from nashzoo.agents.replay_memory import InfosetMemory  # noqa: E402
from nashzoo.eval import nash_conv  # noqa: E402
from nashzoo.games import compile_tree, load_game  # noqa: E402
from nashzoo.games import treemath as tm  # noqa: E402
from nashzoo.train import train  # noqa: E402

SMALL = {
    "traversals": 200,
    "strategy_traversals": 50,
    "advantage_steps": 8,
    "strategy_steps": 8,
    "batch_size": 64,
}


def _random_strategy(tree, seed):
    raw = np.random.default_rng(seed).random((tree.num_infosets, tree.num_actions)) + 0.05
    raw = np.where(tree.legal_mask, raw, 0.0)
    return raw / raw.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("player", [0, 1])
def test_external_sampling_regrets_are_unbiased(game, player):
    """Mean sampled regret per traversal = exact counterfactual regret of the strategy."""
    tree = compile_tree(load_game(game))
    strategy = _random_strategy(tree, seed=player)
    walker = tm.SampledWalks(tree)
    k = 40_000 if game == "kuhn_poker" else 200_000
    levels = walker.walk(player, strategy, k, np.random.default_rng(11))
    isets, regrets = walker.sampled_regrets(levels, player)
    sampled = np.zeros((tree.num_infosets, tree.num_actions))
    np.add.at(sampled, isets, regrets)
    sampled /= k
    q, _ = tm.counterfactual_values(tree, strategy, player)
    exact = np.where(tree.legal_mask, q - (strategy * q).sum(axis=1, keepdims=True), 0.0)
    rows = tree.infosets_of(player)
    scale = np.abs(exact[rows]).max()
    tol = 0.03 if game == "kuhn_poker" else 0.08
    assert np.abs(sampled[rows] - exact[rows]).max() < tol * scale


def test_strategy_samples_visit_infosets_in_proportion_to_own_reach():
    tree = compile_tree(load_game("kuhn_poker"))
    strategy = _random_strategy(tree, seed=3)
    walker = tm.SampledWalks(tree)
    k = 60_000
    levels = walker.walk(1, strategy, k, np.random.default_rng(5))  # seat 0 samples
    visits = np.bincount(walker.visited_infosets(levels, 0), minlength=tree.num_infosets) / k
    _, own_reach = tm.counterfactual_values(tree, strategy, 0)
    rows = tree.infosets_of(0)
    # Every Kuhn infoset has chance weight 1/3 (own card); the opponent's moves are explored.
    np.testing.assert_allclose(visits[rows], own_reach[rows] / 3, atol=0.01)


def test_self_play_and_cross_play_through_the_trainer():
    result = train("kuhn_poker", "deep_cfr", iterations=3, config=SMALL, seed=0, progress=False)
    assert result.history[-1].iteration == 3
    assert result.history[-1].nash_conv < 1.0
    cross = train(
        "leduc_poker",
        "deep_cfr",
        "nfsp",
        iterations=2,
        config=SMALL,
        opponent_config={"episodes_per_step": 32, "lanes": 8, "min_buffer_to_learn": 16},
        seed=0,
        progress=False,
    )
    assert 0.0 < cross.history[-1].nash_conv < 10.0
    learner = DeepCFR("kuhn_poker", 1, SMALL)
    metrics = learner.step(make_learner("uniform", "kuhn_poker", 0).current_policy())
    assert metrics["nodes_touched"] > 200 and metrics["advantage_samples"] > 0
    assert learner.learns


def test_before_training_both_policies_are_uniform():
    learner = DeepCFR("leduc_poker", 0, SMALL)
    uniform = TabularPolicy.uniform("leduc_poker").probs
    for policy in (learner.current_policy(), learner.average_policy()):
        np.testing.assert_allclose(TabularPolicy.from_policy("leduc_poker", policy).probs, uniform)


def _pair(seed, config=SMALL):
    return [DeepCFR("kuhn_poker", p, config, seed=seed + p) for p in range(2)]


def _run(learners, steps):
    for _ in range(steps):
        learners[0].step(learners[1].current_policy())
        learners[1].step(learners[0].current_policy())


def _table(learners):
    return TabularPolicy.joint("kuhn_poker", [lr.average_policy() for lr in learners]).probs


# The paper's memories and OpenSpiel's one-layer networks (the defaults before the infoset
# memory and three layers): their pinned numbers are unchanged.
RESERVOIR = {**SMALL, "memory": "reservoir", "advantage_hidden": (64,), "strategy_hidden": (64,)}


@pytest.mark.parametrize(
    ("config", "sizes", "pinned"),
    [(SMALL, (6, 6), 0.73099), (RESERVOIR, (883, 174), 0.81126)],
    ids=["infoset", "reservoir"],
)
def test_first_iterations_are_pinned_and_deterministic(config, sizes, pinned):
    a, b, c = _pair(0, config), _pair(0, config), _pair(1, config)
    for learners in (a, b, c):
        _run(learners, 3)
    np.testing.assert_array_equal(_table(a), _table(b))
    assert not np.array_equal(_table(a), _table(c))
    assert (len(a[0].advantage_buffer), len(a[0].strategy_buffer)) == sizes
    assert nash_conv("kuhn_poker", _table(a)) == pytest.approx(pinned, abs=1e-4)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.integers(0, 4), min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
)
def test_infoset_memory_loss_equals_the_loss_over_every_sample(rows, seed):
    """Weighted squared error over the samples = the memory's weighted error over its rows
    (fitted to the rows' weighted means) plus a constant: same gradient for any prediction."""
    rng = np.random.default_rng(seed)
    rows = np.asarray(rows)
    targets = rng.normal(size=(rows.size, 3))
    weights = rng.integers(1, 5, size=rows.size).astype(float)
    memory = InfosetMemory(5, 3)
    for k in range(rows.size):
        memory.add(rows[k : k + 1], targets[k : k + 1], weights[k])
    prediction = rng.normal(size=(5, 3))
    grad_samples = np.zeros((5, 3))
    np.add.at(grad_samples, rows, weights[:, None] * (prediction[rows] - targets))
    picked, means, shares = memory.batch(64, rng)
    grad_memory = np.zeros((5, 3))
    grad_memory[picked] = shares[:, None] * (prediction[picked] - means)
    np.testing.assert_allclose(grad_memory, grad_samples / weights.sum(), atol=1e-12)
    assert len(memory) == np.unique(rows).size


def test_infoset_memory_draws_rows_by_weight_when_they_outnumber_the_batch():
    memory = InfosetMemory(3, 2)
    memory.add(np.array([0, 1, 1, 1]), np.ones((4, 2)), 1.0)
    picked, means, shares = memory.batch(1, np.random.default_rng(0))
    assert picked.shape == (1,) and shares.tolist() == [1.0]
    np.testing.assert_array_equal(means, np.ones((1, 2)))
    draws = np.concatenate([memory.batch(1, np.random.default_rng(s))[0] for s in range(400)])
    assert 0.65 < np.mean(draws == 1) < 0.85 and not np.any(draws == 2)


def test_save_load_resumes_exactly(tmp_path):
    learners = _pair(3)
    _run(learners, 2)
    path = tmp_path / "dcfr.npz"
    learners[1].save(path)
    restored = load_learner(path, "kuhn_poker")
    assert isinstance(restored, DeepCFR) and restored.seat == 1
    opponent = learners[0].current_policy()
    m_live, m_restored = learners[1].step(opponent), restored.step(opponent)
    assert m_live == m_restored
    np.testing.assert_array_equal(
        TabularPolicy.from_policy("kuhn_poker", learners[1].average_policy()).probs,
        TabularPolicy.from_policy("kuhn_poker", restored.average_policy()).probs,
    )


def test_save_load_resumes_exactly_with_the_reservoir(tmp_path):
    learners = _pair(3, RESERVOIR)
    _run(learners, 2)
    learners[0].save(tmp_path / "dcfr.npz")
    restored = load_learner(tmp_path / "dcfr.npz", "kuhn_poker")
    opponent = learners[1].current_policy()
    assert learners[0].step(opponent) == restored.step(opponent)


def test_checkpoint_with_negative_memory_weights_is_refused(tmp_path):
    learners = _pair(3)
    _run(learners, 1)
    arrays = learners[0]._state_arrays()
    arrays["advantage/weight"][0] = -1.0
    with pytest.raises(CheckpointError, match="advantage/weight"):
        learners[0]._load_state_arrays(arrays)


def test_checkpoint_of_another_game_is_refused(tmp_path):
    learner = DeepCFR("leduc_poker", 0, SMALL)
    learner.save(tmp_path / "leduc.npz")
    with pytest.raises(CheckpointError, match="trained on leduc_poker, not on kuhn_poker"):
        load_learner(tmp_path / "leduc.npz", "kuhn_poker")
    nfsp = make_learner("nfsp", "kuhn_poker", 0)
    nfsp.save(tmp_path / "nfsp.npz")
    with pytest.raises(CheckpointError, match="'nfsp' checkpoint, not 'deep_cfr'"):
        DeepCFR.load(tmp_path / "nfsp.npz")


def test_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path):
    learners = _pair(4)
    _run(learners, 1)
    path = tmp_path / "good.npz"
    learners[0].save(path)
    with torch.no_grad():
        learners[0].advantage_net[0].bias.fill_(float("nan"))
    with pytest.raises(TrainingDivergedError, match="advantage loss became nan at learner step 2"):
        learners[0].step(learners[1].current_policy())
    with pytest.raises(TrainingDivergedError, match="refusing to write a checkpoint"):
        learners[0].save(path)
    assert load_learner(path).iterations == 1


def test_reinitialising_advantage_networks_is_available():
    learner = DeepCFR("kuhn_poker", 0, {**SMALL, "reinitialize_advantage": True}, seed=0)
    first = [p.detach().clone() for p in learner.advantage_net.parameters()]
    learner.step(make_learner("uniform", "kuhn_poker", 1).current_policy())
    assert learner.advantage_trained
    after = list(learner.advantage_net.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(first, after, strict=True))


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="traversals"):
        DeepCFRConfig(traversals=0)
    with pytest.raises(ValueError, match="learning_rate"):
        DeepCFRConfig(learning_rate=float("nan"))
    with pytest.raises(ValueError, match="advantage_hidden"):
        DeepCFRConfig(advantage_hidden=(-3,))
    with pytest.raises(ValueError, match="memory must be 'infoset' or 'reservoir'"):
        DeepCFRConfig(memory="all")
    with pytest.raises(ValueError, match="reinitialize_advantage must be true or false"):
        DeepCFRConfig(reinitialize_advantage="no")  # was read by its truth value: on


def test_converges_on_kuhn_in_30_iterations():
    """A fixed work budget (well under a minute on this project's 2-core machine); tests never
    time anything, the speed is in benchmarks/bench_neural.py."""
    result = train("kuhn_poker", "deep_cfr", iterations=30, seed=0, progress=False)
    assert result.history[-1].nash_conv < 0.05
    assert result.history[-1].nash_conv == pytest.approx(0.0245, abs=0.01)


def _autograd_step(learner, net, optimizer, buffer, kind):
    """One update of ``net`` the textbook way (autograd), on the learner's next minibatch."""
    b = learner._batch(buffer)
    out = net(b["s"])
    if kind == "advantage":
        err = torch.where(b["mask"], out - b["target"], torch.zeros_like(out))
        per_sample = (err * err).sum(dim=1)
    else:
        logp = torch.log_softmax(out.masked_fill(~b["mask"], -1e9), dim=1)
        per_sample = -(b["target"] * logp).sum(dim=1)
    loss = (b["weight"] * per_sample).sum()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@pytest.mark.parametrize("memory", ["infoset", "reservoir"])
def test_manual_gradients_take_autograds_step(memory):
    # Deep CFR's updates compute their gradients without autograd (ManualMLP); two copies of a
    # learner, one stepped by _train and one by autograd on the same minibatch, must agree.
    import copy

    config = {**SMALL, "advantage_steps": 1, "strategy_steps": 1, "memory": memory}
    learners = _pair(0, config)
    _run(learners, 3)
    for kind in ("advantage", "strategy"):
        a = learners[0]
        b = copy.deepcopy(a)
        net_a, opt_a = getattr(a, f"{kind}_net"), getattr(a, f"{kind}_optimizer")
        net_b, opt_b = getattr(b, f"{kind}_net"), getattr(b, f"{kind}_optimizer")
        start = [p.detach().clone() for p in net_a.parameters()]
        loss_a = a._train(net_a, opt_a, getattr(a, f"{kind}_buffer"), kind)
        loss_b = _autograd_step(b, net_b, opt_b, getattr(b, f"{kind}_buffer"), kind)
        assert loss_a == pytest.approx(loss_b, rel=1e-5)
        after = [p.detach() for p in net_a.parameters()]
        moved = max(float((p - s).abs().max()) for p, s in zip(after, start, strict=True))
        assert moved > 1e-5  # a real step was taken
        for pa, pb in zip(net_a.parameters(), net_b.parameters(), strict=True):
            torch.testing.assert_close(pa, pb, rtol=1e-4, atol=1e-6)
