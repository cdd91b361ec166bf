"""The interface between layers: what a policy is asked, and what it answers.

These live with the rules (the lowest layer) so that every layer above, environments included,
can talk to any policy without importing the agents package:

* :class:`Infoset`: the acting ``player``, the readable ``key``, the float32 ``tensor`` and the
  boolean ``legal_mask``. Tabular policies look up the key; neural ones read the tensor.
* :class:`Policy`: the protocol ``action_probabilities(infoset) -> np.ndarray[num_actions]``
  (zeros on illegal actions, summing to one).
* :class:`UniformPolicy`: uniform over the legal actions, for any game.

``nashzoo.agents`` re-exports all three next to ``TabularPolicy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from nashzoo.games.tree import CompiledTree


@dataclass(frozen=True)
class Infoset:
    """An information set as a policy sees it."""

    player: int
    key: str
    tensor: np.ndarray
    legal_mask: np.ndarray

    @classmethod
    def from_tree(cls, tree: CompiledTree, index: int) -> Infoset:
        """The ``index``-th information set of a compiled tree."""
        return cls(
            player=int(tree.infoset_player[index]),
            key=tree.infoset_keys[index],
            tensor=tree.infoset_tensors[index],
            legal_mask=tree.legal_mask[index],
        )


@runtime_checkable
class Policy(Protocol):
    """Anything that maps an information set to action probabilities."""

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        """Probabilities over ``num_actions`` actions, zero on illegal ones, summing to one."""
        ...


class PolicyError(ValueError):
    """A policy that does not fit its game (wrong shapes, keys, or not a distribution)."""


class UniformPolicy:
    """Uniform over the legal actions of whatever information set it is asked about."""

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        mask = np.asarray(infoset.legal_mask, dtype=np.float64)
        return mask / mask.sum()

    def __repr__(self) -> str:
        return "UniformPolicy()"
