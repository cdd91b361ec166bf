"""nashzoo's exact evaluator against OpenSpiel's (C++ and Python) on the same policies."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")
os_exploitability = pytest.importorskip("open_spiel.python.algorithms.exploitability")

from nashzoo.agents import TabularPolicy, uniform_policy  # noqa: E402
from nashzoo.eval import best_response, exploitability, nash_conv, solve_game  # noqa: E402
from nashzoo.eval.openspiel import (  # noqa: E402
    from_openspiel,
    infoset_map,
    to_openspiel,
    to_pyspiel,
)
from nashzoo.games import compile_tree, load_game  # noqa: E402


def random_policy(game: str, seed: int) -> TabularPolicy:
    tree = compile_tree(load_game(game))
    rng = np.random.default_rng(seed)
    probs = rng.random(tree.legal_mask.shape) * tree.legal_mask
    if seed % 3 == 1:  # some pure rows: zero-reach corners of the tree
        pure = rng.random(tree.num_infosets) < 0.4
        noise = np.where(tree.legal_mask, rng.random(tree.legal_mask.shape), -1.0)
        probs[pure] = np.eye(tree.num_actions)[np.argmax(noise[pure], axis=1)]
    return TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))


@pytest.mark.parametrize(("game", "count"), [("kuhn_poker", 40), ("leduc_poker", 8)])
def test_nash_conv_matches_pyspiel(game: str, count: int) -> None:
    os_game = infoset_map(game).openspiel_game
    for seed in range(count):
        policy = random_policy(game, seed)
        theirs = to_pyspiel(game, policy)
        assert nash_conv(game, policy) == pytest.approx(
            pyspiel.nash_conv(os_game, theirs), abs=1e-9
        )
        assert exploitability(game, policy) == pytest.approx(
            pyspiel.exploitability(os_game, theirs), abs=1e-9
        )


@pytest.mark.parametrize(("game", "count"), [("kuhn_poker", 20), ("leduc_poker", 3)])
def test_nash_conv_matches_openspiel_python(game: str, count: int) -> None:
    os_game = infoset_map(game).openspiel_game
    for seed in range(100, 100 + count):
        policy = random_policy(game, seed)
        assert nash_conv(game, policy) == pytest.approx(
            os_exploitability.nash_conv(os_game, to_openspiel(game, policy)), abs=1e-9
        )


def test_known_values_through_openspiel() -> None:
    os_game = infoset_map("leduc_poker").openspiel_game
    uniform = to_pyspiel("leduc_poker", uniform_policy("leduc_poker"))
    assert round(pyspiel.nash_conv(os_game, uniform), 6) == 4.747222
    equilibrium = to_pyspiel("kuhn_poker", solve_game("kuhn_poker").policy)
    assert pyspiel.nash_conv(infoset_map("kuhn_poker").openspiel_game, equilibrium) < 1e-9


def test_best_response_values_match_openspiel() -> None:
    from open_spiel.python.algorithms.best_response import BestResponsePolicy

    os_game = infoset_map("leduc_poker").openspiel_game
    policy = random_policy("leduc_poker", 5)
    os_policy = to_openspiel("leduc_poker", policy)
    for player in range(2):
        theirs = BestResponsePolicy(os_game, player, os_policy).value(os_game.new_initial_state())
        assert best_response("leduc_poker", policy, player).value == pytest.approx(theirs, abs=1e-9)


def test_policies_round_trip_through_openspiel() -> None:
    policy = random_policy("leduc_poker", 3)
    back = from_openspiel("leduc_poker", to_openspiel("leduc_poker", policy))
    np.testing.assert_array_equal(back.probs, policy.probs)


def test_unsupported_game_is_refused() -> None:
    with pytest.raises(ValueError, match="no OpenSpiel twin for rps"):
        infoset_map("rps")


def test_a_policy_of_a_simultaneous_game_says_it_must_be_built_on_the_turn_based_one():
    """nashzoo plays OpenSpiel's simultaneous-move games turn by turn; a TabularPolicy built on
    the raw game has other information states, and the refusal now says which game to use."""
    from open_spiel.python import policy as os_policy

    from nashzoo.agents import PolicyError
    from nashzoo.eval.openspiel import from_openspiel

    game = load_game("openspiel:matrix_rps")
    with pytest.raises(PolicyError, match=r"build the policy on game\.openspiel_game"):
        from_openspiel(game, os_policy.TabularPolicy(pyspiel.load_game("matrix_rps")))
    converted = from_openspiel(game, os_policy.TabularPolicy(game.openspiel_game))
    assert nash_conv(game, converted) == pytest.approx(0.0, abs=1e-12)  # uniform RPS


def test_nashzoo_games_offers_no_env_for_a_game_without_tensors(capsys):
    """`nashzoo games openspiel:coordinated_mp` printed an env call that raises."""
    from nashzoo.cli import main

    assert main(["games", "openspiel:coordinated_mp"]) == 0
    out = capsys.readouterr().out
    assert "none: the game defines no information-set tensors to observe" in out
    assert main(["games", "openspiel:coordinated_mp", "--json"]) == 0
    assert '"pettingzoo_env": null' in capsys.readouterr().out
