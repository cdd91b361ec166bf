"""Tournaments: exact payoffs pinned by hand, sampled matches agree with them."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.eval.tournament import Entrant, load_entrant, round_robin


def test_rps_exact_payoffs_by_hand():
    entrants = [
        load_entrant("rps", "uniform"),
        load_entrant("rps", "fixed:0.3,0.3,0.4"),
        load_entrant("rps", "rock=fixed:1,0,0"),
    ]
    result = round_robin("rps", entrants)
    # rock against (.3, .3, .4): 0.3*0 + 0.3*(-1) + 0.4*(+1) = +0.1
    assert result.exact[2, 1] == pytest.approx(0.1)
    assert result.exact[1, 2] == pytest.approx(-0.1)
    assert np.allclose(result.exact[0], 0.0)  # uniform earns 0 against anything
    assert result.names[result.ranking[0]] == "rock"


def test_sampled_matches_agree_with_exact_within_interval():
    game = "kuhn_poker"
    entrants = [load_entrant(game, "uniform"), load_entrant(game, "equilibrium")]
    result = round_robin(game, entrants, episodes=3000, seed=7)
    # Kuhn: equilibrium vs uniform, both seats averaged, is exactly 1/9 (hand-checked via LP)
    assert result.exact[1, 0] == pytest.approx(1 / 9, abs=1e-9)
    for i in range(2):
        for j in range(2):
            if i != j:
                assert abs(result.sampled[i, j] - result.exact[i, j]) <= result.ci95[i, j]
    assert result.names[result.ranking[0]] == "equilibrium"


def test_entrant_errors(tmp_path):
    with pytest.raises(ValueError, match="neither a built-in"):
        load_entrant("kuhn_poker", "nothing-here")
    with pytest.raises(ValueError, match="probabilities like"):
        load_entrant("rps", "fixed:a,b")
    u = load_entrant("kuhn_poker", "uniform")
    with pytest.raises(ValueError, match="unique"):
        round_robin("kuhn_poker", [u, Entrant("uniform", u.policy)])
    with pytest.raises(ValueError, match="at least two"):
        round_robin("kuhn_poker", [u])


def test_the_equilibrium_agent_names_itself_on_a_general_sum_game():
    """On the prisoner's dilemma it said 'solve_game needs a zero-sum ... Use nash_conv /
    exploitability instead', which is no agent to pick."""
    with pytest.raises(ValueError, match=r"^the equilibrium agent needs a two-player zero-sum.*"):
        load_entrant("matrix(preset='prisoners_dilemma')", "equilibrium")


def test_play_matches_on_a_non_square_matrix_game():
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval.tournament import play_matches
    from nashzoo.games import load_game

    game = load_game("matrix", row_payoffs=[[1], [2], [3]])
    uniform = TabularPolicy.uniform(game)
    out = play_matches(game, [uniform, uniform], 300, np.random.default_rng(0))
    assert set(out[:, 0].tolist()) == {1.0, 2.0, 3.0}
    np.testing.assert_array_equal(out[:, 1], -out[:, 0])


def test_rounded_policies_play_and_score_as_exact_ones():
    """Rows within the check's 1e-6 (seven digits, as in a hand-written or rounded file) are
    made exact once accepted: sampled matches no longer trip numpy's 1e-8 check."""
    third = load_entrant("rps", "third=fixed:0.3333333,0.3333333,0.3333333")
    np.testing.assert_allclose(third.policy.probs, np.full((2, 3), 1 / 3), rtol=1e-15)
    result = round_robin("rps", [third, load_entrant("rps", "uniform")], episodes=50)
    assert result.exact[0, 1] == pytest.approx(0.0, abs=1e-15)


def test_tournament_inputs_are_checked():
    from nashzoo.agents import PolicyError, UniformPolicy
    from nashzoo.eval.tournament import play_matches

    u, eq = load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")
    with pytest.raises(PolicyError, match="holds a UniformPolicy, not a TabularPolicy"):
        round_robin("kuhn_poker", [Entrant("u", UniformPolicy()), eq])
    for episodes in (2.5, -3, True):
        with pytest.raises(ValueError, match="episodes must be a non-negative integer"):
            round_robin("kuhn_poker", [u, eq], episodes=episodes)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="2 seats but 1 seat policies"):
        play_matches("kuhn_poker", [u.policy], 3, rng)
    with pytest.raises(PolicyError, match="a seat policy must be a Policy"):
        play_matches("kuhn_poker", [lambda infoset: [0.5, 0.5], u.policy], 3, rng)


def test_payoffs_that_round_to_zero_show_as_plus_zero():
    """A draw computed as -1e-17 is not a loss: tables (the tournament's, the race report's)
    never print -0.000."""
    from nashzoo.eval.tournament import format_number

    assert [format_number(v, "+.3f") for v in (-1e-17, -0.0004, -0.0006, 0.25)] == [
        "+0.000",
        "+0.000",
        "-0.001",
        "+0.250",
    ]
    assert format_number(-1e-17, ".2f") == "0.00"
    assert format_number(-1e-17, ".3g") == "-1e-17"  # not fixed-point: shown as it is


def test_sampled_interval_comes_from_each_seating_not_the_pooled_payoffs():
    """A sampled cell averages two seatings played apart; pooling their payoffs counted the
    difference between the seats as noise. In a game paying seat 0 a fixed +5 every cell is
    exactly 0 with no sampling error: the interval was +-0.695 at 100 matches."""
    game = "matrix(row_payoffs=[[5,5],[5,5]])"
    entrants = [load_entrant(game, "uniform"), load_entrant(game, "a=fixed:1,0")]
    result = round_robin(game, entrants, episodes=100, seed=0)
    np.testing.assert_array_equal(result.sampled, np.zeros((2, 2)))
    np.testing.assert_array_equal(result.ci95, np.zeros((2, 2)))


def test_sampled_interval_matches_the_stratified_formula():
    """The same matches replayed from the seed: each off-diagonal cell is the mean of the two
    seatings' means, its half-width 1.96 * sqrt(var_0 / n + var_1 / n) / 2; a diagonal cell
    averages both seats match by match."""
    from nashzoo.eval.tournament import play_matches

    game = "matrix(row_payoffs=[[3,1],[1,2]])"
    specs = ["uniform", "a=fixed:0.9,0.1", "b=fixed:0.2,0.8"]
    entrants = [load_entrant(game, spec) for spec in specs]
    result = round_robin(game, entrants, episodes=60, seed=4)
    played = {  # each pairing's matches from its own stream (test_each_pairing_is_seeded_...)
        (i, j): play_matches(game, [entrants[i].policy, entrants[j].policy], 60, _stream(4, i, j))
        for i in range(3)
        for j in range(3)
    }
    for i in range(3):
        x = played[i, i].mean(axis=1)
        assert result.sampled[i, i] == pytest.approx(x.mean(), abs=1e-12)
        assert result.ci95[i, i] == pytest.approx(1.96 * x.std(ddof=1) / np.sqrt(60))
        for j in set(range(3)) - {i}:
            first, second = played[i, j][:, 0], played[j, i][:, 1]
            assert result.sampled[i, j] == pytest.approx((first.mean() + second.mean()) / 2)
            half = 1.96 * np.sqrt(first.var(ddof=1) / 60 + second.var(ddof=1) / 60) / 2
            assert result.ci95[i, j] == pytest.approx(half)
    # Seat 0 earns 1 to 3 whoever plays: pooling both seats' payoffs made this 0.31684.
    assert result.ci95[1, 2] == pytest.approx(0.151738, abs=1e-6)


def _stream(seed, row, col):
    """A pairing's stream, spelled out: the seed and the pairing's two places, nothing else."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(row, col)))


def test_each_pairing_is_seeded_on_its_own_whatever_was_played_before_it():
    """The matches of one pairing came from one stream shared by the whole tournament, so they
    depended on every pairing played before them: a resumed tournament, which plays only the
    missing pairings, could not have given the uninterrupted one's table. Each pairing now has
    its own stream, a function of the seed and the pairing alone."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval.tournament import assemble, pairing_rng, play_pairing
    from nashzoo.games import load_game

    game = load_game("kuhn_poker")
    uniform = TabularPolicy.uniform(game)
    passer = np.zeros_like(uniform.probs)
    passer[:, 0] = 1.0  # pass or fold at every information set
    entrants = [load_entrant(game, s) for s in ("uniform", "equilibrium")]
    entrants.append(Entrant("passer", TabularPolicy(game, passer)))
    whole = round_robin(game, entrants, episodes=40, seed=3)
    # the pairings one by one, last first, each in a fresh call: the same tournament
    backwards = {
        (i, j): play_pairing(game, entrants, i, j, 40, 3)
        for i, j in reversed([(i, j) for i in range(3) for j in range(3)])
    }
    alone = assemble(game, whole.names, backwards, 40)
    assert alone.to_dict() == whole.to_dict()
    for array in ("exact_seat", "sampled", "ci95"):
        np.testing.assert_array_equal(getattr(alone, array), getattr(whole, array))
    # a pairing's stream is SeedSequence(seed, spawn_key=(row, col)), the same in every process
    a, b = pairing_rng(3, 2, 1).random(4), _stream(3, 2, 1).random(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, pairing_rng(3, 1, 2).random(4))
    # and two entrants' cell does not move when a third one joins the tournament
    two = round_robin(game, entrants[:2], episodes=40, seed=3)
    np.testing.assert_array_equal(two.sampled, whole.sampled[:2, :2])


def test_an_entrant_against_itself_in_a_zero_sum_game_is_exactly_zero():
    """Both seats of the same matches: the payoffs cancel match by match, so there is no
    sampling error (the interval was +-0.114 at 300 Kuhn matches)."""
    entrants = [load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")]
    result = round_robin("kuhn_poker", entrants, episodes=300, seed=1)
    np.testing.assert_array_equal(np.diag(result.sampled), [0.0, 0.0])
    np.testing.assert_array_equal(np.diag(result.ci95), [0.0, 0.0])


def test_one_match_per_seating_gives_no_interval():
    """One payoff says nothing about the spread: no interval (it printed +-1.960 and +-3.920)."""
    entrants = [load_entrant("kuhn_poker", "uniform"), load_entrant("kuhn_poker", "equilibrium")]
    result = round_robin("kuhn_poker", entrants, episodes=1, seed=0)
    assert not np.isnan(result.sampled).any()
    assert np.isnan(result.ci95).all()
    rows = result.table().splitlines()[-2:]
    assert all("+-" not in row and "nan" not in row and "]" in row for row in rows)
    assert result.to_dict()["ci95"] == [[None, None], [None, None]]


def test_equal_scores_rank_by_name_not_by_rounding_noise():
    """In RPS everyone scores 0 against uniform; the LP's equilibrium and rock differ from 0 by
    5.6e-17 either way, which ranked rock first, then uniform, then equilibrium."""
    entrants = [load_entrant("rps", s) for s in ("uniform", "equilibrium", "rock=fixed:1,0,0")]
    result = round_robin("rps", entrants)
    assert [result.names[i] for i in result.ranking] == ["equilibrium", "rock", "uniform"]
