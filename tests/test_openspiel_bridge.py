"""Two-player OpenSpiel games through nashzoo's whole stack (the bridge, nashzoo.games.openspiel).

Three games of different kinds: Liar's Dice (sequential, chance deals dice), goofspiel (a
simultaneous-move game played through OpenSpiel's turn-based conversion) and a small
universal_poker (limit hold'em machinery, 4 ranks, up to 2 raises). On each, nashzoo's numbers
must equal OpenSpiel's own: NashConv of a CFR+ policy against ``pyspiel.nash_conv`` and the
sequence-form LP value against OpenSpiel's ``sequence_form_lp``.
"""

from __future__ import annotations

import io
import pickle
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from nashzoo.agents import TabularPolicy  # noqa: E402
from nashzoo.cli import main  # noqa: E402
from nashzoo.envs import env  # noqa: E402
from nashzoo.eval import nash_conv, solve_game  # noqa: E402
from nashzoo.eval.openspiel import from_openspiel, to_openspiel, to_pyspiel  # noqa: E402
from nashzoo.games import (  # noqa: E402
    GameDefinitionError,
    OpenSpielGame,
    compile_tree,
    load_game,
)
from nashzoo.train import train  # noqa: E402

LIARS_DICE = "openspiel:liars_dice(dice_sides=3)"
GOOFSPIEL = "openspiel:goofspiel(imp_info=True,num_cards=3)"
UNIVERSAL_POKER = (
    "openspiel:universal_poker(betting=limit,numPlayers=2,numRounds=1,blind=1 1,raiseSize=1,"
    "firstPlayer=1,numSuits=1,numRanks=4,numHoleCards=1,numBoardCards=0,maxRaises=2,"
    "stack=10 10)"
)
# Game value for player 0 (nashzoo's LP; OpenSpiel's LP agrees to 1e-9 when cvxpy is there).
VALUES = {LIARS_DICE: 1 / 9, GOOFSPIEL: 0.0, UNIVERSAL_POKER: -0.0390625}
GAMES = list(VALUES)


@pytest.mark.parametrize("spec", GAMES)
def test_cfr_plus_nash_conv_equals_pyspiel(spec: str) -> None:
    game = load_game(spec)
    policy = train(game, "cfr_plus", iterations=15, seed=0).average_policy
    ours = nash_conv(game, policy)
    assert ours > 1e-4  # not yet an equilibrium: the comparison has something to compare
    assert ours == pytest.approx(
        pyspiel.nash_conv(game.openspiel_game, to_pyspiel(policy)), abs=1e-9
    )


@pytest.mark.parametrize("spec", GAMES)
def test_solve_game_value_equals_openspiel_lp(spec: str) -> None:
    game = load_game(spec)
    solution = solve_game(game)
    assert solution.value[0] == pytest.approx(VALUES[spec], abs=1e-9)
    assert pyspiel.nash_conv(game.openspiel_game, to_pyspiel(solution.policy)) < 1e-9
    pytest.importorskip("cvxpy")
    pytest.importorskip("ecos")  # OpenSpiel's LP runs on cvxpy's ECOS
    from open_spiel.python.algorithms import sequence_form_lp

    theirs = sequence_form_lp.solve_zero_sum_game(game.openspiel_game)[0]
    assert solution.value[0] == pytest.approx(theirs, abs=1e-6)


def test_keys_tensors_and_moves_are_openspiels() -> None:
    game = load_game("openspiel:liars_dice(dice_sides=4)")
    theirs = pyspiel.load_game("liars_dice(dice_sides=4)")
    ours_state, their_state = game.new_initial_state(), theirs.new_initial_state()
    for action in (3, 1, 2, 6, 8):
        ours_state, their_state = ours_state.child(action), their_state.child(action)
        for p in range(2):
            assert ours_state.infoset_key(p) == their_state.information_state_string(p)
            np.testing.assert_array_equal(
                ours_state.infoset_tensor(p), their_state.information_state_tensor(p)
            )
        assert ours_state.history() == their_state.history()
    assert ours_state.is_terminal()
    np.testing.assert_array_equal(ours_state.returns(), their_state.returns())
    tree = compile_tree(game)
    assert (tree.num_nodes, tree.num_infosets, tree.infoset_tensors.shape[1]) == (8181, 1024, 15)


def test_states_are_immutable() -> None:
    root = load_game(LIARS_DICE).new_initial_state()
    child = root.child(0)
    assert root.is_chance_node() and root.history() == [] and child.history() == [0]
    grandchild = child.child(1).child(0)
    assert child.history() == [0] and grandchild.history() == [0, 1, 0]


def test_ids_round_trip() -> None:
    for spec in [*GAMES, "openspiel:kuhn_poker", "openspiel:leduc_poker"]:
        game = load_game(spec)
        assert isinstance(game, OpenSpielGame)
        assert load_game(game.id) == game and load_game(game.id).id == game.id
        assert pickle.loads(pickle.dumps(game)) == game
    # a loaded pyspiel game, and keyword parameters, give the same games
    assert load_game(pyspiel.load_game("liars_dice(dice_sides=3)")) == load_game(LIARS_DICE)
    assert load_game("openspiel:goofspiel", num_cards=3, imp_info=True) == load_game(GOOFSPIEL)
    assert load_game("openspiel:kuhn_poker").id == "openspiel:kuhn_poker"
    # universal_poker's string parameters written as numbers (firstPlayer=1) are read as the
    # strings they must be (OpenSpiel's own parser refuses them), in specs and in ids alike
    poker = load_game(UNIVERSAL_POKER)
    assert poker.openspiel_game.get_parameters()["firstPlayer"] == "1"
    assert "firstPlayer=1," in poker.id and load_game(poker.id) == poker
    # simultaneous moves are played through OpenSpiel's turn-based conversion
    assert load_game(GOOFSPIEL).id.startswith("openspiel:turn_based_simultaneous_game(")


def test_policies_move_both_ways() -> None:
    game = load_game(LIARS_DICE)
    rng = np.random.default_rng(0)
    tree = compile_tree(game)
    probs = rng.random(tree.legal_mask.shape) * tree.legal_mask
    policy = TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))
    python_policy = to_openspiel(policy)  # the policy knows its game
    assert from_openspiel(python_policy).game == game  # and so does OpenSpiel's
    np.testing.assert_array_equal(from_openspiel(python_policy).probs, policy.probs)
    np.testing.assert_array_equal(from_openspiel(game, to_pyspiel(policy)).probs, policy.probs)
    from open_spiel.python.policy import UniformRandomPolicy

    uniform = from_openspiel(UniformRandomPolicy(game.openspiel_game))  # asked state by state
    np.testing.assert_allclose(uniform.probs, TabularPolicy.uniform(game).probs)
    with pytest.raises(ValueError, match="does not have"):
        from_openspiel(game, to_openspiel(TabularPolicy.uniform("openspiel:kuhn_poker")))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openspiel:kuhn_poker(players=3)", "3 players and nashzoo's games have exactly two"),
        ("openspiel:oware", "provides no information-state strings"),
        ("openspiel:no_such_game", "cannot load 'no_such_game': Unknown game"),
        ("openspiel:liars_dice(dice_sides=4", "Missing closing bracket"),
        ("openspiel:liars_dice(dice_sides=x)", "Wrong type for parameter dice_sides"),
        ("openspiel:mfg_garnet", "mean_field dynamics"),
        ("openspiel:crazy_eights", "provides no information-state strings"),  # not players=2
    ],
)
def test_unbridgeable_games_get_one_line_errors(spec: str, message: str, capfd) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        load_game(spec)
    assert "\n" not in str(caught.value)
    assert capfd.readouterr().err == ""  # OpenSpiel's own copy (all its game names) held back


@pytest.mark.parametrize(
    ("spec", "message"),
    [  # OpenSpiel loads the first two, then fails deep inside compile_tree, the env, a learner
        ("openspiel:liars_dice(numdice=0)", r"numdice \(the dice each player rolls\) must be at"),
        ("openspiel:liars_dice(numdice=-1)", r"least 1, got -1; e.g. openspiel:liars_dice\(nu"),
        ("openspiel:liars_dice(dice_sides=0)", r"liars_dice.cc:\d+ dice_sides_ >= 1"),
        ("openspiel:liars_dice(players=3)", r"with players=3 has 3 players and nashzoo's games"),
        ("openspiel:liars_dice(players=1)", r"players=1 has 1 players .* load it with players=2"),
    ],
)
def test_parameters_outside_a_games_range_are_named_at_load(spec, message, capfd) -> None:
    """``liars_dice(numdice=0)`` loaded, then compile_tree and the env raised OpenSpiel's
    ``SpielError: liars_dice.cc:199 num_dice_rolled_[cur_roller_] < num_dice_[cur_roller_]``
    (``numdice=-1``: ``ValueError: cannot create std::vector larger than max_size()``); the
    parameter and its range are named when it is loaded, in one line."""
    with pytest.raises(ValueError, match=message) as caught:
        load_game(spec)
    assert "\n" not in str(caught.value)
    assert capfd.readouterr().err == ""


def test_a_game_openspiel_loads_but_cannot_play_is_refused_at_load(capfd) -> None:
    """Games without an entry of PARAMETER_MINIMUMS: OpenSpiel's error on the first path
    through the game, with the parameters given (dots_and_boxes checks its sizes only when its
    first state is made: checked under valgrind, it raises before touching memory)."""
    with pytest.raises(ValueError) as caught:
        load_game("openspiel:dots_and_boxes(num_rows=0)")
    assert str(caught.value).startswith(
        "OpenSpiel's dots_and_boxes loads with num_rows=0 but OpenSpiel cannot play it: "
    )
    assert str(caught.value).endswith(
        "num_rows_ >= 1 (SpielError); one of these parameters is outside the range the game "
        "plays: check them against the game's parameters in OpenSpiel's docs"
    )
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("as_object", [False, True], ids=["string", "pyspiel_game"])
def test_a_negative_count_is_refused_before_openspiel_touches_it(as_object) -> None:
    """``goofspiel(num_cards=-1)`` wrote past a buffer when its first state was made (valgrind:
    an invalid write in GoofspielState's constructor) and only then raised ``vector::reserve``,
    which the first-path check used to report: the test run that did so aborted minutes later
    in another test. A negative value of an integer parameter whose default is not negative
    is refused before OpenSpiel loads the game, or plays a game loaded by the caller."""
    spec = "goofspiel(imp_info=True,num_cards=-1)"
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game(spec) if as_object else "openspiel:" + spec
    with pytest.raises(ValueError) as caught:
        load_game(game)
    assert str(caught.value) == (
        "OpenSpiel's goofspiel: num_cards must be at least 0, got -1; "
        "e.g. openspiel:goofspiel(num_cards=13)"
    )


_LOAD_EACH = (
    "import sys\n"
    "from nashzoo.games import load_game\n"
    "for spec in sys.argv[1:]:\n"
    "    try:\n"
    "        load_game(spec)\n"
    "        print('loaded')\n"
    "    except ValueError as err:\n"
    "        print(err)\n"
)


def _load_in_a_child(specs: list[str]) -> list[str]:
    """Load each of ``specs`` in one child process, one after another: ``'loaded'`` or the
    ValueError's message for each. For inputs that crashed OpenSpiel: a crash fails the test
    (naming the child's stderr) instead of ending the test run."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _LOAD_EACH, *specs], capture_output=True, text=True
    )
    lines = done.stdout.splitlines()
    crashed_at = specs[len(lines)] if len(lines) < len(specs) else None
    assert done.returncode == 0, f"ended with {done.returncode} at {crashed_at}: {done.stderr}"
    assert done.stderr == ""
    assert len(lines) == len(specs)
    return lines


def test_counts_that_crash_openspiel_are_refused_before_it_loads_them() -> None:
    """Each of these ended the process with a segmentation fault inside OpenSpiel (found by
    loading every two-player game with each integer parameter at 0, one child process each)."""
    specs = [
        "universal_poker(numRanks=0)",
        "universal_poker(numSuits=0)",
        "universal_poker(numRounds=0)",
        "universal_poker(numHoleCards=0)",
        "connect_four(rows=0)",
    ]
    lines = _load_in_a_child(["openspiel:" + spec for spec in specs])
    for spec, line in zip(specs, lines, strict=True):
        name, parameter = spec.split("(")[0], spec.split("(")[1].split("=")[0]
        assert line.startswith(f"OpenSpiel's {name}: {parameter} (")
        assert f"must be at least 1, got 0; e.g. openspiel:{name}({parameter}=1)" in line


def test_a_universal_poker_deck_short_of_its_deal_is_refused_before_openspiel_loads_it() -> None:
    """OpenSpiel's universal_poker ended the process (a segmentation fault) on a deck with
    fewer cards than it deals; a deck of exactly the cards dealt plays."""
    specs = [
        "universal_poker(numRanks=2,numSuits=1)",  # 2 hole cards + 1 board card (its default)
        "universal_poker(numRanks=4,numSuits=1,numHoleCards=2)",
        "universal_poker(numRanks=3,numSuits=1)",  # exactly the 3 cards dealt: plays
    ]
    assert _load_in_a_child(["openspiel:" + spec for spec in specs]) == [
        "OpenSpiel's universal_poker: a deck of numRanks x numSuits = 2 x 1 = 2 cards cannot "
        "deal 2 hole cards and 1 board card(s) (3 cards), and OpenSpiel would end the process; "
        "give more ranks or suits, e.g. openspiel:universal_poker(numRanks=3,numSuits=1)",
        "OpenSpiel's universal_poker: a deck of numRanks x numSuits = 4 x 1 = 4 cards cannot "
        "deal 4 hole cards and 1 board card(s) (5 cards), and OpenSpiel would end the process; "
        "give more ranks or suits, e.g. openspiel:universal_poker(numRanks=5,numSuits=1)",
        "loaded",
    ]


def test_every_integer_parameter_at_0_1_and_minus_1_loads_or_is_refused_never_crashes() -> None:
    """Every two-player turn-based OpenSpiel game with each integer parameter (default above 0)
    set to 0, 1 and -1, loaded one after another in a child process: each loads or is refused
    with a ValueError. Before the bridge refused them ahead of OpenSpiel, some of these ended
    the process (universal_poker's counts at 0, ``connect_four(rows=0)``) or wrote outside
    OpenSpiel's memory (``goofspiel(num_cards=-1)``); a new OpenSpiel release that crashes on
    another fails here, naming it."""
    pyspiel = pytest.importorskip("pyspiel")
    specs = [
        f"openspiel:{kind.short_name}({key}={value})"
        for kind in pyspiel.registered_games()
        if kind.min_num_players <= 2 <= kind.max_num_players
        and kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
        for key, default in kind.parameter_specification.items()
        if type(default) is int and default > 0
        for value in (0, 1, -1)
    ]
    assert len(specs) > 300
    _load_in_a_child(specs)


def test_universal_pokers_lists_out_of_shape_or_range_are_refused_before_openspiel_reads_them():
    """universal_poker reads its per-player and per-round lists unchecked: each of these ended
    the process with a segmentation fault (``stack=100 100``, equal to the blind, hung). Also
    a number OpenSpiel's C++ cannot read (``stoi``) and an OpenSpiel error whose message is not
    UTF-8 (``boardCards=-1`` prints a rank as a raw byte: the message read 'utf-8 codec can't
    decode byte 0xff')."""
    expected = {
        "numBoardCards=0": "numBoardCards (the board cards dealt in each round) needs a number "
        "for each of the 2 rounds, got '0' (OpenSpiel reads past a short list",
        "numBoardCards=0 x": "numBoardCards (the board cards dealt in each round) must be whole "
        "numbers separated by spaces, got '0 x'; e.g. openspiel:universal_poker(numBoardCards=1 1)",
        "firstPlayer=1 3": "firstPlayer (who acts first in each round, counted from 1) must be "
        "from 1 to 2, got '1 3' (OpenSpiel does not check it",
        "blind=100": "blind (the chips each player puts in before the cards) needs a number for "
        "each of the 2 players, got '100'",
        "stack=100 100": "player 1's stack (100) must be more than their blind (100), or OpenSpiel "
        "ends the process (or, with the two equal, never returns); e.g. "
        "openspiel:universal_poker(stack=1200 1200)",
        "betting=limit,raiseSize=2": "raiseSize (the size of each round's raises) needs a number "
        "for each of the 2 rounds, got '2'",
        "blind=x 1": "blind (the chips each player puts in before the cards) must be whole "
        "numbers separated by spaces, got 'x 1'",
        "boardCards=-1": "OpenSpiel's universal_poker loads with boardCards=-1 but OpenSpiel "
        "cannot play it: /project/open_spiel/games/universal_poker/logic/card_set.cc:",
    }
    specs = [*expected, "stack=150 150", "betting=limit,raiseSize=2 4"]
    lines = _load_in_a_child([f"openspiel:universal_poker({given})" for given in specs])
    for (given, message), line in zip(expected.items(), lines, strict=False):
        assert message in line, (given, line)
        assert "OpenSpiel" in line and "\ufffd" not in line
    assert lines[-2:] == ["loaded", "loaded"]


def test_a_cpp_conversion_error_says_a_number_was_expected() -> None:
    """OpenSpiel's C++ raises ``std::invalid_argument("stoi")`` on a number it cannot read,
    which arrived as the whole message: 'stoi'."""
    from nashzoo.games.openspiel import _error_text

    assert _error_text(ValueError("stoi"), []) == (
        "stoi (ValueError: a parameter that must be a number is not one)"
    )
    assert _error_text(RuntimeError("vector::reserve"), []) == "vector::reserve (RuntimeError)"
    undecodable = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    printed = ["OpenSpiel exception: card_set.cc:60 rank < 13\nrank = \ufffd, 13 = 13\n"]
    assert _error_text(undecodable, printed).splitlines()[0] == "card_set.cc:60 rank < 13"


def test_parameters_defaulting_to_minus_one_and_scores_may_be_negative() -> None:
    """-1 is goofspiel's 'not set' for num_turns (its default), and gin_rummy's gin_bonus is a
    score: neither is a count, and both load as given."""
    assert load_game("openspiel:goofspiel(imp_info=True,num_cards=3,num_turns=-1)").num_actions
    from nashzoo.games.openspiel import _refuse_below_minimum

    pyspiel = pytest.importorskip("pyspiel")
    kinds = {kind.short_name: kind for kind in pyspiel.registered_games()}
    _refuse_below_minimum(kinds["gin_rummy"], {"gin_bonus": -5})
    with pytest.raises(ValueError, match="knock_card must be at least 0, got -1"):
        _refuse_below_minimum(kinds["gin_rummy"], {"knock_card": -1})


def test_a_players_count_other_than_two_is_refused_before_openspiel_loads_it() -> None:
    """``universal_poker(numPlayers=3)`` (its default blinds are for two) crashed the process
    inside ``pyspiel.load_game`` (a segmentation fault)."""
    assert _load_in_a_child(["openspiel:universal_poker(numPlayers=3)"]) == [
        "OpenSpiel's universal_poker with numPlayers=3 has 3 players and nashzoo's games have "
        "exactly two: load it with numPlayers=2"
    ]


@pytest.mark.parametrize("spec", ["openspiel:liars_dice(dice_sides=1)"])
def test_a_legal_degenerate_game_plays_through_the_stack(spec) -> None:
    """One face per die: OpenSpiel plays it (every bid is of that face), and so does nashzoo:
    compiled, exact NashConv, the env from reset to the end."""
    game = load_game(spec)
    tree = compile_tree(game)
    assert tree.num_nodes == 9
    assert nash_conv(game, TabularPolicy.uniform(game)) == pytest.approx(1.0)
    aec = env(spec)
    aec.reset(seed=0)
    steps = 0
    for _agent in aec.agent_iter(50):
        observation, _, done, truncated, _ = aec.last()
        aec.step(None if done or truncated else int(np.flatnonzero(observation["action_mask"])[0]))
        steps += 1
    assert 2 <= steps < 50


def test_perfect_information_games_without_information_state_tensors_use_the_position() -> None:
    game = load_game("openspiel:mnk(m=2,n=2,k=2)")
    assert game.infoset_tensor_size == 12  # OpenSpiel's observation tensor: 3 planes of 2x2
    state = game.new_initial_state().child(0)
    np.testing.assert_array_equal(state.infoset_tensor(1), state._state.observation_tensor(1))
    api_test(env("openspiel:mnk(m=2,n=2,k=2)"), num_cycles=20)


def test_an_env_over_a_game_without_tensors_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="defines no information-set tensors, so its env"):
        env("openspiel:coordinated_mp")


def test_imperfect_recall_is_refused_when_compiled() -> None:
    game = load_game("openspiel:liars_dice_ir(dice_sides=3)")
    with pytest.raises(GameDefinitionError, match="does not have perfect recall") as caught:
        compile_tree(game)
    assert "\n" not in str(caught.value)


def test_missing_open_spiel_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspiel", None)
    with pytest.raises(ImportError, match=r"pip install 'nashzoo\[openspiel\]'"):
        load_game(LIARS_DICE)


def test_env_passes_pettingzoo_tests() -> None:
    api_test(env(GOOFSPIEL), num_cycles=50)
    api_test(env(LIARS_DICE), num_cycles=50)
    seed_test(lambda: env(UNIVERSAL_POKER), num_cycles=20)


def test_cli_runs_bridged_games(tmp_path, capsys) -> None:
    out = tmp_path / "train"
    trained = ["train", "--game", LIARS_DICE, "--learner", "cfr_plus", "--iterations", "5"]
    assert main([*trained, "--out", str(out), "--no-progress"]) == 0
    policy_file = str(out / "average_policy.json")
    assert main(["eval", policy_file, "--game", LIARS_DICE]) == 0
    entrants = ["uniform", "equilibrium", policy_file]
    tournament = ["tournament", "--game", LIARS_DICE, *entrants, "--episodes", "50"]
    assert main([*tournament, "--no-plots", "--no-progress"]) == 0
    race = ["race", "--game", GOOFSPIEL, "--learners", "cfr_plus", "--seeds", "1"]
    race += ["--budget-seconds", "0", "--budget-iterations", "5", "--workers", "1"]
    assert main([*race, "--out", str(tmp_path / "race"), "--no-plots", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "openspiel:liars_dice(dice_sides=3): NashConv" in printed
    assert "| 1 | cfr_plus |" in printed

    from nashzoo.cli import build_parser
    from nashzoo.cli.play import _cmd_play

    args = build_parser().parse_args(["play", "--game", LIARS_DICE, "--agent", "equilibrium"])
    assert _cmd_play(args, stdin=io.StringIO("9\nliar\n2-3\n")) == 0  # OpenSpiel's names
    printed = capsys.readouterr().out
    assert "'9' is not a legal move" in printed and "'liar' is not a legal move" in printed
    assert "equilibrium plays Liar" in printed and "result: player 0" in printed


def test_game_without_tensors_has_size_zero_and_tensor_learners_refuse_it() -> None:
    game = load_game("openspiel:coordinated_mp")  # information-state strings, no tensors
    assert game.infoset_tensor_size == 0
    assert compile_tree(game).infoset_tensors.shape == (3, 0)
    assert solve_game(game).value[0] == pytest.approx(0.0, abs=1e-12)
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="reads information-set tensors"):
        train(game, "deep_cfr", iterations=1)


def test_a_table_is_read_by_key_where_information_sets_share_tensors() -> None:
    """dark_hex(board_size=2): 134 information sets, 55 distinct tensors. A table's rows are
    read by index wherever the tree is known (it answered 54 of 133 rows with another set's
    row), and a lookup by tensor that several sets share is refused, not guessed."""
    from nashzoo.agents import Infoset
    from nashzoo.agents.policy import PolicyError, policy_rows

    game = load_game("openspiel:dark_hex(board_size=2)")
    tree = compile_tree(game)
    probs = np.random.default_rng(0).random((tree.num_infosets, tree.num_actions))
    probs *= tree.legal_mask
    table = TabularPolicy(game, probs / probs.sum(axis=1, keepdims=True))
    rows = np.arange(1, tree.num_infosets)
    np.testing.assert_array_equal(policy_rows(tree, table, rows), table.probs[rows])
    tensors = [t.tobytes() for t in tree.infoset_tensors]
    shared = next(i for i, t in enumerate(tensors) if tensors.count(t) > 1)
    view = Infoset(-1, "", tree.infoset_tensors[shared], tree.legal_mask[shared])
    with pytest.raises(PolicyError, match=r"share this tensor.*key"):
        table.action_probabilities(view)
    keyed = Infoset(-1, tree.infoset_keys[shared], view.tensor, view.legal_mask)
    np.testing.assert_array_equal(table.action_probabilities(keyed), table.probs[shared])


def test_a_game_whose_own_name_does_not_load_back_keeps_the_string_it_was_loaded_by() -> None:
    """restricted_nash_response calls itself 'rnr_kuhn_poker', which OpenSpiel cannot load:
    its id is the string it was loaded by, so files, checkpoints and workers find it again."""
    spec = "openspiel:restricted_nash_response(game=kuhn_poker())"
    game = load_game(spec)
    assert game.id == spec
    assert load_game(game.id).id == spec and pickle.loads(pickle.dumps(game)).id == spec


@pytest.mark.parametrize(
    ("spec", "found"),
    [
        ("openspiel:goofspiel(num_cards=4)", "does not have perfect recall"),
        ("openspiel:phantom_ttt", "belongs to player 0 and to player 1"),
    ],
)
def test_openspiels_imperfect_recall_names_the_way_out(spec, found, capfd) -> None:
    """OpenSpiel's own information-state strings forget here: the message says they are
    OpenSpiel's (not the user's keys to fix) and names a parameter that keeps them."""
    with pytest.raises(GameDefinitionError, match=rf"{found}.*OpenSpiel's own.*imp_info=True"):
        compile_tree(load_game(spec))
    assert capfd.readouterr().err == ""


def test_an_env_over_a_game_whose_tensors_hold_chip_counts_passes_pettingzoos_tests() -> None:
    """No-limit universal_poker's tensors hold chip counts, which nashzoo cannot rescale: the
    bridge declares its observations unbounded (they were refused as outside [0, 1])."""
    spec = (
        "openspiel:universal_poker(betting=nolimit,numPlayers=2,numRounds=1,blind=1 1,"
        "firstPlayer=1 1,numSuits=1,numRanks=3,numHoleCards=1,numBoardCards=0,stack=4 4)"
    )
    game_env = env(spec)
    api_test(game_env, num_cycles=20)
    box = game_env.observation_space("player_0")["observation"]
    assert box.low.min() == -np.inf and box.high.max() == np.inf


@pytest.mark.parametrize("spec", ["openspiel:efg_game", "openspiel:nfg_game(filename=)"])
def test_a_game_read_from_a_file_is_refused_without_one(spec):
    """Bare efg_game and nfg_game gave OpenSpiel's `file.cc:51 CHECK_TRUE(fd_)` and `map::at`."""
    with pytest.raises(ValueError, match=r"reads its game from a file: give filename=PATH"):
        load_game(spec)
