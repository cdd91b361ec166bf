"""Liar's dice compiled without a Python object per history: the vectorised tree builder.

The tree of Liar's dice is a product: ``D`` dice rolled one by one (the chance prefix, ``S``
outcomes each), then, under every one of the ``S**D`` rolls, the same bidding tree (every
strictly increasing sequence of the ``B = D * S`` bid ids, each non-empty one also followed by
"Liar"). So the bidding tree is enumerated once, level by level, as numpy arrays, and every
level of the whole tree is that level repeated for each roll, roll-major: the breadth-first
order of the generic State walk, node for node. An information set is (the mover's hand, the
bids so far), and the bids so far are one decision node of the bidding tree, so its id is
``decision node * hands + hand``. Keys and tensors are made only when first asked for.

``compile_tree`` uses this for ``LiarsDiceGame`` (its ``compile_arrays`` hook): no Python
object per history, which is what lets tens of millions of histories compile in seconds
(``tests/test_liars_dice_tree.py`` checks it against the generic walk on small games).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL
from nashzoo.games.tree import CompiledTree, readonly


class _BiddingTree:
    """One roll's bidding tree, breadth-first, as per-level arrays."""

    def __init__(self, bids: int) -> None:
        self.last: list[np.ndarray] = []  # last action (-1 at the root; ``bids`` is Liar)
        self.mask: list[np.ndarray] = []  # bit b set: bid b was made
        self.parent: list[np.ndarray] = []  # index into the previous level
        self.decision: list[np.ndarray] = []  # decision-node number, -1 at terminals
        last, mask = np.array([-1]), np.array([0])
        parent = np.array([-1])
        count = 0
        while last.size:
            terminal = last == bids
            decision = np.full(last.size, -1)
            decision[~terminal] = count + np.arange(int((~terminal).sum()))
            count += int((~terminal).sum())
            self.last.append(last)
            self.mask.append(mask)
            self.parent.append(parent)
            self.decision.append(decision)
            # Children of each decision node, in action order: every higher bid, then Liar
            # once a bid was made.
            movers = np.flatnonzero(~terminal)
            raises = bids - 1 - last[movers]
            children = raises + (mask[movers] != 0)
            parent = np.repeat(movers, children)
            offset = np.arange(parent.size) - np.repeat(np.cumsum(children) - children, children)
            is_raise = offset < np.repeat(raises, children)
            last = np.where(is_raise, last[parent] + 1 + offset, bids)
            mask = np.where(is_raise, mask[parent] | (1 << np.maximum(last, 0)), mask[parent])
        self.levels = len(self.last)
        self.num_decisions = count

    def movers(self, level: int) -> np.ndarray:
        """Player to move at each node of ``level`` (bids so far, alternating from player 0)."""
        return _popcount(self.mask[level]) % 2


def _popcount(values: np.ndarray) -> np.ndarray:
    out = np.zeros(values.shape, dtype=np.int64)
    rest = values.copy()
    while rest.any():
        out += rest & 1
        rest >>= 1
    return out


class _Rolls:
    """Every complete roll, each player's sorted hand and hand id, and the match counts."""

    def __init__(self, game: Any) -> None:
        sides, per_player = game.dice_sides, game.numdice
        faces = np.array(list(itertools.product(range(1, sides + 1), repeat=game.total_dice)))
        self.count = faces.shape[0]
        sorted_hands = [
            np.sort(faces[:, p * per_player : (p + 1) * per_player], axis=1) for p in (0, 1)
        ]
        self.hands = sorted({tuple(h) for h in sorted_hands[0].tolist()})
        ids = {h: i for i, h in enumerate(self.hands)}
        self.hand = np.array([[ids[tuple(h)] for h in hp.tolist()] for hp in sorted_hands]).T
        # matches[r, f]: dice of roll r counting as face f (the highest face is wild).
        self.matches = np.stack(
            [((faces == f) | (faces == sides)).sum(axis=1) for f in range(sides + 1)], axis=1
        )


def build_liars_dice_tree(game: Any) -> CompiledTree:
    """The :class:`~nashzoo.games.tree.CompiledTree` of a ``LiarsDiceGame``, vectorised."""
    sides, dice, bids, num_actions = game.dice_sides, game.total_dice, game.liar, game.num_actions
    bidding, rolls = _BiddingTree(bids), _Rolls(game)
    hands, pad = len(rolls.hands), bidding.num_decisions * len(rolls.hands) * num_actions
    nodes = _Nodes()
    for k in range(dice):  # the chance prefix: S**k nodes at depth k, rolls in base S
        index = np.arange(sides**k)
        nodes.add(
            parent=nodes.start(k - 1) + index // sides if k else np.array([-1]),
            player=np.full(index.size, CHANCE),
            infoset=np.full(index.size, -1),
            action=index % sides if k else np.array([-1]),
            chance_prob=np.full(index.size, 1.0 / sides if k else 1.0),
        )
    roll = np.arange(rolls.count)[:, None]
    last_sequence: list[list[np.ndarray]] = [[], []]
    for level in range(bidding.levels):  # bidding level L is tree depth dice + L
        size, last = bidding.last[level].size, bidding.last[level]
        movers, terminal = bidding.movers(level), last == bids
        if level == 0:  # the roll roots hang under the last chance level
            parent = nodes.start(dice - 1) + np.arange(rolls.count) // sides
            action, prob = np.arange(rolls.count) % sides, 1.0 / sides
        else:
            parent = nodes.start(dice + level - 1) + roll * bidding.last[level - 1].size
            parent = (parent + bidding.parent[level][None, :]).reshape(-1)
            action, prob = np.broadcast_to(last, (rolls.count, size)).reshape(-1), 1.0
        nodes.add(
            parent=parent,
            player=np.broadcast_to(np.where(terminal, TERMINAL, movers), (rolls.count, size)),
            infoset=np.where(terminal, -1, bidding.decision[level] * hands + rolls.hand[:, movers]),
            action=action,
            chance_prob=np.full(rolls.count * size, prob),
        )
        if terminal.any():
            t = np.flatnonzero(terminal)
            nodes.terminals.append(nodes.start(dice + level) + (roll * size + t).reshape(-1))
            utility, lasts = _showdowns(game, bidding, rolls, level, t)
            nodes.utility.append(utility)
            for p in (0, 1):
                last_sequence[p].append(lasts[p])
    return CompiledTree(
        game_id=game.id,
        num_players=2,
        num_actions=num_actions,
        **nodes.arrays(),
        **_infosets(game, bidding, rolls, pad),
        terminal_chance_reach=readonly(np.full(nodes.num_terminals, float(sides) ** -dice)),
        terminal_last_sequence=readonly(
            np.stack([np.concatenate(last_sequence[p]) for p in (0, 1)]).astype(np.int32)
        ),
        infoset_labels=functools.partial(_labels, game, bidding, rolls),
    )


def _showdowns(
    game: Any, bidding: _BiddingTree, rolls: _Rolls, level: int, t: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Payoffs ``[rolls * terminals, 2]`` of the Liar calls ``t`` of bidding ``level`` (roll
    major) and each player's last sequence before them."""
    hands, num_actions, bids = len(rolls.hands), game.num_actions, game.liar
    called = bidding.parent[level][t]  # where Liar was called
    caller = bidding.movers(level - 1)[called]
    claim = bidding.last[level - 1][called]  # the bid called on, made by the other player
    bid_node = bidding.decision[level - 2][bidding.parent[level - 1][called]]
    caller_last = bidding.decision[level - 1][called] * hands + rolls.hand[:, caller]
    bidder_last = (bid_node * hands + rolls.hand[:, caller ^ 1]) * num_actions + claim
    caller_last = caller_last * num_actions + bids
    lasts = tuple(np.where(caller == p, caller_last, bidder_last).reshape(-1) for p in (0, 1))
    quantity = np.array([q for q, _ in game.bids])[claim]
    face = np.array([f for _, f in game.bids])[claim]
    caller_gets = np.where(rolls.matches[:, face] >= quantity[None, :], -1.0, 1.0)
    u0 = np.where(caller == 0, caller_gets, -caller_gets).reshape(-1)
    return np.stack([u0, -u0], axis=1), lasts


class _Nodes:
    """The whole tree's node arrays, appended one level at a time."""

    def __init__(self) -> None:
        self.columns: dict[str, list[np.ndarray]] = {
            "parent": [],
            "player": [],
            "infoset": [],
            "action": [],
            "chance_prob": [],
        }
        self.starts = [0]
        self.terminals: list[np.ndarray] = []
        self.utility: list[np.ndarray] = []

    def start(self, level: int) -> int:
        return self.starts[level]

    def add(self, **columns: np.ndarray) -> None:
        size = columns["chance_prob"].size
        for name, values in columns.items():
            self.columns[name].append(np.asarray(values).reshape(-1))
        self.starts.append(self.starts[-1] + size)

    @property
    def num_terminals(self) -> int:
        return sum(t.size for t in self.terminals)

    def arrays(self) -> dict[str, np.ndarray]:
        dtypes = {
            "parent": np.int32,
            "player": np.int8,
            "infoset": np.int32,
            "action": np.int32,
            "chance_prob": np.float64,
        }
        out = {
            name: readonly(np.concatenate(parts).astype(dtypes[name]))
            for name, parts in self.columns.items()
        }
        out["level_starts"] = readonly(np.asarray(self.starts, dtype=np.int64))
        out["terminal_nodes"] = readonly(np.concatenate(self.terminals).astype(np.int32))
        out["terminal_utility"] = readonly(np.concatenate(self.utility))
        return out


def _infosets(game: Any, bidding: _BiddingTree, rolls: _Rolls, pad: int) -> dict[str, np.ndarray]:
    """Per information set (decision node-major, hand-minor): player, own depth, the owner's
    sequence leading to it, legal mask."""
    hands, num_actions, bids = len(rolls.hands), game.num_actions, game.liar
    player, depth, parent_seq, legal = [], [], [], []
    actions = np.arange(num_actions)
    for level in range(bidding.levels):
        mine = bidding.decision[level] >= 0
        last, mask = bidding.last[level][mine], bidding.mask[level][mine]
        count = _popcount(mask)
        player.append(count % 2)
        depth.append(count // 2)
        legal.append(
            (actions[None, :] > last[:, None]) & ((actions[None, :] < bids) | (mask[:, None] != 0))
        )
        # Decision nodes at bidding level L have L bids behind them; from L = 2 on, the
        # mover's previous sequence is its bid two levels up.
        up, made = np.full(last.size, -1), np.zeros(last.size, dtype=np.int64)
        if level >= 2:
            par = bidding.parent[level][mine]
            up = bidding.decision[level - 2][bidding.parent[level - 1][par]]
            made = bidding.last[level - 1][par]
        parent_seq.append((up, made))
    up = np.concatenate([u for u, _ in parent_seq])
    made = np.concatenate([m for _, m in parent_seq])
    hand = np.arange(hands)[None, :]
    sequences = np.where(
        up[:, None] >= 0, (up[:, None] * hands + hand) * num_actions + made[:, None], pad
    )
    return {
        "infoset_player": readonly(np.repeat(np.concatenate(player), hands).astype(np.int8)),
        "infoset_depth": readonly(np.repeat(np.concatenate(depth), hands).astype(np.int32)),
        "infoset_parent_sequence": readonly(sequences.reshape(-1).astype(np.int32)),
        "legal_mask": readonly(np.repeat(np.concatenate(legal), hands, axis=0)),
    }


def _labels(game: Any, bidding: _BiddingTree, rolls: _Rolls) -> tuple[tuple[str, ...], np.ndarray]:
    """Keys (OpenSpiel's information-state strings) and tensors of every information set."""
    hand_keys = [game.dice_separator.join(map(str, h)) for h in rolls.hands]
    said = [np.array([""], dtype=object)]
    suffixes = []
    for level in range(bidding.levels):
        if level:
            said.append(
                said[-1][bidding.parent[level]]
                + np.array(game._suffix, dtype=object)[bidding.last[level]]
            )
        suffixes.extend(said[-1][bidding.decision[level] >= 0].tolist())
    keys = tuple(h + s for s in suffixes for h in hand_keys)
    masks = np.concatenate(
        [bidding.mask[level][bidding.decision[level] >= 0] for level in range(bidding.levels)]
    )
    movers = _popcount(masks) % 2
    hands = len(rolls.hands)
    tensors = np.zeros((masks.size * hands, game.infoset_tensor_size), dtype=np.float32)
    row = np.arange(masks.size * hands)
    tensors[row, np.repeat(movers, hands)] = 1.0
    for slot in range(game.numdice):
        faces = np.array([h[slot] for h in rolls.hands])
        tensors[row, np.tile(2 + slot * game.dice_sides + faces - 1, masks.size)] = 1.0
    for b in range(game.liar):
        made = np.repeat((masks >> b) & 1, hands).astype(bool)
        tensors[made, game.bid_offset + b] = 1.0
    return keys, tensors
