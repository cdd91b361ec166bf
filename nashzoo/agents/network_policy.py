"""Networks read as policies over information-set tensors (numpy only: no torch needed).

* :class:`NetworkPolicy`: frozen copies of networks read as
  :class:`~nashzoo.agents.policy.Policy` objects. ``action_probabilities_batch`` evaluates many
  information sets in one forward pass, which is what makes ``TabularPolicy.from_policy``
  (exact exploitability) fast. Its softmax subclass over a torch network,
  :class:`~nashzoo.agents.torch_networks.SoftmaxPolicy`, is in
  :mod:`~nashzoo.agents.torch_networks`.
* :func:`masked_softmax_np`: a softmax over the legal actions only.
* :func:`check_finite_on_legal`: refuses a network's NaN/inf outputs on a legal action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nashzoo.agents.policy import Infoset, PolicyError, as_infoset, sample_action
from nashzoo.games.base import display_id
from nashzoo.games.infoset import widen_mask


def masked_softmax_np(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Float64 softmax over the legal entries of each row; zeros on illegal ones."""
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def check_finite_on_legal(values: np.ndarray, masks: np.ndarray, source: str) -> None:
    """Raise :class:`PolicyError` when a network's outputs are NaN or infinite on a legal
    action. Rules that pick a largest value or a positive part (greedy, regret matching) read
    NaN as a choice (``argmax`` takes it as the largest; regret matching as "not positive", so
    uniform), which would give a normal-looking number from a broken network."""
    bad = ~np.isfinite(np.where(masks, values, 0.0)).all(axis=1)
    if bad.any():
        raise PolicyError(
            f"{source} returned NaN/inf values on a legal action ({int(bad.sum())} of "
            f"{bad.size} information sets queried): the network is broken (diverged training, "
            "or weights that are not numbers)",
            row=int(np.argmax(bad)),
        )


class NetworkPolicy:
    """Frozen copies of networks read as a Policy over information-set tensors.

    Subclasses implement :meth:`_probabilities` on a batch of float32 tensors and boolean
    masks. The networks are copies taken when the policy was made: later training never
    changes a policy already handed out.
    """

    def __init__(self, game_id: str, input_size: int, num_actions: int, seat: int | None) -> None:
        self.game_id = game_id
        self.input_size = int(input_size)
        self.num_actions = int(num_actions)
        self.seat = seat

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def action_probabilities_batch(
        self, players: np.ndarray, tensors: np.ndarray, legal_masks: np.ndarray
    ) -> np.ndarray:
        """``[n, num_actions]`` probabilities for ``n`` information sets in one forward pass."""
        tensors = np.asarray(tensors, dtype=np.float32)
        masks = np.asarray(legal_masks).astype(bool, copy=False)
        if tensors.ndim != 2 or tensors.shape[1] != self.input_size:
            raise PolicyError(
                f"{type(self).__name__} for {display_id(self.game_id)} reads information-set "
                "tensors of size "
                f"{self.input_size}, got shape {tensors.shape}: is the information set from "
                "another game?"
            )
        if masks.shape != (tensors.shape[0], self.num_actions):
            raise PolicyError(
                f"legal masks must have shape {(tensors.shape[0], self.num_actions)}, "
                f"got {masks.shape}"
            )
        if tensors.shape[0] == 0:
            return np.zeros((0, self.num_actions))
        if not masks.any(axis=1).all():
            raise PolicyError("every queried information set needs at least one legal action")
        return np.asarray(self._probabilities(tensors, masks), dtype=np.float64)

    def action_probabilities(self, infoset: Infoset) -> np.ndarray:
        """The network's probabilities at one information set (a batch of one)."""
        tensor = np.asarray(infoset.tensor, dtype=np.float32).reshape(1, -1)
        mask = np.asarray(infoset.legal_mask).reshape(1, -1)
        if mask.shape[1] < self.num_actions:  # an env agent's own (shorter) action mask
            mask = widen_mask(mask, self.num_actions)
        return self.action_probabilities_batch(np.array([infoset.player]), tensor, mask)[0]

    def act(self, infoset: Infoset | Mapping[str, Any], rng: np.random.Generator) -> int:
        """Sample an action for an :class:`Infoset` or a PettingZoo observation dict
        (acting never changes the policy)."""
        return sample_action(self.action_probabilities(as_infoset(infoset)), rng)

    def __repr__(self) -> str:
        seat = "" if self.seat is None else f", seat {self.seat}"
        return f"{type(self).__name__}({display_id(self.game_id)}{seat})"
