"""What the card games share: dealing from a deck, settling a hand, naming deals, and the lines
of ``describe``.

Kuhn poker and Leduc hold'em deal cards uniformly from what is left of a small deck, settle a
finished hand the same way (a fold loses the folder's stake, a showdown is won by the better
hand) and show a person the same things (each player's card unless hidden, the result or who is
to move); the rules that differ stay in each game's module. The two halves of settling (who
folded and for how much, from the betting alone; who wins a showdown, from the cards alone) are
separate methods so that ``games/card_tree.py`` can compile these games without a State per
history.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from nashzoo.games.base import Game, State
from nashzoo.games.card_tree import build_card_game_tree
from nashzoo.games.compiled import CompiledTree


class CardGame(Game):
    """A game of :class:`CardGameState` s: compiled by the vectorised builder."""

    @abstractmethod
    def new_initial_state(self) -> CardGameState:
        """The root of the game tree: a chance node dealing player 0's card."""

    def compile_arrays(self) -> CompiledTree:
        """The compiled tree without a State per history (``games/card_tree.py``). Used for a
        class that declares it in its own body (Kuhn's and Leduc's do): a subclass under a name
        of its own may change rules the builder does not read from its States, so it is walked
        (``tree.own_builder``)."""
        return build_card_game_tree(self)


class CardGameState(State):
    """A ``State`` whose chance nodes deal one card uniformly from the cards still in the deck.

    Subclasses set ``CARD_NAMES`` and keep the dealt cards in ``self._cards`` (private cards of
    player 0, 1, ..., then public ones); ``legal_actions()`` at a chance node lists the cards
    still in the deck.
    """

    CARD_NAMES: tuple[str, ...] = ()
    _cards: tuple[int, ...]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if not self.is_chance_node():
            return super().chance_outcomes()
        outcomes = self.legal_actions()
        return [(c, 1.0 / len(outcomes)) for c in outcomes]

    def returns(self) -> np.ndarray:
        if not self.is_terminal():
            return np.zeros(2)
        folder, stake = self.settlement()
        if folder is None:
            sign = self.showdown(self._cards[0], self._cards[1], self.board())
        else:
            sign = 1 if folder == 1 else -1
        return np.array([sign * stake, -sign * stake], dtype=np.float64)

    def settlement(self) -> tuple[int | None, float]:
        """At a terminal, from the betting alone: the player who folded (``None`` at a
        showdown) and the stake, what the loser pays."""
        raise NotImplementedError

    def board(self) -> int:
        """The public card, -1 before it is dealt (and in games without one)."""
        return -1

    @staticmethod
    def showdown(card_0: Any, card_1: Any, board: Any) -> Any:
        """At a showdown, from the cards alone: +1 where player 0 wins, -1 where player 1
        does, 0 for a split pot; numbers or numpy arrays of cards (``board`` -1: none)."""
        raise NotImplementedError

    def action_to_string(self, action: int) -> str:
        if self.is_chance_node():
            return f"deal {self.CARD_NAMES[action]}"
        return self.game.action_name(action)

    def _private_card_lines(self, player: int | None, showdown: bool) -> list[str]:
        """One line per player: the card, ``hidden`` from ``player``, or ``not dealt``."""
        lines = []
        for p in range(self.game.num_players):
            if len(self._cards) <= p:
                card = "not dealt"
            elif player is None or player == p or showdown:
                card = self.CARD_NAMES[self._cards[p]]
            else:
                card = "hidden"
            lines.append(f"  player {p} card: {card}")
        return lines

    def _status_line(self) -> list[str]:
        """The result at a terminal, who is to move at a decision, nothing at chance."""
        if self.is_terminal():
            r = self.returns()
            return [f"  result: player 0 {r[0]:+g}, player 1 {r[1]:+g}"]
        if not self.is_chance_node():
            return [f"  to move: player {self.current_player()}"]
        return []
