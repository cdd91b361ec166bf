"""A game that lives only here (README's coin_bluff.py) goes through the whole stack, and every
kind of malformed game is refused at compile time with one line naming the history."""

from __future__ import annotations

import importlib
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from nashzoo import cli
from nashzoo.agents import TabularPolicy
from nashzoo.envs import env as make_env
from nashzoo.eval import expected_returns, nash_conv, solve_game
from nashzoo.games import (
    CHANCE,
    TERMINAL,
    Game,
    GameDefinitionError,
    IllegalActionError,
    State,
    compile_tree,
    fast_walk,
    game_names,
    load_game,
    register_game,
    registry,
    unregister_game,
)
from nashzoo.train import train

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
SOURCE = re.search(r"```python\n# coin_bluff\.py\n(.*?)```", README, flags=re.S).group(1)


@pytest.fixture
def coin_bluff(tmp_path, monkeypatch):
    """README's coin_bluff.py written to a folder and imported from there, as a user would."""
    if "coin_bluff" in game_names():  # README's block may have been exec'd in this process
        unregister_game("coin_bluff")
    (tmp_path / "coin_bluff.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module("coin_bluff")
    yield module
    unregister_game("coin_bluff")
    sys.modules.pop("coin_bluff", None)


def _equilibrium(stake: int) -> TabularPolicy:
    """The closed-form equilibrium: bluff tails with (s-1)/(s+1), call with 2/(s+1)."""
    bluff, call = (stake - 1) / (stake + 1), 2 / (stake + 1)
    spec = "coin_bluff" if stake == 2 else f"coin_bluff(stake={stake})"
    table = {"H": [0.0, 1.0], "T": [1 - bluff, bluff], "claim": [1 - call, call]}
    return TabularPolicy.from_dict(spec, table)


@pytest.mark.parametrize("stake", [2, 3, 5])
def test_exact_numbers_of_the_user_game(coin_bluff, stake):
    game = load_game("coin_bluff", stake=stake)
    assert load_game(game.id) == game  # the id reads back as the same game
    value = solve_game(game).value
    np.testing.assert_allclose(value, [(stake - 1) / (stake + 1), -(stake - 1) / (stake + 1)])
    assert nash_conv(game, _equilibrium(stake)) == pytest.approx(0.0, abs=1e-12)
    tree = compile_tree(game)
    assert (tree.num_nodes, tree.num_infosets, tree.num_terminals) == (11, 3, 6)


def test_user_game_env_passes_pettingzoo_tests(coin_bluff):
    api_test(make_env("coin_bluff"), num_cycles=20)
    seed_test(lambda: make_env("coin_bluff(stake=3)"), num_cycles=20)


def test_cfr_plus_self_play_converges_on_the_user_game(coin_bluff):
    result = train("coin_bluff", "cfr_plus", iterations=3000)
    assert nash_conv("coin_bluff", result.average_policy) < 1e-3


def test_cli_race_train_eval_with_plugin(coin_bluff, capsys):
    argv = ["--plugin", "coin_bluff", "race", "--game", "coin_bluff", "--backend", "serial"]
    argv += ["--learners", "cfr_plus,xfp", "--seeds", "1", "--budget-iterations", "200"]
    assert cli.main([*argv, "--out", "race", "--no-plots"]) == 0
    assert "cfr_plus" in capsys.readouterr().out
    argv = ["--plugin", "coin_bluff", "train", "--game", "coin_bluff(stake=3)"]
    assert cli.main([*argv, "--learner", "cfr_plus", "--iterations", "500", "--out", "run"]) == 0
    assert cli.main(["--plugin", "coin_bluff", "eval", "run/average_policy.json"]) == 0
    assert "coin_bluff(stake=3)" in capsys.readouterr().out


def test_cli_tournament_and_play_with_plugin(coin_bluff, capsys, monkeypatch):
    argv = ["--plugin", "coin_bluff", "tournament", "equilibrium", "uniform"]
    assert cli.main([*argv, "--game", "coin_bluff", "--episodes", "50", "--out", "tour"]) == 0
    assert "equilibrium" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n1\n1\n"))
    argv = ["--plugin", "coin_bluff", "play", "--game", "coin_bluff", "--agent", "equilibrium"]
    assert cli.main([*argv, "--seat", "0", "--seed", "3"]) == 0
    assert "coin bluff" in capsys.readouterr().out


def _installed(tmp_path, monkeypatch, name: str, entries: str) -> None:
    """A distribution ``name`` on sys.path declaring ``entries`` in ``[nashzoo.games]``, and
    the registry made to read the entry points again."""
    info = tmp_path / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[nashzoo.games]\n{entries}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_ENTRY_POINTS_READ", False)


def test_an_installed_package_adds_games_through_the_entry_point_group(tmp_path, monkeypatch):
    """A distribution on sys.path declaring ``[nashzoo.games]`` is found without any import."""
    if "coin_bluff" in game_names():
        unregister_game("coin_bluff")
    package = tmp_path / "bluff_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "games.py").write_text(SOURCE.replace('register_game("coin_bluff", CoinBluff)', ""))
    _installed(tmp_path, monkeypatch, "bluff-pkg", "coin_bluff = bluff_pkg.games:CoinBluff")
    try:
        assert "coin_bluff" in game_names()
        assert load_game("coin_bluff(stake=3)").id == "coin_bluff(stake=3)"
    finally:
        unregister_game("coin_bluff")
        for name in ("bluff_pkg", "bluff_pkg.games"):
            sys.modules.pop(name, None)


def test_a_broken_entry_point_is_named_when_asked_for_and_breaks_nothing_else(
    tmp_path, monkeypatch
):
    """One package's entry point that cannot load, and another's that takes a built-in name:
    each is reported when its own name is asked for, every time; other lookups go on."""
    entries = "missing_game = no_such_module_xyz:Game\nkuhn_poker = os:getcwd"
    _installed(tmp_path, monkeypatch, "broken-pkg", entries)
    for _ in range(2):
        with pytest.raises(ValueError, match="'missing_game' = 'no_such_module_xyz:Game' of "):
            load_game("missing_game")
    with pytest.raises(ValueError, match="unknown game 'typo'"):
        load_game("typo")
    assert load_game("kuhn_poker").name == "kuhn_poker"  # the built-in, untouched


def test_register_game_refuses_bad_names_and_takeovers(coin_bluff):
    with pytest.raises(ValueError, match="built-in"):
        register_game("kuhn_poker", coin_bluff.CoinBluff)
    with pytest.raises(ValueError, match="letters"):
        register_game("has space", coin_bluff.CoinBluff)
    with pytest.raises(ValueError, match="already registered"):
        register_game("coin_bluff", lambda **_: coin_bluff.CoinBluff())
    with pytest.raises(ValueError, match="named 'coin_bluff'"):
        register_game("other_name", coin_bluff.CoinBluff)
        try:
            load_game("other_name")
        finally:
            unregister_game("other_name")
    with pytest.raises(ValueError, match="register_game"):
        load_game("no_such_game")
    with pytest.raises(ValueError, match="literal"):
        load_game("coin_bluff(stake=two)")


# --- malformed games: each refused at compile time, in one line naming the history ---------
def _broken(coin_bluff, name: str, **overrides):
    """A CoinBluff variant whose State overrides some methods (a fresh class each time)."""
    state_cls = type(f"{name}State", (coin_bluff.CoinBluffState,), overrides)

    class Broken(coin_bluff.CoinBluff):
        def new_initial_state(self):
            return state_cls(self, ())

    Broken.name = name
    return Broken()


def _chance_not_one(self):
    return [(0, 0.5), (1, 0.4)]


def _action_out_of_range(self):
    return [] if self.is_terminal() else [0, 1] if self.is_chance_node() else [0, 2]


def _no_legal_action_for_player_1(self):
    if self.is_terminal():
        return []
    if self.is_chance_node():
        return [0, 1]
    return [] if self.current_player() == 1 else [0, 1]


def _returns_one_payoff(self):
    return np.array([1.0])


def _same_key_other_legal_actions(self):
    """Player 1 may not fold after tails, but its key 'claim' does not know the coin."""
    if self.is_terminal() or self.is_chance_node():
        return [0, 1] if self.is_chance_node() else []
    return [1] if self.current_player() == 1 and self.moves[0] == 1 else [0, 1]


def _player_0_forgets_the_coin(self, player):
    return "P0" if player == 0 else ("claim" if len(self.moves) > 1 else "wait")


def _player_1_forgets_its_own_move_key(self, player):
    return "HT"[self.moves[0]] if player == 0 and self.moves else "seat1"


def _legal_in_another_order(self):
    if self.is_terminal() or self.is_chance_node():
        return [0, 1] if self.is_chance_node() else []
    return [1, 0] if self.current_player() == 1 and self.moves[0] == 1 else [0, 1]


MALFORMED = [
    ("chance_outcomes", _chance_not_one, "sum to"),
    (  # summing to one: the negative entry is what is wrong
        "chance_outcomes",
        lambda self: [(0, 1.5), (1, -0.5)],
        "[1.5, -0.5] include a negative or non-finite one",
    ),
    ("legal_actions", _legal_in_another_order, "return legal_actions() sorted"),
    ("infoset_key", lambda self, player: ["a", "list"], "return a str"),
    ("infoset_key", lambda self, player: None, "infoset_key(0) returned None (NoneType)"),
    ("infoset_key", lambda self, player: (player, len(self.moves)), "return a str"),
    ("legal_actions", _action_out_of_range, "not distinct ids in [0, 2)"),
    ("legal_actions", _no_legal_action_for_player_1, "no legal action"),
    ("returns", _returns_one_payoff, "2 finite payoffs"),
    ("legal_actions", _same_key_other_legal_actions, "perfect recall"),
    ("current_player", lambda self: 7, "current_player() returned 7"),
]


@pytest.mark.parametrize(("method", "replacement", "message"), MALFORMED)
def test_malformed_games_are_refused_with_one_line(coin_bluff, method, replacement, message):
    game = _broken(coin_bluff, f"broken_{method}", **{method: replacement})
    with pytest.raises(GameDefinitionError) as info:
        compile_tree(game)
    text = str(info.value)
    assert message in text and "history [" in text and "\n" not in text
    assert text.startswith(f"broken_{method}:")


def _forgetful(coin_bluff):
    """Player 1 moves twice in this variant, and its key forgets its own first move."""

    def legal(self):
        if self.is_terminal():
            return []
        return [0, 1]

    def current_player(self):
        if not self.moves:
            return CHANCE
        return -4 if len(self.moves) == 4 else [0, 1, 1][len(self.moves) - 1]

    def returns(self):
        return np.zeros(2)

    return _broken(
        coin_bluff,
        "forgetful",
        legal_actions=legal,
        current_player=current_player,
        returns=returns,
        infoset_key=lambda self, p: "HT"[self.moves[0]] if p == 0 else f"n{len(self.moves)}",
    )


def test_imperfect_recall_by_a_forgotten_own_past_is_refused(coin_bluff):
    # Player 1's second decision: key 'n3' after its own move 0 or 1, i.e. two own pasts.
    with pytest.raises(
        GameDefinitionError, match=r"last own move \(action 1 at 'n2', earlier action 0 at 'n2'\)"
    ):
        compile_tree(_forgetful(coin_bluff))


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        (lambda self, player: np.zeros(7), r"infoset_tensor\(\d\) gave shape \(7,\)"),
        (lambda self, player: np.zeros(2 + len(self.moves)), "gave shape"),  # ragged
        (lambda self, player: np.full(5, np.nan), "a value that is not finite"),
        (lambda self, player: "tensor", "gave values that are not numbers"),
    ],
)
def test_malformed_tensors_are_refused_by_name(coin_bluff, tensor, message):
    """Tensors are read lazily on the fast path (a learner or env asks for them), and at
    compile time on the checking walk: either way the first read names the history."""
    game = _broken(coin_bluff, "bad_tensor", infoset_tensor=tensor)
    with pytest.raises(GameDefinitionError, match=message) as info:
        _ = compile_tree(game).infoset_tensors
    assert "\n" not in str(info.value) and "history [" in str(info.value)


@pytest.mark.parametrize("tabulate", [True, False])
def test_the_env_names_what_it_needs_of_a_users_views(coin_bluff, tabulate):
    """An env shows every agent its view at every history: a key that fails for a waiting
    player, or a tensor outside the observation space's [0, 1], is named, not a traceback."""

    def key_of_movers_only(self, player):
        if player == 1 and len(self.moves) < 2:
            raise IndexError("tuple index out of range")
        return coin_bluff.CoinBluffState.infoset_key(self, player)

    def chips(self, player):
        return coin_bluff.CoinBluffState.infoset_tensor(self, player) * 3.0

    for name, override, message in (
        ("movers_only", {"infoset_key": key_of_movers_only}, r"infoset_key\(1\) raised IndexError"),
        ("chips", {"infoset_tensor": chips}, r"values in \[0, 3\], outside the \[0, 1\]"),
    ):
        game = _broken(coin_bluff, name, **override)
        with pytest.raises(GameDefinitionError, match=message) as info:
            env = make_env(game, tabulate=tabulate)
            env.reset(seed=0)
            env.last()
        assert "\n" not in str(info.value)


def test_legal_actions_past_a_players_own_action_count_are_refused(coin_bluff):
    class Lopsided(coin_bluff.CoinBluff):
        def num_actions_of(self, player):
            return 2 if player == 0 else 1  # but player 1 may call (action 1)

    Lopsided.name = "lopsided"
    with pytest.raises(GameDefinitionError, match=r"not distinct ids in \[0, 1\).*num_actions_of"):
        compile_tree(Lopsided())


def test_action_names_must_name_every_action(coin_bluff):
    class Unnamed(coin_bluff.CoinBluff):
        action_names = ("fold",)

    Unnamed.name = "unnamed"
    with pytest.raises(GameDefinitionError, match="1 names for 2 actions"):
        compile_tree(Unnamed())


def test_float32_chance_probabilities_are_accepted_and_made_exact(coin_bluff):
    """Three float32 thirds sum to 1 + 3e-8: within the tolerance, and divided by their sum."""
    third = np.float32(1 / 3)
    game = _broken(coin_bluff, "thirds", chance_outcomes=lambda self: [(0, third), (1, 2 * third)])
    tree = compile_tree(game)
    chance = tree.chance_prob[tree.parent == 0]
    assert chance.sum() == pytest.approx(1.0, abs=1e-15)


def test_a_key_shared_by_both_players_is_refused_by_name(coin_bluff):
    game = _broken(coin_bluff, "shared_keys", infoset_key=lambda self, player: "same")
    with pytest.raises(GameDefinitionError, match="unique across players"):
        compile_tree(game)


def test_player_0_forgetting_the_coin_is_a_legal_game(coin_bluff):
    """A key that hides chance is imperfect information, not imperfect recall: it compiles."""
    game = _broken(coin_bluff, "blind", infoset_key=_player_0_forgets_the_coin)
    assert compile_tree(game).num_infosets == 2


def test_zero_sum_only_functions_refuse_a_general_sum_game(coin_bluff):
    def returns(self):
        return np.array([1.0, 1.0]) if self.is_terminal() and self.moves[0] == 0 else np.zeros(2)

    game = _broken(coin_bluff, "general_sum", returns=returns)
    compile_tree(game)  # fine as a game
    with pytest.raises(ValueError, match="zero-sum") as info:
        solve_game(game)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        *(
            lambda cb, m=method, r=replacement: _broken(cb, f"broken_{m}", **{m: r})
            for method, replacement, _ in MALFORMED
        ),
        _forgetful,
        lambda cb: _broken(cb, "shared_keys", infoset_key=lambda self, player: "same"),
    ],
)
def test_the_fast_walk_gives_up_on_every_malformed_game(coin_bluff, make, layout_twin):
    """The fast walk must not compile what the checking walk refuses: it raises, and
    compile_tree then runs the checking walk for the one-line error (tested above)."""
    game = make(coin_bluff)
    with pytest.raises(Exception):  # noqa: B017 - any exception hands over to the checking walk
        fast_walk.walk(game, game.new_initial_state(), fast_walk.state_ops(game))


def test_compiled_trees_pickle_whatever_door_the_game_came_in_by(coin_bluff):
    """Trees go to other processes (race workers, processes=2): every builder's lazy labels
    must pickle, the walks' (a user's game), the matrix and Liar's dice builders' included."""
    import pickle

    for spec in ("coin_bluff(stake=3)", "rps", "liars_dice(dice_sides=2)", "kuhn_poker"):
        tree = compile_tree(load_game(spec))
        copy = pickle.loads(pickle.dumps(tree))
        assert copy.infoset_keys == tree.infoset_keys
        np.testing.assert_array_equal(copy.infoset_tensors, tree.infoset_tensors)


def test_rules_changed_under_the_same_classes_are_picked_up_after_clear_caches(coin_bluff):
    """A notebook edits a payoff table its State reads, keeping its classes: the caches cannot
    see that (they key on the Game class and id), and clear_caches() is the documented way."""
    from nashzoo.eval.lp import constant_sum
    from nashzoo.games import clear_caches

    table = {"shift": 0.0}

    def returns(self):
        base = coin_bluff.CoinBluffState.returns(self)
        return base + table["shift"] if self.is_terminal() else base

    game = _broken(coin_bluff, "shifting", returns=returns)
    assert constant_sum(game) == 0.0
    table["shift"] = 0.5  # both players get half a chip more: a constant-sum game now
    clear_caches()
    assert constant_sum(game) == 1.0
    np.testing.assert_allclose(solve_game(game).value, [1 / 3 + 0.5, -1 / 3 + 0.5])


def test_a_sweep_over_many_games_keeps_only_the_last_ones_cached():
    """Each game's tree, env tables and solution were cached for good: a notebook sweeping
    300x300 matrix games held 39 MB each, 4 GB after 41. Each cache now keeps the games used
    last; a dropped value is built again, equal, when asked for again."""
    import gc
    import weakref

    from nashzoo.envs.tables import _TABLES, env_tables
    from nashzoo.games.cache import CACHED_GAMES
    from nashzoo.games.matrix import MatrixGame
    from nashzoo.games.tree import _TREES

    rng = np.random.default_rng(0)
    games = [MatrixGame(row_payoffs=rng.integers(-3, 4, size=(3, 4)).tolist()) for _ in range(40)]
    utility = compile_tree(games[0]).terminal_utility.copy()
    first = weakref.ref(compile_tree(games[0]))
    for game in games:
        compile_tree(game)
        env_tables(game)
        solve_game(game)
        compile_tree(games[-1])  # used all along: never the oldest
    gc.collect()
    assert len(_TREES._values) == len(_TABLES._values) == CACHED_GAMES
    assert first() is None  # dropped and freed
    assert compile_tree(games[-1]) is compile_tree(games[-1])
    np.testing.assert_array_equal(compile_tree(games[0]).terminal_utility, utility)


class _RareTurn(Game):
    """Player 0 bets or folds; player 1 answers only on a 1-in-2,000 deal (else the game ends):
    a valid game in which one seat rarely moves."""

    name = "rare_turn"
    num_actions = 2
    action_names = ("fold", "go")
    infoset_tensor_size = 2

    def new_initial_state(self):
        return _RareTurnState(self, ())


class _RareTurnState(State):
    def __init__(self, game, moves):
        super().__init__(game)
        self.moves = moves

    def current_player(self):
        if not self.moves:
            return CHANCE
        if len(self.moves) == 2 and self.moves[0] == 1:
            return 1
        return TERMINAL if len(self.moves) >= 2 else 0

    def chance_outcomes(self):
        return [(0, 1999 / 2000), (1, 1 / 2000)]

    def legal_actions(self):
        return [] if self.is_terminal() else [0, 1]

    def _child(self, action):
        return type(self)(self.game, (*self.moves, action))

    def returns(self):
        if not self.is_terminal():
            return np.zeros(2)
        win = 1.0 if self.moves[1] == 1 and self.moves[-1] != 0 else -1.0
        return np.array([win, -win])

    def infoset_key(self, player):
        return f"p{player}:{len(self.moves)}"

    def infoset_tensor(self, player):
        return np.array([float(player), min(len(self.moves), 1)])

    def history(self):
        return list(self.moves)

    def describe(self, player=None):
        return f"rare turn, moves {list(self.moves)}"


def test_a_seat_that_rarely_moves_is_played_and_one_that_never_does_is_named():
    from nashzoo.agents.tree_play import TreePlay

    play = TreePlay(_RareTurn(), copies=2, seat=1, rng=np.random.default_rng(0))
    play.start(np.arange(2))  # redraws deals until player 1 moves: about 2,000 each
    assert (play.tree.player[play.node] == 1).all() and play.episodes > 100

    class _Mute(_RareTurn):
        name = "mute"

        def new_initial_state(self):
            state = _RareTurnState(self, ())
            state.chance_outcomes = lambda: [(0, 1.0)]  # player 1's deal never comes
            return state

    with pytest.raises(ValueError, match="seat 1 of mute never moves"):
        TreePlay(_Mute(), copies=2, seat=1)


class _ChanceOnly(_RareTurn):
    """A coin decides the payoff and nobody moves: no information set at all."""

    name = "chance_only"

    def new_initial_state(self):
        state = _RareTurnState(self, ())
        state.chance_outcomes = lambda: [(0, 0.3), (1, 0.7)]
        state.current_player = lambda: CHANCE
        state._child = lambda action: _CoinResult(self, (action,))
        return state


class _CoinResult(_RareTurnState):
    def current_player(self):
        return TERMINAL

    def returns(self):
        return np.array([1.0, -1.0]) if self.moves[0] == 0 else np.array([-1.0, 1.0])


def test_a_game_where_only_chance_moves_is_evaluated_and_trained():
    """No decisions: NashConv 0, values -0.4 / +0.4 (the compiled best response divided by the
    number of information sets, zero here)."""
    game = _ChanceOnly()
    uniform = TabularPolicy.uniform(game)
    assert nash_conv(game, uniform) == 0.0
    np.testing.assert_allclose(solve_game(game).value, [-0.4, 0.4])
    result = train(game, "cfr", iterations=3)
    assert result.nash_conv == 0.0 and result.final.seat_exploitability == (0.0, 0.0)
    with pytest.raises(ValueError, match="ended before any player moved"):
        make_env(game).reset(seed=0)  # PettingZoo's agents must be live after reset


def test_learners_name_the_number_of_players_they_refuse():
    """A three-player game: every learner plays two-player games, and says how many this has
    (it said "has more"; regret_matching recommended learners that refuse it too)."""
    from nashzoo.agents import make_learner

    class Three(_RareTurn):
        name = "three_seats"
        num_players = 3

    for name in ("cfr", "os_mccfr", "regret_matching"):
        with pytest.raises(ValueError, match=r"three_seats has 3 players") as err:
            make_learner(name, Three(), 0)
        assert "instead" not in str(err.value)


def test_a_parameter_that_is_not_a_literal_is_refused_by_name(coin_bluff):
    """load_game(game.id) must give the game back: an array parameter would write an id that
    cannot be read (checkpoints, policy files and race workers load games by it)."""

    class Tabled(coin_bluff.CoinBluff):
        def __init__(self, table=None):
            Game.__init__(self, {"table": table} if table is not None else {})
            self.stake = 2

    Tabled.name = "tabled"
    with pytest.raises(ValueError, match=r"tabled: parameter table=array.*array.tolist\(\)"):
        Tabled(table=np.eye(2))
    assert Tabled(table=[[1.0, 0.0], [0.0, 1.0]]).id == "tabled(table=[[1.0, 0.0], [0.0, 1.0]])"


class _EndlessState(_RareTurnState):
    def current_player(self):
        return 0  # player 0 moves forever: no history is ever terminal

    def legal_actions(self):
        return [0]


class _Endless(_RareTurn):
    name = "endless"

    def new_initial_state(self):
        return _EndlessState(self, ())


def test_a_game_that_never_ends_is_named_not_walked_until_memory_runs_out(monkeypatch):
    """Rules that cycle (no TERMINAL is ever reached) make an infinite tree: the walk stops at
    MAX_DEPTH moves with a message (lowered here to keep the test fast)."""
    from nashzoo.games import checks

    monkeypatch.setattr(checks, "MAX_DEPTH", 500)
    with pytest.raises(GameDefinitionError, match=r"more than 500 moves.*does the game end"):
        compile_tree(_Endless())


def test_endless_rules_are_refused_at_once_even_where_the_size_estimate_runs(monkeypatch):
    """The fast walk gave up on an endless game only when its 16-bit depth buffer overflowed,
    65,536 ever longer histories later (seconds), and a walk that long asked for Knuth's size
    estimate, whose random path never reached a terminal: the suite hung there on a loaded
    machine. The walk now gives up past ``MAX_DEPTH`` moves (the checking walk then names the
    game), and a sampled path ends there too."""
    import time

    from nashzoo.games import checks, clear_caches, fast_walk, limits

    monkeypatch.setattr(checks, "MAX_DEPTH", 500)
    monkeypatch.setattr(limits, "ESTIMATE_AFTER_SECONDS", 0.0)  # the estimate at the first look

    class Endless(_Endless):
        name = "endless_estimated"  # a key of its own: compiled afresh

    began = time.monotonic()
    assert fast_walk.estimated_size(Endless()) == 502  # 1 + 1 + ... along one path of 501 moves
    with pytest.raises(GameDefinitionError, match=r"more than 500 moves"):
        compile_tree(Endless())
    assert time.monotonic() - began < 30  # (seconds, not for ever: a hang fails by timeout)
    clear_caches()


class _PickADeck(Game):
    """Player 0 picks the low deck (cards 0, 1) or the high one (2, 3); one card is drawn from
    it and pays player 0 its value: which chance outcomes are possible depends on the move."""

    name = "pick_a_deck"
    num_actions = 4
    action_names = ("low", "high", "x", "y")
    infoset_tensor_size = 2

    def new_initial_state(self):
        return _PickADeckState(self, ())


class _PickADeckState(_RareTurnState):
    def current_player(self):
        return (0, CHANCE, TERMINAL)[len(self.moves)]

    def chance_outcomes(self):
        low = self.moves[0] == 0
        return [(0, 0.5), (1, 0.5)] if low else [(2, 0.5), (3, 0.5)]

    def legal_actions(self):
        if self.is_terminal():
            return []
        return [a for a, _ in self.chance_outcomes()] if self.is_chance_node() else [0, 1]

    def returns(self):
        value = float(self.moves[1]) if self.is_terminal() else 0.0
        return np.array([value, -value])


@pytest.mark.parametrize("tabulate", [True, False])
def test_a_forced_outcome_the_moves_make_impossible_refuses_that_move_by_name(tabulate):
    """Forcing card 2 is possible only after "high": accepted at reset; "low" then raised
    IllegalActionError naming the forced outcome on a legal move. Now a ValueError that is not
    an IllegalActionError, the move is not played, and "high" still is."""
    env = make_env(_PickADeck(), tabulate=tabulate)
    assert env.unwrapped.tabulated is tabulate
    with pytest.raises(ValueError, match=r"outcome 5 .*any of the 2 chance nodes.* 0, 1, 2, 3$"):
        env.reset(seed=0, options={"chance_outcomes": [5]})
    env.reset(seed=0, options={"chance_outcomes": [2]})
    with pytest.raises(ValueError) as refused:
        env.step(0)
    assert not isinstance(refused.value, IllegalActionError)
    assert str(refused.value).startswith(
        "forced chance outcome 2 (options['chance_outcomes'][0]) is not possible at history "
        "[0], where these moves lead; possible outcomes are: 0, 1. The move was not played"
    )
    assert env.unwrapped.history == [] and env.agent_selection == "player_0"
    env.step(1)
    assert env.unwrapped.history == [1, 2] and env.rewards == {"player_0": 2.0, "player_1": -2.0}


class _Misdeal(Game):
    """A misdeal (probability 0.1) ends the game at once, player 0 winning 1; otherwise player
    0 sees a card (low or high), bets or passes, player 1 bets or passes without seeing it."""

    name = "misdeal"
    num_actions = 2
    action_names = ("pass", "bet")
    infoset_tensor_size = 3

    def new_initial_state(self):
        return _MisdealState(self, ())


class _MisdealState(_RareTurnState):
    def current_player(self):
        if not self.moves:
            return CHANCE
        if self.moves[0] == 0 or len(self.moves) == 3:
            return TERMINAL
        return len(self.moves) - 1

    def chance_outcomes(self):
        return [(0, 0.1), (1, 0.45), (2, 0.45)]

    def legal_actions(self):
        if self.is_terminal():
            return []
        return [0, 1, 2] if self.is_chance_node() else [0, 1]

    def returns(self):
        if not self.is_terminal():
            return np.zeros(2)
        if self.moves[0] == 0:
            return np.array([1.0, -1.0])
        card, bet0, bet1 = self.moves
        win = (1 if card == 2 else -1) * (1 + bet0 + bet1)
        return np.array([win, -win], dtype=float)

    def infoset_key(self, player):
        card = self.moves[0] if self.moves and player == 0 else "?"
        return f"p{player}:{card}|" + "".join(map(str, self.moves[1:]))

    def infoset_tensor(self, player):
        card = self.moves[0] / 2 if self.moves and player == 0 else 0.0
        return np.array([float(player), card, float(len(self.moves) > 1)])


def _random_play_totals(env, episodes: int, seed: int) -> np.ndarray:
    """Each agent's rewards summed over ``episodes`` uniformly random episodes."""
    rnd = np.random.default_rng(seed)
    totals = np.zeros(2)
    env.reset(seed=seed)
    for episode in range(episodes):
        if episode:
            env.reset()
        for agent in env.agent_iter():
            obs, reward, terminated, _, _ = env.last()
            totals[int(agent[-1])] += reward
            env.step(None if terminated else int(rnd.choice(np.flatnonzero(obs["action_mask"]))))
    return totals


@pytest.mark.parametrize("tabulate", [True, False])
def test_a_game_chance_ends_before_anyone_moves_plays_through_the_envs(tabulate):
    """A misdeal in 1 deal of 10 made reset() raise "ended before any player moved" on some
    seeds (3 of the first 50), and SingleAgentEnv, PPO and DQN with it. PettingZoo's api_test
    asserts that no agent is terminated after reset, so such a game is no episode: reset()
    draws again and counts it (zero_move_games, zero_move_returns); with them the average
    return is nashzoo.eval.expected_returns ([0.1, -0.1] under uniform play)."""
    game = _Misdeal()
    exact = expected_returns(game, TabularPolicy.uniform(game))
    np.testing.assert_allclose(exact, [0.1, -0.1])
    api_test(make_env(game, tabulate=tabulate), num_cycles=50)
    env = make_env(game, tabulate=tabulate)
    totals = _random_play_totals(env, 3000, seed=0)
    raw = env.unwrapped
    assert raw.zero_move_games == 344  # about 3000 * 0.1 / 0.9; both modes draw alike
    games = 3000 + raw.zero_move_games
    assert raw.zero_move_returns == {"player_0": 344.0, "player_1": -344.0}
    average = (totals + [raw.zero_move_returns[a] for a in env.possible_agents]) / games
    np.testing.assert_allclose(average, exact, atol=0.1)  # sd of the mean about 0.03
    with pytest.raises(ValueError, match=r"forced chance outcomes \[0\] end before any player"):
        env.reset(options={"chance_outcomes": [0]})  # a redraw would not be the forced deal
    env.reset(options={"chance_outcomes": [2]})
    assert env.unwrapped.history == [2]


def test_a_tournament_counts_the_games_chance_ends_before_anyone_moves():
    """Sampled matches skipped the misdeals the env draws again at reset (uniform against
    uniform sampled 0.0 where the game's expected return is 0.1): now each is a match, and the
    env lists each reset's misdeals one by one (last_zero_move_returns)."""
    from nashzoo.eval.tournament import play_matches

    game = _Misdeal()
    uniform = TabularPolicy.uniform(game)
    matches = play_matches(game, [uniform, uniform], 4000, np.random.default_rng(0))
    assert matches.shape == (4000, 2)
    misdeals = int(np.count_nonzero((matches == [1.0, -1.0]).all(axis=1)))
    # A misdeal (0.1) or a high card passed twice (0.45 / 4): 850 expected, 500 without misdeals.
    assert misdeals == pytest.approx(850, abs=80)
    # Exact 0.1; the sd of a match is about 1.5, so that of the mean about 0.024.
    assert matches[:, 0].mean() == pytest.approx(0.1, abs=0.08)
    env = make_env(game)
    raw = env.unwrapped
    env.reset(seed=0)
    seen = 0
    for _ in range(200):
        env.reset()
        assert len(raw.last_zero_move_returns) == raw.zero_move_games - seen
        assert all(paid == (1.0, -1.0) for paid in raw.last_zero_move_returns)
        seen = raw.zero_move_games
    assert seen > 0


@pytest.mark.parametrize("seat", [0, 1])
def test_single_agent_env_counts_the_games_chance_ends_before_anyone_moves(seat):
    """SingleAgentEnv.reset() failed on the first misdeal; now return_sum / episodes, which
    Stable-Baselines3's learners report, counts the misdeals' returns too."""
    from nashzoo.envs import SingleAgentEnv

    game = _Misdeal()
    env = SingleAgentEnv(game, seat=seat)
    env.action_space.seed(0)
    env.reset(seed=0)
    finished = 0
    while finished < 3000:
        _, _, done, _, _ = env.step(env.action_space.sample())
        if done:
            finished += 1
            env.reset()
    assert env.episodes - 3000 == pytest.approx(333, abs=60)  # the misdeals, counted too
    exact = expected_returns(game, TabularPolicy.uniform(game))[seat]
    assert env.return_sum / (env.episodes - 1) == pytest.approx(exact, abs=0.1)


def test_ppo_and_dqn_train_on_a_game_chance_may_end_before_anyone_moves():
    pytest.importorskip("stable_baselines3")
    ppo = {"steps_per_iteration": 128, "n_envs": 1}
    dqn = {"steps_per_iteration": 200, "learning_starts": 50, "exploration_steps": 200}
    for learner, config in (("ppo", ppo), ("dqn", dqn)):
        result = train(_Misdeal(), learner, iterations=1, seed=0, config=config, progress=False)
        assert result.final.work[0]["env_steps"] >= config["steps_per_iteration"]


def test_a_forced_deal_in_which_the_seat_never_moves_is_named():
    """SingleAgentEnv.reset(options=...) was ignored; a forced deal in which the learner's seat
    does not move is now named rather than drawn again (seat 1 of rare_turn moves only on deal
    1)."""
    from nashzoo.envs import SingleAgentEnv

    env = SingleAgentEnv(_RareTurn(), seat=1)
    env.reset(seed=0, options={"chance_outcomes": [1]})
    with pytest.raises(ValueError, match=r"seat 1 did not get to move .* outcomes \[0\]"):
        env.reset(seed=0, options={"chance_outcomes": [0]})
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.step(0)
