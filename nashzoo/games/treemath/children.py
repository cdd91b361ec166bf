"""A compiled tree's children without a dense ``[N, B]`` table.

The breadth-first layout keeps every node's children together, in the order the game lists
them, so the children of node ``n`` are ``child_start[n]:child_start[n + 1]``
(:attr:`~nashzoo.games.tree.CompiledTree.child_start`) and a decision node's child for a legal
action is one gather (:meth:`~nashzoo.games.tree.CompiledTree.decision_children`). What a node
costs is then its own width, not the widest node's: a 1000x1000 matrix game's million
terminals need no row of 1000 each, and a chance node of 10,000 outcomes widens nothing but
its own row of :func:`chance_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nashzoo.games.base import CHANCE
from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath._cache import frozen, per_tree


def child_ranges(tree: CompiledTree, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(children, owner)``: every child of ``nodes``, node after node and each node's in
    their stored order, and the position in ``nodes`` of each child's parent."""
    return ranges_of(tree.child_start, nodes)


def ranges_of(child_start: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`child_ranges` from the tree's ``child_start`` alone (for an index that must not
    hold the tree: a cached one would keep it alive)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    start = child_start[nodes]
    count = child_start[nodes + 1] - start
    owner = np.repeat(np.arange(nodes.size), count)
    first_of_owner = np.repeat(np.cumsum(count) - count, count)
    return start[owner] + (np.arange(owner.size) - first_of_owner), owner


@dataclass(frozen=True)
class ChanceRows:
    """Every chance node's outcome probabilities as one table row, by child position (the
    ``k``-th column is the child ``child_start[n] + k``), zero-padded to the widest chance
    node: what the samplers draw chance moves from."""

    nodes: np.ndarray  # [C] int64 the chance nodes, in breadth-first order
    row: np.ndarray  # [N] int64 each node's row, -1 at decision and terminal nodes
    probs: np.ndarray  # [C, W] float64


def chance_rows(tree: CompiledTree) -> ChanceRows:
    """The tree's :class:`ChanceRows` (built once per tree, then cached)."""
    return per_tree(tree, "chance_rows", _build_chance_rows)


def _build_chance_rows(tree: CompiledTree) -> ChanceRows:
    nodes = np.flatnonzero(tree.player == CHANCE).astype(np.int64)
    row = np.full(tree.num_nodes, -1, dtype=np.int64)
    row[nodes] = np.arange(nodes.size)
    kids, owner = child_ranges(tree, nodes)
    width = int(np.diff(tree.child_start)[nodes].max(initial=0))
    probs = np.zeros((nodes.size, max(width, 1)))
    probs[owner, kids - tree.child_start[nodes][owner]] = tree.chance_prob[kids]
    return ChanceRows(frozen(nodes), frozen(row), frozen(probs))
