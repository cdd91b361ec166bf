"""The interface between layers: what a policy is asked, and what it answers.

These live with the rules (the lowest layer) so that every layer above, environments included,
can talk to any policy without importing the agents package:

* :class:`Infoset`: the acting ``player``, the readable ``key``, the float32 ``tensor`` and the
  boolean ``legal_mask``. Tabular policies look up the key; neural ones read the tensor.
* :class:`Policy`: the protocol ``action_probabilities(infoset) -> np.ndarray[num_actions]``
  (zeros on illegal actions, summing to one).
* :class:`BatchPolicy`: the protocol of a policy that also answers many information sets in one
  call (``action_probabilities_batch``): neural policies, and tables, so that materialising
  them is one forward pass instead of one query per information set.
* :class:`UniformPolicy`: uniform over the legal actions, for any game.

``nashzoo.agents`` re-exports them next to ``TabularPolicy``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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

    @classmethod
    def from_observation(
        cls,
        observation: Mapping[str, Any],
        player: int = -1,
        key: str = "",
        num_actions: int | None = None,
    ) -> Infoset:
        """From a nashzoo env observation ``{"observation": tensor, "action_mask": mask}``.

        Pass the acting ``player`` and the key (``infos[agent]["infoset_key"]``) when known;
        without a key, tabular policies find the information set by its tensor. Pass the
        game's ``num_actions`` to widen the mask to it (see :func:`widen_mask`).
        """
        try:
            tensor, mask = observation["observation"], observation["action_mask"]
        except (KeyError, TypeError):
            raise PolicyError(
                "expected an Infoset or a nashzoo env observation dict with 'observation' and "
                f"'action_mask', got {type(observation).__name__}"
            ) from None
        mask = np.asarray(mask).astype(bool)
        if num_actions is not None:
            mask = widen_mask(mask, num_actions)
        return cls(player, key, np.asarray(tensor), mask)


def widen_mask(mask: np.ndarray, num_actions: int) -> np.ndarray:
    """An env action mask as a boolean mask over all ``num_actions`` ids of the game.

    An env agent's mask has ``game.num_actions_of(player)`` entries, fewer than
    ``game.num_actions`` for the smaller side of a non-square matrix game; its ids are the
    first ones, so the rest are padded with ``False``. Masks already that long come back as
    they are (as booleans).
    """
    mask = np.asarray(mask).astype(bool, copy=False)
    short = num_actions - mask.shape[-1]
    if short < 0:
        raise PolicyError(f"action mask of length {mask.shape[-1]} for {num_actions} actions")
    if short:
        pad = [(0, 0)] * (mask.ndim - 1) + [(0, short)]
        mask = np.pad(mask, pad)
    return mask


def as_infoset(infoset: Infoset | Mapping[str, Any]) -> Infoset:
    """``infoset`` itself, or the :class:`Infoset` of a nashzoo env observation dict."""
    return infoset if isinstance(infoset, Infoset) else Infoset.from_observation(infoset)


@runtime_checkable
class Policy(Protocol):
    """Anything that maps an information set to action probabilities."""

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        """Probabilities over ``num_actions`` actions, zero on illegal ones, summing to one."""
        ...


@runtime_checkable
class BatchPolicy(Protocol):
    """A policy that answers a batch of information sets in one call (the fast path of
    materialising it into a table, and of an opponent queried by a sampling learner)."""

    def action_probabilities_batch(
        self, players: np.ndarray, tensors: np.ndarray, legal_masks: np.ndarray
    ) -> np.ndarray:
        """``[n, num_actions]`` probabilities for ``n`` information sets given as their acting
        ``players`` ``[n]``, ``tensors`` ``[n, tensor_size]`` and ``legal_masks``
        ``[n, num_actions]``; each row as :meth:`Policy.action_probabilities` would answer."""
        ...


class PolicyError(ValueError):
    """A policy that does not fit its game (wrong shapes, keys, or not a distribution).

    ``row``: for an answer to a batch of information sets, the position in the batch of the
    first row refused, so that the caller, which knows which information sets it asked
    about, can name that set (a network adapter sees only tensors)."""

    def __init__(self, *args: object, row: int | None = None) -> None:
        super().__init__(*args)
        self.row = row


class UniformPolicy:
    """Uniform over the legal actions of whatever information set it is asked about."""

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        """Equal probability on every legal action of ``infoset``."""
        mask = np.asarray(infoset.legal_mask, dtype=np.float64)
        return mask / mask.sum()

    def __repr__(self) -> str:
        return "UniformPolicy()"
