"""Small games written as a user would write them (a Game and its States, walked to compile),
shared by the tests that need one: not a test file, imported by name (``from user_games import
MatchingPennies``) as pytest puts this folder on the path."""

from __future__ import annotations

import numpy as np

from nashzoo.games import TERMINAL, Game, State


class MatchingPennies(Game):
    """Matching pennies, one move each in the dark: the information sets are "p0" and "p1",
    the tensors one-hot seats. Subclasses may swap the States (``state_class``)."""

    name = "matching_as_a_user_writes_it"
    num_actions = 2
    infoset_tensor_size = 2

    def new_initial_state(self) -> State:
        return self.state_class(self, ())

    @property
    def state_class(self) -> type[MatchingPenniesState]:
        return MatchingPenniesState


class MatchingPenniesState(State):
    def __init__(self, game: Game, moves: tuple[int, ...]) -> None:
        super().__init__(game)
        self.moves = moves

    def current_player(self) -> int:
        return TERMINAL if len(self.moves) == 2 else len(self.moves)

    def legal_actions(self) -> list[int]:
        return [] if self.is_terminal() else [0, 1]

    def _child(self, action: int) -> State:
        return type(self)(self.game, (*self.moves, action))

    def returns(self) -> np.ndarray:
        if not self.is_terminal():
            return np.zeros(2)
        win = 1.0 if self.moves[0] == self.moves[1] else -1.0
        return np.array([win, -win])

    def history(self) -> list[int]:
        return list(self.moves)

    def infoset_key(self, player: int) -> str:
        return f"p{player}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        return np.eye(2, dtype=np.float32)[player]

    def describe(self, player: int | None = None) -> str:
        return str(self.moves)
