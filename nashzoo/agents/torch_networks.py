"""The neural learners' small ReLU networks: built from a seed, run without autograd, frozen
into numpy copies, and read as a softmax policy.

Importing this module needs the optional ``neural`` extra (torch).

* :func:`build_mlp`: a small ReLU MLP whose initial weights come from a ``np.random.Generator``
  (no global torch RNG), so the same seed gives the same network.
* :class:`ManualMLP`: forward and backward passes of a :func:`build_mlp` network written as a
  few matrix products, without autograd: on these tiny networks autograd's graph and the loss
  modules cost more than the arithmetic (NFSP's joint update 1.3-1.6x faster).
* :class:`NumpyMLP`: a frozen float32 copy of a network evaluated with numpy (microseconds for
  these tiny nets, where a torch call costs tens); used for acting and for policy snapshots.
* :class:`SoftmaxPolicy`: the masked softmax of a frozen :class:`NumpyMLP` copy, as a
  :class:`~nashzoo.agents.network_policy.NetworkPolicy` (it lives here, beside
  :class:`NumpyMLP`, so that :mod:`~nashzoo.agents.network_policy` needs no torch).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

from nashzoo.agents._torch_utils import check_hidden_sizes
from nashzoo.agents.network_policy import NetworkPolicy, masked_softmax_np


def build_mlp(
    input_size: int, hidden_sizes: Sequence[int], output_size: int, rng: np.random.Generator
) -> nn.Sequential:
    """A ReLU MLP ``input -> hidden... -> output`` initialised from ``rng``.

    The initialisation is PyTorch's default for ``nn.Linear`` (weights and biases uniform in
    ``+-1/sqrt(fan_in)``), drawn from the numpy generator so that no global RNG is touched: the
    layers are made uninitialised (``nn.Linear`` would draw its own weights from torch's global
    generator, only for them to be replaced).
    """
    layers: list[nn.Module] = []
    sizes = [int(input_size), *check_hidden_sizes(hidden_sizes, "hidden_sizes")]
    for fan_in, fan_out in itertools.pairwise(sizes):
        layers += [skip_init(nn.Linear, fan_in, fan_out), nn.ReLU()]
    layers.append(skip_init(nn.Linear, sizes[-1], int(output_size)))
    net = nn.Sequential(*layers)
    reinitialise(net, rng)
    return net


def reinitialise(net: nn.Module, rng: np.random.Generator) -> None:
    """Re-draw every ``nn.Linear`` of ``net`` from ``rng`` (PyTorch's default ranges)."""
    with torch.no_grad():
        for layer in net.modules():
            if isinstance(layer, nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                for param in (layer.weight, layer.bias):
                    values = rng.uniform(-bound, bound, size=tuple(param.shape))
                    param.copy_(torch.from_numpy(values.astype(np.float32)))


def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copy ``source``'s parameters into ``target`` (DQN target network refit)."""
    target.load_state_dict(source.state_dict())


def mlp_linears(net: nn.Module, what: str) -> list[nn.Linear]:
    """The ``nn.Linear`` layers of a :func:`build_mlp` network (Linear/ReLU stacks only)."""
    layers = list(net.children()) if isinstance(net, nn.Sequential) else [net]
    linears = [m for m in layers if isinstance(m, nn.Linear)]
    expected = [nn.Linear, nn.ReLU] * (len(linears) - 1) + [nn.Linear]
    if not linears or [type(m) for m in layers] != expected:
        raise TypeError(f"{what} works on Linear/ReLU stacks made by build_mlp only")
    return linears


class ManualMLP:
    """Forward and backward passes of a :func:`build_mlp` network without autograd.

    The live parameters of ``net`` are used (no copy), so an optimiser over ``net`` steps on the
    gradients :meth:`backward` leaves in each parameter's ``.grad``. What it computes is what
    autograd computes for the same loss (``tests/test_nfsp.py`` checks the gradients against
    autograd's); it only skips building and walking the graph, which for networks of a few
    thousand weights is most of the cost of an SGD step. Call inside ``torch.no_grad()``.
    """

    def __init__(self, net: nn.Module) -> None:
        self.linears = mlp_linears(net, "ManualMLP")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The output and the inputs of every layer (what :meth:`backward` needs)."""
        inputs = []
        last = len(self.linears) - 1
        for i, layer in enumerate(self.linears):
            inputs.append(x)
            x = torch.addmm(layer.bias, x, layer.weight.t())
            if i < last:
                x.clamp_(min=0.0)
        return x, inputs

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The output alone (e.g. a target network's)."""
        return self.forward(x)[0]

    def backward(self, inputs: list[torch.Tensor], grad_out: torch.Tensor) -> None:
        """Set every parameter's ``.grad`` to the gradient of the loss whose gradient with
        respect to the output is ``grad_out`` (``inputs`` from :meth:`forward`)."""
        grad = grad_out
        for i in range(len(self.linears) - 1, -1, -1):
            layer, x = self.linears[i], inputs[i]
            layer.weight.grad = grad.t() @ x
            layer.bias.grad = grad.sum(dim=0)
            if i > 0:  # through the ReLU: zero where its output ``x`` was 0 (one fused op)
                grad = torch.ops.aten.threshold_backward(grad @ layer.weight, x, 0.0)


class NumpyMLP:
    """A frozen float32 copy of a :func:`build_mlp` network evaluated with numpy.

    For the tiny networks of these games a numpy forward pass costs a few microseconds where a
    torch call costs tens, and a copy is a handful of arrays (no ``deepcopy`` of a module).
    """

    def __init__(self, net: nn.Module) -> None:
        linears = mlp_linears(net, "NumpyMLP")
        self.layers = [
            (
                m.weight.detach().to("cpu", torch.float32).numpy().T.copy(),
                m.bias.detach().to("cpu", torch.float32).numpy().copy(),
            )
            for m in linears
        ]
        self.input_size = int(linears[0].in_features)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            x = x @ weight
            x += bias
            if i < last:
                np.maximum(x, 0.0, out=x)
        return x


class SoftmaxPolicy(NetworkPolicy):
    """Masked softmax of a logits network (NFSP's average network, Deep CFR's strategy network).

    Trained on one seat's information sets; its answers elsewhere are valid distributions but
    carry no meaning (evaluators take each seat's rows from that seat's policy).
    """

    def __init__(self, net: nn.Module, game_id: str, input_size: int, num_actions: int, seat: int):
        super().__init__(game_id, input_size, num_actions, seat)
        self.net = NumpyMLP(net)

    def _probabilities(self, tensors: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return masked_softmax_np(self.net(tensors), masks)
