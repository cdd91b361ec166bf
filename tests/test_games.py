"""Foundation tests of the game rules: hand-checked payoffs, tree sizes, information sets and
tensors, Hypothesis properties of the State API, ``load_game`` errors, and identity with
OpenSpiel's Kuhn and Leduc trees when ``pyspiel`` is importable.

The payoff tables below are written out by hand from the rules, not recomputed with the code
under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nashzoo.games import (
    CHANCE,
    TERMINAL,
    IllegalActionError,
    MatrixGame,
    State,
    compile_tree,
    display_id,
    game_names,
    load_game,
)

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def play(game_name: str, history: list[int], **params: object) -> State:
    state = load_game(game_name, **params).new_initial_state()
    for action in history:
        state = state.child(action)
    return state


def walk(state: State):
    """Every state of the subtree of ``state`` (depth first), using only ``State.child``."""
    yield state
    if not state.is_terminal():
        for action in state.legal_actions():
            yield from walk(state.child(action))


# --- Kuhn: every terminal history, by hand -------------------------------------------------
# Cards J, Q, K = 0, 1, 2; actions p = 0 (pass), b = 1 (bet). Ante 1, bet 1.
# pp: showdown for 1; bb / pbb: showdown for 2; bp: player 1 folds, player 0 wins 1;
# pbp: player 0 folds, loses 1. Payoff to player 0 (player 1 gets the negative).
J, Q, K = 0, 1, 2
P, B = 0, 1
KUHN_PAYOFFS = {
    (J, Q): {"pp": -1, "pbp": -1, "pbb": -2, "bp": +1, "bb": -2},
    (J, K): {"pp": -1, "pbp": -1, "pbb": -2, "bp": +1, "bb": -2},
    (Q, J): {"pp": +1, "pbp": -1, "pbb": +2, "bp": +1, "bb": +2},
    (Q, K): {"pp": -1, "pbp": -1, "pbb": -2, "bp": +1, "bb": -2},
    (K, J): {"pp": +1, "pbp": -1, "pbb": +2, "bp": +1, "bb": +2},
    (K, Q): {"pp": +1, "pbp": -1, "pbb": +2, "bp": +1, "bb": +2},
}


def _kuhn_cases():
    for (c0, c1), table in KUHN_PAYOFFS.items():
        for betting, payoff in table.items():
            yield pytest.param(
                [c0, c1, *[P if ch == "p" else B for ch in betting]],
                payoff,
                id=f"{'JQK'[c0]}{'JQK'[c1]}-{betting}",
            )


@pytest.mark.parametrize(("history", "payoff"), list(_kuhn_cases()))
def test_kuhn_terminal_payoffs_by_hand(history: list[int], payoff: int) -> None:
    state = play("kuhn_poker", history)
    assert state.is_terminal()
    assert state.current_player() == TERMINAL
    np.testing.assert_array_equal(state.returns(), [payoff, -payoff])
    # One step earlier the game was not over.
    assert not play("kuhn_poker", history[:-1]).is_terminal()


def test_kuhn_hand_table_covers_every_terminal() -> None:
    terminals = {
        tuple(s.history())
        for s in walk(load_game("kuhn_poker").new_initial_state())
        if s.is_terminal()
    }
    by_hand = {tuple(p.values[0]) for p in _kuhn_cases()}
    assert len(by_hand) == 30
    assert terminals == by_hand


# --- Leduc: representative terminal histories, by hand -------------------------------------
# Cards Js Jh Qs Qh Ks Kh = 0..5; actions f = 0, c = 1, r = 2. Ante 1; raise 2 in round one,
# 4 in round two. History = [card p0, card p1, round-one actions, public card, round-two
# actions]. Payoff to player 0 (player 1 gets the negative); the comment gives the stakes.
Js, Jh, Qs, Qh, Ks, Kh = range(6)
F, C, R = 0, 1, 2
LEDUC_CASES = [
    # round-one folds
    ("r1 raise, fold", [Js, Ks, R, F], +1),  # p1 folds with only the ante in
    ("r1 check, raise, fold", [Ks, Js, C, R, F], -1),  # p0 folds with the ante in
    ("r1 raise, reraise, fold", [Qs, Qh, R, R, F], -3),  # p0 folds after putting in 3
    ("r1 check, raise, reraise, fold", [Js, Jh, C, R, R, F], +3),  # p1 folds after 3
    # round-two folds
    ("r2 raise, fold", [Js, Qs, C, C, Ks, R, F], +1),  # 1 each after round one
    ("r2 check, raise, fold", [Kh, Qh, R, C, Js, C, R, F], -3),  # 3 each after round one
    ("r2 raise, reraise, fold", [Jh, Qh, C, C, Kh, R, R, F], -5),  # p0 raised to 5, folds
    # showdowns
    ("pair beats higher card", [Js, Ks, R, C, Jh, R, C], +7),  # 3 + 4 each
    ("p1 pair beats p0 king", [Kh, Qs, C, R, R, C, Qh, R, R, C], -13),  # 5 + 8 each
    ("high card king", [Kh, Jh, R, C, Qs, C, C], +3),  # 3 each
    ("high card queen loses", [Qs, Kh, C, C, Js, C, C], -1),  # 1 each
    ("split pot, same rank", [Qs, Qh, R, C, Ks, R, R, C], 0),  # 11 each, tie
    ("split pot, check down", [Js, Jh, C, C, Qs, C, C], 0),
]


@pytest.mark.parametrize(
    ("history", "payoff"), [pytest.param(h, p, id=name) for name, h, p in LEDUC_CASES]
)
def test_leduc_terminal_payoffs_by_hand(history: list[int], payoff: int) -> None:
    state = play("leduc_poker", history)
    assert state.is_terminal()
    np.testing.assert_array_equal(state.returns(), [payoff, -payoff])
    assert not play("leduc_poker", history[:-1]).is_terminal()


def test_leduc_betting_limits_by_hand() -> None:
    # Opening: no bet to face, so no fold.
    assert play("leduc_poker", [Js, Ks]).legal_actions() == [C, R]
    # Facing a raise: fold, call, reraise.
    assert play("leduc_poker", [Js, Ks, R]).legal_actions() == [F, C, R]
    # Two raises in the round: no third.
    assert play("leduc_poker", [Js, Ks, C, R, R]).legal_actions() == [F, C]
    # Round one over after a call: the public card is dealt (not either private card).
    state = play("leduc_poker", [Js, Ks, R, C])
    assert state.is_chance_node()
    assert [c for c, _ in state.chance_outcomes()] == [Jh, Qs, Qh, Kh]
    # Round two starts again with player 0, check or raise, and the raise counter is reset.
    state = play("leduc_poker", [Js, Ks, C, R, R, C, Qs])
    assert state.current_player() == 0
    assert state.legal_actions() == [C, R]
    assert play("leduc_poker", [Js, Ks, C, R, R, C, Qs, R, R]).legal_actions() == [F, C]


def test_matrix_presets_by_hand() -> None:
    rps = load_game("rps")
    # rock(0) vs scissors(2): rock wins; paper(1) vs rock(0): paper wins; draws pay 0.
    expected = {(0, 2): 1, (2, 0): -1, (1, 0): 1, (0, 1): -1, (2, 1): 1, (1, 2): -1}
    for a in range(3):
        for b in range(3):
            state = rps.new_initial_state().child(a).child(b)
            want = expected.get((a, b), 0)
            np.testing.assert_array_equal(state.returns(), [want, -want])
    pd = load_game("matrix", preset="prisoners_dilemma")
    # cooperate = 0, defect = 1: (C,C) 3/3, (C,D) 0/5, (D,C) 5/0, (D,D) 1/1.
    for (a, b), want in {(0, 0): (3, 3), (0, 1): (0, 5), (1, 0): (5, 0), (1, 1): (1, 1)}.items():
        np.testing.assert_array_equal(pd.new_initial_state().child(a).child(b).returns(), want)


# --- sizes, information sets and tensors ---------------------------------------------------
@pytest.mark.parametrize(
    ("name", "histories", "infosets", "terminals"),
    [("kuhn_poker", 58, 12, 30), ("leduc_poker", 9457, 936, 5520), ("rps", 13, 2, 9)],
)
def test_counts(name: str, histories: int, infosets: int, terminals: int) -> None:
    """The sizes docs/ARCHITECTURE.md's known values quote (histories as OpenSpiel counts
    them: every node, chance and terminal ones included)."""
    game = load_game(name)
    decision_sets: set[tuple[int, str]] = set()
    num_histories = num_terminals = 0
    for state in walk(game.new_initial_state()):
        num_histories += 1
        if state.is_terminal():
            num_terminals += 1
        elif not state.is_chance_node():
            player = state.current_player()
            decision_sets.add((player, state.infoset_key(player)))
    assert (num_histories, len(decision_sets), num_terminals) == (histories, infosets, terminals)
    tree = compile_tree(game)
    assert (tree.num_nodes, tree.num_infosets, tree.num_terminals) == (
        histories,
        infosets,
        terminals,
    )


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "rps"])
def test_tensors_identify_information_sets(name: str) -> None:
    """One tensor per (player, key) over every history, and distinct tensors for distinct keys.

    Checked for every player at every node (not only where the player acts), since the env
    shows both players their view at every step. The one exception is OpenSpiel's Leduc
    layout: a fold is not recorded in the tensor (it ends the game), so the view at a terminal
    reached by a fold has the tensor of the view just before the fold.
    """
    game = load_game(name)
    tensor_of: dict[tuple[int, str], bytes] = {}
    decision: set[tuple[int, str]] = set()
    terminal: set[tuple[int, str]] = set()
    for state in walk(game.new_initial_state()):
        for player in range(game.num_players):
            key = state.infoset_key(player)
            tensor = state.infoset_tensor(player)
            assert tensor.dtype == np.float32
            assert tensor.shape == (game.infoset_tensor_size,)
            assert set(np.unique(tensor)) <= {0.0, 1.0}
            assert tensor_of.setdefault((player, key), tensor.tobytes()) == tensor.tobytes(), (
                f"two histories of {key!r} (player {player}) have different tensors"
            )
            if state.is_terminal():
                terminal.add((player, key))
            elif state.current_player() == player:
                decision.add((player, key))
    assert len({tensor_of[v] for v in decision}) == len(decision)
    playing = [v for v in tensor_of if v not in terminal]
    assert len({tensor_of[v] for v in playing}) == len(playing)
    by_tensor = {tensor_of[v]: v for v in playing}
    for view in terminal:
        twin = by_tensor.get(tensor_of[view])
        if twin is not None:  # only a fold may be invisible in the tensor
            assert game.name == "leduc_poker"
            assert view[1] == twin[1] + "f", (view, twin)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_compiled_tree_matches_state_infosets(name: str) -> None:
    game = load_game(name)
    tree = compile_tree(game)
    for state in walk(game.new_initial_state()):
        if state.is_terminal() or state.is_chance_node():
            continue
        player = state.current_player()
        index = tree.index_of(state.infoset_key(player))
        assert tree.infoset_player[index] == player
        np.testing.assert_array_equal(tree.infoset_tensors[index], state.infoset_tensor(player))
        np.testing.assert_array_equal(tree.legal_mask[index], state.legal_actions_mask() == 1)


def test_kuhn_keys_and_tensor_layout_by_hand() -> None:
    state = play("kuhn_poker", [Q, K, P, B])
    assert state.infoset_key(0) == "Q|pb"
    assert state.infoset_key(1) == "K|pb"
    # player one-hot, card one-hot (J Q K), three betting slots (pass, bet).
    np.testing.assert_array_equal(state.infoset_tensor(0), [1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(state.infoset_tensor(1), [0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0])


def test_leduc_keys_and_tensor_layout_by_hand() -> None:
    state = play("leduc_poker", [Qh, Ks, R, C, Js, C])
    assert state.infoset_key(0) == "Qh|Js|rc/c"
    assert state.infoset_key(1) == "Ks|Js|rc/c"
    want = np.zeros(30, dtype=np.float32)
    want[1] = 1  # player 1
    want[2 + Ks] = 1  # own card
    want[8 + Js] = 1  # public card
    want[14 + 1] = 1  # round one slot 0: raise = (0, 1)
    want[16 + 0] = 1  # round one slot 1: call = (1, 0)
    want[22 + 0] = 1  # round two slot 0: call
    np.testing.assert_array_equal(state.infoset_tensor(1), want)


# --- Hypothesis properties -----------------------------------------------------------------
GAMES = ["rps", "kuhn_poker", "leduc_poker", "matching_pennies", "biased_rps"]


def _load(name: str):
    if name in ("matching_pennies", "biased_rps"):
        return load_game("matrix", preset=name)
    return load_game(name)


def _check_illegal_unchanged(state: State, action: object) -> None:
    before = (state.history(), state.current_player(), state.returns().tolist())
    with pytest.raises(IllegalActionError) as info:
        state.child(action)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    legal = state.legal_actions()
    for a in legal:
        assert str(a) in str(info.value)
    assert (state.history(), state.current_player(), state.returns().tolist()) == before
    if legal:  # retrying with a legal action works
        assert state.child(legal[0]).history() == [*state.history(), legal[0]]


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "rps"])
def test_child_refuses_non_integer_actions_instead_of_casting(name: str) -> None:
    game = load_game(name)
    state = game.new_initial_state()
    if state.is_chance_node():
        state = state.child(0).child(2 if name == "leduc_poker" else 1)
    legal = state.legal_actions()
    for bad in (1.9, 1.0, np.float64(0.0), "0", True, False, np.True_, None, np.array([0])):
        with pytest.raises(IllegalActionError, match="not an integer action id") as info:
            state.child(bad)  # type: ignore[arg-type]
        assert repr(bad) in str(info.value)
        assert all(f"{a} ({state.action_to_string(a)})" in str(info.value) for a in legal)
        _check_illegal_unchanged(state, bad)
    # Python ints, numpy integers and 0-d integer arrays are integer ids.
    for good in (legal[0], np.int64(legal[0]), np.int8(legal[0]), np.array(legal[0])):
        child = state.child(good)  # type: ignore[arg-type]
        assert child.history()[-1] == legal[0] and type(child.history()[-1]) is int


@PROPERTY_SETTINGS
@given(name=st.sampled_from(GAMES), data=st.data())
def test_random_playouts_satisfy_state_invariants(name: str, data: st.DataObject) -> None:
    game = _load(name)
    state = game.new_initial_state()
    while True:
        history = state.history()
        player = state.current_player()
        if state.is_terminal():
            assert state.legal_actions() == []
            assert not state.legal_actions_mask().any()
            if getattr(game, "zero_sum", True):
                assert state.returns().sum() == pytest.approx(0.0)
            _check_illegal_unchanged(state, 0)
            break
        np.testing.assert_array_equal(state.returns(), np.zeros(game.num_players))
        if state.is_chance_node():
            assert player == CHANCE
            outcomes = state.chance_outcomes()
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            assert all(p > 0 for _, p in outcomes)
            assert [a for a, _ in outcomes] == state.legal_actions()
            action = data.draw(st.sampled_from([a for a, _ in outcomes]))
        else:
            assert 0 <= player < game.num_players
            legal = state.legal_actions()
            assert legal == sorted(legal)
            mask = state.legal_actions_mask()
            assert mask.dtype == np.int8
            assert np.flatnonzero(mask).tolist() == legal
            illegal = [a for a in range(game.num_actions) if a not in legal]
            bad = data.draw(st.sampled_from([*illegal, game.num_actions, -1, 99]))
            _check_illegal_unchanged(state, bad)
            action = data.draw(st.sampled_from(legal))
        child = state.child(action)
        assert state.history() == history  # the parent is untouched
        assert child.history() == [*history, action]
        state = child


payoff_matrices = st.integers(1, 4).flatmap(
    lambda m: st.integers(1, 4).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(-5, 5), min_size=n, max_size=n), min_size=m, max_size=m
        )
    )
)


@PROPERTY_SETTINGS
@given(row=payoff_matrices, general_sum=st.booleans(), data=st.data())
def test_matrix_games_from_random_payoffs(
    row: list[list[int]], general_sum: bool, data: st.DataObject
) -> None:
    m, n = len(row), len(row[0])
    col = [[(3 * i + j) % 7 - 3 for j in range(n)] for i in range(m)] if general_sum else None
    game = load_game("matrix", row_payoffs=row, col_payoffs=col)
    assert isinstance(game, MatrixGame)
    assert game.num_actions == max(m, n)
    assert game.zero_sum == (col is None or np.allclose(np.add(row, col), 0))
    root = game.new_initial_state()
    assert root.legal_actions() == list(range(m))
    for a in range(m):
        after = root.child(a)
        assert after.current_player() == 1
        assert after.legal_actions() == list(range(n))
        # Player 1 cannot see player 0's move.
        assert after.infoset_key(1) == root.child(0).infoset_key(1)
        np.testing.assert_array_equal(after.infoset_tensor(1), root.child(0).infoset_tensor(1))
    a, b = data.draw(st.integers(0, m - 1)), data.draw(st.integers(0, n - 1))
    end = root.child(a).child(b)
    assert end.is_terminal()
    want_col = -row[a][b] if col is None else col[a][b]
    np.testing.assert_array_equal(end.returns(), [row[a][b], want_col])
    if m < game.num_actions:
        with pytest.raises(IllegalActionError):
            root.child(m)
    # The same payoffs give the same game id (so caches and checkpoints agree).
    assert load_game("matrix", row_payoffs=row, col_payoffs=col).id == game.id


def test_matrix_custom_action_names_are_part_of_the_game_id() -> None:
    plain = load_game("matrix", preset="rps")
    named = load_game("matrix", preset="rps", action_names=["stone", "paper", "scissors"])
    assert named.id != plain.id and named != plain
    assert named.params["action_names"] == ["stone", "paper", "scissors"]
    # The preset's own names (or the default a0, a1, ...) leave the id as it was.
    assert load_game("matrix", preset="rps", action_names=["rock", "paper", "scissors"]) == plain
    assert "action_names" not in load_game("matrix", row_payoffs=[[1, 2]]).params
    assert load_game("matrix", row_payoffs=[[1, 2]], action_names=["a0", "a1"]).params == {
        "row_payoffs": [[1.0, 2.0]]
    }
    assert load_game("matrix", **named.params) == named  # params reload the same game
    # Env tables (cached per id, like compiled trees) carry each game's own names.
    from nashzoo.envs import matrix_game_v0
    from nashzoo.envs.tables import env_tables

    assert "p0:rock" in env_tables(plain).view_key
    assert "p0:stone" in env_tables(named).view_key
    env = matrix_game_v0.env(preset="rps", action_names=["stone", "paper", "scissors"])
    env.reset(seed=0)
    env.step(0)
    assert env.infos["player_0"]["infoset_key"] == "p0:stone"
    assert env.unwrapped.game_state().infoset_key(0) == "p0:stone"


def test_a_matrix_games_payoffs_are_read_only() -> None:
    """An edit in place changed what States returned while the id, the cached tree and
    solve_game kept the old payoffs; now the arrays refuse it, and the caller's array stays
    the caller's (the game copies it)."""
    mine = np.array([[1.0, -1.0], [-1.0, 1.0]])
    game = MatrixGame(row_payoffs=mine)
    for payoffs in (game.row_payoffs, game.col_payoffs):
        with pytest.raises(ValueError, match="read-only"):
            payoffs[0, 0] = 10.0
    mine[0, 0] = 10.0
    assert game.row_payoffs[0, 0] == 1.0
    row, col = game.payoff_matrices()  # writable copies, to build another game from
    row[0, 0] = 5.0
    assert MatrixGame(row_payoffs=row, col_payoffs=col).row_payoffs[0, 0] == 5.0


def _big_matrix(last: float = 399.0) -> MatrixGame:
    payoffs = np.arange(400.0).reshape(20, 20)
    payoffs[-1, -1] = last
    return MatrixGame(row_payoffs=payoffs.tolist())


def test_a_game_id_is_written_once() -> None:
    """Every cache look-up reads the id; a 200x300 matrix game's is 1.2 MB of text, and
    writing it on every read cost 40 ms (regret matching: 270 ms per iteration)."""
    game = _big_matrix()
    assert game.id is game.id
    assert load_game(game.id).id == game.id  # the whole id still reads back as the game


def test_long_game_ids_are_shortened_for_display() -> None:
    """Messages and tables show the first 80 characters of an id over 120 and a hash that
    tells two long ids apart; shorter ids are shown whole."""
    assert display_id("kuhn_poker") == load_game("kuhn_poker").display_id == "kuhn_poker"
    assert load_game("matrix", preset="rps").display_id == "matrix(preset='rps')"
    game = _big_matrix()
    assert len(game.id) == 2750
    assert game.display_id == (
        "matrix(row_payoffs=[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11."
        "...#a941d84158"
    )
    assert _big_matrix(last=1.0).display_id != game.display_id
    assert repr(game) == f"<Game {game.display_id}>"
    assert str(game.new_initial_state().describe()).startswith(game.display_id + ":")


@pytest.mark.parametrize(
    ("payoffs", "match"),
    [
        ([["1e6", 0], [0, 1]], "must hold numbers, got text: write them without quotes"),
        ([[True, False], [False, True]], "must hold numbers, got True/False: write 1 and 0"),
        ([[1, 0], [0]], "rectangular 2-D array of numbers"),
        ([[1, float("nan")]], "only finite numbers"),
    ],
)
def test_matrix_payoffs_must_be_numbers(payoffs: object, match: str) -> None:
    """Text and booleans were read as numbers without a word ("1e6" as 1e6, True as 1)."""
    with pytest.raises(ValueError, match=match):
        load_game("matrix", row_payoffs=payoffs)
    with pytest.raises(ValueError, match=match):
        load_game("matrix", row_payoffs=[[0, 1], [1, 0]], col_payoffs=payoffs)


@pytest.mark.parametrize(
    ("names", "match"),
    [
        (["x", "x", "y"], "distinct.*'x'"),
        (["x", "", "y"], r"non-empty.*\[1\]"),
        (["x", "  ", "y"], "non-empty"),
        ("xyz", "list of strings"),
        ({"x", "y", "z"}, "list of strings"),
        (3, "list of strings"),
    ],
)
def test_matrix_action_names_must_be_distinct_non_empty_strings(names: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_game("matrix", preset="rps", action_names=names)
    with pytest.raises(ValueError, match=match):
        load_game("matrix", row_payoffs=[[1, 2, 3]], action_names=names)


# --- load_game errors ----------------------------------------------------------------------
def test_game_names() -> None:
    assert set(game_names()) == {"rps", "matrix", "kuhn_poker", "leduc_poker", "liars_dice"}
    assert load_game("kuhn").name == "kuhn_poker"
    assert load_game("leduc").name == "leduc_poker"
    game = load_game("kuhn_poker")
    assert load_game(game) is game


@pytest.mark.parametrize(
    ("args", "kwargs", "must_mention"),
    [
        (("chess",), {}, ["chess", "kuhn_poker", "leduc_poker", "rps", "matrix"]),
        ((42,), {}, ["string", "kuhn_poker", "leduc_poker", "rps", "matrix"]),
        ((None,), {}, ["string", "None", "kuhn_poker", "leduc_poker", "rps", "matrix"]),
        (("kuhn_poker",), {"players": 3}, ["players"]),
        (("leduc_poker",), {"raise_size": 3}, ["raise_size"]),
        (("rps",), {"preset": "rps"}, ["row_payoffs"]),
        (("matrix",), {}, ["preset", "rps", "matching_pennies"]),
        (("matrix",), {"preset": "nope"}, ["nope", "biased_rps", "prisoners_dilemma"]),
        (("matrix",), {"payoffs": [[1]]}, ["payoffs", "row_payoffs", "col_payoffs"]),
        (("matrix",), {"row_payoffs": [1, 2]}, ["2-D"]),
        (("matrix",), {"row_payoffs": [[1, "x"]]}, ["numbers"]),
        (("matrix",), {"row_payoffs": [[1, 2], [3]]}, ["row_payoffs"]),
        (("matrix",), {"row_payoffs": [[1, 2]], "col_payoffs": [["y", 1]]}, ["numbers"]),
        (("matrix",), {"row_payoffs": [[np.inf]]}, ["finite"]),
        (("matrix",), {"row_payoffs": [[1, 2]], "col_payoffs": [[1]]}, ["shape"]),
        (("matrix",), {"preset": "rps", "row_payoffs": [[1]]}, ["not both"]),
        (("matrix",), {"row_payoffs": [[1, 2]], "action_names": ["a"]}, ["action_names"]),
        # a list where a preset name goes (TypeError: unhashable), a payoff no float holds
        # (a raw OverflowError), and rps's parameters named in both places games are loaded
        (("matrix",), {"preset": ["rps"]}, ["preset name", "row_payoffs=[[...]]"]),
        (("matrix",), {"row_payoffs": [[10**400, 0], [0, 1]]}, ["numbers", "too large"]),
        (("rps",), {"x": 1}, ['--game "matrix(row_payoffs=[[', "load_game('matrix', row_"]),
    ],
)
def test_load_game_errors_list_what_is_valid(
    args: tuple, kwargs: dict, must_mention: list[str]
) -> None:
    with pytest.raises(ValueError) as info:
        load_game(*args, **kwargs)
    for word in must_mention:
        assert word in str(info.value)


def test_payoffs_given_where_the_preset_goes_say_how_to_pass_payoffs() -> None:
    """``MatrixGame([[1, 2], [3, 4]])`` puts the payoffs in ``preset`` (TypeError: unhashable
    type 'list'); the error names the keyword to use."""
    with pytest.raises(ValueError, match=r"got \[\[1, 2\], \[3, 4\]\]; pass payoffs by name"):
        MatrixGame([[1, 2], [3, 4]])


def test_zero_sum_is_relative_to_the_payoff_scale() -> None:
    """``zero_sum`` used numpy's absolute 1e-8 while ``constant_sum`` is relative: payoffs of
    1e-10 against 0 were 'zero-sum', and 1e10 with a rounding error of 1e-5 were not."""
    from nashzoo.eval import constant_sum

    tiny = load_game("matrix", row_payoffs=[[1e-10, 0.0]], col_payoffs=[[0.0, 0.0]])
    assert not tiny.zero_sum and constant_sum(tiny) is None
    rounded = load_game("matrix", row_payoffs=[[1e10, 0.0]], col_payoffs=[[-1e10 + 1e-5, 0.0]])
    assert rounded.zero_sum and constant_sum(rounded) is not None
    assert (
        load_game("rps").zero_sum and not load_game("matrix", preset="prisoners_dilemma").zero_sum
    )


def test_biased_rps_is_openspiels_matrix_brps_divided_by_100() -> None:
    import nashzoo.games.matrix as matrix

    row, col = load_game("matrix", preset="biased_rps").payoff_matrices()
    np.testing.assert_array_equal(
        row * 100, [[0, -25, 50], [25, 0, -5], [-50, 5, 0]]
    )  # OpenSpiel's matrix_brps row utilities (checked against pyspiel below when installed)
    np.testing.assert_array_equal(col, -row)
    doc = matrix.__doc__.split("biased_rps", 1)[1].split("matching_pennies", 1)[0]
    assert "divided by 100" in doc  # the docs say so instead of claiming the same payoffs
    try:
        import pyspiel
    except ImportError:
        return
    brps = pyspiel.load_game("matrix_brps")
    theirs = [[brps.player_utility(0, r, c) for c in range(3)] for r in range(3)]
    np.testing.assert_allclose(row * 100, theirs)


def test_load_game_refuses_params_for_loaded_game() -> None:
    with pytest.raises(ValueError, match="already loaded"):
        load_game(load_game("kuhn_poker"), players=2)


def test_bad_player_index_is_a_value_error() -> None:
    state = play("kuhn_poker", [J, Q])
    for bad in (-1, 2, "0", 1.0):
        with pytest.raises(ValueError, match="player"):
            state.infoset_key(bad)  # type: ignore[arg-type]


# --- OpenSpiel -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_tree_matches_openspiel(name: str) -> None:
    """Same histories, moves, chance probabilities, returns, information-set partition and
    information-state tensors as OpenSpiel's game of the same name (walked in lockstep)."""
    pyspiel = pytest.importorskip("pyspiel")
    ours_game, theirs_game = load_game(name), pyspiel.load_game(name)
    assert ours_game.infoset_tensor_size == theirs_game.information_state_tensor_size()
    assert ours_game.num_actions == theirs_game.num_distinct_actions()
    ours_to_theirs: dict[tuple[int, str], str] = {}
    theirs_to_ours: dict[str, tuple[int, str]] = {}
    counts = {"nodes": 0, "terminals": 0}
    stack = [(ours_game.new_initial_state(), theirs_game.new_initial_state())]
    while stack:
        ours, theirs = stack.pop()
        counts["nodes"] += 1
        assert ours.history() == theirs.history()
        assert ours.current_player() == theirs.current_player()
        for p in range(2):
            np.testing.assert_array_equal(
                ours.infoset_tensor(p),
                np.asarray(theirs.information_state_tensor(p), dtype=np.float32),
                err_msg=f"player {p} tensor at {ours.history()}",
            )
        if theirs.is_terminal():
            counts["terminals"] += 1
            np.testing.assert_allclose(ours.returns(), theirs.returns())
            continue
        if theirs.is_chance_node():
            mine, their = ours.chance_outcomes(), sorted(theirs.chance_outcomes())
            assert [a for a, _ in mine] == [a for a, _ in their]
            np.testing.assert_allclose([q for _, q in mine], [q for _, q in their])
        else:
            assert ours.legal_actions() == theirs.legal_actions()
            p = ours.current_player()
            key, their_key = (p, ours.infoset_key(p)), theirs.information_state_string(p)
            assert ours_to_theirs.setdefault(key, their_key) == their_key
            assert theirs_to_ours.setdefault(their_key, key) == key
        for action in ours.legal_actions():
            stack.append((ours.child(action), theirs.child(action)))
    tree = compile_tree(ours_game)
    assert counts == {"nodes": tree.num_nodes, "terminals": tree.num_terminals}
    assert len(ours_to_theirs) == tree.num_infosets


def test_plain_parameters_read_back_without_the_parser() -> None:
    """A 1000x1000 matrix game's payoffs went through ``ast.literal_eval(repr(...))`` (7 s,
    1 GB) to learn what their types say: plain numbers in lists read back. Anything else still
    goes through the parser."""
    from nashzoo.games.base import _plain_literal, _reads_back

    class Tagged(float):
        def __repr__(self) -> str:
            return f"Tagged({float(self)})"

    plain = {"a": [[1.5, -2], (0, "x")], "b": None, "c": True}
    assert _plain_literal(plain) and _reads_back(plain)
    for odd in ([1.0, float("inf")], [float("nan")], [Tagged(1.0)]):
        assert not _plain_literal(odd)
        assert not _reads_back(odd)  # the parser agrees: none of them reads back
    # numpy's scalars go to the parser, which decides by their repr: "np.float64(1.0)" from
    # numpy 2 on, "1.0" (which reads back) before
    assert not _plain_literal([np.float64(1.0)])
    assert _reads_back([[1, 2], [3, 4]]) and not _plain_literal({1, 2})
    assert _plain_literal([[10**400, 1.5], [True, 0]])  # an int past floats: checked one by one


def test_a_long_id_of_numbers_reads_back_without_the_parser(monkeypatch) -> None:
    """A 1000x1000 matrix game loaded by its id (7 MB of text: race workers and checkpoints
    load games so) took 19 s in Python's parser; an id whose parameters are numbers in lists is
    read as JSON, taken only where it writes back to the very text."""
    from nashzoo.games import registry
    from nashzoo.games.matrix import MatrixGame

    rng = np.random.default_rng(0)
    game = MatrixGame(row_payoffs=rng.normal(size=(120, 120)).round(3).tolist())
    both = MatrixGame(row_payoffs=game.row_payoffs.tolist(), col_payoffs=(-game.row_payoffs * 2))
    names = MatrixGame(
        row_payoffs=game.row_payoffs.tolist(), action_names=[f'a"{i}' for i in range(120)]
    )

    def no_parser(*args, **kwargs):
        raise AssertionError("the parser was used")

    monkeypatch.setattr(registry.ast, "parse", no_parser)
    for numbers in (game, both):
        assert len(numbers.id) > 10_000
        loaded = load_game(numbers.id)
        assert loaded.id == numbers.id
        np.testing.assert_array_equal(loaded.col_payoffs, numbers.col_payoffs)
    with pytest.raises(AssertionError, match="the parser was used"):
        load_game(names.id)  # text in quotes: the parser's to read
    with pytest.raises(AssertionError, match="the parser was used"):
        load_game(game.id.replace(", ", ",  "))  # not as an id writes it
    monkeypatch.undo()
    assert load_game(names.id).id == names.id


def test_two_long_ids_that_part_late_are_shown_where_they_part():
    """Two universal_poker games apart only in a parameter near the end of their ids were both
    cut to the same first 80 characters in "holds a policy for X, not for Y": only the hashes
    told them apart (review of the scale ladder)."""
    from nashzoo.games import display_ids_apart

    spec = "openspiel:universal_poker(" + ",".join(f"p{i}={i} {i}" for i in range(20))
    first, second = spec + ")", spec + ",stack=1200 1200)"
    assert display_id(first)[:80] == display_id(second)[:80]
    theirs, ours = display_ids_apart(first, second)
    assert theirs != ours and "stack=1200 1200" in ours and "stack" not in theirs
    assert theirs.startswith(first[:40]) and len(ours) < 150
    assert display_ids_apart("kuhn_poker", "leduc_poker") == ("kuhn_poker", "leduc_poker")
    apart = ("x" * 200, "y" * 200)  # parted within the first 80: each id's usual short form
    assert display_ids_apart(*apart) == (display_id(apart[0]), display_id(apart[1]))
