"""Leduc hold'em (Southey et al. 2005), in the reference encoding the literature uses
(the one OpenSpiel's ``leduc_poker`` uses), so policies and numbers compare directly.

Rules: six cards 0..5, rank = card // 2 (J, Q, K; two suits each). Each player antes 1 and is
dealt one private card, player 0 first. Two betting rounds, player 0 acts first in each; actions
are 0 = fold (legal only when facing a bet), 1 = call/check, 2 = raise (at most two raises a
round). A raise is 2 in round one and 4 in round two. After round one a public card is dealt.
At showdown a private card that pairs the public card wins, otherwise the higher rank wins,
equal ranks split the pot. 936 information sets, 5520 terminal histories.

Information-set keys read ``"<own card>|<public card or ?>|<round 1>[/<round 2>]"`` with cards
named rank + suit (``Js Jh Qs Qh Ks Kh`` for 0..5) and actions ``f c r``, e.g. ``"Qh|Ks|rc/c"``.

Information-set tensor layout (length 30, the same layout as OpenSpiel's leduc_poker):
    [0:2]    one-hot of the observing player
    [2:8]    one-hot of the observing player's private card
    [8:14]   one-hot of the public card (zeros before it is dealt)
    [14:22]  round-one betting: four slots of two bits, (1, 0) = call, (0, 1) = raise
    [22:30]  round-two betting, same encoding
A fold is not recorded (it ends the game), as in OpenSpiel: at a terminal reached by a fold a
player's tensor equals the one just before the fold (``tests/test_games.py`` checks this layout
against OpenSpiel's ``information_state_tensor`` at every node).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL, as_tensor, check_player, one_hot
from nashzoo.games.cards import CardGame, CardGameState

FOLD, CALL, RAISE = 0, 1, 2
CARD_NAMES = ("Js", "Jh", "Qs", "Qh", "Ks", "Kh")
_ACTION_LETTERS = "fcr"
_RAISE_SIZE = (2, 4)
_MAX_RAISES = 2
_ANTE = 1


class LeducPokerGame(CardGame):
    """Two-player Leduc hold'em."""

    name = "leduc_poker"
    num_players = 2
    num_actions = 3
    action_names = ("fold", "call", "raise")
    infoset_tensor_size = 30

    compile_arrays = CardGame.compile_arrays  # the builder knows these rules (tree.own_builder)

    def new_initial_state(self) -> LeducState:
        return LeducState(self, (), ((), ()))


def hand_strength(card: Any, board: Any) -> Any:
    """A private card pairing the public card beats any unpaired one; otherwise the rank
    counts (numbers or numpy arrays of cards)."""
    rank = card // 2
    return rank + 10 * (rank == board // 2)


def _round_over(actions: tuple[int, ...]) -> bool:
    """A betting round is over after check-check or a call of a raise (or a fold)."""
    if not actions:
        return False
    if actions[-1] == FOLD:
        return True
    return actions[-1] == CALL and (len(actions) >= 2)


class LeducState(CardGameState):
    CARD_NAMES = CARD_NAMES
    game: LeducPokerGame

    def __init__(
        self,
        game: LeducPokerGame,
        cards: tuple[int, ...],
        rounds: tuple[tuple[int, ...], tuple[int, ...]],
    ) -> None:
        super().__init__(game)
        self._cards = cards
        self._rounds = rounds

    # --- derived bookkeeping ---------------------------------------------------------------
    def _round(self) -> int:
        return 1 if _round_over(self._rounds[0]) and self._rounds[0][-1] != FOLD else 0

    def _folded(self) -> bool:
        return any(r and r[-1] == FOLD for r in self._rounds)

    def _contributions(self) -> list[int]:
        contrib = [_ANTE, _ANTE]
        for rnd, actions in enumerate(self._rounds):
            for i, action in enumerate(actions):
                player = i % 2
                if action == CALL:
                    contrib[player] = max(contrib)
                elif action == RAISE:
                    contrib[player] = max(contrib) + _RAISE_SIZE[rnd]
        return contrib

    # --- API -------------------------------------------------------------------------------
    def current_player(self) -> int:
        if len(self._cards) < 2:
            return CHANCE
        if self._folded():
            return TERMINAL
        rnd = self._round()
        if rnd == 1:
            if len(self._cards) < 3:
                return CHANCE
            if _round_over(self._rounds[1]):
                return TERMINAL
        return len(self._rounds[rnd]) % 2

    def legal_actions(self) -> list[int]:
        player = self.current_player()
        if player == CHANCE:
            return [c for c in range(6) if c not in self._cards]
        if player == TERMINAL:
            return []
        actions = self._rounds[self._round()]
        contrib = self._contributions()
        legal = [FOLD] if contrib[player] < max(contrib) else []
        legal.append(CALL)
        if actions.count(RAISE) < _MAX_RAISES:
            legal.append(RAISE)
        return legal

    def _child(self, action: int) -> LeducState:
        if self.is_chance_node():
            return LeducState(self.game, (*self._cards, action), self._rounds)
        rnd = self._round()
        rounds = list(self._rounds)
        rounds[rnd] = (*rounds[rnd], action)
        return LeducState(self.game, self._cards, (rounds[0], rounds[1]))

    def settlement(self) -> tuple[int | None, float]:
        contrib = self._contributions()
        if self._folded():
            actions = self._rounds[0] if self._rounds[0][-1] == FOLD else self._rounds[1]
            folder = (len(actions) - 1) % 2
            return folder, contrib[folder]
        return None, contrib[0]  # a showdown follows a call: both put in the same

    def board(self) -> int:
        return self._cards[2] if len(self._cards) > 2 else -1

    @staticmethod
    def showdown(card_0: Any, card_1: Any, board: Any) -> Any:
        return np.sign(hand_strength(card_0, board) - hand_strength(card_1, board))

    def history(self) -> list[int]:
        return [*self._cards[:2], *self._rounds[0], *self._cards[2:], *self._rounds[1]]

    def infoset_key(self, player: int) -> str:
        player = check_player(self.game, player)
        own = CARD_NAMES[self._cards[player]] if len(self._cards) > player else "?"
        public = CARD_NAMES[self._cards[2]] if len(self._cards) > 2 else "?"
        betting = "".join(_ACTION_LETTERS[a] for a in self._rounds[0])
        if len(self._cards) > 2:
            betting += "/" + "".join(_ACTION_LETTERS[a] for a in self._rounds[1])
        return f"{own}|{public}|{betting}"

    def infoset_tensor(self, player: int) -> np.ndarray:
        player = check_player(self.game, player)
        own = self._cards[player] if len(self._cards) > player else None
        public = self._cards[2] if len(self._cards) > 2 else None
        values = one_hot(2, player) + one_hot(6, own) + one_hot(6, public)
        for actions in self._rounds:
            for slot in range(4):
                action = actions[slot] if slot < len(actions) else None
                values += one_hot(2, None if action in (None, FOLD) else action - 1)
        return as_tensor(values)

    def describe(self, player: int | None = None) -> str:
        showdown = self.is_terminal() and not self._folded()
        lines = ["Leduc hold'em (ante 1, raises 2 then 4, at most two a round)"]
        lines += self._private_card_lines(player, showdown)
        public = CARD_NAMES[self._cards[2]] if len(self._cards) > 2 else "not dealt yet"
        lines.append(f"  public card: {public}")
        for rnd, actions in enumerate(self._rounds):
            if actions or rnd == self._round():
                names = ", ".join(self.game.action_names[a] for a in actions) or "(none yet)"
                lines.append(f"  round {rnd + 1} betting: {names}")
        contrib = self._contributions()
        lines.append(f"  pot: {sum(contrib)} (player 0 put in {contrib[0]}, player 1 {contrib[1]})")
        return "\n".join(lines + self._status_line())
