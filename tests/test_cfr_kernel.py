"""The fused sequence-form kernels in treemath against the reference per-terminal kernels."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm

GAMES = ["rps", "kuhn_poker", "leduc_poker", "matrix(preset=prisoners_dilemma)"]


def _tree(name: str):
    if name.startswith("matrix("):
        return compile_tree(load_game("matrix", preset="prisoners_dilemma"))
    return compile_tree(load_game(name))


def _random_strategy(tree, seed: int, sparsity: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.random((tree.num_infosets, tree.num_actions)) * tree.legal_mask
    if sparsity:
        # Zero some actions (keeping one legal action per row) to exercise unreached subtrees.
        drop = (rng.random(raw.shape) < sparsity) & tree.legal_mask
        keep = np.argmax(raw, axis=1)
        drop[np.arange(raw.shape[0]), keep] = False
        raw[drop] = 0.0
    return raw / raw.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("sparsity", [0.0, 0.5])
def test_counterfactual_pass_matches_reference(name: str, sparsity: float) -> None:
    tree = _tree(name)
    strategy = _random_strategy(tree, seed=11, sparsity=sparsity)
    returns = tm.expected_returns(tree, strategy)
    for player in range(tree.num_players):
        q_ref, reach_ref = tm.counterfactual_values(tree, strategy, player)
        result = tm.counterfactual_pass(tree, strategy, player)
        np.testing.assert_allclose(result.q, q_ref, rtol=0, atol=1e-13)
        mine = tree.infoset_player == player
        np.testing.assert_allclose(
            result.plan[mine], reach_ref[mine, None] * strategy[mine], rtol=0, atol=1e-15
        )
        assert not result.plan[~mine].any()
        np.testing.assert_allclose(result.values, (strategy * q_ref).sum(axis=1), atol=1e-13)
        assert result.value == pytest.approx(returns[player], abs=1e-13)


def test_kuhn_counterfactual_values_by_hand() -> None:
    # Uniform play. Player 0 holds K in two of six deals (chance 1/6 each).
    # K, bet: opponent folds (1/2) -> +1, calls (1/2) -> +2: 1.5 a deal, q = 2/6 * 1.5 = 1/2.
    # K, pass: opponent checks (1/2) -> +1; bets (1/2) -> own fold -1 / call +2 at 1/2 each:
    #   0.5 + 0.5 * 0.5 = 0.75 a deal, q = 2/6 * 0.75 = 1/4.
    # J, bet: fold (1/2) -> +1, call (1/2) -> -2: -0.5 a deal, q = -1/6.
    tree = compile_tree(load_game("kuhn_poker"))
    uniform = tm.uniform_strategy(tree)
    result = tm.counterfactual_pass(tree, uniform, 0)
    np.testing.assert_allclose(result.q[tree.index_of("K|")], [1 / 4, 1 / 2])
    assert result.q[tree.index_of("J|"), 1] == pytest.approx(-1 / 6)
    assert result.values[tree.index_of("K|")] == pytest.approx(3 / 8)
    np.testing.assert_allclose(result.plan[tree.index_of("K|pb")], [1 / 4, 1 / 4])


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_realization_plan_constraints(name: str) -> None:
    tree = _tree(name)
    strategy = _random_strategy(tree, seed=5, sparsity=0.3)
    sf = tm.sequence_form(tree)
    for player in range(2):
        plan = tm.realization_plan(tree, strategy, player)
        flat = np.append(plan.reshape(-1), 1.0)
        rows = tree.infosets_of(player)
        # At every infoset the actions' entries sum to the entry of the sequence leading there.
        np.testing.assert_allclose(
            plan[rows].sum(axis=1), flat[sf.parent_sequence[rows]], atol=1e-15
        )
        # And the behaviour strategy of the plan is the strategy wherever the plan reaches.
        back = tm.behaviour_strategy(tree, plan, rows=rows)
        reached = plan[rows].sum(axis=1) > 0
        np.testing.assert_allclose(back[rows][reached], strategy[rows][reached], atol=1e-12)


def test_behaviour_strategy_uniform_on_unreached_rows() -> None:
    tree = _tree("kuhn_poker")
    weights = np.zeros((tree.num_infosets, tree.num_actions))
    weights[0] = [3.0, 1.0]
    probs = tm.behaviour_strategy(tree, weights)
    np.testing.assert_allclose(probs[0], [0.75, 0.25])
    np.testing.assert_allclose(probs[1:], 0.5)
    only = tm.behaviour_strategy(tree, weights, rows=np.array([1]))
    np.testing.assert_allclose(only[0], 0.5)  # row 0 not selected: uniform


def test_sequence_form_is_cached_per_tree() -> None:
    tree = _tree("leduc_poker")
    assert tm.sequence_form(tree) is tm.sequence_form(tree)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_compiled_and_numpy_paths_agree_bit_for_bit(name: str, monkeypatch) -> None:
    """The optional numba kernels sum in the numpy kernels' order: same floats, so a learner's
    trajectory (CFR+'s floor is sensitive to the last bit) does not depend on numba."""
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): one path only")
    tree = _tree(name)
    rng = np.random.default_rng(3)
    for _ in range(3):
        strategy = _random_strategy(tree, seed=int(rng.integers(1 << 30)), sparsity=0.4)
        others = _random_strategy(tree, seed=int(rng.integers(1 << 30)))
        regrets = rng.normal(size=strategy.shape) * (rng.random(strategy.shape) < 0.6)
        for player in range(2):
            compiled = tm.counterfactual_pass(tree, strategy, player, others=others)
            matched = tm.RegretMatcher(tree.legal_mask)(regrets)
            monkeypatch.setattr(_jit, "ENABLED", False)
            plain = tm.counterfactual_pass(tree, strategy, player, others=others)
            np.testing.assert_array_equal(matched, tm.RegretMatcher(tree.legal_mask)(regrets))
            monkeypatch.setattr(_jit, "ENABLED", True)
            for a, b in zip(compiled, plain, strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", [*GAMES, "liars_dice(dice_sides=3)"])
def test_terminal_spans_are_a_depth_first_walk(name: str) -> None:
    """Against a recursive walk (children by ascending action id): every node's range holds
    exactly the terminals below it, in depth-first order."""
    tree = compile_tree(load_game(name)) if name.startswith("liars") else _tree(name)
    order, first, after = tm.terminal_spans(tree)
    position = {int(node): z for z, node in enumerate(tree.terminal_nodes)}
    walked: list[int] = []
    spans = {}

    def walk(node: int) -> None:
        start = len(walked)
        if node in position:
            walked.append(position[node])
        for child in tree.children[node]:
            if child >= 0:
                walk(int(child))
        spans[node] = (start, len(walked))

    walk(0)
    assert order.tolist() == walked
    assert [(int(first[n]), int(after[n])) for n in range(tree.num_nodes)] == [
        spans[n] for n in range(tree.num_nodes)
    ]
