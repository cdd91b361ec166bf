"""Kuhn poker (Kuhn 1950), in the reference encoding of the literature (the one OpenSpiel uses).

Rules: a three-card deck J, Q, K (cards 0, 1, 2). Each player antes 1 and is dealt one card,
player 0 first. Player 0 acts first; actions are 0 = pass (check or fold) and 1 = bet (bet or
call), each bet is 1. The betting ends with ``pp`` (showdown for 1), ``bb`` or ``pbb``
(showdown for 2), ``bp`` or ``pbp`` (the player who passed after a bet folds and loses 1).
Game value for player 0 is -1/18; there are 12 information sets and 30 terminal histories.

Information-set keys read ``"<card>|<betting>"``, e.g. ``"Q|pb"`` is player 0 holding the queen
after passing and facing a bet.

Information-set tensor layout (length 11, the same layout as OpenSpiel's kuhn_poker):
    [0:2]   one-hot of the observing player
    [2:5]   one-hot of the observing player's card (J, Q, K)
    [5:11]  three betting slots of two bits each: (1, 0) = pass, (0, 1) = bet; empty slots 0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL, as_tensor, check_player, one_hot
from nashzoo.games.cards import CardGame, CardGameState

CARD_NAMES = ("J", "Q", "K")
_ACTION_LETTERS = "pb"
_TERMINAL_BETTING = {(0, 0), (1, 0), (1, 1), (0, 1, 0), (0, 1, 1)}
_FOLDS = ((1, 0), (0, 1, 0))


class KuhnPokerGame(CardGame):
    """Two-player Kuhn poker."""

    name = "kuhn_poker"
    num_players = 2
    num_actions = 2
    action_names = ("pass", "bet")
    infoset_tensor_size = 11

    compile_arrays = CardGame.compile_arrays  # the builder knows these rules (tree.own_builder)

    def new_initial_state(self) -> KuhnState:
        return KuhnState(self, (), ())


class KuhnState(CardGameState):
    CARD_NAMES = CARD_NAMES
    game: KuhnPokerGame

    def __init__(self, game: KuhnPokerGame, cards: tuple[int, ...], bets: tuple[int, ...]):
        super().__init__(game)
        self._cards = cards
        self._bets = bets

    def current_player(self) -> int:
        if len(self._cards) < 2:
            return CHANCE
        if self._bets in _TERMINAL_BETTING:
            return TERMINAL
        return len(self._bets) % 2

    def legal_actions(self) -> list[int]:
        player = self.current_player()
        if player == CHANCE:
            return [c for c in range(3) if c not in self._cards]
        if player == TERMINAL:
            return []
        return [0, 1]

    def _child(self, action: int) -> KuhnState:
        if len(self._cards) < 2:
            return KuhnState(self.game, (*self._cards, action), self._bets)
        return KuhnState(self.game, self._cards, (*self._bets, action))

    def settlement(self) -> tuple[int | None, float]:
        bets = self._bets
        if bets in _FOLDS:  # the last player to act folded to a bet
            return (len(bets) - 1) % 2, 1.0
        return None, 2.0 if 1 in bets else 1.0

    @staticmethod
    def showdown(card_0: Any, card_1: Any, board: Any) -> Any:
        return np.sign(card_0 - card_1)  # the higher card wins; there are no ties

    def history(self) -> list[int]:
        return [*self._cards, *self._bets]

    def _betting_string(self) -> str:
        return "".join(_ACTION_LETTERS[a] for a in self._bets)

    def infoset_key(self, player: int) -> str:
        player = check_player(self.game, player)
        card = CARD_NAMES[self._cards[player]] if len(self._cards) > player else "?"
        return f"{card}|{self._betting_string()}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        player = check_player(self.game, player)
        card = self._cards[player] if len(self._cards) > player else None
        values = one_hot(2, player) + one_hot(3, card)
        for slot in range(3):
            values += one_hot(2, self._bets[slot] if slot < len(self._bets) else None)
        return as_tensor(values)

    def describe(self, player: int | None = None) -> str:
        lines = ["Kuhn poker (ante 1, bet 1)"]
        showdown = self.is_terminal() and self._bets not in _FOLDS
        lines += self._private_card_lines(player, showdown)
        names = [self.game.action_names[a] for a in self._bets]
        lines.append(f"  betting: {', '.join(names) if names else '(none yet)'}")
        return "\n".join(lines + self._status_line())
