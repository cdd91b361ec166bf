"""Native Liar's dice against OpenSpiel's ``liars_dice``: every history side by side, the known
sizes and numbers, properties of random play, and the game through the training stack."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nashzoo.agents import uniform_policy
from nashzoo.eval import nash_conv, solve_game
from nashzoo.games import LiarsDiceGame, compile_tree, load_game
from nashzoo.train import train

pyspiel = pytest.importorskip("pyspiel")

SMALL = [
    {"dice_sides": 3},
    {"dice_sides": 4},
    {"numdice": 2, "dice_sides": 2},
    {"dice_sides": 3, "bidding_rule": "reset-quantity"},
    {"numdice": 2, "dice_sides": 2, "bidding_rule": "reset-quantity"},
]


def walk_side_by_side(params: dict) -> int:
    """Walk every history of nashzoo's and OpenSpiel's game together, asserting they agree."""
    ours = load_game("liars_dice", **params)
    theirs = pyspiel.load_game("liars_dice", params)
    assert ours.num_actions == theirs.num_distinct_actions()
    assert ours.infoset_tensor_size == theirs.information_state_tensor_shape()[0]
    stack = [(ours.new_initial_state(), theirs.new_initial_state())]
    count = 0
    while stack:
        mine, os_state = stack.pop()
        count += 1
        where = os_state.history()
        assert mine.history() == where
        assert mine.current_player() == os_state.current_player(), where
        for p in range(2):
            assert mine.infoset_key(p) == os_state.information_state_string(p), (where, p)
            tensor = np.asarray(os_state.information_state_tensor(p), dtype=np.float32)
            assert mine.infoset_tensor(p).tobytes() == tensor.tobytes(), (where, p)
        if os_state.is_terminal():
            assert mine.returns().tolist() == os_state.returns(), where
            continue
        np.testing.assert_array_equal(mine.returns(), [0.0, 0.0])
        assert mine.legal_actions() == os_state.legal_actions(), where
        if os_state.is_chance_node():
            assert mine.chance_outcomes() == os_state.chance_outcomes(), where
        else:
            mask = np.zeros(ours.num_actions, dtype=np.int8)
            mask[os_state.legal_actions()] = 1
            assert mine.legal_actions_mask().tobytes() == mask.tobytes(), where
        for a in mine.legal_actions():
            assert mine.action_to_string(a) == os_state.action_to_string(a), (where, a)
            stack.append((mine.child(a), os_state.child(a)))
    assert count == ours.num_histories()
    return count


@pytest.mark.parametrize("params", SMALL, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_every_history_matches_openspiel(params: dict) -> None:
    walk_side_by_side(params)


def test_every_history_of_the_default_game_matches_openspiel() -> None:
    assert walk_side_by_side({}) == 294_883


def test_default_sizes_and_uniform_nash_conv() -> None:
    game = load_game("liars_dice")
    assert game == LiarsDiceGame(numdice=1, dice_sides=6) and game.id == "liars_dice"
    tree = compile_tree(game)
    assert (tree.num_nodes, tree.num_infosets) == (294_883, 24_576)
    assert tree.infoset_tensors.shape == (24_576, 21) and tree.num_actions == 13
    # pyspiel.nash_conv(liars_dice, pyspiel.UniformRandomPolicy(game)) (C++, 12 s, so pinned).
    assert nash_conv(game, uniform_policy(game)) == pytest.approx(1.5614886463844795, abs=1e-9)


@pytest.mark.parametrize("spec", ["liars_dice(dice_sides=4)", "liars_dice(numdice=2,dice_sides=2)"])
def test_uniform_nash_conv_and_policies_match_openspiel(spec: str) -> None:
    from nashzoo.eval.openspiel import from_openspiel, infoset_map, to_openspiel, to_pyspiel

    os_game = infoset_map(spec).openspiel_game
    uniform = uniform_policy(spec)
    theirs = pyspiel.nash_conv(os_game, pyspiel.UniformRandomPolicy(os_game))
    assert nash_conv(spec, uniform) == pytest.approx(theirs, abs=1e-9)
    assert pyspiel.nash_conv(os_game, to_pyspiel(spec, uniform)) == pytest.approx(theirs, abs=1e-9)
    trained = train(spec, "cfr_plus", iterations=50).average_policy
    assert nash_conv(spec, trained) == pytest.approx(
        pyspiel.nash_conv(os_game, to_pyspiel(spec, trained)), abs=1e-9
    )
    back = from_openspiel(spec, to_openspiel(spec, trained))
    np.testing.assert_array_equal(back.probs, trained.probs)


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        ("liars_dice(dice_sides=3)", 1 / 9),
        ("liars_dice(dice_sides=4)", 1 / 16),
        ("liars_dice(numdice=2,dice_sides=2)", 7 / 8),
    ],
)
def test_game_value_matches_openspiels_sequence_form_lp(spec: str, value: float) -> None:
    """The values are OpenSpiel's ``sequence_form_lp`` answers (checked live where its cvxopt
    is installed); an equilibrium (NashConv 0) confirms them without it."""
    solution = solve_game(spec)
    np.testing.assert_allclose(solution.value, [value, -value], atol=1e-9)
    assert nash_conv(spec, solution.policy) < 1e-9
    try:
        from open_spiel.python.algorithms import sequence_form_lp
    except ImportError:
        return
    theirs, *_ = sequence_form_lp.solve_zero_sum_game(pyspiel.load_game(spec))
    assert solution.value[0] == pytest.approx(theirs, abs=1e-6)


def test_cfr_plus_reaches_low_nash_conv() -> None:
    result = train("liars_dice(dice_sides=4)", "cfr_plus", iterations=300)
    assert nash_conv("liars_dice(dice_sides=4)", result.average_policy) < 1e-3


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    params=st.sampled_from([{}, {"dice_sides": 3}, {"numdice": 2, "dice_sides": 4}]),
    choices=st.lists(st.integers(0, 10**6), min_size=30, max_size=30),
)
def test_random_play_properties(params: dict, choices: list[int]) -> None:
    """Zero-sum returns, masks equal to the legal actions, bids strictly rising, parents
    untouched by their children, and the key telling whose turn it is."""
    game = load_game("liars_dice", **params)
    state = game.new_initial_state()
    for choice in choices:
        if state.is_terminal():
            break
        legal = state.legal_actions()
        if not state.is_chance_node():
            mask = state.legal_actions_mask()
            assert np.flatnonzero(mask).tolist() == legal
            key = state.infoset_key(state.current_player())
            assert len(key.split()) - 1 == len(state.history()) - game.total_dice
            assert legal[-1] == game.liar or not state.history()[game.total_dice :]
        before = (state.history(), state.infoset_key(0), state.infoset_key(1))
        child = state.child(legal[choice % len(legal)])
        assert (state.history(), state.infoset_key(0), state.infoset_key(1)) == before
        state = child
    if state.is_terminal():
        returns = state.returns()
        assert sorted(returns.tolist()) == [-1.0, 1.0]
        bids = state.history()[game.total_dice :]
        assert bids[-1] == game.liar and bids[:-1] == sorted(set(bids[:-1]))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"numdice": 0}, "numdice must be an integer >= 1, got 0"),
        ({"numdice": 1.5}, "numdice must be an integer >= 1"),
        ({"numdice": True}, "numdice must be an integer >= 1, got True"),
        ({"dice_sides": 1}, "dice_sides must be an integer >= 2, got 1"),
        ({"dice_sides": "6"}, "dice_sides must be an integer >= 2, got '6'"),
        ({"bidding_rule": "highest"}, "bidding_rule must be one of"),
        ({"players": 3}, "players must be 2 .*two-player.*got 3"),
        ({"players": "2"}, "players must be 2 .*got '2'"),
        ({"numdice": 10**9}, "12,000,000,000 bids, more than the 100,000 .*fewer dice or fewer"),
        ({"numdice": 500, "dice_sides": 101}, "101,000 bids, more than the 100,000"),
    ],
)
def test_bad_parameters_are_one_line_value_errors(params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        load_game("liars_dice", **params)
    assert "\n" not in str(info.value)


def test_describe_shows_what_each_player_may_see() -> None:
    game = load_game("liars_dice")
    state = game.new_initial_state()
    for action in (2, 4, 3, 7):  # dice 3 and 5; bids 1-4, 2-2
        state = state.child(action)
    assert "player 1 dice: hidden" in state.describe(0)
    assert "player 0 dice: 3" in state.describe(0)
    assert "bids: player 0 1-4, player 1 2-2" in state.describe(1)
    assert "to move: player 0" in state.describe()
    end = state.child(game.liar).describe(1)
    assert "player 0 dice: 3" in end and "player 1 dice: 5" in end  # a call shows all dice
    assert "Liar called on 2-2: 0 dice count as 2s (2 needed)" in end
    assert "result: player 0 +1, player 1 -1" in end


def _dealt(game: LiarsDiceGame, rolls: list[int]):
    state = game.new_initial_state()
    for roll in rolls:
        state = state.child(roll)
    return state


def test_keys_tell_apart_hands_whose_digits_run_together() -> None:
    """OpenSpiel joins a hand's faces with nothing between them, so with three-digit faces two
    hands can read alike (1,111 and 11,11 are both "1111"); the keys must still differ, or the
    env (which caches what it shows by key) shows one hand's tensor for the other."""
    game = load_game("liars_dice", numdice=2, dice_sides=111)
    one = _dealt(game, [0, 110, 4, 4])  # player 0: 1 and 111
    other = _dealt(game, [10, 10, 4, 4])  # player 0: 11 and 11
    assert one.infoset_tensor(0).tolist() != other.infoset_tensor(0).tolist()
    assert one.infoset_key(0) != other.infoset_key(0)
    assert (one.infoset_key(0), other.infoset_key(0)) == ("1,111", "11,11")
    # Faces of at most two digits cannot run together: OpenSpiel's strings, unchanged.
    assert (
        _dealt(load_game("liars_dice", numdice=2, dice_sides=99), [0, 98, 1, 2]).infoset_key(0)
        == "199"
    )
    assert _dealt(load_game("liars_dice", dice_sides=150), [149, 3]).infoset_key(0) == "150"


def test_env_shows_each_hand_its_own_dice_when_faces_run_together() -> None:
    from nashzoo.envs import liars_dice_v0

    env = liars_dice_v0.env(numdice=2, dice_sides=111)
    game = env.unwrapped.game
    for rolls in ([0, 110, 4, 4], [10, 10, 4, 4]):
        env.reset(seed=0, options={"chance_outcomes": rolls})
        obs, *_ = env.last()
        np.testing.assert_array_equal(obs["observation"], _dealt(game, rolls).infoset_tensor(0))


def test_a_big_game_is_made_in_memory_linear_in_its_bids() -> None:
    """Legal-action tables grow as the square of the bids (2,000 bids: two million entries,
    some 100 MB): a game past the table limit makes them when asked, not up front."""
    import tracemalloc

    tracemalloc.start()
    try:
        game = load_game("liars_dice", numdice=25, dice_sides=40)
        state = game.new_initial_state()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert game.liar == 2_000 and peak < 5 * 2**20, f"{peak / 2**20:.1f} MiB"
    while state.is_chance_node():
        state = state.child(0)
    assert state.legal_actions() == list(range(game.liar))
    assert state.child(1_998).legal_actions() == [1_999, game.liar]
    assert np.flatnonzero(state.child(1_998).legal_actions_mask()).tolist() == [1_999, game.liar]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    params=st.sampled_from(
        [
            {"numdice": 20, "dice_sides": 7},  # 280 bids: past the tables, made when asked
            {"numdice": 9, "dice_sides": 14, "bidding_rule": "reset-quantity"},  # 252: tables
            {"numdice": 13, "dice_sides": 11, "bidding_rule": "reset-quantity"},  # 286
        ]
    ),
    choices=st.lists(st.integers(0, 10**6), min_size=60, max_size=60),
)
def test_random_play_of_big_games_matches_openspiel(params: dict, choices: list[int]) -> None:
    """Legal actions, masks, keys, tensors and returns along a random line of play, against
    OpenSpiel, on games with more bids than the up-front tables take."""
    game = load_game("liars_dice", **params)
    mine, theirs = (
        game.new_initial_state(),
        pyspiel.load_game("liars_dice", params).new_initial_state(),
    )
    for choice in choices:
        assert mine.legal_actions() == theirs.legal_actions(), theirs.history()
        if not theirs.is_chance_node():
            mask = np.zeros(game.num_actions, dtype=np.int8)
            mask[theirs.legal_actions()] = 1
            assert mine.legal_actions_mask().tobytes() == mask.tobytes(), theirs.history()
        for p in range(2):
            assert mine.infoset_key(p) == theirs.information_state_string(p)
            tensor = np.asarray(theirs.information_state_tensor(p), dtype=np.float32)
            assert mine.infoset_tensor(p).tobytes() == tensor.tobytes()
        if theirs.is_terminal():
            assert mine.returns().tolist() == theirs.returns()
            np.testing.assert_array_equal(mine.legal_actions_mask(), 0)
            return
        legal = mine.legal_actions()
        # Small raises keep the game going; the last choice calls when it can.
        action = legal[min(choice % 4, len(legal) - 1)] if choice % 7 else legal[-1]
        mine, theirs = mine.child(action), theirs.child(action)


def test_the_largest_game_taken_is_made_and_played() -> None:
    game = load_game("liars_dice", numdice=500, dice_sides=100)  # 100,000 bids, the limit
    state = game.new_initial_state()
    while state.is_chance_node():
        state = state.child(state.legal_actions()[-1])
    state = state.child(99_998).child(99_999).child(game.liar)
    assert state.returns().tolist() == [-1.0, 1.0]  # all 1,000 dice show 100: 1000-100 holds
    assert game.infoset_tensor_size == 2 + 500 * 100 + 100_001


def test_an_illegal_move_in_a_game_of_many_bids_is_named_in_a_short_message() -> None:
    """The error names the legal actions: all of them while they are few, else the first and
    last ones and how many (280 bids listed in full were 4,000 characters; 100,000, 2 MB)."""
    from nashzoo.envs import liars_dice_v0
    from nashzoo.envs.single_agent import SingleAgentEnv
    from nashzoo.games import IllegalActionError

    game = load_game("liars_dice", numdice=20, dice_sides=7)  # 280 bids
    state = _dealt(game, [0] * game.total_dice)
    with pytest.raises(IllegalActionError) as info:
        state.child(game.liar)  # no bid to call yet
    text = str(info.value)
    assert "legal actions are: 0 (1-1), 1 (1-2)," in text
    assert ", ..., 275 (40-3), 276 (40-4), 277 (40-5), 278 (40-6), 279 (40-7) (280 in all)" in text
    assert len(text) < 500
    env = liars_dice_v0.env(numdice=20, dice_sides=7)
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"279 \(40-7\) \(280 in all\)$") as info:
        env.step(game.liar)
    assert len(str(info.value)) < 500
    single = SingleAgentEnv(game, seat=0, illegal_action="raise")
    single.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"\[0, 1, .*, 279 \(280 in all\)\]$") as info:
        single.step(game.liar)
    assert len(str(info.value)) < 300
    # A few legal actions are all listed, as before.
    with pytest.raises(IllegalActionError, match=r"legal actions are: 279 \(40-7\), 280 \(Liar\)$"):
        state.child(278).child(0)


def test_openspiels_game_strings_load_with_their_players_parameter() -> None:
    """OpenSpiel's ``liars_dice`` has a ``players`` parameter (2 is its only value): its game
    strings, which may carry it, load natively as the same game."""
    spec = "liars_dice(players=2,numdice=2,dice_sides=2)"
    game = load_game(spec)
    assert game == load_game("liars_dice", numdice=2, dice_sides=2)
    assert game.id == "liars_dice(dice_sides=2,numdice=2)"
    assert game.num_histories() == sum(1 for _ in _every_history(pyspiel.load_game(spec)))


def _every_history(os_game):
    stack = [os_game.new_initial_state()]
    while stack:
        state = stack.pop()
        yield state
        if not state.is_terminal():
            stack.extend(state.child(a) for a in state.legal_actions())


def test_an_openspiel_style_bare_string_is_refused_with_the_quoted_spec() -> None:
    """OpenSpiel writes ``bidding_rule=reset-quantity``; nashzoo's specs are Python literals,
    and the refusal spells out the spec that loads."""
    with pytest.raises(ValueError) as info:
        load_game("liars_dice(numdice=2,bidding_rule=reset-quantity)")
    quoted = "liars_dice(numdice=2,bidding_rule='reset-quantity')"
    assert str(info.value).endswith(f"strings in quotes, as in {quoted!r}")
    assert load_game(quoted) == load_game("liars_dice", numdice=2, bidding_rule="reset-quantity")


def test_the_deals_a_game_remembers_stay_bounded_over_long_play(monkeypatch) -> None:
    """Every state with the same rolls shares one Deal, kept by the game; an env playing a big
    game for millions of episodes reaches ever new rolls (6**10 of them with five dice each), so
    the game forgets them all past a limit instead of growing without end (as the env's own
    memo of histories does)."""
    from nashzoo.envs import liars_dice_v0
    from nashzoo.games import liars_dice

    monkeypatch.setattr(liars_dice, "DEALS_MAX", 200, raising=False)
    env = liars_dice_v0.env(numdice=5, dice_sides=6)
    game = env.unwrapped.game
    env.reset(seed=0)
    for _ in range(100):  # about 5 new rolls an episode
        env.reset()
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            env.step(
                None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[-1])
            )
        assert len(game._deals) <= 200
    state = game.new_initial_state()
    for roll in [5, 0, 1, 2, 3, 4, 5, 0, 1, 2]:
        state = state.child(roll)
    assert state.infoset_key(0) == "12346" and state.infoset_key(1) == "12356"
