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
from typing import TYPE_CHECKING

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL
from nashzoo.games.compiled import CompiledTree, InfosetLabels, readonly, replayed_labels

if TYPE_CHECKING:  # nashzoo.games.cards imports this module
    from nashzoo.games.cards import CardGame

_INTS = ("parent", "action", "player", "public", "bet", "fold")
_PAIRS = ("last_node", "last_action", "moves")  # one column per player
_FLOATS = ("prob", "reach", "stake")
_SMALL_NUMBERING = 256  # decisions (deal, node) up to which sets are numbered with a dict
_SMALL_BUILD = 4096  # pairs (deal, skeleton node) below which the build indexes with intp


class _Skeleton:
    """The betting under the representative deal, breadth first. ``arrays`` holds, per node:
    parent, action (a public card as its index among the cards left), player, index of the
    public card (-1: none), betting id (the path with the public card left out), at a terminal
    the sign of player 0's payoff if someone folded (0: nobody did); per player the last
    decision on the path (node and action, -1 for none) and the number of own moves; the edge
    probability, the chance reach from the root of the whole tree, the stake at a terminal; the
    legal mask."""

    def __init__(self, game: CardGame) -> None:
        self.num_actions = game.num_actions
        first = game.new_initial_state()
        deck = first.chance_outcomes()
        self.deck = len(deck)
        self.deal_probs = (deck[0][1], first._child(0).chance_outcomes()[0][1])
        self.showdown = type(first).showdown
        self.bets: dict[tuple[int, ...], int] = {}
        # One flat list per kind, row after row (numpy reads a flat list of numbers much
        # faster than a list of tuples).
        self.ints: list[int] = []
        self.floats: list[float] = []
        self.legal: list[bool] = []
        self.level_starts: list[int] = []
        self.size = 0  # nodes recorded so far
        self.has_public = False  # whether the betting deals a public card (Leduc, not Kuhn)
        reach = 1.0 * self.deal_probs[0] * self.deal_probs[1]
        # An entry: state, then the row's parent, action, public card, betting path, both
        # players' last decision node and action and number of own moves, edge probability
        # and chance reach (two players: these card games are two-player games).
        level = [(first._child(0)._child(1), -1, -1, -1, (), -1, -1, -1, -1, 0, 0, 1.0, reach)]
        while level:
            self.level_starts.append(self.size)
            children: list[tuple] = []
            for entry in level:
                self._record(entry, children)
            level = children
        self.level_starts.append(self.size)
        # The integer dtype of the build's tables (not of the tree, which is int32): numpy
        # converts any other index array to intp before indexing, a fixed cost per call that
        # is most of a tiny tree's build; past a few thousand pairs memory matters more.
        pairs = self.deck * (self.deck - 1) * self.size
        self.index = np.intp if pairs < _SMALL_BUILD else np.int32
        ints = np.array(self.ints, dtype=self.index).reshape(self.size, -1)
        floats = np.array(self.floats).reshape(self.size, len(_FLOATS))
        self.arrays = {name: ints[:, i] for i, name in enumerate(_INTS)}
        for i, name in enumerate(_PAIRS):
            self.arrays[name] = ints[:, len(_INTS) + 2 * i : len(_INTS) + 2 * i + 2]
        self.arrays.update({name: floats[:, i] for i, name in enumerate(_FLOATS)})
        self.arrays["legal"] = np.array(self.legal, dtype=bool).reshape(self.size, -1)
        # The rows as Python tuples take more memory than the arrays: let them go now.
        del self.ints, self.floats, self.legal, self.bets

    def _record(self, entry: tuple, children: list[tuple]) -> None:
        """Append one node's row; append its children's entries to ``children``, in action
        order."""
        state, parent, action, public, bets, node0, node1, did0, did1, moves0, moves1 = entry[:11]
        prob, reach = entry[11], entry[12]
        node, who = self.size, state.current_player()
        self.size += 1
        fold, stake = 0, 0.0
        mask = [False] * self.num_actions
        if who == TERMINAL:
            folder, stake = state.settlement()
            fold = 0 if folder is None else (1 if folder == 1 else -1)
        elif who == CHANCE:
            self.has_public = True
            path = (*bets, -1)
            last = (node0, node1, did0, did1, moves0, moves1)
            for j, (card, p) in enumerate(state.chance_outcomes()):
                children.append((state._child(card), node, j, j, path, *last, p, reach * p))
        elif who == 0:
            for a in state.legal_actions():
                mask[a] = True
                child = (state._child(a), node, a, public, (*bets, a), node, node1, a, did1)
                children.append((*child, moves0 + 1, moves1, 1.0, reach))
        else:
            for a in state.legal_actions():
                mask[a] = True
                child = (state._child(a), node, a, public, (*bets, a), node0, node, did0, a)
                children.append((*child, moves0, moves1 + 1, 1.0, reach))
        bet = self.bets.setdefault(bets, len(self.bets))
        self.ints.extend((parent, action, who, public, bet, fold, node0, node1, did0, did1))
        self.ints.extend((moves0, moves1))
        self.floats.extend((prob, reach, stake))
        self.legal.extend(mask)


class _Product:
    """The (deal, skeleton node) pairs below the chance prefix, in breadth-first order: level
    by level of the skeleton, deal-major; ``flat`` is ``deal * size + node``."""

    def __init__(self, skeleton: _Skeleton) -> None:
        deck = self.deck = skeleton.deck
        index = skeleton.index
        self.size = skeleton.size
        dealt = itertools.chain.from_iterable(itertools.permutations(range(deck), 2))
        self.deals = np.fromiter(dealt, dtype=index, count=deck * (deck - 1) * 2).reshape(-1, 2)
        size, deals = self.size, len(self.deals)
        # Pair (deal, node q) of level L, whose skeleton nodes are a..b-1, comes after the
        # D * a pairs of the levels above, then ``deal * (b - a)`` of its own level: its place
        # is ``base[q] + deal * width[q]`` with these two per-node tables.
        base: list[int] = []
        width: list[int] = []
        for a, b in itertools.pairwise(skeleton.level_starts):
            base.extend(range(deals * a, deals * a + b - a))
            width.extend([b - a] * (b - a))
        place = (
            np.array(base, dtype=index)
            + np.arange(deals, dtype=index)[:, None] * np.array(width, dtype=index)
        ).ravel()  # by ``deal * size + node``
        flat = np.empty(place.size, dtype=index)
        flat[place] = np.arange(place.size, dtype=index)
        self.deal, self.node = np.divmod(flat, index(size))
        self.offset = 1 + deck  # the root and player 0's cards come first
        self.position = place + index(self.offset)

    def cards(self, column: int, where: np.ndarray) -> np.ndarray:
        """Card ``column`` (0, 1: the private cards) of the pairs ``where``."""
        return self.deals[self.deal[where], column]

    @functools.cached_property
    def rest(self) -> np.ndarray:
        """``[D, deck - 2]``: the cards left after each deal, in card order (built only for a
        game that deals a public card)."""
        cards = np.arange(self.deck, dtype=self.deals.dtype)
        left = (cards != self.deals[:, :1]) & (cards != self.deals[:, 1:])
        return np.broadcast_to(cards, left.shape)[left].reshape(len(self.deals), self.deck - 2)

    def public(self, index: np.ndarray, where: np.ndarray) -> np.ndarray:
        """The public card of index ``index`` among the cards left, for the pairs ``where``."""
        return self.rest[self.deal[where], index]


def build_card_game_tree(game: CardGame) -> CompiledTree:
    """The :class:`~nashzoo.games.compiled.CompiledTree` of Kuhn poker or Leduc hold'em,
    vectorised (see the module docstring)."""
    return _Builder(game).tree()


class _Builder:
    """The whole tree from the skeleton and the deals: node arrays first, then the
    information sets, their tables, the terminals, and (on first use) the labels."""

    def __init__(self, game: CardGame) -> None:
        self.game = game
        self.skeleton = _Skeleton(game)
        self.sk = self.skeleton.arrays
        self.pairs = _Product(self.skeleton)
        self.nodes, self.board = self._node_arrays()
        self.infosets, self.representative = self._number_infosets()
        self.nodes["infoset"] = self.infosets
        self.pad = self.representative.size * game.num_actions

    def tree(self) -> CompiledTree:
        offset, deals = self.pairs.offset, len(self.pairs.deals)
        starts = [0, 1, *(offset + deals * start for start in self.skeleton.level_starts)]
        return CompiledTree(
            game_id=self.game.id,
            num_players=2,
            num_actions=self.game.num_actions,
            **{name: readonly(values) for name, values in self.nodes.items()},
            level_starts=readonly(np.array(starts, dtype=np.int64)),
            **self._infoset_tables(),
            **self._terminals(),
            infoset_labels=self._labels(),
        )

    def _node_arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Parent, player, action and chance probability of every node (the prefix, then the
        pairs), and the public card of every pair (-1: none). The first ``D`` pairs are the
        skeleton's root under each deal (level 0 of the skeleton is its root alone)."""
        sk, pairs, deck = self.sk, self.pairs, self.pairs.deck
        node, offset, deals = pairs.node, pairs.offset, len(pairs.deals)
        total = offset + node.size
        parent = np.empty(total, dtype=np.int32)
        parent[:offset] = 0
        parent[0] = -1
        parent[offset : offset + deals] = 1 + pairs.deals[:, 0]
        below = node[deals:]
        parent[offset + deals :] = pairs.position[
            pairs.deal[deals:] * pairs.size + sk["parent"][below]
        ]
        action = np.empty(total, dtype=np.int32)
        action[0] = -1
        action[1:offset] = np.arange(deck)
        action[offset:] = sk["action"][node]
        action[offset : offset + deals] = pairs.deals[:, 1]
        player = np.empty(total, dtype=np.int8)
        player[:offset] = CHANCE
        player[offset:] = sk["player"][node]
        chance_prob = np.empty(total)
        chance_prob[0] = 1.0
        chance_prob[1:offset] = self.skeleton.deal_probs[0]
        chance_prob[offset:] = sk["prob"][node]
        chance_prob[offset : offset + deals] = self.skeleton.deal_probs[1]
        board = np.full(node.size, -1, dtype=self.skeleton.index)
        if self.skeleton.has_public:
            up = sk["parent"][node]
            dealt = (up >= 0) & (sk["player"][np.maximum(up, 0)] == CHANCE)  # public cards
            moved = action[offset:]
            moved[dealt] = pairs.public(moved[dealt], dealt)
            shown = sk["public"][node] >= 0
            board[shown] = pairs.public(sk["public"][node[shown]], shown)
        nodes: dict[str, np.ndarray] = {
            "parent": parent,
            "player": player,
            "action": action,
            "chance_prob": chance_prob,
        }
        return nodes, board

    def _number_infosets(self) -> tuple[np.ndarray, np.ndarray]:
        """Every node's information set (-1 off decisions), numbered by first breadth-first
        node, and each set's first node among the pairs."""
        pairs, deck = self.pairs, self.pairs.deck
        player = self.nodes["player"][pairs.offset :]
        decision = (player >= 0).nonzero()[0]
        own = pairs.deals[pairs.deal[decision], player[decision]]
        bet = self.sk["bet"][pairs.node[decision]]
        code = (bet * (deck + 1) + own) * (deck + 1) + self.board[decision] + 1
        infoset = np.full(self.nodes["player"].size, -1, dtype=np.int32)
        if code.size <= _SMALL_NUMBERING:
            # A dict in one pass (decisions come in breadth-first order): on a tiny tree this
            # is a fraction of the fixed cost of the sorts below.
            ids: dict[int, int] = {}
            first: list[int] = []
            numbered = []
            for i, value in enumerate(code.tolist()):
                number = ids.get(value)
                if number is None:
                    number = ids[value] = len(first)
                    first.append(i)
                numbered.append(number)
            infoset[pairs.offset + decision] = numbered
            return infoset, decision[first]
        values, found = np.unique(code, return_index=True)
        by_first = np.argsort(found)  # new id -> the set's place in ``values``
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(by_first.size)
        infoset[pairs.offset + decision] = rank[np.searchsorted(values, code)]
        return infoset, decision[found[by_first]]

    @functools.cached_property
    def _last(self) -> np.ndarray:
        """``[2, pairs]``: each player's last sequence before every pair (deal, skeleton
        node), by pair: the information set of the player's last decision on the skeleton
        path under the same deal, times ``num_actions``, plus its action; ``num_sequences``
        before any. Built once for both uses (the information sets' and the terminals')."""
        sk, pairs = self.sk, self.pairs
        at = sk["last_node"].T.take(pairs.node, axis=1)
        did = sk["last_action"].T.take(pairs.node, axis=1)
        iset = self.infosets[pairs.position[pairs.deal * pairs.size + np.maximum(at, 0)]]
        last = np.where(at >= 0, iset * self.game.num_actions + did, self.pad)
        return last.astype(np.int32, copy=False)

    def _infoset_tables(self) -> dict[str, np.ndarray]:
        """Owner, own depth, owner's sequence leading in, legal mask: at each set's first
        node."""
        pairs, first = self.pairs, self.representative
        node = pairs.node[first]
        who = self.nodes["player"][pairs.offset + first]
        return {
            "infoset_player": readonly(who),
            "infoset_depth": readonly(self.sk["moves"][node, who].astype(np.int32)),
            "infoset_parent_sequence": readonly(self._last[who, first]),
            "legal_mask": readonly(self.sk["legal"].take(node, axis=0)),
        }

    def _terminals(self) -> dict[str, np.ndarray]:
        """Terminal nodes, payoffs (a fold from the betting, a showdown from the cards),
        chance reach and each player's last sequence."""
        pairs = self.pairs
        end = (self.nodes["player"][pairs.offset :] == TERMINAL).nonzero()[0]
        node, deal = pairs.node[end], pairs.deal[end]
        fold, stake = self.sk["fold"][node], self.sk["stake"][node]
        cards = pairs.deals.take(deal, axis=0)
        shown = self.skeleton.showdown(cards[:, 0], cards[:, 1], self.board[end])
        sign = np.where(fold == 0, shown, fold)
        utility = np.empty((end.size, 2))
        np.multiply(sign, stake, out=utility[:, 0])
        np.multiply(-sign, stake, out=utility[:, 1])
        return {
            "terminal_nodes": readonly((pairs.offset + end).astype(np.int32)),
            "terminal_utility": readonly(utility),
            "terminal_chance_reach": readonly(self.sk["reach"][node]),
            "terminal_last_sequence": readonly(self._last.take(end, axis=1)),
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
