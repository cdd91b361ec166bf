"""The neural learners' memories, as preallocated numpy arrays (no torch needed).

* :class:`CircularBuffer` and :class:`ReservoirBuffer`: memories as preallocated numpy arrays
  (one array per field, ``capacity`` rows), never lists of Python objects. ``bytes_per_entry``
  says what one entry costs; only the filled rows go into checkpoints.
* :class:`InfosetMemory`: per-information-set sums that stand for every sample ever added
  (Deep CFR's default memory, NFSP's average-network memory with ``memory="infoset"``).
* :class:`InfosetReplay`: NFSP's replay as information-set ids, whose loss over a whole recent
  window costs one pass over its distinct information sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nashzoo.io import ArraySpec

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
            f"{prefix}rewards": ArraySpec((None,), dtype=self.rewards.dtype.type),
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
