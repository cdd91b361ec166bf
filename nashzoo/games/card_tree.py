"""Kuhn poker and Leduc hold'em compiled without a State per history: the vectorised builder.

These card games deal each player one private card (player 0 first) uniformly from a small deck,
then bet; Leduc deals a public card between its two rounds, uniformly from the cards left. What
can happen in the betting does not depend on the cards (who moves, what is legal, who folds for
how much: ``settlement()``); the cards decide only showdowns (``showdown()``, vectorised) and
what a player sees. So the tree is a product: the chance prefix (the root, player 0's card),
then, under each of the ``D = deck * (deck - 1)`` deals, the same betting *skeleton*, walked
once through the game's own States under one representative deal (cards 0 and 1), where a public
card is its index among the cards left. Level ``L`` of the skeleton is depth ``2 + L`` of the
tree, repeated for every deal, deal-major: the breadth-first order of the generic walk.

An information set is (the betting so far, the mover's card, the public card); ids are numbered
by first breadth-first node, as ``compile_tree`` numbers them, so the arrays are the checking
walk's, bit for bit (``tests/test_compile_paths.py``). Keys and tensors are asked of the game's
States when first wanted, at one history per information set.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL, Game
from nashzoo.games.compiled import CompiledTree, InfosetLabels, readonly, replayed_labels

_INTS = ("parent", "action", "player", "public", "bet", "folder")
_PAIRS = ("last_node", "last_action", "moves")  # one column per player
_FLOATS = ("prob", "reach", "stake")
_SMALL_BUILD = 4096  # pairs (deal, skeleton node) below which the build indexes with intp


class _Skeleton:
    """The betting under the representative deal, breadth first. ``arrays`` holds, per node:
    parent, action (a public card as its index among the cards left), player, index of the
    public card (-1: none), betting id (the path with the public card left out), who folded (-1:
    nobody) at a terminal; per player the last decision on the path (node and action, -1 for
    none) and the number of own moves; the edge probability, the chance reach from the root of
    the whole tree, the stake at a terminal; the legal mask."""

    def __init__(self, game: Game) -> None:
        self.num_actions = game.num_actions
        first = game.new_initial_state()
        deck = first.chance_outcomes()
        self.deck = len(deck)
        self.deal_probs = (deck[0][1], first._child(0).chance_outcomes()[0][1])
        self.showdown = type(first).showdown
        self.bets: dict[tuple[int, ...], int] = {}
        self.ints: list[tuple[int, ...]] = []
        self.floats: list[tuple[float, float, float]] = []
        self.legal: list[list[bool]] = []
        self.level_starts: list[int] = []
        reach = 1.0 * self.deal_probs[0] * self.deal_probs[1]
        none = (-1, -1)
        level = [(first._child(0)._child(1), -1, -1, 1.0, reach, -1, (), none, none, (0, 0))]
        while level:
            self.level_starts.append(len(self.ints))
            level = [child for entry in level for child in self._record(*entry)]
        self.level_starts.append(len(self.ints))
        # The integer dtype of the build's tables (not of the tree, which is int32): numpy
        # converts any other index array to intp before indexing, a fixed cost per call that
        # is most of a tiny tree's build; past a few thousand pairs memory matters more.
        pairs = self.deck * (self.deck - 1) * len(self.ints)
        self.index = np.intp if pairs < _SMALL_BUILD else np.int32
        ints, floats = np.array(self.ints, dtype=self.index), np.array(self.floats)
        self.arrays = {name: ints[:, i] for i, name in enumerate(_INTS)}
        for i, name in enumerate(_PAIRS):
            self.arrays[name] = ints[:, len(_INTS) + 2 * i : len(_INTS) + 2 * i + 2]
        self.arrays.update({name: floats[:, i] for i, name in enumerate(_FLOATS)})
        self.arrays["legal"] = np.array(self.legal, dtype=bool)
        self.size = len(self.ints)
        # The rows as Python tuples take more memory than the arrays: let them go now.
        del self.ints, self.floats, self.legal, self.bets

    def _record(
        self,
        state: Any,
        parent: int,
        action: int,
        prob: float,
        reach: float,
        public: int,
        bets: tuple[int, ...],
        last_node: tuple[int, int],
        last_action: tuple[int, int],
        moves: tuple[int, int],
    ) -> list[tuple]:
        """Append one node's row; return its children's entries, in action order."""
        node, who = len(self.ints), state.current_player()
        folder, stake, children = -1, 0.0, []
        mask = [False] * self.num_actions
        if who == TERMINAL:
            found, stake = state.settlement()
            folder = -1 if found is None else found
        elif who == CHANCE:
            for j, (card, p) in enumerate(state.chance_outcomes()):
                step = (state._child(card), node, j, p, reach * p, j, (*bets, -1))
                children.append((*step, last_node, last_action, moves))
        else:
            ahead = (*moves[:who], moves[who] + 1, *moves[who + 1 :])
            here = (*last_node[:who], node, *last_node[who + 1 :])
            for a in state.legal_actions():
                mask[a] = True
                did = (*last_action[:who], a, *last_action[who + 1 :])
                step = (state._child(a), node, a, 1.0, reach, public, (*bets, a))
                children.append((*step, here, did, ahead))
        bet = self.bets.setdefault(bets, len(self.bets))
        self.ints.append(
            (parent, action, who, public, bet, folder, *last_node, *last_action, *moves)
        )
        self.floats.append((prob, reach, stake))
        self.legal.append(mask)
        return children


class _Product:
    """The (deal, skeleton node) pairs below the chance prefix, in breadth-first order: level
    by level of the skeleton, deal-major; ``flat`` is ``deal * size + node``."""

    def __init__(self, skeleton: _Skeleton) -> None:
        deck = self.deck = skeleton.deck
        index = skeleton.index
        self.size = skeleton.size
        self.deals = np.array(
            [(a, b) for a in range(deck) for b in range(deck) if a != b], dtype=index
        )
        self.rest = np.array(
            [[c for c in range(deck) if c not in d] for d in self.deals.tolist()], dtype=index
        )
        starts = skeleton.level_starts
        deals = np.arange(len(self.deals), dtype=index)[:, None] * index(self.size)
        flat = np.concatenate(
            [(deals + np.arange(a, b, dtype=index)).ravel() for a, b in itertools.pairwise(starts)]
        )
        self.deal, self.node = np.divmod(flat, index(self.size))
        self.offset = 1 + deck  # the root and player 0's cards come first
        self.position = np.empty(flat.size, dtype=index)
        self.position[flat] = self.offset + np.arange(flat.size, dtype=index)

    def cards(self, column: int, where: np.ndarray) -> np.ndarray:
        """Card ``column`` (0, 1: the private cards) of the pairs ``where``."""
        return self.deals[self.deal[where], column]

    def public(self, index: np.ndarray, where: np.ndarray) -> np.ndarray:
        """The public card of index ``index`` among the cards left, for the pairs ``where``."""
        return self.rest[self.deal[where], index]


def build_card_game_tree(game: Game) -> CompiledTree:
    """The :class:`~nashzoo.games.compiled.CompiledTree` of Kuhn poker or Leduc hold'em,
    vectorised (see the module docstring)."""
    return _Builder(game).tree()


class _Builder:
    """The whole tree from the skeleton and the deals: node arrays first, then the
    information sets, their tables, the terminals, and (on first use) the labels."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.skeleton = _Skeleton(game)
        self.sk = self.skeleton.arrays
        self.pairs = _Product(self.skeleton)
        self.nodes, self.board = self._node_arrays()
        self.infosets, self.representative = self._number_infosets()
        self.nodes["infoset"] = self.infosets
        self.pad = self.representative.size * game.num_actions

    def tree(self) -> CompiledTree:
        starts = self.pairs.offset + len(self.pairs.deals) * np.array(self.skeleton.level_starts)
        return CompiledTree(
            game_id=self.game.id,
            num_players=2,
            num_actions=self.game.num_actions,
            **{name: readonly(values) for name, values in self.nodes.items()},
            level_starts=readonly(np.concatenate(([0, 1], starts))),
            **self._infoset_tables(),
            **self._terminals(),
            infoset_labels=self._labels(),
        )

    def _node_arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Parent, player, action and chance probability of every node (the prefix, then the
        pairs), and the public card of every pair (-1: none)."""
        sk, pairs, deck = self.sk, self.pairs, self.pairs.deck
        node = pairs.node
        up = sk["parent"][node]
        root = up < 0  # a deal: the skeleton's root under it
        parent = pairs.position[pairs.deal * pairs.size + np.maximum(up, 0)]
        parent[root] = 1 + pairs.cards(0, root)
        action = sk["action"][node].copy()
        action[root] = pairs.cards(1, root)
        dealt = ~root & (sk["player"][np.maximum(up, 0)] == CHANCE)  # the public card's edges
        action[dealt] = pairs.public(action[dealt], dealt)
        prob = sk["prob"][node].copy()
        prob[root] = self.skeleton.deal_probs[1]
        board = np.full(node.size, -1, dtype=self.skeleton.index)
        shown = sk["public"][node] >= 0
        board[shown] = pairs.public(sk["public"][node[shown]], shown)
        first_card = np.full(deck, self.skeleton.deal_probs[0])
        nodes = {
            "parent": np.concatenate(([-1], np.zeros(deck, dtype=parent.dtype), parent)),
            "player": np.concatenate(
                ([CHANCE], np.full(deck, CHANCE, sk["player"].dtype), sk["player"][node])
            ),
            "action": np.concatenate(([-1], np.arange(deck, dtype=action.dtype), action)),
            "chance_prob": np.concatenate(([1.0], first_card, prob)),
        }
        dtypes = {"parent": np.int32, "player": np.int8, "action": np.int32, "chance_prob": float}
        return {name: values.astype(dtypes[name]) for name, values in nodes.items()}, board

    def _number_infosets(self) -> tuple[np.ndarray, np.ndarray]:
        """Every node's information set (-1 off decisions), numbered by first breadth-first
        node, and each set's first node among the pairs."""
        pairs, deck = self.pairs, self.pairs.deck
        player = self.nodes["player"][pairs.offset :]
        decision = np.flatnonzero(player >= 0)
        own = pairs.deals[pairs.deal[decision], player[decision]]
        bet = self.sk["bet"][pairs.node[decision]]
        code = (bet * (deck + 1) + own) * (deck + 1) + self.board[decision] + 1
        values, first = np.unique(code, return_index=True)
        by_first = np.argsort(first)  # new id -> the set's place in ``values``
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(by_first.size)
        infoset = np.full(self.nodes["player"].size, -1, dtype=np.int32)
        infoset[pairs.offset + decision] = rank[np.searchsorted(values, code)]
        return infoset, decision[first[by_first]]

    def _last(self, where: np.ndarray, player: Any) -> np.ndarray:
        """``player``'s last sequence before the pairs ``where`` (the two broadcast): the
        information set of the player's last decision on the skeleton path under the same
        deal, times ``num_actions``, plus its action; ``num_sequences`` before any."""
        sk, pairs = self.sk, self.pairs
        node, deal = pairs.node[where], pairs.deal[where]
        at, did = sk["last_node"][node, player], sk["last_action"][node, player]
        iset = self.infosets[pairs.position[deal * pairs.size + np.maximum(at, 0)]]
        return np.where(at >= 0, iset * self.game.num_actions + did, self.pad).astype(np.int32)

    def _infoset_tables(self) -> dict[str, np.ndarray]:
        """Owner, own depth, owner's sequence leading in, legal mask: at each set's first
        node."""
        node = self.pairs.node[self.representative]
        who = self.nodes["player"][self.pairs.offset + self.representative].astype(np.int64)
        return {
            "infoset_player": readonly(who.astype(np.int8)),
            "infoset_depth": readonly(self.sk["moves"][node, who].astype(np.int32)),
            "infoset_parent_sequence": readonly(self._last(self.representative, who)),
            "legal_mask": readonly(self.sk["legal"][node]),
        }

    def _terminals(self) -> dict[str, np.ndarray]:
        """Terminal nodes, payoffs (a fold from the betting, a showdown from the cards),
        chance reach and each player's last sequence."""
        pairs = self.pairs
        end = np.flatnonzero(self.nodes["player"][pairs.offset :] == TERMINAL)
        node = pairs.node[end]
        folder, stake = self.sk["folder"][node], self.sk["stake"][node]
        shown = self.skeleton.showdown(pairs.cards(0, end), pairs.cards(1, end), self.board[end])
        sign = np.where(folder < 0, shown, np.where(folder == 1, 1, -1))
        return {
            "terminal_nodes": readonly((pairs.offset + end).astype(np.int32)),
            "terminal_utility": readonly(np.stack([sign * stake, -sign * stake], axis=1)),
            "terminal_chance_reach": readonly(self.sk["reach"][node]),
            "terminal_last_sequence": readonly(self._last(end[None, :], np.array([[0], [1]]))),
        }

    def _labels(self) -> InfosetLabels:
        """Keys and tensors, asked of the game's States at each set's first node when first
        wanted. The function holds the tree's own parent and action arrays and one position
        per set, not this builder (whose per-pair tables would otherwise stay alive with the
        tree)."""
        positions = self.pairs.offset + self.representative
        return functools.partial(
            replayed_labels, self.game, self.nodes["parent"], self.nodes["action"], positions
        )
