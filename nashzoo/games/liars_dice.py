"""Liar's dice, two players, in OpenSpiel's ``liars_dice`` encoding (Lanctot et al. 2019,
"OpenSpiel: a framework for reinforcement learning in games", arXiv:1908.09453).

Rules: each player rolls ``numdice`` dice with ``dice_sides`` faces (1 .. ``dice_sides``) in
secret, player 0's dice first. Player 0 opens with a bid "at least q dice of face f among all
dice on the table"; the players then alternate, each either raising the bid (a strictly higher
bid id) or calling "Liar" on the previous bid (not legal before the first bid). On a call all dice
are shown; the highest face is wild and counts as every face. If at least q dice match, the bidder
wins 1 and the caller loses 1; otherwise the caller wins. The one-die-each game (``numdice=1``,
``dice_sides=6``) is the benchmark Bluff(1,1) of Lanctot et al. (2009), "Monte Carlo sampling for
regret minimization in extensive games", NeurIPS; in this encoding it has 294,883 histories and
24,576 information sets.

Encoding (identical to OpenSpiel's ``liars_dice``, so histories, policies and numbers move
between the two libraries unchanged; ``tests/test_liars_dice.py`` walks every history of both):

* chance outcome ``k`` is a die showing ``k + 1``; a player's dice are sorted once every die is
  rolled (before that they are kept in roll order);
* with ``D = 2 * numdice`` dice in play and ``S = dice_sides``, bid ids ``0 .. D*S - 1`` are
  ordered weakest first and ``D*S`` is "Liar". Under ``bidding_rule="reset-face"`` (the default)
  bid ``b`` is quantity ``b // S + 1`` of face ``b % S + 1`` (``1-1, 1-2, .., 1-S, 2-1, ..``);
  under ``"reset-quantity"`` it is quantity ``b % D + 1`` of face ``b // D + 1``;
* information-set keys are OpenSpiel's ``information_state_string``: the player's dice as
  digits, then every bid as `` q-f`` and a call as `` Liar``, e.g. ``"25 1-3 2-6"``; an unrolled
  die reads ``-1``. One exception: with three-digit faces (``dice_sides >= 100``) and more than
  one die each, OpenSpiel's run-together digits are ambiguous (dice 1 and 111 read ``"1111"``,
  as do 11 and 11), so there the dice are separated by commas (``"1,111"``, ``"11,11"``) and
  each information set keeps a key of its own;
* information-set tensor (OpenSpiel's ``information_state_tensor``), length ``2 + numdice*S +
  D*S + 1``: ``[0:2]`` one-hot of the observing player, then one block of ``S`` per own die
  (one-hot of its face), then one bit per bid id (and Liar) that has been made.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL, Game, State, check_player, is_whole_number
from nashzoo.games.liars_dice_tree import build_liars_dice_tree
from nashzoo.games.tree import CompiledTree

BIDDING_RULES = ("reset-face", "reset-quantity")
_DEFAULTS = {"numdice": 1, "dice_sides": 6, "bidding_rule": "reset-face"}
_TABLE_MAX_BIDS = 256
"""Games with at most this many bid ids keep their legal actions and masks in tables made up
front (some 33,000 entries at the limit); bigger ones make them when asked."""
DEALS_MAX = 1 << 16
"""Deals (rolls and what they show) a game keeps before it forgets them all: far more than the
rolls of any game small enough to compile, and about 60 MB with five dice each."""
MAX_BIDS = 100_000
"""The most bid ids (``2 * numdice * dice_sides``) a game may have: a game holds a name and a
key suffix per bid, and every information-set tensor has a bit per bid (at the limit a game
takes about 0.5 s and 20 MB to make, and a tensor 0.6 MB)."""


def _positive_int(name: str, value: Any, minimum: int) -> int:
    if not is_whole_number(value, minimum):
        raise ValueError(f"liars_dice: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class LiarsDiceGame(Game):
    """Two-player Liar's dice (see the module docstring for the rules and the encoding).

    Args:
        numdice: dice per player (default 1).
        dice_sides: faces per die (default 6); the highest face is wild.
        bidding_rule: ``"reset-face"`` (default) or ``"reset-quantity"``: how bid ids are
            ordered (OpenSpiel's parameter of the same name).
        players: 2, the only value (OpenSpiel's ``players``, which allows only 2 as well), so
            that OpenSpiel's game strings load unchanged.

    Raises:
        ValueError: a parameter of the wrong type or out of range, or more than
            :data:`MAX_BIDS` bids (``2 * numdice * dice_sides``).
    """

    name = "liars_dice"
    num_players = 2

    def __init__(
        self,
        numdice: int = 1,
        dice_sides: int = 6,
        bidding_rule: str = "reset-face",
        *,
        players: int = 2,
    ) -> None:
        if not is_whole_number(players) or players != 2:
            raise ValueError(
                f"liars_dice: players must be 2 (Liar's dice is two-player, here and in "
                f"OpenSpiel), got {players!r}"
            )
        numdice = _positive_int("numdice", numdice, 1)
        sides = _positive_int("dice_sides", dice_sides, 2)
        if bidding_rule not in BIDDING_RULES:
            raise ValueError(
                f"liars_dice: bidding_rule must be one of {list(BIDDING_RULES)}, "
                f"got {bidding_rule!r}"
            )
        if 2 * numdice * sides > MAX_BIDS:
            raise ValueError(
                f"liars_dice: numdice={numdice} and dice_sides={sides} make "
                f"2 * numdice * dice_sides = {2 * numdice * sides:,} bids, more than the "
                f"{MAX_BIDS:,} this implementation takes; use fewer dice or fewer sides"
            )
        given = {"numdice": numdice, "dice_sides": sides, "bidding_rule": bidding_rule}
        super().__init__({k: v for k, v in given.items() if v != _DEFAULTS[k]})
        self.numdice = numdice
        self.dice_sides = sides
        self.bidding_rule = bidding_rule
        total = 2 * numdice
        self.total_dice = total
        self.liar = total * sides
        self.num_actions = self.liar + 1
        if bidding_rule == "reset-face":
            self.bids = tuple((b // sides + 1, b % sides + 1) for b in range(self.liar))
        else:
            self.bids = tuple((b % total + 1, b // total + 1) for b in range(self.liar))
        self.action_names = (*(f"{q}-{f}" for q, f in self.bids), "Liar")
        # What separates a hand's dice in its key: nothing, as OpenSpiel writes them, unless
        # three-digit faces would make that ambiguous (see the module docstring).
        self.dice_separator = "," if numdice > 1 and sides >= 100 else ""
        self.bid_offset = 2 + numdice * sides
        self.infoset_tensor_size = self.bid_offset + self.num_actions
        # Tables shared by every state: the suffix each action adds to a key, the chance
        # outcomes and, while they are small (they grow as the square of the bids), the legal
        # actions and masks after each last bid (index 0: no bid yet); a bigger game makes
        # them when asked (LiarsDiceState.legal_actions).
        self._suffix = tuple(" " + name for name in self.action_names)
        self._legal: tuple[tuple[int, ...], ...] = ()
        self._masks = np.zeros((0, self.num_actions), dtype=np.int8)
        if self.liar <= _TABLE_MAX_BIDS:
            raises = [(*range(b + 1, self.liar), self.liar) for b in range(self.liar)]
            self._legal = (tuple(range(self.liar)), *raises)
            masks = np.zeros((len(self._legal), self.num_actions), dtype=np.int8)
            for row, legal in zip(masks, self._legal, strict=True):
                row[list(legal)] = 1
            self._masks = masks
        self._chance = tuple((k, 1.0 / sides) for k in range(sides))
        self._win = (np.array([1.0, -1.0]), np.array([-1.0, 1.0]))
        self._deals: dict[tuple[int, ...], Deal] = {}

    def compile_arrays(self) -> CompiledTree:
        """The whole tree as arrays without a State per history (``compile_tree`` calls this;
        :mod:`nashzoo.games.liars_dice_tree`, checked against the generic walk in tests)."""
        return build_liars_dice_tree(self)

    def new_initial_state(self) -> LiarsDiceState:
        return LiarsDiceState(self, (), (), CHANCE, self.deal(()), "")

    def num_histories(self) -> int:
        """Exact number of histories, chance and terminal ones included (no enumeration).

        ``sum(S**k for k < D)`` chance nodes, then for each of the ``S**D`` rolls every strictly
        increasing bid sequence (``2**(D*S)`` of them), each non-empty one also followed by Liar.
        """
        sides, total = self.dice_sides, self.total_dice
        chance = sum(sides**k for k in range(total))
        return chance + sides**total * (2 ** (self.liar + 1) - 1)

    def deal(self, rolls: tuple[int, ...]) -> Deal:
        """What the chance outcomes ``rolls`` (a prefix of the rolls, or all of them) show.

        Kept per ``rolls`` so that states with the same rolls share one; forgotten all at once
        past :data:`DEALS_MAX` (a big game played for long reaches ever new rolls)."""
        deal = self._deals.get(rolls)
        if deal is None:
            if len(self._deals) >= DEALS_MAX:
                self._deals.clear()
            deal = self._deals[rolls] = Deal.of(self, rolls)
        return deal


class Deal(NamedTuple):
    """The dice after some or all chance outcomes, shared by every state that has them."""

    hands: tuple[tuple[int, ...], tuple[int, ...]]  # faces 1..S per player, -1 if not rolled
    keys: tuple[str, str]  # each hand as the digits that open the player's infoset key
    hot: tuple[tuple[int, ...], tuple[int, ...]]  # tensor indices set by each player's dice
    matches: tuple[int, ...]  # face -> dice counting for it (wild included); () before the end

    @classmethod
    def of(cls, game: LiarsDiceGame, rolls: tuple[int, ...]) -> Deal:
        """Each player's dice as OpenSpiel keeps them: in roll order with ``-1`` for a die not
        rolled yet, sorted once every die is rolled."""
        per_player, sides, sep = game.numdice, game.dice_sides, game.dice_separator
        faces = [roll + 1 for roll in rolls] + [-1] * (game.total_dice - len(rolls))
        hands = [faces[:per_player], faces[per_player:]]
        matches: tuple[int, ...] = ()
        if len(rolls) == game.total_dice:
            hands = [sorted(h) for h in hands]
            matches = tuple(sum(d in (f, sides) for d in faces) for f in range(sides + 1))
        hot = [
            tuple(2 + slot * sides + face - 1 for slot, face in enumerate(h) if face > 0)
            for h in hands
        ]
        return cls(
            hands=(tuple(hands[0]), tuple(hands[1])),
            keys=(sep.join(map(str, hands[0])), sep.join(map(str, hands[1]))),
            hot=(hot[0], hot[1]),
            matches=matches,
        )


class LiarsDiceState(State):
    """One history of Liar's dice. Immutable; the deal is shared with every state that has the
    same rolls, so a child costs one small tuple and one string concatenation."""

    game: LiarsDiceGame
    __slots__ = ("_bids", "_deal", "_player", "_rolls", "_said")

    def __init__(
        self,
        game: LiarsDiceGame,
        rolls: tuple[int, ...],
        bids: tuple[int, ...],
        player: int,
        deal: Deal,
        said: str,
    ) -> None:
        self.game = game  # all State.__init__ does, without the call
        self._rolls = rolls  # chance outcomes (die faces minus one), in roll order
        self._bids = bids  # bid ids, Liar included
        self._player = player
        self._deal = deal
        self._said = said  # the bidding part of the key: " 1-3 2-6 Liar"

    def current_player(self) -> int:
        return self._player

    def legal_actions(self) -> list[int]:
        if self._player == CHANCE:
            return list(range(self.game.dice_sides))
        if self._player == TERMINAL:
            return []
        game = self.game
        after = self._bids[-1] + 1 if self._bids else 0
        if game._legal:
            return list(game._legal[after])
        return [*range(after, game.liar), game.liar] if after else list(range(game.liar))

    def legal_actions_mask(self) -> np.ndarray:
        if self._player < 0:
            return np.zeros(self.game.num_actions, dtype=np.int8)
        game = self.game
        after = self._bids[-1] + 1 if self._bids else 0
        if game._legal:
            return game._masks[after].copy()
        mask = np.zeros(game.num_actions, dtype=np.int8)
        mask[after:] = 1
        mask[game.liar] = 1 if after else 0
        return mask

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._player != CHANCE:
            return super().chance_outcomes()
        return list(self.game._chance)

    def _child(self, action: int) -> LiarsDiceState:
        game = self.game
        if self._player != CHANCE:
            return LiarsDiceState(
                game,
                self._rolls,
                (*self._bids, action),
                TERMINAL if action == game.liar else 1 - self._player,
                self._deal,
                self._said + game._suffix[action],
            )
        rolls = (*self._rolls, action)
        player = CHANCE if len(rolls) < game.total_dice else 0
        return LiarsDiceState(game, rolls, (), player, game.deal(rolls), "")

    def action_to_string(self, action: int) -> str:
        if self._player == CHANCE:
            return f"Roll {action + 1}"
        return self.game.action_name(action)

    def returns(self) -> np.ndarray:
        if self._player != TERMINAL:
            return np.zeros(2)
        bids = self._bids
        quantity, face = self.game.bids[bids[-2]]
        bidder = len(bids) % 2  # the last bid was the second-to-last action; the caller is next
        winner = bidder if self._deal.matches[face] >= quantity else 1 - bidder
        return self.game._win[winner].copy()

    def history(self) -> list[int]:
        return [*self._rolls, *self._bids]

    def infoset_key(self, player: int) -> str:
        if player.__class__ is not int or not 0 <= player < 2:
            player = check_player(self.game, player)
        return self._deal.keys[player] + self._said

    def infoset_tensor(self, player: int) -> np.ndarray:
        if player.__class__ is not int or not 0 <= player < 2:
            player = check_player(self.game, player)
        offset = self.game.bid_offset
        values = np.zeros(self.game.infoset_tensor_size, dtype=np.float32)
        values[player] = 1.0
        for i in self._deal.hot[player]:
            values[i] = 1.0
        for b in self._bids:
            values[offset + b] = 1.0
        return values

    def describe(self, player: int | None = None) -> str:
        game = self.game
        sides = game.dice_sides
        dice = "die" if game.numdice == 1 else "dice"
        lines = [f"Liar's dice ({game.numdice} {dice} each, {sides} sides, {sides}s are wild)"]
        for p in range(2):
            hand = [d for d in self._deal.hands[p] if d > 0]
            if not hand:
                text = "not rolled"
            elif player is None or player == p or self.is_terminal():
                text = " ".join(map(str, hand))
            else:
                text = "hidden"
            lines.append(f"  player {p} dice: {text}")
        said = [f"player {i % 2} {game.action_names[b]}" for i, b in enumerate(self._bids)]
        lines.append(f"  bids: {', '.join(said) if said else '(none yet)'}")
        if self.is_terminal():
            quantity, face = game.bids[self._bids[-2]]
            matches = self._deal.matches[face]
            counted = "1 die counts" if matches == 1 else f"{matches} dice count"
            lines.append(
                f"  Liar called on {quantity}-{face}: {counted} as {face}s ({quantity} needed)"
            )
            r = self.returns()
            lines.append(f"  result: player 0 {r[0]:+g}, player 1 {r[1]:+g}")
        elif self._player >= 0:
            lines.append(f"  to move: player {self._player}")
        return "\n".join(lines)
