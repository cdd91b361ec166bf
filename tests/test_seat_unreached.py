"""A learner that learns from play, against an opponent whose play never lets its seat move.

In cross-play a CFR learner's current strategy often goes pure on a line that ends the game
before the other seat moves. NFSP, PPO and DQN then drew 100,000 empty episodes (15-35 s) and
stopped the whole run with a RuntimeError (found by a random-game fuzz, 2026-11-28). Whether
the seat can move is now checked exactly over the tree (``treemath.reaches_player``), and
such a step learns nothing and says so (``seat_unreached``)."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.games import CHANCE, TERMINAL, Game, State, compile_tree
from nashzoo.games import treemath as tm


class ExitOrEnter(Game):
    """Player 0 exits (the game ends, 0.5 to it) or enters; then player 1 picks left (player 0
    wins 1) or right (player 0 loses 1)."""

    name = "exit_or_enter"
    num_actions = 2
    action_names = ("exit", "enter")
    infoset_tensor_size = 2

    def __init__(self) -> None:
        super().__init__({})

    def new_initial_state(self) -> State:
        return ExitOrEnterState(self, ())


class ExitOrEnterState(State):
    def __init__(self, game: Game, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self.moves = moves

    def current_player(self) -> int:
        return TERMINAL if self.moves == (0,) or len(self.moves) == 2 else len(self.moves)

    def legal_actions(self) -> list[int]:
        return [] if self.current_player() == TERMINAL else [0, 1]

    def _child(self, action: int) -> State:
        return ExitOrEnterState(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        u = {(0,): 0.5, (1, 0): 1.0, (1, 1): -1.0}.get(self.moves, 0.0)
        return np.array([u, -u])

    def history(self) -> list[int]:
        return list(self.moves)

    def describe(self, player: int | None = None) -> str:
        return f"exit or enter {self.moves}"

    def infoset_key(self, player: int) -> str:
        return f"p{player}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.eye(2)[player]


ALWAYS_EXIT = {"strategy": {"p0": [1.0, 0.0]}}


def test_reaches_player_is_exact():
    tree = compile_tree(ExitOrEnter())
    exits = lambda rows: np.tile([1.0, 0.0], (rows.size, 1))  # noqa: E731
    rarely = lambda rows: np.tile([1.0 - 1e-12, 1e-12], (rows.size, 1))  # noqa: E731
    assert not tm.reaches_player(tree, 1, exits)
    assert tm.reaches_player(tree, 1, rarely)  # rare is not never
    assert tm.reaches_player(tree, 0, exits)  # the root is player 0's


@pytest.mark.parametrize(
    ("learner", "config"),
    [
        ("nfsp", {}),
        ("ppo", {}),  # one env copy: SingleAgentEnv
        ("ppo", {"n_envs": 2, "steps_per_iteration": 64}),  # copies over the tree
        ("dqn", {}),
    ],
)
def test_a_step_where_the_opponent_ends_every_game_learns_nothing(learner, config):
    pytest.importorskip("torch")
    if learner != "nfsp":
        pytest.importorskip("stable_baselines3")
    from nashzoo.train import LambdaCallback, Trainer

    trainer = Trainer(
        ExitOrEnter(),
        "fixed",
        learner,
        configs=(ALWAYS_EXIT, config),
        final_eval=False,
        progress=False,
    )
    steps = []
    trainer.callbacks.callbacks.append(
        LambdaCallback(on_step=lambda t, metrics: steps.append(metrics["seats"][1]))
    )
    trainer.run(iterations=2)
    assert [step["seat_unreached"] for step in steps] == [1, 1]
    assert all(step["episodes"] == 0 for step in steps)


class ChanceEnds(ExitOrEnter):
    """Chance ends the game (probability 1) or, with probability 0, lets the players move."""

    name = "chance_ends"

    def new_initial_state(self) -> State:
        return ChanceEndsState(self, ())


class ChanceEndsState(ExitOrEnterState):
    def current_player(self) -> int:
        if not self.moves:
            return CHANCE
        return TERMINAL if self.moves[0] == 0 or len(self.moves) == 3 else len(self.moves) - 1

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(0, 1.0), (1, 0.0)]

    def _child(self, action: int) -> State:
        return ChanceEndsState(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        u = 0.0 if len(self.moves) < 3 else (1.0 if self.moves[1] == self.moves[2] else -1.0)
        return np.array([u, -u])


def test_a_game_chance_ends_before_anyone_moves_is_refused_not_stepped_for_ever():
    """Every step found the seat unreached and did no work, so a work budget was never met
    (the run hung); before that check, 100,000 empty episodes and a RuntimeError."""
    pytest.importorskip("torch")
    from nashzoo.train import Trainer

    trainer = Trainer(ChanceEnds(), "nfsp", "nfsp", final_eval=False, progress=False)
    with pytest.raises(ValueError, match="chance ends every game drawn before anyone moves"):
        trainer.run(work=100)
