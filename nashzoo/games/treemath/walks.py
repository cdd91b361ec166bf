"""Sampled traversals over a compiled tree, all walks at once, and the values they back up.

Deep CFR's traversals (Brown, Lerer, Gross & Sandholm 2019): one player *explores* (takes every
legal action), chance and everyone else sample one action. All ``k`` walks advance together, one
tree depth at a time, as parallel arrays of ``(walk, node)`` pairs; values are backed up with
``np.bincount``. No Python call per node or per walk.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nashzoo.games.base import CHANCE
from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath._cache import per_tree
from nashzoo.games.treemath.children import chance_rows, ranges_of


def sample_cdf(cdf: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling, one draw per row of cumulative sums (rows need not end at one),
    one uniform in [0, 1) per row: the one sampler of every learner that draws from a table.

    A zero-probability column is never drawn. The guard is the first column where a row
    reaches its total: ``u * total`` can round up to the total itself, and a plain clip to the
    last column would then draw a trailing column of probability zero."""
    total = cdf[:, -1:]
    picks = (cdf <= uniforms[:, None] * total).sum(axis=1)
    return np.minimum(picks, (cdf < total).sum(axis=1))


SAMPLE_CHUNK_CELLS = 1 << 22
""":func:`sample_rows` draws for at most this many table cells at a time (32 MB of float64)."""


def sample_rows(
    table: np.ndarray, rows: np.ndarray, uniforms: np.ndarray, *, cumulative: bool = False
) -> np.ndarray:
    """:func:`sample_cdf` for the rows ``table[rows]`` (probabilities, or their cumulative
    sums where ``cumulative``), a chunk of rows at a time: a million walks at a node of 2,000
    actions would otherwise gather 30 GB at once. The same draws as one call."""
    out = np.empty(rows.size, dtype=np.int64)
    step = max(1, SAMPLE_CHUNK_CELLS // max(1, table.shape[1]))
    for lo in range(0, rows.size, step):
        part = table[rows[lo : lo + step]]
        cdf = part if cumulative else np.cumsum(part, axis=1)
        out[lo : lo + step] = sample_cdf(cdf, uniforms[lo : lo + step])
    return out


@dataclasses.dataclass
class WalkDepth:
    """One depth of a batch of walks: parallel arrays over ``(walk, node)`` pairs."""

    node: np.ndarray  # node id
    parent: np.ndarray  # index of the parent pair in the previous depth
    action: np.ndarray  # action / outcome id from the parent
    weight: np.ndarray  # backup weight: sigma(I, a) under an exploring parent, else 1
    explored: np.ndarray  # bool: the parent was an exploring node


class SampledWalks:
    """Index arrays of one compiled tree for sampled walks (get one with :func:`sampled_walks`)."""

    def __init__(self, tree: CompiledTree) -> None:
        # Arrays only, never the tree: this index is cached per tree (``per_tree``), and a
        # reference to the tree from it would keep every tree Deep CFR walked alive for good.
        self.player = tree.player.astype(np.int64)
        self.infoset = tree.infoset.astype(np.int64)
        self.action = tree.action.astype(np.int64)
        self.child_start = tree.child_start
        self.legal_rank = tree.legal_rank
        self.legal_mask = tree.legal_mask
        self.utility = tree.utility
        self.num_actions = tree.num_actions
        self.chance = chance_rows(tree)
        self.chance_cdf = np.cumsum(self.chance.probs, axis=1)

    def walk(
        self, explorer: int, strategy: np.ndarray, k: int, rng: np.random.Generator
    ) -> list[WalkDepth]:
        """``k`` walks: ``explorer`` expands every legal action, all others sample.

        ``strategy`` is ``[num_infosets, num_actions]`` for every player.
        """
        node = np.zeros(k, dtype=np.int64)
        empty_i = np.zeros(k, dtype=np.int64)
        depths = [WalkDepth(node, empty_i - 1, empty_i - 1, np.ones(k), np.zeros(k, dtype=bool))]
        while True:
            node = depths[-1].node
            who = self.player[node]
            parts: list[tuple[np.ndarray, ...]] = []
            explore = np.flatnonzero(who == explorer)
            if explore.size:
                kids, owner = ranges_of(self.child_start, node[explore])
                cols = self.action[kids]
                isets = self.infoset[node[explore]]
                parts.append(
                    (
                        kids,
                        explore[owner],
                        cols,
                        strategy[isets[owner], cols],
                        np.ones(kids.size, dtype=bool),
                    )
                )
            chance = np.flatnonzero(who == CHANCE)
            if chance.size:
                at = node[chance]
                u = rng.random(chance.size)
                picks = sample_rows(self.chance_cdf, self.chance.row[at], u, cumulative=True)
                kids = self.child_start[at] + picks
                parts.append(self._sampled(kids, chance, self.action[kids]))
            sample = np.flatnonzero((who >= 0) & (who != explorer))
            if sample.size:
                at = node[sample]
                cols = sample_rows(strategy, self.infoset[at], rng.random(sample.size))
                kids = self.child_start[at] + self.legal_rank[self.infoset[at], cols]
                parts.append(self._sampled(kids, sample, cols))
            if not parts:
                return depths
            depths.append(WalkDepth(*(np.concatenate(p) for p in zip(*parts, strict=True))))

    @staticmethod
    def _sampled(kids: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, ...]:
        """The parts of a :class:`WalkDepth` for one sampled child ``kids[i]`` (reached by
        action ``cols[i]``) of each walk ``rows[i]``."""
        return (
            kids,
            rows,
            cols,
            np.ones(rows.size),
            np.zeros(rows.size, dtype=bool),
        )

    def sampled_regrets(
        self, depths: list[WalkDepth], player: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Back up sampled values; return ``(infosets, regrets)`` at ``player``'s visited nodes."""
        utility = self.utility[:, player]
        num_actions = self.num_actions
        out_isets, out_regrets = [], []
        child_values: np.ndarray | None = None
        for d in range(len(depths) - 1, -1, -1):
            level = depths[d]
            n = level.node.size
            values = utility[level.node].copy()
            mine = np.flatnonzero(self.player[level.node] == player)
            if child_values is not None:
                nxt = depths[d + 1]
                values += np.bincount(nxt.parent, weights=nxt.weight * child_values, minlength=n)
                if mine.size:
                    # Rows for ``player``'s nodes only: a level's other pairs can be millions
                    # (every walk at a node of thousands of actions).
                    row = np.full(n, -1, dtype=np.int64)
                    row[mine] = np.arange(mine.size)
                    ex = np.flatnonzero(nxt.explored)
                    ex = ex[row[nxt.parent[ex]] >= 0]
                    child_by_action = np.zeros((mine.size, num_actions))
                    child_by_action[row[nxt.parent[ex]], nxt.action[ex]] = child_values[ex]
                    isets = self.infoset[level.node[mine]]
                    legal = self.legal_mask[isets]
                    out_isets.append(isets)
                    out_regrets.append(np.where(legal, child_by_action - values[mine, None], 0.0))
            child_values = values
        if not out_isets:
            return np.zeros(0, dtype=np.int64), np.zeros((0, num_actions))
        return np.concatenate(out_isets), np.concatenate(out_regrets)

    def visited_infosets(self, depths: list[WalkDepth], player: int) -> np.ndarray:
        """Infoset of every visited node of ``player`` (one entry per visit)."""
        found = [self.infoset[d.node[self.player[d.node] == player]] for d in depths]
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def sampled_walks(tree: CompiledTree) -> SampledWalks:
    """The tree's :class:`SampledWalks` (built once per tree, then cached)."""
    return per_tree(tree, "sampled_walks", SampledWalks)
