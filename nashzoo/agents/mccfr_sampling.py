"""How the external-sampling MCCFR passes draw their walks: the reach counts of ``B`` walks
that sample the nodes of some kinds and take every action elsewhere, drawn all at once
(:mod:`nashzoo.agents.mccfr` says why each sampler is used where it is). Also each node's kind
seen from one seat, and the table of the distributions sampled at each node."""

from __future__ import annotations

import numpy as np

from nashzoo.games import CHANCE, CompiledTree
from nashzoo.games.treemath import child_ranges

__all__ = [
    "CHANCE_NODE",
    "MAX_SCENARIOS",
    "MAX_SCENARIO_CELLS",
    "OPPONENT",
    "OWN",
    "TERMINAL",
    "CountSampler",
    "DistributionTable",
    "ScenarioSampler",
    "distribution_table",
    "make_sampler",
    "node_kinds",
]

TERMINAL, OWN, OPPONENT, CHANCE_NODE = 0, 1, 2, 3
"""Node kinds seen from one seat (:func:`node_kinds`)."""


class CountSampler:
    """Draws the reach counts of ``B`` independent walks that sample the nodes of some kinds
    and take every action elsewhere (the external-sampling passes), top-down by multinomials:
    the sampler for trees too big for :class:`ScenarioSampler`.

    Counts live in a flat vector of *slots*: slot 0 holds ``B`` (nodes no sampled move leads
    to); then one slot per node of the chance prefix's frontier (the chance moves at the top of
    the tree drawn as one multinomial over their outcomes); then, for each sampled depth, one
    slot per (sampled node, action). ``slot[n]`` is where node ``n``'s count is read: the
    deepest sampled move on its path.
    """

    def __init__(
        self,
        tree: CompiledTree,
        kind: np.ndarray,
        is_sampled: np.ndarray,
        table: DistributionTable,
        chance_reach: np.ndarray,
        targets: np.ndarray,
    ) -> None:
        n_nodes, width = tree.num_nodes, tree.branching
        table_row = table.node_row
        parent = tree.parent.astype(np.int64)
        levels = [
            np.arange(tree.level_starts[d], tree.level_starts[d + 1])
            for d in range(1, len(tree.level_starts) - 1)
        ]  # the nodes of each depth below the root (breadth-first order: parents first)
        # Chance prefix: the root, if a chance node, and every chance node reached from it
        # through chance nodes only. Its frontier is drawn as one multinomial (chance reach).
        prefix = np.zeros(n_nodes, dtype=bool)
        prefix[0] = kind[0] == CHANCE_NODE
        for nodes in levels:
            prefix[nodes] = prefix[parent[nodes]] & (kind[nodes] == CHANCE_NODE)
        frontier = np.flatnonzero(~prefix & prefix[np.maximum(parent, 0)])
        frontier = frontier[frontier > 0]
        # Sampled depth: sampled moves on the path (the whole prefix counts as one).
        depth = np.zeros(n_nodes, dtype=np.int64)
        for nodes in levels:
            up = parent[nodes]
            depth[nodes] = np.where(prefix[up], 1, depth[up] + is_sampled[up])
        # Slots: 0, the frontier, then per sampled depth one run of slots per node (its ids).
        inner = np.flatnonzero(is_sampled & ~prefix)
        edge = np.full(n_nodes, -1, dtype=np.int64)  # first slot of each inner sampled node
        offset = 1 + frontier.size
        runs = []
        last_id = np.zeros(n_nodes, dtype=np.int64)  # each node's largest move id
        np.maximum.at(last_id, parent[1:], tree.action[1:].astype(np.int64))
        for d in np.unique(depth[inner]):
            nodes = inner[depth[inner] == d]
            # The depth's slots per node: its widest node's ids and one more, a column of
            # probability 0 as the full table's rows end in (same draws: the multinomial gives a
            # row's last column what is left undrawn), but no wider than the table: a node of
            # 10,000 outcomes no longer widens every other sampled node's run.
            run = min(int(last_id[nodes].max()) + 2, width)
            edge[nodes] = offset + run * np.arange(nodes.size)
            runs.append((nodes, run, slice(offset, offset + run * nodes.size)))
            offset += run * nodes.size
        slot = np.full(n_nodes, -1, dtype=np.int64)
        slot[frontier] = 1 + np.arange(frontier.size)
        if not prefix[0]:
            slot[0] = 0
        for nodes in levels:
            todo = nodes[(slot[nodes] < 0) & ~prefix[nodes]]
            up = parent[todo]
            slot[todo] = np.where(is_sampled[up], edge[up] + tree.action[todo], slot[up])
        self.slot = slot
        self.num_slots = offset
        self.levels = [
            (slot[nodes], table.cells(table_row[nodes], run), run, where)
            for nodes, run, where in runs
        ]
        self.prefix_slots = slice(1, 1 + frontier.size)
        self.prefix_probs = chance_reach[frontier] / max(chance_reach[frontier].sum(), 1e-300)
        # Nodes counted by each slot (prefix nodes count once per frontier node below them).
        size = np.bincount(slot[~prefix], minlength=offset)
        size[self.prefix_slots] += tree.depth[frontier]
        self.slot_size = size
        self.most_per_walk = int(size.sum())  # no walk counts a slot twice
        self.target_slot = slot[targets]

    def counts(self, probs: np.ndarray, walks: int, rng: np.random.Generator) -> np.ndarray:
        """Slot counts of ``walks`` walks; ``probs`` holds the cells of the
        :class:`DistributionTable` (the distribution at each node).

        Only the nodes some walk reaches are drawn: on a big tree most sampled nodes of a level
        see no walk (Liar's dice, 1024 walks: about one in ten), and a multinomial of zero
        trials is all zeros and consumes no random numbers, so skipping them changes neither
        the distribution nor the draws."""
        out = np.zeros(self.num_slots, dtype=np.int64)
        out[0] = walks
        if self.prefix_probs.size:
            out[self.prefix_slots] = rng.multinomial(walks, self.prefix_probs)
        for count_slots, cells, run, where in self.levels:
            reached = out[count_slots]
            hit = np.flatnonzero(reached)
            block = out[where].reshape(-1, run)  # a view: one row per sampled node
            block[hit] = rng.multinomial(reached[hit], probs[cells[hit]])
        return out

    def sample(
        self, probs: np.ndarray, walks: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, int]:
        """How many of ``walks`` walks reach each target node, and the nodes they visit."""
        out = self.counts(probs, walks, rng)
        return out[self.target_slot], work_done(out, self.slot_size, walks * self.most_per_walk)


_INT64_SAFE = 2**63


def work_done(counts: np.ndarray, sizes: np.ndarray, bound: int) -> int:
    """``counts . sizes``, the nodes a pass's walks touched, exactly: numpy's int64 dot (a
    plain loop: no BLAS threads, no temporary) where ``bound`` (walks times the most nodes one
    walk can touch, a Python int) says it cannot overflow, Python's integers past that (a
    batch near the largest allowed, 2**62, touches more than 2**63 nodes)."""
    if bound < _INT64_SAFE:
        return int(np.dot(counts, sizes))
    hit = np.flatnonzero(counts)
    return sum(c * n for c, n in zip(counts[hit].tolist(), sizes[hit].tolist(), strict=True))


def _scenarios(
    tree: CompiledTree, is_sampled: np.ndarray, limit: int, columns: int = 0
) -> list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] | None:
    """The distinct outcomes of one walk of an external-sampling pass, or None past ``limit``
    outcomes, or where the sampler's tables of them would pass :data:`MAX_SCENARIO_CELLS`
    (one row per outcome of the tree's depth plus ``columns`` cells: a game a thousand moves
    deep, or a 1000x1000 matrix game's million targets, has few outcomes but huge rows).

    A walk's *scenario* is what it does at every sampled node it reaches: a tuple of ``(node,
    action)`` choices, with the tuple of nodes it visits. At a sampled node the scenarios are
    those of one child per action; elsewhere (every action taken) they are all combinations of
    one scenario per child. Counted first (:func:`_walk_outcomes`, a few array operations per
    depth), so a big tree is turned down without a Python walk.
    """
    outcomes = _walk_outcomes(tree, is_sampled, limit)
    if outcomes > limit or outcomes * (len(tree.level_starts) + columns) > MAX_SCENARIO_CELLS:
        return None
    first = tree.child_start.tolist()
    kids = [range(first[n], first[n + 1]) for n in range(tree.num_nodes)]
    Scenarios = list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]]
    # Bottom-up, deepest node first (a child's index is above its parent's in the compiled
    # tree's breadth-first order): a recursive walk overflowed Python's stack on a game a few
    # hundred moves deep, which is exactly where few outcomes bring it here.
    below: dict[int, Scenarios] = {}
    for node in range(tree.num_nodes - 1, -1, -1):
        if not kids[node]:
            below[node] = [((), (node,))]
        elif is_sampled[node]:
            below[node] = [
                (((node, int(tree.action[child])), *choices), (node, *nodes))
                for child in kids[node]
                for choices, nodes in below.pop(child)
            ]
        else:
            combos: Scenarios = [((), (node,))]
            for child in kids[node]:
                under = below.pop(child)
                combos = [
                    (choices + more_choices, nodes + more_nodes)
                    for choices, nodes in combos
                    for more_choices, more_nodes in under
                ]
            below[node] = combos
    return below[0]


def _walk_outcomes(tree: CompiledTree, is_sampled: np.ndarray, limit: int) -> int:
    """How many distinct outcomes one walk has (capped at ``limit + 1``), counted bottom-up,
    one depth at a time: a node's count is the sum of its children's where a walk samples one
    action, their product where it takes every action, 1 at a terminal."""
    count = np.ones(tree.num_nodes)
    starts = tree.level_starts
    for d in range(len(starts) - 3, -1, -1):  # the deepest parents first
        nodes = slice(starts[d], starts[d + 1])
        lo = starts[d + 1]  # their children: the next depth, each node's together
        below = count[lo : starts[d + 2]]
        first = tree.child_start[starts[d] : starts[d + 1] + 1] - lo
        has = first[1:] > first[:-1]
        sums = np.concatenate(([0.0], np.cumsum(below)))  # whole numbers: exact sums
        with np.errstate(over="ignore"):  # past the float range is past the cap: inf is fine
            products = np.multiply.reduceat(np.append(below, 1.0), first[:-1])
            total = np.where(is_sampled[nodes], sums[first[1:]] - sums[first[:-1]], products)
        count[nodes] = np.where(has, np.minimum(total, limit + 1), 1.0)
    return int(count[0])


class ScenarioSampler:
    """Draws the same reach counts as :class:`CountSampler` with ONE multinomial, for trees
    whose pass has few distinct walk outcomes (Kuhn: 18-24 per pass; see :func:`_scenarios`).

    ``B`` independent walks fall into the scenarios as ``Multinomial(B, p)``, ``p[s]`` being the
    product of the probabilities of the choices of scenario ``s`` (the chance factors are
    constant, so multiplied out once here); the count of a node is the sum over the scenarios
    that visit it (a fixed 0/1 matrix product). Same distribution as drawing level by level,
    at a handful of numpy calls per step however deep the tree.
    """

    def __init__(
        self,
        scenarios: list[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]],
        table: DistributionTable,
        targets: np.ndarray,
    ) -> None:
        flat, table_row, pad = table.flat, table.node_row, table.pad
        num_infosets = table.num_infosets
        self.chance_factor = np.ones(len(scenarios))
        # moves[k][s]: flat index into the distribution table of the k-th player choice of
        # scenario s; ``pad`` (a cell holding 1.0) fills the rest.
        depth = max(1, max(sum(table_row[n] < num_infosets for n, _ in ch) for ch, _ in scenarios))
        moves = np.full((depth, len(scenarios)), pad, dtype=np.int64)
        column = {int(node): j for j, node in enumerate(targets)}
        # reach[s, j]: 1 if scenario s visits target j; the last column counts its nodes.
        # Integers: exact counts, and an integer product never goes through (threaded) BLAS.
        reach = np.zeros((len(scenarios), len(targets) + 1), dtype=np.int64)
        for s, (choices, nodes) in enumerate(scenarios):
            k = 0
            for node, action in choices:
                cell = table.row_start[table_row[node]] + action
                if table_row[node] < num_infosets:
                    moves[k, s] = cell
                    k += 1
                else:
                    self.chance_factor[s] *= flat[cell]
            for node in nodes:
                if node in column:
                    reach[s, column[node]] = 1
            reach[s, -1] = len(nodes)
        self.moves = list(moves)
        self.reach = reach
        self.most_per_walk = int(reach[:, -1].max(initial=0))

    def sample(
        self, probs: np.ndarray, walks: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, int]:
        """How many of ``walks`` walks reach each target node, and the nodes they visit."""
        flat = probs.reshape(-1)
        p = self.chance_factor * flat[self.moves[0]]
        for index in self.moves[1:]:
            p *= flat[index]
        counts = rng.multinomial(walks, p)
        if walks * self.most_per_walk < _INT64_SAFE:
            out = counts @ self.reach
            return out[:-1], int(out[-1])
        return counts @ self.reach[:, :-1], work_done(counts, self.reach[:, -1], _INT64_SAFE)


MAX_SCENARIOS = 4096
"""Passes with at most this many walk outcomes use :class:`ScenarioSampler` (one multinomial
per pass); bigger ones :class:`CountSampler` (one per sampled depth)."""

MAX_SCENARIO_CELLS = 1 << 20
"""...and whose :class:`ScenarioSampler` tables (outcomes x (depth + targets), 8 bytes a cell)
stay within 8 MB: Kuhn's take 24 x 35, goofspiel(num_cards=3)'s 576 x 1,000 or so."""


def make_sampler(
    tree: CompiledTree,
    kind: np.ndarray,
    sampled: tuple[int, ...],
    table: DistributionTable,
    chance_reach: np.ndarray,
    targets: np.ndarray,
) -> CountSampler | ScenarioSampler:
    """The cheaper exact sampler of the pass that samples the nodes of the ``sampled`` kinds.

    ``table`` is the distribution table (infoset rows, chance rows, then a padding row of
    ones); its chance rows must already hold the chance distributions.
    """
    is_sampled = np.isin(kind, sampled)
    scenarios = _scenarios(tree, is_sampled, MAX_SCENARIOS, len(targets) + 1)
    if scenarios is None:
        return CountSampler(tree, kind, is_sampled, table, chance_reach, targets)
    return ScenarioSampler(scenarios, table, targets)


def node_kinds(tree: CompiledTree, seat: int) -> np.ndarray:
    """Every node's kind seen from ``seat``: ``OWN``, ``OPPONENT``, ``CHANCE_NODE`` or
    ``TERMINAL``."""
    player = tree.player.astype(np.int64)
    kind = np.full(tree.num_nodes, TERMINAL, dtype=np.int64)
    kind[player >= 0] = np.where(player[player >= 0] == seat, OWN, OPPONENT)
    kind[player == CHANCE] = CHANCE_NODE
    return kind


class DistributionTable:
    """The distribution at every non-terminal node, as rows of one flat vector: one row per
    information set (``num_actions`` wide, zeros until the learner writes its strategies in:
    :meth:`strategies`), then one per chance node (its outcome probabilities by outcome id, as
    wide as its own largest id plus one), then a cell holding 1.0 (:attr:`pad`, the padding
    cell of the scenario sampler's products) and one holding 0 (:attr:`zero`, what
    :meth:`cells` reads past a row's end). Rows of their own widths: one chance node of 10,000
    outcomes widened every information set's row to 10,000 in a rectangular table.

    Attributes:
        flat: the cells.
        row_start, row_width: where each row begins in :attr:`flat`, and its width.
        node_row: each node's row (-1 at terminals).
    """

    def __init__(self, tree: CompiledTree, kind: np.ndarray) -> None:
        n_i, n_a = tree.num_infosets, tree.num_actions
        self.num_infosets, self.num_actions = n_i, n_a
        player = tree.player.astype(np.int64)
        chance = np.flatnonzero(kind == CHANCE_NODE)
        self.node_row = np.full(tree.num_nodes, -1, dtype=np.int64)
        self.node_row[player >= 0] = tree.infoset.astype(np.int64)[player >= 0]
        self.node_row[chance] = n_i + np.arange(chance.size)
        kids, owner = child_ranges(tree, chance)
        outcome = tree.action[kids].astype(np.int64)
        chance_width = np.zeros(chance.size, dtype=np.int64)
        np.maximum.at(chance_width, owner, outcome + 1)
        self.row_width = np.concatenate((np.full(n_i, n_a, dtype=np.int64), chance_width))
        self.row_start = np.concatenate(([0], np.cumsum(self.row_width)[:-1]))
        self.flat = np.zeros(int(self.row_width.sum()) + 2)
        self.flat[-2] = 1.0
        # Each chance row normalised as a row of the full table's width (the same sums, bit
        # for bit), a bounded block of rows at a time.
        width = tree.branching
        step = max(1, (1 << 20) // width)
        start = self.row_start[n_i:]
        bounds = np.searchsorted(owner, np.arange(0, chance.size + step, step))  # owner sorted
        for b, lo in enumerate(range(0, chance.size, step)):
            mine = slice(bounds[b], bounds[b + 1])  # the children of this block's rows
            row, col = owner[mine] - lo, outcome[mine]
            block = np.zeros((min(step, chance.size - lo), width))
            block[row, col] = tree.chance_prob[kids[mine]]
            block /= block.sum(axis=1, keepdims=True)
            self.flat[start[owner[mine]] + col] = block[row, col]

    @property
    def pad(self) -> int:
        """The cell holding 1.0."""
        return int(self.flat.size - 2)

    @property
    def zero(self) -> int:
        """The cell holding 0."""
        return int(self.flat.size - 1)

    def strategies(self) -> np.ndarray:
        """``[num_infosets, num_actions]``: a view of the information sets' rows, made on each
        call (a view kept would come back from a pickle or a deepcopy, a learner sent to a
        worker process, as an array of its own, and what is written into it would never reach
        the cells the samplers read)."""
        n = self.num_infosets * self.num_actions
        return self.flat[:n].reshape(self.num_infosets, self.num_actions)

    def cells(self, rows: np.ndarray, width: int) -> np.ndarray:
        """``[len(rows), width]``: the cells of rows ``rows``, :attr:`zero` past each row's own
        width (``flat[cells(...)]`` is then the rows, zero-padded, in one gather)."""
        cols = np.arange(width)
        inside = cols < self.row_width[rows, None]
        return np.where(inside, self.row_start[rows, None] + cols, self.zero)


def distribution_table(tree: CompiledTree, kind: np.ndarray) -> DistributionTable:
    """The :class:`DistributionTable` of the nodes of ``tree`` whose kinds (seen from one seat)
    are ``kind``."""
    return DistributionTable(tree, kind)
