"""What the torch learners (NFSP, Deep CFR) share: the game check, the device set-up, and a
checkpoint of their networks that is refused when a network holds NaN/inf and checked on load
against the game's information-set tensor size.

A subclass builds its networks in ``_setup`` after :meth:`NeuralLearner._setup_device`, lists
them in :meth:`NeuralLearner._networks`, packs them with :meth:`NeuralLearner._pack_networks`
and reads them back with :meth:`NeuralLearner._unpack_networks`; its own optimisers, memories
and counters stay in the subclass.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from nashzoo.agents._torch_utils import (
    check_input_size,
    check_parameters,
    module_dict,
    optimizer_to,
    pack_torch,
    resolve_device,
    unpack_torch,
)
from nashzoo.agents.base import CheckpointError, Learner
from nashzoo.agents.policy import PolicyError

__all__ = ["NeuralLearner"]


class NeuralLearner(Learner):
    """A learner whose policies are torch networks reading information-set tensors."""

    kind: ClassVar[str] = "neural"
    reads_tensors: ClassVar[bool] = True

    def _setup_device(self) -> None:
        """``device`` from the config's ``device`` field; ``input_size`` and ``num_actions``
        from the game (the networks' widths)."""
        # A NeuralLearner's Config has a device field, which LearnerConfig does not declare.
        self.device = resolve_device(self.config.device)  # type: ignore[attr-defined]
        self.input_size = int(self.game.infoset_tensor_size)
        self.num_actions = int(self.game.num_actions)

    @abstractmethod
    def _networks(self) -> dict[str, nn.Module]:
        """Every network the learner keeps, by the name its checkpoint stores it under."""

    def save(self, path: Any) -> None:
        """Checkpoint (refused, keeping any previous file, if a network holds NaN/inf)."""
        check_parameters(self._networks(), learner=self.name)
        super().save(path)

    def _pack_networks(self, optimizers: dict[str, torch.optim.Optimizer]) -> np.ndarray:
        """One blob: the input size, every network's parameters and the optimisers' states."""
        torch_state = {
            "input_size": self.input_size,
            "nets": module_dict(self._networks().items()),
            **{name: opt.state_dict() for name, opt in optimizers.items()},
        }
        return pack_torch(torch_state)

    def _unpack_networks(
        self, blob: np.ndarray, optimizers: dict[str, torch.optim.Optimizer]
    ) -> None:
        """Load a blob of :meth:`_pack_networks` into the networks and optimisers, refusing one
        made for another tensor size."""
        state = unpack_torch(blob, self.device)
        if int(state["input_size"]) != self.input_size:
            raise CheckpointError(
                f"the checkpoint's networks read {state['input_size']} features but "
                f"{self.game.display_id} has information-set tensors of size {self.input_size}"
            )
        for name, net in self._networks().items():
            net.load_state_dict(state["nets"][name])
            try:
                check_input_size(net, self.input_size, what=name)
            except PolicyError as err:
                raise CheckpointError(str(err)) from None
        for name, optimizer in optimizers.items():
            optimizer.load_state_dict(state[name])
            optimizer_to(optimizer, self.device)
