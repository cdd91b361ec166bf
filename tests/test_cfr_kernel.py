"""The fused sequence-form kernels in treemath against the reference per-terminal kernels."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.games import clear_caches, compile_tree, load_game
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


@pytest.mark.parametrize(
    "name", ["kuhn_poker", "leduc_poker", "liars_dice(numdice=1,dice_sides=3)"]
)
def test_compiled_kernels_index_is_the_numpy_depths_in_order(name: str) -> None:
    """The compiled kernels' single loop reads each player's sequences, parents and depth
    offsets built straight from the tree; they must be the numpy path's per-depth arrays
    concatenated, or the two paths would walk different orders."""
    tree = compile_tree(load_game(name))
    sf = tm.sequence_form(tree)
    for player in range(2):
        sequences, parents, offsets, infosets, infoset_offsets = sf._ordered(player)
        depths = sf.depths[player]
        np.testing.assert_array_equal(sequences, np.concatenate([d.sequences for d in depths]))
        np.testing.assert_array_equal(parents, np.concatenate([d.parents for d in depths]))
        np.testing.assert_array_equal(offsets, np.cumsum([0] + [d.sequences.size for d in depths]))
        rows = [d.grid[:, 0] // tree.num_actions for d in depths]
        np.testing.assert_array_equal(infosets, np.concatenate(rows))
        np.testing.assert_array_equal(infoset_offsets, np.cumsum([0] + [r.size for r in rows]))


def test_a_compiled_learner_keeps_only_the_compiled_index() -> None:
    """On the compiled path a learner holds the packed index, not the numpy passes' per-depth
    arrays and terminal weights (on Liar's dice about a quarter of what is held)."""
    from nashzoo.agents import make_learner
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): the numpy path builds them")
    game = load_game("leduc_poker")
    clear_caches()  # a tree of its own: earlier tests built the shared one's numpy parts
    learner = make_learner("cfr_plus", game, 0)
    tree = compile_tree(game)
    learner.step(learner.current_policy())
    sf = tm.sequence_form(tree)
    assert "depths" not in sf.__dict__ and "terminal_weight" not in sf.__dict__
    tm.nash_conv(tree, tm.uniform_strategy(tree))  # the evaluator's packed index: still none
    assert "depths" not in sf.__dict__ and "terminal_weight" not in sf.__dict__


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


# Every way an iteration can fold in: CFR, CFR+ (floor, linear weight, a delayed zero weight),
# DCFR (both discounts and the average's decay) and a floor with a positive discount.
FOLDS = [
    tm.IterationWeights(),
    tm.IterationWeights(floor=True, weight=3.0),
    tm.IterationWeights(floor=True, weight=0.0),
    tm.IterationWeights(positive=0.9, negative=0.5, decay=0.8),
    tm.IterationWeights(positive=0.7, floor=True, weight=2.0, decay=0.9),
]


def _run_steps(tree, monkeypatch, compiled: bool) -> list[np.ndarray]:
    """Three steps of each fold on both seats from random tables, every array they touch."""
    from nashzoo.games.treemath import _jit

    monkeypatch.setattr(_jit, "ENABLED", compiled)
    rng = np.random.default_rng(5)
    seen = []
    for player in range(2):
        step = tm.FullWidthStep(tree, player)
        own = tree.legal_mask & (tree.infoset_player == player)[:, None]
        regrets = rng.normal(size=own.shape) * own
        strategy_sum = rng.random(own.shape) * own
        current = tm.regret_matching(regrets, tree.legal_mask)
        for weights in FOLDS:
            for _ in range(3):
                others = _random_strategy(tree, seed=int(rng.integers(1 << 30)), sparsity=0.3)
                current, value = step(regrets, strategy_sum, current, others, weights)
                seen += [regrets.copy(), strategy_sum.copy(), current, np.array(value)]
    return seen


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_full_width_step_compiled_and_numpy_agree_bit_for_bit(name: str, monkeypatch) -> None:
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): one path only")
    tree = _tree(name)
    compiled = _run_steps(tree, monkeypatch, True)
    plain = _run_steps(tree, monkeypatch, False)
    for a, b in zip(compiled, plain, strict=True):
        np.testing.assert_array_equal(a, b)


def test_full_width_step_folds_as_documented() -> None:
    """One step against the reference pass: R <- max(R + q - v, 0) * positive on the seat's
    legal cells, S <- (S + weight * plan) * decay, and the next strategy regret-matches R."""
    tree = _tree("kuhn_poker")
    rng = np.random.default_rng(2)
    own = tree.legal_mask & (tree.infoset_player == 0)[:, None]
    regrets, strategy_sum = rng.normal(size=own.shape) * own, rng.random(own.shape) * own
    current, others = _random_strategy(tree, seed=1), _random_strategy(tree, seed=2)
    reference = tm.counterfactual_pass(tree, current, 0, others=others)
    expect_r = np.maximum(regrets + (reference.q - reference.values[:, None]) * own, 0.0) * 0.5
    expect_s = (strategy_sum + 4.0 * reference.plan) * 0.25
    weights = tm.IterationWeights(positive=0.5, negative=0.5, floor=True, weight=4.0, decay=0.25)
    nxt, value = tm.FullWidthStep(tree, 0)(regrets, strategy_sum, current, others, weights)
    np.testing.assert_allclose(regrets, expect_r, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(strategy_sum, expect_s, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(nxt, tm.regret_matching(regrets, tree.legal_mask))
    assert value == pytest.approx(reference.value, abs=1e-15)
    assert nxt is not current and not regrets[~own].any()


def _address(table: np.ndarray) -> int:
    return table.__array_interface__["data"][0]


def _learner_steps(
    tree, steps: int, keep: list | None = None
) -> tuple[list[np.ndarray], list[int]]:
    """A seat's steps as a learner makes them (its current table passed back in and then
    dropped); ``keep`` holds on to every table handed out, as a user keeping policies would.
    Returns a copy of each table handed out and the address of its memory."""
    step = tm.FullWidthStep(tree, 0)
    own = tree.legal_mask & (tree.infoset_player == 0)[:, None]
    regrets, strategy_sum = np.zeros(own.shape), np.zeros(own.shape)
    current = tm.regret_matching(regrets, tree.legal_mask)
    others = _random_strategy(tree, seed=3)
    copies, addresses = [], []
    weights = tm.IterationWeights(floor=True, weight=2.0)
    for _ in range(steps):
        current, _value = step(regrets, strategy_sum, current, others, weights)
        if keep is not None:
            keep.append(current)
        copies.append(current.copy())
        addresses.append(_address(current))
    return copies, addresses


def test_full_width_step_reuses_only_tables_nobody_holds() -> None:
    """The table of two steps ago is written over only when nothing else refers to it: a
    learner that drops its old tables gets their memory back, a caller that keeps them (a user
    holding policies) finds them unchanged; the numbers are the same either way."""
    from nashzoo.games.treemath import _jit

    tree = _tree("leduc_poker")
    dropped, dropped_at = _learner_steps(tree, 6)
    kept: list[np.ndarray] = []
    held, held_at = _learner_steps(tree, 6, keep=kept)
    for a, b in zip(dropped, held, strict=True):
        np.testing.assert_array_equal(a, b)
    for table, copy in zip(kept, held, strict=True):  # nothing a caller holds was written
        np.testing.assert_array_equal(table, copy)
    assert len(set(held_at)) == len(held_at)
    if _jit.ENABLED:  # the numpy path builds each table by regret matching, without reuse
        assert dropped_at[2] == dropped_at[0] and dropped_at[3] == dropped_at[1]


def test_full_width_step_does_not_reuse_a_table_held_as_a_policy_or_view() -> None:
    from nashzoo.agents.policy import TabularPolicy

    tree = _tree("leduc_poker")
    game = load_game("leduc_poker")
    step = tm.FullWidthStep(tree, 0)
    own = tree.legal_mask & (tree.infoset_player == 0)[:, None]
    regrets = np.random.default_rng(6).normal(size=own.shape) * own
    strategy_sum = np.zeros(own.shape)
    current = tm.regret_matching(regrets, tree.legal_mask)
    policy = view = None
    for seed in range(6):  # a new opponent each step, so every table differs from the last
        others = _random_strategy(tree, seed=seed)
        current, _ = step(regrets, strategy_sum, current, others, tm.IterationWeights())
        if seed == 0:  # the table of step 0, held only through a policy
            policy, policy_copy = TabularPolicy.adopt(game, tree, current), current.copy()
        elif seed == 1:  # the table of step 1, held only through a view
            view = current[1:]
            view_copy = view.copy()
    np.testing.assert_array_equal(policy.probs, policy_copy)
    np.testing.assert_array_equal(view, view_copy)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=3)"])
def test_nash_conv_compiled_and_numpy_agree_bit_for_bit(name: str, monkeypatch) -> None:
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): one path only")
    tree = _tree(name)
    for seed, sparsity in ((1, 0.0), (2, 0.5), (3, 0.9)):
        strategy = _random_strategy(tree, seed=seed, sparsity=sparsity)
        compiled = tm.nash_conv(tree, strategy)
        monkeypatch.setattr(_jit, "ENABLED", False)
        plain = tm.nash_conv(tree, strategy)
        monkeypatch.setattr(_jit, "ENABLED", True)
        assert compiled[0] == plain[0]
        np.testing.assert_array_equal(compiled[1], plain[1])
        np.testing.assert_array_equal(compiled[2], plain[2])
        assert tm.nash_conv_value(tree, strategy) == plain[0]


def test_per_tree_entries_go_with_their_tree() -> None:
    import gc

    from nashzoo.games.tree import walk_states
    from nashzoo.games.treemath import _cache

    tree = walk_states(load_game("kuhn_poker"))  # a private tree, not the cached one
    first = tm.sequence_form(tree)
    assert tm.sequence_form(tree) is first and id(tree) in _cache._CACHE
    key = id(tree)
    del tree, first
    gc.collect()
    assert key not in _cache._CACHE


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_on_policy_values_are_a_cfr_steps_values(name: str) -> None:
    """NashConv's on-policy value of a player is backed up along its own strategy, in a fixed
    order: the very float a CFR step reports as its value and expected_returns gives (and no
    BLAS sum, whose order depends on the library and its threads)."""
    tree = _tree(name)
    strategy = _random_strategy(tree, seed=4, sparsity=0.3)
    _, _, on_policy = tm.nash_conv(tree, strategy)
    np.testing.assert_array_equal(tm.expected_returns(tree, strategy), on_policy)
    for player in range(2):
        assert on_policy[player] == tm.counterfactual_pass(tree, strategy, player).value


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


def test_pack_is_int32_when_everything_fits_and_int64_otherwise():
    """The kernels' packed index halves its memory with int32, but never truncates: one value
    past int32's range makes the whole index int64. Either way every array reads back."""
    from nashzoo.games.treemath import _jit

    small = (np.array([3, -1, 7]), np.arange(5, dtype=np.int32), np.zeros(0, dtype=np.int64))
    large = (np.array([1, 2**31]), np.array([-(2**31) - 5]))
    for arrays, dtype in ((small, np.int32), (large, np.int64)):
        packed = _jit.pack(*arrays)
        assert packed.dtype == dtype
        for k, array in enumerate(arrays):
            np.testing.assert_array_equal(packed[packed[k] : packed[k + 1]], array)


def test_sample_cdf_never_draws_a_column_of_probability_zero():
    """The one inverse-CDF sampler: a uniform whose product with the total rounds up to the
    total (here 1.0 itself, the limit) draws the last column with probability, not a trailing
    zero; a leading zero column is skipped even at uniform 0; rows need not sum to one."""
    from nashzoo.games.treemath import sample_cdf

    cdf = np.cumsum([[0.3, 0.7, 0.0], [0.0, 0.5, 0.5], [0.6, 0.0, 0.0], [2.0, 2.0, 0.0]], axis=1)
    assert sample_cdf(cdf, np.array([1.0, 0.0, 1.0, 0.5])).tolist() == [1, 1, 0, 1]
    assert sample_cdf(cdf, np.array([0.29, 0.49, 0.0, 0.49])).tolist() == [0, 1, 0, 0]


def test_setting_up_a_learner_pays_numbas_one_time_load():
    """numba's first compiled call in a process costs about 0.3 s; a learner's setup pays it,
    so no learner's first timed step (a race's clock) is charged for it."""
    from nashzoo.agents import make_learner
    from nashzoo.games.treemath import _jit

    make_learner("xfp", "kuhn_poker", 0)  # a learner whose own steps use no compiled kernel
    assert _jit._WARM == _jit.ENABLED


def test_a_plugin_learners_counterfactual_pass_loads_no_kernel_in_its_first_step():
    """A researcher's learner built on ``counterfactual_pass`` (the documented route for a
    variant ``FullWidthStep`` does not cover) found its first step paying numba's load of that
    kernel, 7-15 ms on Kuhn, on a race's clock, and again for a writeable table (numba keeps a
    version per argument type; review by a newcomer). The warm-up loads it, and the pass hands
    the kernel read-only tables whatever the caller's."""
    from nashzoo.games.treemath import _jit

    if not _jit.ENABLED:
        pytest.skip("numba is not in use")
    _jit.warm_up()
    kernel = _jit.two_player_pass
    loaded = len(kernel.signatures)
    assert loaded >= 1
    tree = compile_tree(load_game("leduc_poker"))
    writeable = tm.uniform_strategy(tree).copy()
    assert writeable.flags.writeable
    tm.counterfactual_pass(tree, writeable, 0, others=writeable)
    tm.counterfactual_pass(tree, writeable, 1)
    assert len(kernel.signatures) == loaded


def test_the_seats_and_nash_conv_share_one_scratch_and_a_copy_carries_none(monkeypatch) -> None:
    """The compiled steps of both seats and NashConv use one scratch space (on a
    42-million-history game, 1.1 GB less held and as much less at each evaluation); a call
    that finds it taken (another thread's) gets its own and computes the same; a copied
    learner carries none of it; it goes with the last step using it."""
    import copy
    import gc
    import weakref

    from nashzoo.agents import make_learner
    from nashzoo.games.treemath import _jit, response

    if not _jit.ENABLED:
        pytest.skip("numba is not installed (or NASHZOO_PURE_NUMPY=1): no scratch on that path")
    first, second = (make_learner("cfr_plus", "leduc_poker", seat) for seat in (0, 1))
    scratch = first._update._scratch
    assert second._update._scratch is scratch
    first.step(second.current_policy())
    assert len(scratch._free) == 1
    rows = scratch._free[0]
    tree = compile_tree(first.game)
    average = tm.behaviour_strategy(tree, first.strategy_sum())
    own_rows = tm.nash_conv(tree, average)  # a small tree: NashConv's kernel has its own rows
    monkeypatch.setattr(response, "SHARED_SCRATCH_FROM", 0)  # as on a big tree
    assert tm.nash_conv(tree, average)[0] == own_rows[0]  # in the learners' rows: the same
    assert scratch._free == [rows] and rows[0] is scratch._free[0][0]
    taken = scratch.take()
    assert tm.nash_conv(tree, average)[0] == own_rows[0]  # taken: rows of its own again
    scratch.give_back(taken)
    monkeypatch.setattr(response, "SHARED_SCRATCH_FROM", 1 << 20)
    twin = copy.deepcopy(first)
    assert twin._update._scratch is not scratch and twin._update._scratch._free == []
    held = scratch.take()  # as if a step in another thread had it
    first.step(second.current_policy())
    twin.step(second.current_policy())
    np.testing.assert_array_equal(first.cumulative_regrets(), twin.cumulative_regrets())
    np.testing.assert_array_equal(first.strategy_sum(), twin.strategy_sum())
    scratch.give_back(held)
    assert len(scratch._free) == 1
    gone = weakref.ref(scratch)
    del first, second, twin, scratch, held
    gc.collect()
    assert gone() is None
