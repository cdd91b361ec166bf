"""What the card games share: dealing from a deck, naming deals, and the lines of ``describe``.

Kuhn poker and Leduc hold'em deal cards uniformly from what is left of a small deck and show a
person the same things (each player's card unless hidden, the result or who is to move); the
rules that differ stay in each game's module.
"""

from __future__ import annotations

from nashzoo.games.base import State


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
