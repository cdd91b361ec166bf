"""Scratch space the compiled kernels over one tree share (see :class:`TreeScratch`)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from nashzoo.games.tree import CompiledTree
from nashzoo.games.treemath._cache import per_tree


class TreeScratch:
    """Scratch space of the compiled kernels over one tree, shared by every kernel call over
    it in this process (:func:`shared_scratch`): three rows of one float per sequence plus one
    for the empty sequence, ``[3, I * A + 1]``, and one float per information set, ``[I]``.
    A full-width step uses them for the pass's ``q``, the other player's plan (then the own
    plan) and the sums pushed to parents, and the information sets' values; NashConv for
    three of its five rows.

    Kept between steps because fresh pages each step cost more than the arithmetic on a big
    tree; shared because the two seats of a trainer step one after the other and evaluate
    between steps, so one copy serves all (on a 42-million-history Liar's dice, 1.1 GB less
    held and 1.1 GB less at every evaluation's peak). A call takes it and gives it back; a call
    that finds it taken (two kernels at once, in two threads) gets its own for that call.
    Pickled (a learner sent to a worker, or deep-copied) without its arrays, which hold
    nothing between calls.
    """

    def __init__(self, num_sequences: int, num_infosets: int) -> None:
        self._shapes = ((3, num_sequences + 1), (num_infosets,))
        self._free: list[tuple[np.ndarray, np.ndarray]] = []

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """The scratch arrays, for one call (``list.pop`` is atomic: no lock)."""
        try:
            return self._free.pop()
        except IndexError:
            return np.empty(self._shapes[0]), np.empty(self._shapes[1])

    def give_back(self, scratch: tuple[np.ndarray, np.ndarray]) -> None:
        """Keep ``scratch`` for the next call (one set at most)."""
        if not self._free:
            self._free.append(scratch)

    def __getstate__(self) -> dict[str, Any]:
        return {"_shapes": self._shapes, "_free": []}


def shared_scratch(tree: CompiledTree) -> TreeScratch:
    """The :class:`TreeScratch` of ``tree`` that the live users of it share (the learners'
    steps), or a new one when none is alive (held weakly here: it goes with the last user,
    not with the tree, which the game's cache may keep for long)."""
    holder: list[weakref.ref[TreeScratch]] = per_tree(tree, "scratch", _no_scratch)
    scratch = holder[0]() if holder else None
    if scratch is None:
        scratch = TreeScratch(tree.legal_mask.size, tree.num_infosets)
        holder[:] = [weakref.ref(scratch)]
    return scratch


def _no_scratch(tree: CompiledTree) -> list[weakref.ref[TreeScratch]]:
    return []
