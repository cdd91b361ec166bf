"""A game far deeper than Python's recursion limit (1,000 frames): every path through the
library is iterative, so a long but narrow game trains and evaluates like a short one."""

from __future__ import annotations

import numpy as np
import pytest

from nashzoo.games import TERMINAL, Game, State, register_game, unregister_game

DEPTH = 1_100


class StopRace(Game):
    """Players alternate ``n`` times; each may stop (ending the game: the stopper loses 1) or
    go on; after ``n`` goes the game is a draw. 2n+1 histories, depth n. Going on is dominant,
    so the value is 0 and NashConv of "always go" is 0."""

    name = "stop_race"
    num_actions = 2
    action_names = ("stop", "go")
    infoset_tensor_size = 1

    def __init__(self, n: int = DEPTH) -> None:
        super().__init__({"n": n})
        self.n = n

    def new_initial_state(self) -> State:
        return StopRaceState(self, 0, False)


class StopRaceState(State):
    def __init__(self, game: StopRace, moves: int, stopped: bool) -> None:
        super().__init__(game)
        self.moves, self.stopped = moves, stopped

    def current_player(self) -> int:
        if self.stopped or self.moves >= self.game.n:
            return TERMINAL
        return self.moves % 2

    def legal_actions(self) -> list[int]:
        return [] if self.is_terminal() else [0, 1]

    def _child(self, action: int) -> State:
        return StopRaceState(self.game, self.moves + 1, action == 0)

    def returns(self) -> np.ndarray:
        if not self.stopped:
            return np.zeros(2)
        loser = (self.moves - 1) % 2
        return np.where(np.arange(2) == loser, -1.0, 1.0)

    def history(self) -> list[int]:
        return [1] * (self.moves - self.stopped) + [0] * self.stopped

    def describe(self, player: int | None = None) -> str:
        return f"stop race, {self.moves} moves" + (", stopped" if self.stopped else "")

    def infoset_key(self, player: int) -> str:
        return f"{self.moves}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.array([self.moves / self.game.n])


@pytest.fixture(scope="module")
def stop_race():
    register_game("stop_race", StopRace)
    yield "stop_race"
    unregister_game("stop_race")


@pytest.mark.parametrize(("learner", "iterations"), [("es_mccfr", 100), ("cfr_plus", 30)])
def test_a_game_deeper_than_the_recursion_limit_trains(stop_race, learner, iterations):
    """External-sampling MCCFR enumerated a small tree's walk outcomes recursively and raised
    RecursionError on any game more than about 650 moves deep."""
    from nashzoo.agents import TabularPolicy
    from nashzoo.eval import exploitability
    from nashzoo.train import train

    assert exploitability(stop_race, TabularPolicy.uniform(stop_race)) == pytest.approx(1.0)
    result = train(stop_race, learner, iterations=iterations, seed=0)
    assert result.exploitability < 0.15  # both seats learn to go on 1,100 moves deep
