"""How an NFSP learner plays during training, as a Policy (:class:`NFSPBehaviourPolicy`), and
the epsilon-greedy rule both it and the learner's own play use."""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import nn

from nashzoo.agents.network_policy import NetworkPolicy, check_finite_on_legal, masked_softmax_np
from nashzoo.agents.torch_networks import NumpyMLP
from nashzoo.games import treemath as tm
from nashzoo.games.base import display_id
from nashzoo.games.tree import CompiledTree

__all__ = ["NFSPBehaviourPolicy", "epsilon_greedy_probs", "masked_argmax"]


class NFSPBehaviourPolicy(NetworkPolicy):
    """How an NFSP learner plays during training, as one Policy.

    The learner picks its mode once per episode: best response (epsilon-greedy on ``Q``) with
    probability ``eta``, else its average network. After its own earlier moves the two modes
    are no longer ``eta`` to ``1 - eta`` likely (a move the average rarely makes says the
    episode is likely a best-response one), so the per-information-set mixture
    ``eta * epsilon_greedy(Q) + (1 - eta) * average`` is not how it plays. On a compiled tree
    (:meth:`tree_rows`: exact evaluation, the tree players' opponents) it is materialised as
    the behaviour strategy of the mixed realization plan ``eta * x_br + (1 - eta) * x_avg``,
    which reaches every history with exactly the learner's probability; asked one
    information set at a time (a game played through envs), it answers the per-set mixture,
    the best a stateless policy can do.
    """

    seat: int  # always a seat's: NetworkPolicy's may be None

    def __init__(
        self,
        q_net: nn.Module | NumpyMLP,
        avg_net: nn.Module | NumpyMLP,
        *,
        eta: float,
        epsilon: float,
        game_id: str,
        input_size: int,
        num_actions: int,
        seat: int,
    ) -> None:
        super().__init__(game_id, input_size, num_actions, seat)
        self.q_net = q_net if isinstance(q_net, NumpyMLP) else NumpyMLP(q_net)
        self.avg_net = avg_net if isinstance(avg_net, NumpyMLP) else NumpyMLP(avg_net)
        self.eta = float(eta)
        self.epsilon = float(epsilon)
        self._tree_table: tuple[CompiledTree, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The table is rebuilt on demand: a policy sent to another process does not carry
        # the tree along with it.
        return {**self.__dict__, "_tree_table": None}

    def _modes(self, tensors: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each mode's distribution at the queried sets: epsilon-greedy on ``Q`` (best
        response) and the average network's (only computed when ``eta < 1``)."""
        q = self.q_net(tensors)
        check_finite_on_legal(q, masks, f"nfsp's Q-network ({display_id(self.game_id)})")
        greedy = epsilon_greedy_probs(q, masks, self.epsilon)
        if self.eta == 1.0:
            return greedy, greedy
        return greedy, masked_softmax_np(self.avg_net(tensors), masks)

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        greedy, average = self._modes(tensors, masks)
        return self.eta * greedy + (1.0 - self.eta) * average

    def tree_rows(self, tree: CompiledTree, rows: np.ndarray) -> np.ndarray:
        """The rows ``rows`` of the behaviour strategy realization-equivalent to the learner's
        play (see the class docstring): on its seat's information sets, the mixed plan
        ``eta * x_br + (1 - eta) * x_avg`` normalised per set; where neither mode reaches a
        set (no weight to normalise), and on other seats' sets, the per-set mixture. The table
        is built once per tree (the networks are frozen copies), however many row batches a
        tree player asks for."""
        if self._tree_table is None or self._tree_table[0] is not tree:
            self._tree_table = (tree, self._table_on(tree))
        return self._tree_table[1][np.asarray(rows, dtype=np.int64)]

    def _table_on(self, tree: CompiledTree) -> np.ndarray:
        mine = tree.infosets_of(self.seat)
        greedy, average = np.zeros((2, tree.num_infosets, self.num_actions))
        greedy[mine], average[mine] = self._modes(tree.infoset_tensors[mine], tree.legal_mask[mine])
        plan = self.eta * tm.realization_plan(tree, greedy, self.seat)
        plan += (1.0 - self.eta) * tm.realization_plan(tree, average, self.seat)
        total = plan.sum(axis=1, keepdims=True)
        mixture = self.eta * greedy + (1.0 - self.eta) * average
        table = np.where(total > 0.0, plan / np.where(total > 0.0, total, 1.0), mixture)
        others = tree.infoset_player != self.seat
        if others.any():
            table[others] = self._probabilities(
                tree.infoset_tensors[others].astype(np.float32), tree.legal_mask[others]
            )
        return table


def masked_argmax(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Index of the largest legal entry of each row (ties: lowest index)."""
    return np.argmax(np.where(mask, values, -np.inf), axis=1)


def epsilon_greedy_probs(q: np.ndarray, mask: np.ndarray, epsilon: float) -> np.ndarray:
    """Each row's epsilon-greedy distribution: ``epsilon`` spread uniformly over the legal
    actions, the rest on the largest legal ``q``."""
    legal = mask.astype(np.float64)
    probs = epsilon * legal / legal.sum(axis=1, keepdims=True)
    probs[np.arange(q.shape[0]), masked_argmax(q, mask)] += 1.0 - epsilon
    return probs
