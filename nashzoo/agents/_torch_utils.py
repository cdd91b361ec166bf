"""Torch helpers shared by the neural learners (NFSP, Deep CFR, the Stable-Baselines3 baselines):
devices, config checks, optimiser steps, numerical guards and checkpoint payloads.

Importing this module needs the optional ``neural`` extra (torch); the registry turns the
ImportError into a message naming the extra. The networks themselves are in
:mod:`~nashzoo.agents.torch_networks`, the memories in :mod:`~nashzoo.agents.replay_memory`
and the policies read from networks in :mod:`~nashzoo.agents.network_policy`.

* :func:`resolve_device`: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` as a
  ``torch.device``, refused with a clear message where torch sees no such device.
  :func:`check_counts`, :func:`check_rates`, :func:`check_flags`, :func:`check_hidden_sizes`:
  the learners' config checks, whose errors name the config class and the field.
* :func:`optimizer_step`: ``optimizer.step()`` without ``torch.optim``'s per-call bookkeeping
  for a plain fused Adam (the same update bit for bit).
* :func:`pack_torch` / :func:`unpack_torch`: torch state (``state_dict`` s) serialised with
  ``torch.save`` into a ``uint8`` array that rides inside the learner's ``.npz`` checkpoint, and
  read back with ``torch.load(weights_only=True)`` (no pickle of arbitrary objects).
* :func:`check_loss` / :func:`check_parameters`: NaN/inf guards. A non-finite loss raises
  :class:`TrainingDivergedError` *before* the optimiser step, so the networks keep their last
  good values, and :func:`check_parameters` refuses to write a checkpoint of broken weights.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from nashzoo.agents.base import TrainingDivergedError
from nashzoo.agents.policy import PolicyError
from nashzoo.games.base import is_finite_number, is_whole_number


def _one_thread_in_a_forked_child() -> None:
    """In a child just forked, hold torch to one thread.

    torch's CPU build runs its parallel sections on GNU OpenMP, whose thread pool does not
    survive a fork: a ``fork`` process pool (``ProcessPoolExecutor``'s default on Linux before
    Python 3.14, ``multiprocessing.Pool``'s) started after a neural learner had stepped on
    more than one thread had workers that hung for ever in their first network call, and the
    sweep with them. On one thread torch makes no OpenMP call; the child's numbers are those of
    one thread, as a race's runs and ``processes=2`` give (``limit_threads(1)`` in the parent
    gives the same numbers there)."""
    if torch.get_num_threads() > 1:
        torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_thread_in_a_forked_child)


# --- devices, config checks -----------------------------------------------------------------------
def resolve_device(device: str | torch.device) -> torch.device:
    """``"cpu"`` (default everywhere), ``"cuda"`` / ``"cuda:N"`` when available, or ``"auto"``."""
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}"
        ) from err
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} but torch sees no CUDA device here; use device='cpu' "
            "(the default) or device='auto'"
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(
            f"device={device!r} but torch sees {torch.cuda.device_count()} CUDA device(s) here "
            f"(cuda:0 to cuda:{torch.cuda.device_count() - 1}); use device='cuda' or one of those"
        )
    return dev


def check_counts(cfg: Any, names: Sequence[str], *, minimum: int = 1, note: str = "") -> None:
    """Every named field of the config ``cfg`` an integer of at least ``minimum`` (1: positive,
    0: non-negative); the error names the config class and the field."""
    what = "a non-negative integer" if minimum == 0 else "a positive integer"
    for name in names:
        value = getattr(cfg, name)
        if not is_whole_number(value, minimum):
            raise ValueError(f"{type(cfg).__name__}.{name} must be {what}{note}, got {value!r}")


def check_rates(cfg: Any, names: Sequence[str]) -> None:
    """Every named field of the config ``cfg`` a finite positive number (learning rates)."""
    for name in names:
        value = getattr(cfg, name)
        if not (is_finite_number(value) and value > 0):
            raise ValueError(
                f"{type(cfg).__name__}.{name} must be a positive number, got {value!r}"
            )


def check_flags(cfg: Any, names: Sequence[str]) -> None:
    """Every named field of the config ``cfg`` a boolean (Python's or numpy's). Anything else is
    refused rather than read by its truth value, which would make ``"no"`` or ``"false"`` (a
    string from a hand-written config) switch the option on."""
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{type(cfg).__name__}.{name} must be true or false, got {value!r}")


def check_hidden_sizes(hidden: Sequence[int], what: str) -> tuple[int, ...]:
    """Validate a tuple of hidden layer widths (may be empty: a linear model)."""
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, (Sequence, np.ndarray)):
        raise ValueError(f"{what} must be a sequence of positive integers, got {hidden!r}")
    if not all(is_whole_number(h, 1) for h in hidden):
        raise ValueError(f"{what} must be positive integers, got {hidden!r}")
    return tuple(int(h) for h in hidden)


def as_tensors(arrays: Mapping[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """A minibatch of numpy arrays as torch tensors on ``device`` (on CPU they share the
    arrays' memory: no copy, and no ``.to()`` call per field)."""
    if device.type == "cpu":
        return {k: torch.from_numpy(v) for k, v in arrays.items()}
    return {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}


def optimizer_step(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()``, made lean for a fused Adam on plain settings.

    ``torch.optim``'s ``step`` wraps its one fused kernel call per parameter group in hooks,
    profiler records and a regrouping of the tensors by device and dtype: about 0.2 ms a call
    on CPU, where the kernel itself takes 0.02 ms for NFSP's networks. For ``Adam(fused=True)``
    without AMSGrad, weight decay, ``maximize``, ``capturable`` or ``differentiable``, whose
    state is already set up (after its first ``step``), this makes the same two calls torch's
    fused path makes (count the step, one fused Adam kernel per group) on the parameters that
    have gradients, so the result is the same, bit for bit (``tests/test_nfsp.py``). Anything
    else goes through ``optimizer.step()``.
    """
    if not _lean_adam(optimizer):
        optimizer.step()
        return
    for group in optimizer.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        states = [optimizer.state[p] for p in params]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1)
        beta1, beta2 = group["betas"]
        torch._fused_adam_(
            params,
            [p.grad for p in params],
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [],
            steps,
            amsgrad=False,
            lr=group["lr"],
            beta1=beta1,
            beta2=beta2,
            weight_decay=0.0,
            eps=group["eps"],
            maximize=False,
        )


def _lean_adam(optimizer: torch.optim.Optimizer) -> bool:
    """Whether :func:`optimizer_step` can take the lean path for ``optimizer``."""
    if type(optimizer) is not torch.optim.Adam or not hasattr(torch, "_fused_adam_"):
        return False
    for group in optimizer.param_groups:
        plain = group.get("fused") and not (
            group["amsgrad"]
            or group["maximize"]
            or group["weight_decay"]
            or group.get("capturable")
            or group.get("differentiable")
            or group.get("decoupled_weight_decay")
        )
        lr, betas = group["lr"], group["betas"]
        if not plain or isinstance(lr, torch.Tensor) or any(torch.is_tensor(b) for b in betas):
            return False
        for p in group["params"]:
            if p.grad is not None and (
                not optimizer.state.get(p) or p.grad.device != p.device or p.grad.is_sparse
            ):
                return False  # first step (state not set up yet) or an unusual gradient
    return True


# --- numerical guards ----------------------------------------------------------------------------
def check_loss(loss: torch.Tensor, *, learner: str, iteration: int, what: str) -> float:
    """Return ``loss`` as a float; raise :class:`TrainingDivergedError` if it is NaN/inf.

    Called before ``optimizer.step()``, so a bad loss never reaches the parameters.
    """
    value = float(loss.detach())
    if not math.isfinite(value):
        raise TrainingDivergedError(
            f"{learner}: the {what} loss became {value} at learner step {iteration + 1}; "
            "training stopped before applying it (the networks keep their last good values and "
            "no checkpoint was written). Lower the learning rate, or check the inputs for "
            "NaN/inf values."
        )
    return value


def check_parameters(nets: Mapping[str, nn.Module], *, learner: str) -> None:
    """Raise :class:`TrainingDivergedError` if any parameter of ``nets`` is NaN/inf."""
    for name, net in nets.items():
        for pname, param in net.named_parameters():
            if not bool(torch.isfinite(param).all()):
                raise TrainingDivergedError(
                    f"{learner}: network {name!r} has non-finite values in {pname}; refusing to "
                    "write a checkpoint of it (any checkpoint written before is kept)"
                )


# --- checkpoint payloads ------------------------------------------------------------------------
def pack_torch(obj: Any) -> np.ndarray:
    """``torch.save(obj)`` as a ``uint8`` array (to store inside an ``.npz`` checkpoint)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8).copy()


def unpack_torch(array: np.ndarray, device: torch.device | str = "cpu") -> Any:
    """Inverse of :func:`pack_torch`, with ``weights_only=True`` (tensors and plain data only);
    a floating-point tensor holding NaN or infinity is refused (a corrupt checkpoint)."""
    data = np.asarray(array, dtype=np.uint8).tobytes()
    obj = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    _check_finite(obj, "torch_state")
    return obj


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() and not bool(torch.isfinite(obj).all()):
            raise ValueError(f"{where} holds NaN or infinity; the checkpoint is corrupt")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _check_finite(value, f"{where}[{key!r}]")
    elif isinstance(obj, (list, tuple)):
        for k, value in enumerate(obj):
            _check_finite(value, f"{where}[{k}]")


def optimizer_to(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Move an optimiser's state tensors to ``device`` (after loading a checkpoint)."""
    for state in optimizer.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and key != "step":
                state[key] = value.to(device)


def check_input_size(net: nn.Module, expected: int, *, what: str) -> None:
    """Refuse a network whose first layer does not read ``expected`` features."""
    first = next(m for m in net.modules() if isinstance(m, nn.Linear))
    if first.in_features != expected:
        raise PolicyError(
            f"{what} reads {first.in_features} features but this game's information-set "
            f"tensors have {expected}: it was trained on another game"
        )


def module_dict(nets: Iterable[tuple[str, nn.Module]]) -> dict[str, Any]:
    """``{name: state_dict}`` with CPU tensors (for :func:`pack_torch`)."""
    return {name: {k: v.detach().cpu() for k, v in net.state_dict().items()} for name, net in nets}
