"""Exact evaluation: known values, best responses, seat exploitability and the LP solver."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from nashzoo.agents import PolicyError, TabularPolicy, fixed_policy, uniform_policy
from nashzoo.eval import (
    BestResponse,
    as_tabular,
    best_response,
    constant_sum,
    evaluate,
    expected_returns,
    exploitability,
    nash_conv,
    seat_exploitability,
    solve_game,
)
from nashzoo.games import compile_tree, load_game
from nashzoo.games import treemath as tm


def random_policy(game: str, seed: int, pure_fraction: float = 0.0) -> TabularPolicy:
    """Random rows over the legal actions; a fraction of rows made pure (zero-reach corners)."""
    tree = compile_tree(load_game(game))
    rng = np.random.default_rng(seed)
    probs = rng.random(tree.legal_mask.shape) * tree.legal_mask
    pure = rng.random(tree.num_infosets) < pure_fraction
    noise = np.where(tree.legal_mask, rng.random(tree.legal_mask.shape), -1.0)
    probs[pure] = np.eye(tree.num_actions)[np.argmax(noise[pure], axis=1)]
    return TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))


# --- known values ---------------------------------------------------------------------------
def test_kuhn_uniform_nash_conv_is_11_over_12() -> None:
    uniform = uniform_policy("kuhn_poker")
    assert nash_conv("kuhn_poker", uniform) == pytest.approx(11 / 12, abs=1e-12)
    assert exploitability("kuhn_poker", uniform) == pytest.approx(11 / 24, abs=1e-12)


def test_leduc_uniform_nash_conv() -> None:
    uniform = uniform_policy("leduc_poker")
    assert round(nash_conv("leduc_poker", uniform), 6) == 4.747222
    assert exploitability("leduc_poker", uniform) == pytest.approx(4.747222 / 2, abs=1e-6)


def test_kuhn_lp_value_and_equilibrium() -> None:
    solution = solve_game("kuhn_poker")
    assert solution.value == pytest.approx([-1 / 18, 1 / 18], abs=1e-10)
    assert nash_conv("kuhn_poker", solution.policy) < 1e-9
    assert expected_returns("kuhn_poker", solution.policy)[0] == pytest.approx(-1 / 18, abs=1e-10)


def test_leduc_lp_equilibrium() -> None:
    solution = solve_game("leduc_poker")
    # Published value of Leduc hold'em for the first player: -0.0856 (e.g. OpenSpiel's
    # sequence-form LP test); pinned here to the digits the LP gives.
    assert solution.value[0] == pytest.approx(-0.085606424, abs=1e-8)
    assert nash_conv("leduc_poker", solution.policy) < 1e-9
    report = evaluate("leduc_poker", solution.policy)
    assert max(abs(v) for v in report.seat_exploitability) < 1e-9


def test_rps_value_zero_with_uniform_equilibrium() -> None:
    solution = solve_game("rps")
    assert solution.value == pytest.approx([0.0, 0.0], abs=1e-12)
    np.testing.assert_allclose(solution.policy.probs, np.full((2, 3), 1 / 3), atol=1e-9)
    assert nash_conv("rps", uniform_policy("rps")) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("responder", [0, 1])
def test_best_response_to_rock_paper_scissors_mix_is_rock(responder: int) -> None:
    mix = fixed_policy("rps", [0.3, 0.3, 0.4], seats=1 - responder)
    br = best_response("rps", mix, responder)
    assert isinstance(br, BestResponse)
    assert br.player == responder
    assert br.value == pytest.approx(0.1, abs=1e-12)
    tree = compile_tree(load_game("rps"))
    (row,) = tree.infosets_of(responder)
    np.testing.assert_array_equal(br.policy.probs[row], [1.0, 0.0, 0.0])  # rock
    # the other seat's rows are copied from the input
    (other,) = tree.infosets_of(1 - responder)
    np.testing.assert_array_equal(br.policy.probs[other], [0.3, 0.3, 0.4])


def test_matrix_lp_matches_normal_form_lp() -> None:
    """A non-square game (player 0 has 2 actions, player 1 has 3) against a direct LP."""
    payoff = np.array([[2.0, -1.0, 0.5], [-1.5, 1.0, 0.25]])
    game = load_game("matrix", row_payoffs=payoff.tolist())
    # max v s.t. x^T A[:, j] >= v for all j, sum x = 1, x >= 0
    result = linprog(
        c=[0.0, 0.0, -1.0],
        A_ub=np.hstack([-payoff.T, np.ones((3, 1))]),
        b_ub=np.zeros(3),
        A_eq=[[1.0, 1.0, 0.0]],
        b_eq=[1.0],
        bounds=[(0, None), (0, None), (None, None)],
        method="highs",
    )
    solution = solve_game(game)
    assert solution.value[0] == pytest.approx(-result.fun, abs=1e-9)
    assert solution.value[1] == pytest.approx(result.fun, abs=1e-9)
    assert nash_conv(game, solution.policy) < 1e-9
    assert solution.policy.probs[0, 2] == 0.0  # player 0 has no third action


# --- Kuhn's analytic equilibrium family ------------------------------------------------------
def kuhn_player0(a: float) -> dict[str, list[float]]:
    """Kuhn (1950), in the first-mover view (as in the Wikipedia "Kuhn poker" article):
    bet the jack with probability a in [0, 1/3], check the queen, bet the king with 3a; after
    check-bet fold the jack, call with the queen with probability a + 1/3, call with the king."""
    bet = {"J|": a, "Q|": 0.0, "K|": 3 * a, "J|pb": 0.0, "Q|pb": a + 1 / 3, "K|pb": 1.0}
    return {key: [1.0 - p, p] for key, p in bet.items()}


KUHN_PLAYER1 = {  # the second mover's unique equilibrium strategy
    key: [1.0 - p, p]
    for key, p in {
        "J|p": 1 / 3,  # bluff the jack a third of the time after a check
        "J|b": 0.0,  # fold the jack to a bet
        "Q|p": 0.0,  # check the queen behind
        "Q|b": 1 / 3,  # call a bet with the queen a third of the time
        "K|p": 1.0,
        "K|b": 1.0,
    }.items()
}


@pytest.mark.parametrize("a", [0.0, 0.1, 1 / 6, 0.25, 1 / 3])
def test_kuhn_equilibrium_family_has_zero_seat_exploitability(a: float) -> None:
    seats = [kuhn_player0(a), KUHN_PLAYER1]
    assert seat_exploitability("kuhn_poker", seats, 0) == pytest.approx(0.0, abs=1e-12)
    assert seat_exploitability("kuhn_poker", seats, 1) == pytest.approx(0.0, abs=1e-12)
    assert nash_conv("kuhn_poker", seats) == pytest.approx(0.0, abs=1e-12)
    assert expected_returns("kuhn_poker", seats)[0] == pytest.approx(-1 / 18, abs=1e-12)
    # against uniform as player 1, only seat 1's number moves
    mixed = [kuhn_player0(a), uniform_policy("kuhn_poker")]
    assert seat_exploitability("kuhn_poker", mixed, 0) == pytest.approx(0.0, abs=1e-12)
    assert seat_exploitability("kuhn_poker", mixed, 1) > 0.1


def test_kuhn_strategy_outside_the_family_is_exploitable() -> None:
    off = kuhn_player0(1 / 3)
    off["K|"] = [0.5, 0.5]  # betting the king less than 3a breaks the indifference
    assert seat_exploitability("kuhn_poker", [off, KUHN_PLAYER1], 0) > 1e-3


# --- best response against brute force -------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("player", [0, 1])
def test_best_response_beats_every_pure_strategy(seed: int, player: int) -> None:
    game = load_game("kuhn_poker")
    tree = compile_tree(game)
    policy = random_policy("kuhn_poker", seed, pure_fraction=0.3 * (seed % 2))
    br = best_response(game, policy, player)
    mine = tree.infosets_of(player)
    pure_values = []
    for choice in itertools.product(range(2), repeat=mine.size):
        probs = np.array(policy.probs)
        probs[mine] = np.eye(2)[list(choice)]
        pure_values.append(tm.expected_returns(tree, probs)[player])
    assert br.value >= max(pure_values) - 1e-12
    assert br.value == pytest.approx(max(pure_values), abs=1e-12)  # pure BRs exist
    # its policy really achieves the value, and is pure on the responder's rows
    assert expected_returns(game, br.policy)[player] == pytest.approx(br.value, abs=1e-12)
    assert set(np.unique(br.policy.probs[mine])) <= {0.0, 1.0}
    others = tree.infosets_of(1 - player)
    np.testing.assert_array_equal(br.policy.probs[others], policy.probs[others])


SCALES = [1e-300, 1e-13, 1.0, 1e12]


@pytest.mark.parametrize("scale", SCALES)
def test_a_best_response_follows_its_own_values_at_any_payoff_scale(scale) -> None:
    """Matching pennies times ``scale``, both playing heads: the column's best response is
    tails, worth ``scale``. Ties were within an absolute 1e-12, so below that every action
    tied and the response was heads, contradicting its own value."""
    game = load_game("matrix", row_payoffs=(np.array([[1.0, -1.0], [-1.0, 1.0]]) * scale).tolist())
    heads = fixed_policy(game, [1.0, 0.0])
    br = best_response(game, heads, 1)
    np.testing.assert_array_equal(br.policy.probs[1], [0.0, 1.0])
    assert br.value == scale
    assert expected_returns(game, br.policy)[1] == scale
    assert nash_conv(game, heads) == 2 * scale


@pytest.mark.parametrize("scale", SCALES)
def test_a_rounding_level_difference_is_a_tie_at_any_payoff_scale(scale) -> None:
    """The column's two actions are worth exactly the same against a uniform row (0, and
    (1 - 10 + 9) / 3), but the second one's sum rounds to a little above 0: a tie, so the
    lower id, at every scale. Relative to the best value alone, at 1e12 the rounding won."""
    column = np.array([[0.0, 1.0], [0.0, -10.0], [0.0, 9.0]]) * scale
    game = load_game("matrix", row_payoffs=(-column).tolist())
    uniform_rows = TabularPolicy(game, np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0]]))
    br = best_response(game, uniform_rows, 1)
    np.testing.assert_array_equal(br.policy.probs[1], [1.0, 0.0, 0.0])


# --- seat exploitability properties ----------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pure=st.sampled_from([0.0, 0.5, 1.0]))
def test_seat_exploitability_properties_kuhn(seed: int, pure: float) -> None:
    check_seat_properties("kuhn_poker", seed, pure)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pure=st.sampled_from([0.0, 0.5]))
def test_seat_exploitability_properties_leduc(seed: int, pure: float) -> None:
    check_seat_properties("leduc_poker", seed, pure)


def check_seat_properties(game: str, seed: int, pure: float) -> None:
    policy = random_policy(game, seed, pure)
    seats = [seat_exploitability(game, policy, s) for s in range(2)]
    assert min(seats) >= -1e-9
    conv = nash_conv(game, policy)
    assert sum(seats) == pytest.approx(conv, abs=1e-9)
    # seat 0's number depends on seat 0's rows only
    other = random_policy(game, seed + 1)
    swapped = policy.with_rows(1, other)
    assert seat_exploitability(game, swapped, 0) == pytest.approx(seats[0], abs=1e-12)
    report = evaluate(game, policy)
    assert report.seat_exploitability == pytest.approx(tuple(seats), abs=1e-12)


# --- evaluate() and the plain functions agree ------------------------------------------------
def test_evaluate_report_matches_plain_functions() -> None:
    policy = random_policy("leduc_poker", 7)
    report = evaluate("leduc_poker", policy)
    assert report.nash_conv == pytest.approx(nash_conv("leduc_poker", policy), abs=1e-12)
    assert report.exploitability == pytest.approx(report.nash_conv / 2, abs=1e-15)
    np.testing.assert_allclose(
        report.on_policy_values, expected_returns("leduc_poker", policy), atol=1e-12
    )
    for p in range(2):
        assert report.best_response_values[p] == pytest.approx(
            best_response("leduc_poker", policy, p).value, abs=1e-12
        )
    assert not report.on_policy_values.flags.writeable
    np.testing.assert_allclose(report.game_value, solve_game("leduc_poker").value)
    text = str(report)
    assert "NashConv" in text and "exploitability (NashConv / 2)" in text
    row = report.to_dict()
    assert row["game"] == "leduc_poker" and row["nash_conv"] == report.nash_conv
    assert set(row) >= {"value_0", "br_value_1", "seat_exploitability_1"}
    assert evaluate("leduc_poker", policy, seats=False).seat_exploitability is None


def test_evaluate_leaves_out_a_slow_lp_unless_asked_and_solve_game_warns_before_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """evaluate() of 13-rank Leduc through the bridge (704,600 terminals) spent minutes in the
    sequence-form LP, silently, for per-seat numbers nobody asked for (NashConv: 0.14 s). Here
    the threshold is lowered so that a 2x3 matrix game counts as such a game."""
    from nashzoo.eval import lp

    monkeypatch.setattr(lp, "CHEAP_LP_TERMINALS", 5)
    game = load_game("matrix", row_payoffs=[[3.0, -1.0, 0.5], [-2.0, 4.0, 0.25]])
    uniform = TabularPolicy.uniform(game)
    report = evaluate(game, uniform)
    assert report.seat_exploitability is None and report.game_value is None
    assert report.seat_note is not None and "6 terminal histories" in report.seat_note
    assert "seats=True" in str(report)
    assert game not in lp._SOLUTIONS  # the LP was not run
    with pytest.warns(UserWarning, match="6 terminal histories.*many minutes"):
        forced = evaluate(game, uniform, seats=True)
    assert forced.seat_exploitability is not None and forced.seat_note is None
    # The default decides by size alone, the same in every process, solved already or not.
    assert evaluate(game, uniform).seat_exploitability is None
    assert evaluate(game, uniform, seats=False).seat_note is None


def test_seats_asked_for_on_a_general_sum_game_say_why_there_are_none() -> None:
    """evaluate(seats=True) on a general-sum game left the per-seat numbers out without a word
    (and nashzoo eval --seats printed nothing about them); by default it stays silent."""
    game = load_game("matrix:prisoners_dilemma")
    uniform = TabularPolicy.uniform(game)
    asked = evaluate(game, uniform, seats=True)
    assert asked.seat_exploitability is None and asked.game_value is None
    assert asked.seat_note is not None and "is general-sum" in asked.seat_note
    assert "no game value to measure a seat against" in str(asked)
    assert evaluate(game, uniform).seat_note is None


def test_seat_policies_equal_joint_policy() -> None:
    a, b = random_policy("kuhn_poker", 1), random_policy("kuhn_poker", 2)
    joint = a.with_rows(1, b)
    np.testing.assert_allclose(
        expected_returns("kuhn_poker", [a, b]), expected_returns("kuhn_poker", joint), atol=0
    )
    assert nash_conv("kuhn_poker", [a, b]) == nash_conv("kuhn_poker", joint)
    # callables and raw arrays are accepted too
    assert nash_conv("kuhn_poker", lambda info: info.legal_mask / info.legal_mask.sum()) == (
        pytest.approx(11 / 12)
    )
    assert nash_conv("kuhn_poker", np.asarray(joint.probs)) == nash_conv("kuhn_poker", joint)


def test_general_sum_game() -> None:
    game = load_game("matrix", preset="prisoners_dilemma")
    cooperate = fixed_policy(game, [1.0, 0.0])
    assert constant_sum(game) is None
    assert nash_conv(game, cooperate) == pytest.approx(4.0)  # each gains 5 - 3 by defecting
    assert nash_conv(game, fixed_policy(game, [0.0, 1.0])) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="zero-sum"):
        seat_exploitability(game, cooperate, 0)
    with pytest.raises(ValueError, match="zero-sum"):
        solve_game(game)
    assert evaluate(game, cooperate).seat_exploitability is None


def test_constant_sum_game_is_shifted_zero_sum() -> None:
    shifted = load_game("matrix", row_payoffs=[[2, 0], [0, 2]], col_payoffs=[[0, 2], [2, 0]])
    assert constant_sum(shifted) == pytest.approx(2.0)
    solution = solve_game(shifted)
    assert solution.value == pytest.approx([1.0, 1.0], abs=1e-9)
    biased = fixed_policy(shifted, [0.8, 0.2])
    seats = [seat_exploitability(shifted, biased, s) for s in range(2)]
    assert seats == pytest.approx([0.6, 0.6], abs=1e-9)  # opponent picks the other side
    assert sum(seats) == pytest.approx(nash_conv(shifted, biased), abs=1e-9)


@pytest.mark.parametrize("scale", [1e-12, 1e-9, 1.0, 1e12, 1e15, 1e18])
def test_solve_game_is_right_at_any_payoff_scale(scale) -> None:
    """[[2, -1], [-1, 1]] times ``scale``: value 0.2 * scale, row (0.4, 0.6) by hand. The
    solver works to absolute tolerances; unscaled, 1e-9 gave value 0 and row (1, 0), and 1e15
    'HiGHS Status 2: Model error'."""
    game = load_game("matrix", row_payoffs=(np.array([[2.0, -1.0], [-1.0, 1.0]]) * scale).tolist())
    solution = solve_game(game)
    np.testing.assert_allclose(solution.value, [0.2 * scale, -0.2 * scale], rtol=1e-9)
    np.testing.assert_allclose(solution.policy.probs, [[0.4, 0.6], [0.4, 0.6]], rtol=1e-9)
    assert abs(nash_conv(game, solution.policy)) <= 1e-9 * scale


def _mixed_2x2(a: float, b: float, c: float, d: float) -> tuple[float, float, float]:
    """``(p, q, value)`` of the zero-sum game ``[[a, b], [c, d]]`` without a saddle point, by
    the closed form: the row plays row 0 with ``p``, the column column 0 with ``q``."""
    denominator = (a - b) + (d - c)
    value = a * (d / denominator) - b * (c / denominator)  # (ad - bc) / den, no underflow
    return (d - c) / denominator, (d - b) / denominator, value


@pytest.mark.parametrize(
    "payoffs",
    [
        [[1e9, 0.0], [0.0, 1.0]],  # value ~0.999999999; was 0, with NashConv 1
        [[1e12, -1e12], [-1.0, 1.0]],  # row 0 with 1e-12; was pure row 1, NashConv 2
        [[1e21, 0.0], [0.0, 1.0]],  # a range of 1e21 still fits
        [[1e-300, 0.0], [0.0, 1e-310]],  # tiny and wide: the value is 1e-310
        [[2e-9, -1e-9], [-1e-9, 1e-9]],
        [[2e15, -1e15], [-1e15, 1e15]],
    ],
)
def test_solve_game_matches_the_closed_form_over_wide_payoff_ranges(payoffs) -> None:
    """HiGHS drops matrix entries under 1e-9 (after the payoffs were scaled to a largest entry
    near 1, a range of 1e9 lost its small entries) and refuses entries over 1e15: the scale
    keeps both ends inside, and the NashConv of the answer is tiny against the smallest
    payoff that matters."""
    game = load_game("matrix", row_payoffs=payoffs)
    (a, b), (c, d) = payoffs
    p, q, value = _mixed_2x2(a, b, c, d)
    solution = solve_game(game)
    np.testing.assert_allclose(solution.value, [value, -value], rtol=1e-9)
    np.testing.assert_allclose(solution.policy.probs, [[p, 1 - p], [q, 1 - q]], rtol=1e-9)
    smallest = min(abs(x) for row in payoffs for x in row if x != 0.0)
    assert abs(nash_conv(game, solution.policy)) <= 1e-9 * smallest


@pytest.mark.parametrize("big", [1e9, 1e10, 1e20])
def test_a_big_m_row_keeps_the_small_payoffs(big) -> None:
    """Rock-Paper-Scissors plus a row that loses ``big`` against everything (dominated): the
    value stays 0 and the equilibrium RPS's thirds. With ``big`` = 1e9 the solve had lost the
    1s and returned pure rock for both seats (NashConv 2)."""
    rps = [[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]]
    game = load_game("matrix", row_payoffs=[*rps, [-big] * 3])
    solution = solve_game(game)
    np.testing.assert_allclose(solution.value, [0.0, 0.0], atol=1e-12)
    third = 1 / 3
    np.testing.assert_allclose(
        solution.policy.probs, [[third, third, third, 0.0], [third, third, third, 0.0]], atol=1e-12
    )
    assert abs(nash_conv(game, solution.policy)) <= 1e-9


def test_payoffs_too_wide_for_the_lp_are_refused() -> None:
    """A range of 1e23 fits no scale: refused, where it was solved as if the 1 were 0."""
    game = load_game("matrix", row_payoffs=[[1e23, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"range from 1 to 1e\+23 .* round the smallest"):
        solve_game(game)


def test_a_general_sum_game_with_tiny_payoffs_is_not_constant_sum() -> None:
    """The prisoner's dilemma scaled by 1e-10: its sums spread by half its largest payoff, so
    it is general-sum whatever the scale (an absolute tolerance called it constant-sum)."""
    tiny = (np.array([[3.0, 0.0], [5.0, 1.0]]) * 1e-10).tolist()
    game = load_game("matrix", row_payoffs=tiny, col_payoffs=np.transpose(tiny).tolist())
    assert constant_sum(game) is None
    with pytest.raises(ValueError, match="zero-sum"):
        solve_game(game)
    rounded = load_game("matrix", row_payoffs=[[0.1, 0.2]], col_payoffs=[[-0.1, -0.2 + 1e-17]])
    assert constant_sum(rounded) == 0.0  # a rounding error is still zero-sum


# --- caching and immutability ----------------------------------------------------------------
def test_solution_is_cached_and_read_only() -> None:
    first = solve_game("kuhn_poker")
    assert solve_game(load_game("kuhn")) is first
    with pytest.raises(ValueError):
        first.value[0] = 1.0
    with pytest.raises(ValueError):
        first.policy.probs[0, 0] = 1.0


# --- bad input -------------------------------------------------------------------------------
def test_a_seat_policy_is_asked_only_about_its_own_seat() -> None:
    # A network or callable that only plays seat 1 can be evaluated in cross-play.
    def seat1_only(infoset):
        assert infoset.player == 1, "seat 1 only"
        return infoset.legal_mask / infoset.legal_mask.sum()

    pair = (uniform_policy("kuhn_poker"), seat1_only)
    assert nash_conv("kuhn_poker", pair) == pytest.approx(11 / 12, abs=1e-12)


def test_per_seat_tables_are_read_on_their_own_seats_rows_like_dicts() -> None:
    """``nash_conv(game, [table0, table1])`` where each table fills only its seat's rows (zeros
    elsewhere): read like a pair of dicts or callables (it was refused: "'Q|p' does not sum to
    one", a seat-1 row while checking seat 0's table)."""
    tree = compile_tree("kuhn_poker")  # a name is enough
    full = np.random.default_rng(0).random((tree.num_infosets, tree.num_actions))
    full /= full.sum(axis=1, keepdims=True)
    tables = [np.zeros_like(full), np.zeros_like(full)]
    for seat in (0, 1):
        tables[seat][tree.infosets_of(seat)] = full[tree.infosets_of(seat)]
    expected = nash_conv("kuhn_poker", full)
    assert nash_conv("kuhn_poker", tables) == expected
    assert nash_conv("kuhn_poker", [t.tolist() for t in tables]) == expected
    tables[0][tree.infosets_of(0)[0]] = [0.7, 0.7]  # the seat's own rows are still checked
    with pytest.raises(PolicyError, match="sum to one"):
        nash_conv("kuhn_poker", tables)


def test_a_policy_that_only_answers_batches_is_evaluated() -> None:
    """An object with only ``action_probabilities_batch`` (the BatchPolicy protocol) is a
    policy to evaluation, alone or per seat (it was refused: "pass a Policy")."""

    class OnlyBatches:
        def action_probabilities_batch(self, players, tensors, legal_masks):
            masks = np.asarray(legal_masks, dtype=np.float64)
            return masks / masks.sum(axis=1, keepdims=True)

    assert nash_conv("kuhn_poker", OnlyBatches()) == pytest.approx(11 / 12, abs=1e-12)
    assert nash_conv("kuhn_poker", [OnlyBatches(), OnlyBatches()]) == pytest.approx(11 / 12)


def test_learner_objects_get_a_hint() -> None:
    from nashzoo.agents import make_learner

    with pytest.raises(PolicyError, match=r"average_policy\(\)"):
        nash_conv("kuhn_poker", make_learner("cfr", "kuhn_poker", 0))


def test_player_must_be_an_integer_not_a_bool() -> None:
    with pytest.raises(ValueError, match="player must be an integer"):
        best_response("kuhn_poker", uniform_policy("kuhn_poker"), True)


def test_policy_for_another_game_is_refused() -> None:
    with pytest.raises(PolicyError, match="kuhn_poker, not leduc_poker"):
        nash_conv("leduc_poker", uniform_policy("kuhn_poker"))


def test_rows_that_are_not_distributions_are_named() -> None:
    tree = compile_tree(load_game("kuhn_poker"))
    probs = np.array(uniform_policy("kuhn_poker").probs)
    probs[tree.index_of("Q|pb")] = [0.7, 0.7]
    unchecked = TabularPolicy("kuhn_poker", probs, validate=False)
    with pytest.raises(PolicyError, match=r"'Q\|pb' does not sum to one"):
        exploitability("kuhn_poker", unchecked)
    probs[tree.index_of("Q|pb")] = [1.2, -0.2]
    with pytest.raises(PolicyError, match=r"'Q\|pb' has negative"):
        nash_conv("kuhn_poker", probs)


def test_probability_on_illegal_action_is_named() -> None:
    tree = compile_tree(load_game("leduc_poker"))
    probs = np.array(uniform_policy("leduc_poker").probs)
    first = tree.infoset_keys[0]  # no bet to face: folding is illegal
    probs[0] = [0.2, 0.4, 0.4]
    with pytest.raises(PolicyError, match=re.escape(f"{first!r} puts probability on an illegal")):
        nash_conv("leduc_poker", probs)


def test_missing_infosets_and_wrong_shapes() -> None:
    missing = r"no probabilities for information set 'Q\|' \(11 missing\)"
    with pytest.raises(PolicyError, match=missing):
        nash_conv("kuhn_poker", {"J|": [0.5, 0.5]})
    with pytest.raises(PolicyError, match=r"seat 1 .* no probabilities for information set"):
        nash_conv("kuhn_poker", [uniform_policy("kuhn_poker"), {"J|p": [0.5, 0.5]}])
    with pytest.raises(PolicyError, match=r"shape \(12, 2\).*got \(12, 3\)"):
        nash_conv("kuhn_poker", np.full((12, 3), 1 / 3))
    with pytest.raises(PolicyError, match="2 seats but 3 seat policies"):
        nash_conv("kuhn_poker", [uniform_policy("kuhn_poker")] * 3)
    with pytest.raises(PolicyError, match=r"returned shape \(3,\) at information set"):
        nash_conv("kuhn_poker", lambda info: np.ones(3) / 3)
    with pytest.raises(PolicyError, match=r"failed at information set 'J\|'"):
        nash_conv("kuhn_poker", lambda info: {"Q|": [1, 0]}[info.key])
    with pytest.raises(PolicyError, match="a list of numbers is not a policy"):
        nash_conv("rps", [0.3, 0.3, 0.4])
    with pytest.raises(PolicyError, match="cannot evaluate a int"):
        as_tabular("kuhn_poker", 3)
    with pytest.raises(ValueError, match="player must be an integer"):
        best_response("kuhn_poker", uniform_policy("kuhn_poker"), 2)


def test_a_ctrl_c_stops_the_wait_for_the_lp_solver_at_once(monkeypatch) -> None:
    """Python runs its Ctrl-C handler only in the main thread, between bytecodes: a direct call
    of HiGHS kept `nashzoo solve` of 13-rank Leduc deaf to Ctrl-C for minutes (review of the
    scale ladder). The solver now runs in a thread of its own while the main thread waits in
    short sleeps; its result, and any error it raises, come back as before."""
    import _thread
    import threading
    import time

    from nashzoo.eval import lp

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the test runs outside the main thread, where no Ctrl-C lands")
    threads: list[threading.Thread] = []
    release = threading.Event()
    real = lp.linprog

    def solver(*args, **kwargs):
        threads.append(threading.current_thread())
        if kwargs.get("method") == "stuck":
            release.wait(30)  # a long solve
            return None
        return real(*args, **kwargs)

    monkeypatch.setattr(lp, "linprog", solver)
    lp._SOLUTIONS.clear()
    solution = lp.solve_game("kuhn_poker")
    assert solution.value[0] == pytest.approx(-1 / 18, abs=1e-12)
    assert threads and all(t is not threading.main_thread() for t in threads)

    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            lp._interruptible(solver, method="stuck")
        assert time.monotonic() - began < 5
    finally:
        release.set()
        timer.cancel()
    with pytest.raises(ZeroDivisionError):
        lp._interruptible(lambda: 1 / 0)
