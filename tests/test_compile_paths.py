"""Every way of building a compiled tree gives the checking walk's arrays, bit for bit, and the
fast walk gives up (so the checking walk explains) on every kind of malformed game."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from nashzoo.games import (
    CompiledTree,
    Game,
    GameDefinitionError,
    MatrixGame,
    compile_tree,
    load_game,
    progress,
)
from nashzoo.games import fast_walk as fw
from nashzoo.games.card_tree import build_card_game_tree
from nashzoo.games.layout import lay_out
from nashzoo.games.tree import _compile, walk_states

STATE_GAMES = [
    "kuhn_poker",
    "leduc_poker",
    "rps",
    "matrix(preset='biased_rps')",
    "matrix(preset='prisoners_dilemma')",
    "liars_dice(dice_sides=3)",
    "liars_dice(numdice=2,dice_sides=2)",
    "liars_dice(dice_sides=3,bidding_rule='reset-quantity')",
]
BRIDGED_GAMES = [
    "openspiel:kuhn_poker",
    "openspiel:leduc_poker",
    "openspiel:liars_dice(dice_sides=3)",
    "openspiel:goofspiel(imp_info=True,num_cards=3)",
    "openspiel:tiny_hanabi",
    "openspiel:first_sealed_auction(max_value=3)",
    "openspiel:universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,raiseSize=2 4,"
    "firstPlayer=1 1,maxRaises=2 2,numSuits=2,numRanks=3,numHoleCards=1,numBoardCards=0 1)",
]


def assert_same_tree(built: CompiledTree, walked: CompiledTree) -> None:
    """Every stored array equal in value, dtype, shape and layout; the same keys and tensors."""
    for field in dataclasses.fields(CompiledTree):
        ours, theirs = getattr(built, field.name), getattr(walked, field.name)
        if isinstance(theirs, np.ndarray):
            assert ours.dtype == theirs.dtype, field.name
            assert ours.flags.c_contiguous == theirs.flags.c_contiguous, field.name
            assert ours.shape == theirs.shape, field.name  # (numpy 1.23 has no strict=True)
            np.testing.assert_array_equal(ours, theirs, err_msg=field.name)
            assert ours.tobytes() == theirs.tobytes(), field.name  # -0.0 is not 0.0 here
        elif not callable(theirs):
            assert ours == theirs, field.name
    assert built.infoset_keys == walked.infoset_keys
    ours, theirs = built.infoset_tensors, walked.infoset_tensors
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def _fast(game: Game) -> CompiledTree:
    return fw.walk(game, game.new_initial_state(), fw.state_ops(game))


def _card_games() -> list[str]:
    """Every built-in game the card-game builder compiles (it skips the per-history checks,
    so each is compared with the checking walk here, a new one without a list)."""
    from nashzoo.games.cards import CardGame
    from nashzoo.games.registry import BUILTIN_GAMES

    found = []
    for name in BUILTIN_GAMES:
        try:
            game = load_game(name)
        except ValueError:  # a game that needs parameters (matrix): not a card game
            continue
        if isinstance(game, CardGame):
            found.append(name)
    return found


def test_the_card_games_are_found():
    assert {"kuhn_poker", "leduc_poker"} <= set(_card_games())


@pytest.mark.parametrize("spec", _card_games())
def test_card_game_builder_is_the_checking_walk(spec: str) -> None:
    game = load_game(spec)
    built = build_card_game_tree(game)
    assert_same_tree(built, walk_states(game))
    assert_same_tree(_compile(game), built)  # what compile_tree builds these games with


@pytest.mark.parametrize(
    "game",
    [
        load_game("rps"),
        load_game("matrix", preset="prisoners_dilemma"),
        MatrixGame(row_payoffs=[[1, 2, 3], [4, 5, 6]]),
        MatrixGame(row_payoffs=[[1, 2], [4, 5], [7, 8]], col_payoffs=[[0, 1], [1, 0], [2, 2]]),
    ],
    ids=["rps", "prisoners_dilemma", "2x3", "3x2_general_sum"],
)
def test_matrix_game_builder_is_the_checking_walk(game: MatrixGame) -> None:
    assert_same_tree(_compile(game), walk_states(game))


@pytest.mark.parametrize("spec", STATE_GAMES)
def test_fast_walk_over_states_is_the_checking_walk(spec: str, layout_twin: str) -> None:
    game = load_game(spec)
    assert_same_tree(_fast(game), walk_states(game))


@pytest.mark.parametrize("walk", [_fast, walk_states], ids=["fast walk", "checking walk"])
def test_a_long_walk_shows_its_progress_on_a_terminal(walk, monkeypatch, capsys) -> None:
    """Off a terminal a walk prints nothing; on one, past the delay, it shows a bar of the
    histories visited, and the tree is the same either way."""
    game = load_game("liars_dice(dice_sides=3)")
    quiet = walk(game)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 64)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    shown = walk(game)
    err = capsys.readouterr().err
    assert f"compiling {game.id}" in err and "histories" in err
    assert_same_tree(shown, quiet)


def test_without_tqdm_a_long_walk_shows_nothing_and_compiles(monkeypatch, capsys) -> None:
    """The games layer needs only numpy: without tqdm the bar is left out, nothing else."""
    game = load_game("liars_dice(dice_sides=3)")
    monkeypatch.setattr(progress, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(progress, "PROGRESS_EVERY", 64)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    for name in ("tqdm", "tqdm.auto", "tqdm.std"):
        monkeypatch.setitem(sys.modules, name, None)  # importing them raises ImportError
    tree = _fast(game)
    assert capsys.readouterr().err == ""
    assert_same_tree(tree, walk_states(game))


@pytest.mark.parametrize("spec", BRIDGED_GAMES)
def test_bridge_walk_over_raw_pyspiel_states_is_the_checking_walk(
    spec: str, layout_twin: str
) -> None:
    pytest.importorskip("pyspiel")
    from nashzoo.games.openspiel import _raw_ops

    game = load_game(spec)
    raw = fw.walk(game, game.openspiel_game.new_initial_state(), _raw_ops(game))
    assert_same_tree(raw, walk_states(game))
    assert_same_tree(_fast(game), raw)  # through the OpenSpielState wrappers, too


def test_the_layout_gives_up_on_a_payoff_that_is_not_finite(layout_twin: str) -> None:
    """A payoff the walk let through unchecked (the bridge reads raw returns) stops the layout,
    so the checking walk names the history."""
    game = load_game("kuhn_poker")
    records = fw._Records()
    fw._visit_all(game, game.new_initial_state(), fw.state_ops(game), records)
    records.utility[3] = float("nan")
    with pytest.raises(fw.Unexplained, match="not finite"):
        lay_out(game, records)


def test_the_bridge_walk_gives_up_on_imperfect_recall(layout_twin: str) -> None:
    pytest.importorskip("pyspiel")
    from nashzoo.games.openspiel import _raw_ops

    game = load_game("openspiel:liars_dice_ir(dice_sides=3)")
    with pytest.raises(fw.Unexplained):
        fw.walk(game, game.openspiel_game.new_initial_state(), _raw_ops(game))
    with pytest.raises(GameDefinitionError, match="perfect recall"):
        compile_tree(game)


def test_a_subclass_of_a_built_in_game_is_walked_through_its_own_states() -> None:
    """The card builder knows Kuhn's rules, not a subclass's: a variant whose information
    sets forget the betting (imperfect recall) used to compile silently as plain Kuhn (review
    by a newcomer); it is now walked, every history checked, and refused. A subclass that
    changes nothing gets Kuhn's tree either way; declaring the hook again keeps the builder."""
    from nashzoo.games import GameDefinitionError, KuhnPokerGame
    from nashzoo.games.kuhn import KuhnState
    from nashzoo.games.tree import own_builder

    class ForgetfulState(KuhnState):
        def _child(self, action: int) -> KuhnState:
            child = super()._child(action)
            return ForgetfulState(self.game, child._cards, child._bets)

        def infoset_key(self, player: int) -> str:
            return super().infoset_key(player).split("|")[0]  # the card alone

    class ForgetfulKuhn(KuhnPokerGame):
        name = "_forgetful_kuhn"

        def new_initial_state(self) -> KuhnState:
            return ForgetfulState(self, (), ())

    class SameKuhn(KuhnPokerGame):
        name = "_same_kuhn"

    class FastKuhn(KuhnPokerGame):
        name = "_fast_kuhn"
        compile_arrays = KuhnPokerGame.compile_arrays

    assert own_builder(ForgetfulKuhn()) is None and own_builder(SameKuhn()) is None
    with pytest.raises(GameDefinitionError, match="perfect recall"):
        _compile(ForgetfulKuhn())
    kuhn = load_game("kuhn_poker")
    assert own_builder(kuhn) is not None and own_builder(FastKuhn()) is not None
    same, fast = SameKuhn(), FastKuhn()
    assert_same_tree(_compile(same), build_card_game_tree(same))
    assert_same_tree(_compile(fast), walk_states(fast))


def test_a_subclass_under_the_built_in_name_keeps_the_builders_layout() -> None:
    """A subclass that keeps a built-in's name has its id too, so its policies and checkpoints
    are taken for the built-in's: it keeps the builder (a walk numbers Liar's dice's
    information sets otherwise, and a checkpoint of such a subclass was refused as damaged;
    review)."""
    from nashzoo.agents import make_learner
    from nashzoo.agents.loading import load_learner
    from nashzoo.games import LiarsDiceGame
    from nashzoo.games.tree import own_builder

    class MyDice(LiarsDiceGame):
        def describe_rules(self) -> str:  # a helper of the researcher's: no rule changed
            return "dice"

    game = MyDice(dice_sides=3)
    assert game.id == "liars_dice(dice_sides=3)" and own_builder(game) is not None
    assert_same_tree(_compile(game), _compile(LiarsDiceGame(dice_sides=3)))
    learner = make_learner("cfr", game, 0)
    learner.step(learner.current_policy())
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        learner.save(f"{folder}/seat0.npz")
        back = load_learner(f"{folder}/seat0.npz")
    assert back.average_policy().probs.tolist() == learner.average_policy().probs.tolist()
