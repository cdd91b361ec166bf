"""Whether play can reach a player's decisions at all: exact, over the compiled tree.

A learner that learns from play (NFSP, PPO, DQN) against a pure opponent can face a state in
which the opponent ends every game before its seat moves (in cross-play, a CFR learner's
current strategy going pure on such a line is normal). Sampling cannot tell "never" from
"rarely" (a seat that moves once in 2,000 deals is a valid game); this pass can.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nashzoo.games.base import CHANCE, TERMINAL
from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath.children import child_ranges


def reaches_player(
    tree: CompiledTree, player: int, rows_at: Callable[[np.ndarray], np.ndarray]
) -> bool:
    """Whether chance and the other player's policy reach a decision node of ``player`` with
    positive probability (``player``'s own moves are not needed: the pass stops at its first
    node). ``rows_at(infosets)`` gives the other player's distributions at those information
    sets (``[len, num_actions]``), asked only where the pass goes: level by level over the
    nodes reached with positive probability."""
    live = np.zeros(1, dtype=np.int64)
    while live.size:
        who = tree.player[live].astype(np.int64)
        if (who == player).any():
            return True
        live = live[who != TERMINAL]
        kids, owner = child_ranges(tree, live)
        parent = live[owner]
        probs = tree.chance_prob[kids].astype(np.float64)
        decision = tree.player[parent] != CHANCE
        if decision.any():
            rows = np.asarray(rows_at(tree.infoset[parent[decision]].astype(np.int64)))
            probs[decision] = rows[np.arange(rows.shape[0]), tree.action[kids[decision]]]
        live = kids[probs > 0]
    return False
