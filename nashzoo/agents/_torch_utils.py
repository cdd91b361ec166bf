"""Torch helpers shared by the neural learners (NFSP, Deep CFR).

Importing this module needs the optional ``neural`` extra (torch); the registry turns the
ImportError into a message naming the extra.

* :func:`build_mlp`: a small ReLU MLP whose initial weights come from a ``np.random.Generator``
  (no global torch RNG), so the same seed gives the same network.
* :class:`CircularBuffer` and :class:`ReservoirBuffer`: memories as preallocated numpy arrays
  (one array per field, ``capacity`` rows), never lists of Python objects. ``bytes_per_entry``
  says what one entry costs; only the filled rows go into checkpoints.
  :class:`InfosetMemory`: per-information-set sums that stand for every sample ever added
  (Deep CFR's default memory, NFSP's average-network memory with ``memory="infoset"``);
  :class:`InfosetReplay`: NFSP's replay as information-set ids, whose loss over a whole recent
  window costs one pass over its distinct information sets.
* :func:`pack_torch` / :func:`unpack_torch`: torch state (``state_dict`` s) serialised with
  ``torch.save`` into a ``uint8`` array that rides inside the learner's ``.npz`` checkpoint, and
  read back with ``torch.load(weights_only=True)`` (no pickle of arbitrary objects).
* :class:`ManualMLP`: forward and backward passes of a :func:`build_mlp` network written as a
  few matrix products, without autograd: on these tiny networks autograd's graph and the loss
  modules cost more than the arithmetic (NFSP's joint update 1.3-1.6x faster).
* :class:`NumpyMLP`: a frozen float32 copy of a network evaluated with numpy (microseconds for
  these tiny nets, where a torch call costs tens); used for acting and for policy snapshots.
* :class:`NetworkPolicy` / :class:`SoftmaxPolicy`: frozen copies of networks read as
  :class:`~nashzoo.agents.policy.Policy` objects. ``action_probabilities_batch`` evaluates many
  information sets in one forward pass, which is what makes
  ``TabularPolicy.from_policy`` (exact exploitability) fast.
* :func:`check_loss` / :func:`check_parameters`: NaN/inf guards. A non-finite loss raises
  :class:`TrainingDivergedError` *before* the optimiser step, so the networks keep their last
  good values, and :func:`check_parameters` refuses to write a checkpoint of broken weights.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils import skip_init

from nashzoo.agents.policy import Infoset, PolicyError, as_infoset, sample_action
from nashzoo.games.base import display_id, is_finite_number, is_whole_number
from nashzoo.games.infoset import widen_mask
from nashzoo.io import ArraySpec


class TrainingDivergedError(RuntimeError):
    """A loss or a parameter became NaN/inf; the learner stopped before applying it."""


# --- devices, networks -------------------------------------------------------------------------
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
                    "write a checkpoint of it (the last good checkpoint is kept)"
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


# --- memories -------------------------------------------------------------------------------------
FieldSpec = Mapping[str, tuple[tuple[int, ...], Any]]


class ArrayBuffer:
    """Fixed-capacity memory of named fields, each a preallocated ``[capacity, *shape]`` array.

    Subclasses decide where new entries go (:class:`CircularBuffer`, :class:`ReservoirBuffer`).
    ``np.zeros`` allocates lazily, so a large capacity costs memory only as it fills.
    """

    def __init__(self, capacity: int, fields: FieldSpec) -> None:
        if int(capacity) <= 0:
            raise ValueError(f"buffer capacity must be a positive integer, got {capacity!r}")
        self.capacity = int(capacity)
        self.fields = {
            name: (tuple(shape), np.dtype(dtype)) for name, (shape, dtype) in fields.items()
        }
        self.data = {
            name: np.zeros((self.capacity, *shape), dtype=dtype)
            for name, (shape, dtype) in self.fields.items()
        }
        self.size = 0
        self.added = 0

    @property
    def bytes_per_entry(self) -> int:
        """Memory one entry takes (sum over fields of ``prod(shape) * itemsize``)."""
        return sum(
            int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            for shape, dtype in self.fields.values()
        )

    def __len__(self) -> int:
        return self.size

    def _check_batch(self, batch: Mapping[str, np.ndarray]) -> int:
        if set(batch) != set(self.fields):
            raise ValueError(f"buffer fields are {sorted(self.fields)}, got {sorted(batch)}")
        lengths = {len(v) for v in batch.values()}
        if len(lengths) != 1:
            raise ValueError(f"buffer batch fields have different lengths: {sorted(lengths)}")
        return lengths.pop()

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` entries drawn uniformly with replacement."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty buffer")
        idx = rng.integers(0, self.size, size=int(n))
        return self._rows(idx)

    def _rows(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Every field's rows ``idx`` (``take`` along the first axis: for rows of several
        values, numpy's fancy indexing costs several times as much)."""
        return {name: array.take(idx, axis=0) for name, array in self.data.items()}

    def state_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Filled rows of every field plus counters (for checkpoints)."""
        out = {f"{prefix}{name}": array[: self.size].copy() for name, array in self.data.items()}
        out[f"{prefix}__counters"] = np.array([self.size, self.added, self._position()], np.int64)
        return out

    def array_specs(self, prefix: str) -> dict[str, ArraySpec]:
        """What :meth:`state_arrays` stores, for :meth:`Learner.checked_state_arrays`."""
        specs = {
            f"{prefix}{name}": ArraySpec.of((None, *shape), dtype)
            for name, (shape, dtype) in self.fields.items()
        }
        specs[f"{prefix}__counters"] = ArraySpec((3,), "integer", nonnegative=True)
        return specs

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
        size, added, position = (int(x) for x in arrays[f"{prefix}__counters"])
        if not 0 <= size <= self.capacity:
            raise ValueError(f"buffer {prefix!r} holds {size} entries, capacity is {self.capacity}")
        for name, (shape, dtype) in self.fields.items():
            stored = np.asarray(arrays[f"{prefix}{name}"])
            if stored.shape != (size, *shape):
                raise ValueError(
                    f"buffer field {prefix}{name} has shape {stored.shape}, expected "
                    f"{(size, *shape)} (a checkpoint of another game or configuration?)"
                )
            self.data[name][:size] = stored.astype(dtype, copy=False)
        self.size, self.added = size, added
        self._set_position(position)

    def _position(self) -> int:
        return 0

    def _set_position(self, position: int) -> None:
        pass


class CircularBuffer(ArrayBuffer):
    """First-in first-out memory: once full, each new entry overwrites the oldest one."""

    def __init__(self, capacity: int, fields: FieldSpec) -> None:
        super().__init__(capacity, fields)
        self._next = 0

    def add(self, batch: Mapping[str, np.ndarray]) -> None:
        n = self._check_batch(batch)
        if n == 0:
            return
        keep = min(n, self.capacity)
        slots = (self._next + np.arange(n - keep, n)) % self.capacity
        for name, values in batch.items():
            self.data[name][slots] = np.asarray(values)[n - keep :]
        self._next = int((self._next + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        self.added += n

    def sample_recent(self, n: int, window: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` entries drawn uniformly with replacement from the ``window`` most recent ones
        (from all of them when fewer are held)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty buffer")
        back = rng.integers(1, min(int(window), self.size) + 1, size=int(n))
        idx = (self._next - back) % self.capacity
        return self._rows(idx)

    def _position(self) -> int:
        return self._next

    def _set_position(self, position: int) -> None:
        self._next = int(position) % self.capacity


class ReservoirBuffer(ArrayBuffer):
    """Reservoir sampling (Vitter 1985, algorithm R): a uniform sample of everything ever added.

    The ``k``-th entry (0-based) is kept with probability ``capacity / (k + 1)`` in a uniformly
    chosen slot, so the memory always holds a uniform sample of the whole history: what NFSP's
    average-policy network and Deep CFR's networks need to learn an *average*. Batches are
    added in one vectorised call with the same result as adding the entries one by one.
    """

    def add(self, batch: Mapping[str, np.ndarray], rng: np.random.Generator) -> None:
        n = self._check_batch(batch)
        if n == 0:
            return
        counts = self.added + np.arange(n, dtype=np.int64)
        slots = counts.copy()
        full = counts >= self.capacity
        if full.any():
            slots[full] = rng.integers(0, counts[full] + 1)
        keep = np.flatnonzero(slots < self.capacity)
        slots = slots[keep]
        # Several entries of one batch may draw the same slot: the later one wins, as it would
        # one by one.
        rev_slots, rev_first = np.unique(slots[::-1], return_index=True)
        source = keep[::-1][rev_first]
        for name, values in batch.items():
            self.data[name][rev_slots] = np.asarray(values)[source]
        self.added += n
        self.size = min(self.capacity, self.added)


class InfosetMemory:
    """Per-information-set weighted sums of regression targets: the exact loss of a memory that
    keeps every sample.

    A weighted squared error (or cross-entropy) over samples is, up to a constant, the same
    loss over the distinct inputs, each weighted by its samples' total weight and fitted to their
    weighted mean target. A learner that walks a compiled tree knows each sample's information
    set, so it can keep these sums instead of the samples: no row is ever dropped (a reservoir
    keeps a uniform subset), memory is ``[num_infosets, num_actions]`` whatever the number of
    samples, and a minibatch of distinct rows carries far less noise than one of raw samples.
    """

    def __init__(self, num_rows: int, num_actions: int) -> None:
        self.weight = np.zeros(int(num_rows))
        self.sums = np.zeros((int(num_rows), int(num_actions)))

    @property
    def bytes_per_entry(self) -> int:
        """Memory one information set's row takes (its weight and target sums, float64)."""
        return 8 * (1 + self.sums.shape[1])

    def __len__(self) -> int:
        """Information sets with at least one sample."""
        return int(np.count_nonzero(self.weight))

    def add(self, rows: np.ndarray, targets: np.ndarray, weight: float) -> None:
        """Samples ``targets[k]`` at information set ``rows[k]``, each of weight ``weight``."""
        n, a = self.sums.shape
        self.weight += weight * np.bincount(rows, minlength=n)
        flat = (rows[:, None] * a + np.arange(a)).ravel()
        self.sums += weight * np.bincount(flat, weights=np.ravel(targets), minlength=n * a).reshape(
            n, a
        )

    def batch(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """``(rows, mean targets, loss weights summing to one)``: every visited row with its
        share of the weight when there are at most ``size`` of them (the exact loss), else
        ``size`` rows drawn in proportion to their weight, equally weighted."""
        visited = np.flatnonzero(self.weight)
        if visited.size <= size:
            rows = visited
            weights = self.weight[rows] / self.weight[rows].sum()
        else:
            rows = rng.choice(visited, size, p=self.weight[visited] / self.weight[visited].sum())
            weights = np.full(size, 1.0 / size)
        return rows, self.sums[rows] / self.weight[rows, None], weights

    def state_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}weight": self.weight.copy(), f"{prefix}sums": self.sums.copy()}

    def array_specs(self, prefix: str) -> dict[str, ArraySpec]:
        """What :meth:`state_arrays` stores, for :meth:`Learner.checked_state_arrays`."""
        return {
            f"{prefix}weight": ArraySpec(self.weight.shape, nonnegative=True),
            f"{prefix}sums": ArraySpec(self.sums.shape),
        }

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
        self.weight[:] = arrays[f"{prefix}weight"]
        self.sums[:] = arrays[f"{prefix}sums"]


class InfosetReplay:
    """A replay of transitions kept as information-set ids, whose DQN loss over any recent
    window is computed from per-information-set sums (NFSP's ``memory="infoset"``).

    Each transition is three numbers in a ring of ``capacity``: the key ``infoset * A + action``
    of the decision, its reward, and the information set of the same player's next decision
    (``-1`` when the episode ended first). The squared error of a Q-network over the ``W`` most
    recent transitions, ``(1/W) sum_t (Q(I_t, a_t) - y_t)^2`` with ``y_t = r_t + max Q'(I'_t)``,
    is, per (information set, action), ``n Q^2 - 2 Q sum(y) + sum(y^2)``: so :meth:`refresh`
    turns the window into counts and target sums once (when the window or the target network
    changed), and every update's loss over the whole window costs one pass over the distinct
    information sets, however many transitions the window holds.

    The window itself is kept as sums per *pair* (decision key, next information set): each
    pair's transitions and their summed rewards. The targets' sums are then
    ``sum_pairs (rewards + discount * count * V(next))``, so a new target network costs one pass
    over the pairs, and a moving window costs only the transitions entering and leaving it (a
    pair's sums are updated as transitions come in and drop out). A window of millions of
    transitions is as cheap to refresh as one of thousands: how long it may grow is a question
    of learning (how stale its oldest play may be), not of time. Pairs are few: at most the
    tree's (information set, action, next own information set) triples (Kuhn 27, Leduc 3,066,
    Liar's dice 73,638).
    """

    def __init__(self, capacity: int, num_infosets: int, num_actions: int) -> None:
        self.capacity = int(capacity)
        self.num_infosets = int(num_infosets)
        self.num_actions = int(num_actions)
        # int32 ids wherever they fit: 12 bytes a transition instead of 20
        ids = np.int32 if self.num_infosets * self.num_actions < 2**31 else np.int64
        self.keys = np.zeros(self.capacity, dtype=ids)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.next = np.zeros(self.capacity, dtype=ids)
        self.size = 0
        self.added = 0
        self._next_slot = 0
        self._stats: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
        self._reset_pairs()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a learner sent to a worker process, ``copy.deepcopy``) with only the held
        transitions, oldest first, not the whole ring: a fresh ring of 5,000,000 is 60 MB of
        zeros that ``np.zeros`` has not even touched yet."""
        state = self.__dict__.copy()
        at = self._slots(self.added - self.size, self.added)
        for name in ("keys", "rewards", "next"):
            state[name] = getattr(self, name)[at]
        state["_next_slot"] = self.size % self.capacity
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        held = {name: state.pop(name) for name in ("keys", "rewards", "next")}
        self.__dict__.update(state)
        for name, values in held.items():
            ring = np.zeros(self.capacity, dtype=values.dtype)
            ring[: values.size] = values
            setattr(self, name, ring)

    def _slots(self, lo: int, hi: int) -> np.ndarray:
        """Ring slots of transitions ``[lo, hi)``, numbered by when they were added (the
        newest, ``added - 1``, is just before ``_next_slot``)."""
        return (np.arange(lo, hi) - self.added + self._next_slot) % self.capacity

    def _reset_pairs(self) -> None:
        """Empty the window's sums per pair: sorted pair codes ``key * (I + 1) + next + 1``,
        each pair's transitions and summed rewards, the summed squared rewards, and the span
        ``[lo, hi)`` (in transitions added so far) that they hold."""
        self._codes = np.empty(0, dtype=np.int64)
        self._pair_count = np.empty(0, dtype=np.int64)
        self._pair_reward = np.empty(0, dtype=np.float64)
        self._reward_square = 0.0
        self._lo = self._hi = self.added

    def _count(self, lo: int, hi: int, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) transitions ``[lo, hi)`` (numbered by when they were
        added; all still in the ring) to or from the pair sums."""
        if hi <= lo:
            return
        at = self._slots(lo, hi)
        codes = self.keys[at].astype(np.int64) * (self.num_infosets + 1) + self.next[at] + 1
        rewards = self.rewards[at].astype(np.float64)
        unique, inverse = np.unique(codes, return_inverse=True)
        slots = np.searchsorted(self._codes, unique)
        new = slots == self._codes.size
        new[~new] = self._codes[slots[~new]] != unique[~new]
        if new.any():  # first transitions of these pairs: widen the sorted arrays
            codes_all = np.union1d(self._codes, unique[new])
            moved = np.searchsorted(codes_all, self._codes)
            count, reward = np.zeros(codes_all.size, np.int64), np.zeros(codes_all.size)
            count[moved], reward[moved] = self._pair_count, self._pair_reward
            self._codes, self._pair_count, self._pair_reward = codes_all, count, reward
            slots = np.searchsorted(self._codes, unique)
        self._pair_count[slots] += sign * np.bincount(inverse, minlength=unique.size)
        self._pair_reward[slots] += sign * np.bincount(inverse, rewards, minlength=unique.size)
        self._reward_square += sign * float(np.dot(rewards, rewards))

    def _hold_window(self, lo: int, hi: int) -> None:
        """Make the pair sums hold transitions ``[lo, hi)``: only those entering or leaving
        are counted, unless starting over costs less."""
        moved = abs(lo - self._lo) + abs(hi - self._hi)
        if lo >= self._hi or hi <= self._lo or moved > hi - lo:
            self._reset_pairs()
            self._count(lo, hi, 1)
        else:
            self._count(self._lo, lo, -1) if lo > self._lo else self._count(lo, self._lo, 1)
            self._count(self._hi, hi, 1) if hi > self._hi else self._count(hi, self._hi, -1)
        self._lo, self._hi = lo, hi
        live = self._pair_count > 0
        if live.sum() < live.size // 2:  # most pairs left the window: drop them
            self._codes = self._codes[live]
            self._pair_count, self._pair_reward = self._pair_count[live], self._pair_reward[live]

    @property
    def bytes_per_entry(self) -> int:
        """Memory one transition takes (key, reward and next information set)."""
        return self.keys.itemsize + self.rewards.itemsize + self.next.itemsize

    def __len__(self) -> int:
        return self.size

    def add(
        self,
        infosets: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_infosets: np.ndarray,
    ) -> None:
        """Transitions at ``infosets`` (ids) playing ``actions``, with their rewards and the
        next own information sets (``-1``: none, the episode ended)."""
        n = len(actions)
        if n == 0:
            return
        keep = min(n, self.capacity)
        oldest_kept = self.added + n - self.capacity
        if self._lo < oldest_kept:  # the window's sums lose what the ring overwrites
            cut = min(self._hi, oldest_kept)
            self._count(self._lo, cut, -1)
            self._lo = cut
        slots = (self._next_slot + np.arange(n - keep, n)) % self.capacity
        self.keys[slots] = (np.asarray(infosets) * self.num_actions + np.asarray(actions))[-keep:]
        self.rewards[slots] = np.asarray(rewards)[-keep:]
        self.next[slots] = np.asarray(next_infosets)[-keep:]
        self._next_slot = int((self._next_slot + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        self.added += n
        self._stats = None

    def refresh(self, window: int, next_values: np.ndarray, discount: float) -> None:
        """Counts and target sums of the ``window`` most recent transitions, the targets
        bootstrapping from ``next_values`` (``[num_infosets]``: the target network's value of
        each information set)."""
        length = min(int(window), self.size)
        self._hold_window(self.added - length, self.added)
        keys, nxt = np.divmod(self._codes, self.num_infosets + 1)
        value = discount * np.concatenate(([0.0], np.asarray(next_values, np.float64)))[nxt]
        count = self._pair_count.astype(np.float64)
        size = self.num_infosets * self.num_actions
        shape = (self.num_infosets, self.num_actions)
        counts = np.bincount(keys, weights=count, minlength=size).reshape(shape)
        sums = np.bincount(keys, weights=self._pair_reward + count * value, minlength=size)
        # sum of y^2 over the window, y = r + value: sum r^2 + 2 value sum r + n value^2
        square = self._reward_square + float(np.dot(value, 2.0 * self._pair_reward + count * value))
        self._stats = (counts, sums.reshape(shape), np.flatnonzero(counts.sum(axis=1)), square)

    @property
    def num_rows(self) -> int:
        """Information sets in the window of the last :meth:`refresh`."""
        if self._stats is None:
            raise RuntimeError("InfosetReplay.num_rows needs refresh() after the last add()")
        return int(self._stats[2].size)

    @property
    def stale(self) -> bool:
        """Whether transitions came in since the last :meth:`refresh` (or none was made)."""
        return self._stats is None

    def batch(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """``(rows, counts, target sums, weights, constant)`` for the loss
        ``sum_r w_r sum_a (counts Q^2 - 2 Q sums) + constant``: every information set of the
        window, ``w = 1 / W``, when there are at most ``size`` of them (the whole window's mean
        squared error); else ``size`` sets drawn in proportion to their transitions, each
        weighted ``1 / (size * its transitions)`` (an unbiased estimate of the same loss).
        Needs a :meth:`refresh` since the last :meth:`add`."""
        if self._stats is None:
            raise RuntimeError("InfosetReplay.batch needs refresh() after the last add()")
        counts, sums, visited, square_sum = self._stats
        visits = counts[visited].sum(axis=1)
        total = visits.sum()
        if visited.size <= size:
            rows, weights = visited, np.full(visited.size, 1.0 / total)
        else:
            rows = rng.choice(visited, size, p=visits / total)
            weights = 1.0 / (size * counts[rows].sum(axis=1))
        return rows, counts[rows], sums[rows], weights, square_sum / total

    def state_arrays(self, prefix: str, last: int | None = None) -> dict[str, np.ndarray]:
        """The held transitions, oldest first, plus counters (for checkpoints); only the
        ``last`` most recent where a caller knows older ones will never be asked for again
        (NFSP's window, whose start only moves forward)."""
        size = self.size if last is None else min(self.size, max(int(last), 0))
        at = self._slots(self.added - size, self.added)
        return {
            f"{prefix}keys": self.keys[at],
            f"{prefix}rewards": self.rewards[at],
            f"{prefix}next": self.next[at],
            f"{prefix}__counters": np.array([size, self.added], np.int64),
        }

    def array_specs(self, prefix: str) -> dict[str, ArraySpec]:
        """What :meth:`state_arrays` stores, for :meth:`Learner.checked_state_arrays`."""
        return {
            f"{prefix}keys": ArraySpec((None,), "integer", nonnegative=True),
            f"{prefix}rewards": ArraySpec((None,)),
            f"{prefix}next": ArraySpec((None,), "integer"),
            f"{prefix}__counters": ArraySpec((2,), "integer", nonnegative=True),
        }

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
        size, added = (int(x) for x in arrays[f"{prefix}__counters"])
        keys, nxt = arrays[f"{prefix}keys"], arrays[f"{prefix}next"]
        if not (0 <= size <= self.capacity and size <= added):
            raise ValueError(
                f"replay {prefix!r} holds {size} transitions of {added}, capacity {self.capacity}"
            )
        if any(len(arrays[f"{prefix}{name}"]) != size for name in ("keys", "rewards", "next")):
            raise ValueError(f"replay {prefix!r}: its arrays are not {size} long")
        if size and (
            keys.max() >= self.num_infosets * self.num_actions
            or nxt.min() < -1
            or nxt.max() >= self.num_infosets
        ):
            raise ValueError(
                f"replay {prefix!r} names information sets or actions this game does not have "
                "(a checkpoint of another game?)"
            )
        self.keys[:size], self.next[:size] = keys, nxt
        self.rewards[:size] = arrays[f"{prefix}rewards"]
        self.size, self.added = size, added
        self._next_slot = size % self.capacity
        self._stats = None
        self._reset_pairs()


# --- policies ----------------------------------------------------------------------------------
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


def module_dict(nets: Iterable[tuple[str, nn.Module]]) -> dict[str, Any]:
    """``{name: state_dict}`` with CPU tensors (for :func:`pack_torch`)."""
    return {name: {k: v.detach().cpu() for k, v in net.state_dict().items()} for name, net in nets}
