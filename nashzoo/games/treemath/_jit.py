"""Optional compiled versions of the hottest kernels, used when numba is installed.

On small trees (Kuhn: 58 histories) a full-width CFR step is some 25 numpy calls of under a
microsecond of work each, so the Python cost of the calls, not the arithmetic, sets the speed.
These loops do the same sums in one compiled call each: the fused counterfactual pass of a
two-player tree (the other player's plan, the terminal gather, the bottom-up backup and the
player's own plan), regret matching, one whole full-width iteration of a seat (the pass, the
discounted regret and average updates and regret matching) and both players' best responses.
Every sum is taken in the numpy kernels' order, so both paths give the same numbers bit for bit
(tests compare them). Without numba, or with ``NASHZOO_PURE_NUMPY=1`` in the environment,
nothing here is used.

The static index arrays of a kernel travel packed in one int64 vector (:func:`pack`): every
array argument costs the dispatcher a type check, about a tenth of a microsecond, which is a
tenth of a small tree's whole step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nashzoo.games import _numba
from nashzoo.games._numba import compiled

_WARM = False


def warm_up() -> None:
    """Pay numba's one-time cost of a process now (its first compiled call loads numba's own
    machinery, about 0.3 s, then each kernel from the disk cache): learners call this while
    they are set up, so their first timed step is not charged for it."""
    global _WARM
    if _WARM or not _enabled():
        return
    _WARM = True
    # One use of the kernels on Kuhn's tree (58 histories; built in well under a millisecond):
    # a CFR step of each seat and a NashConv, which load every kernel a full-width learner or
    # the evaluator calls (from numba's disk cache: about 10 ms; compiled on a cold cache).
    from nashzoo.games import treemath as tm
    from nashzoo.games.kuhn import KuhnPokerGame

    # Built here, outside compile_tree: a history cap below Kuhn's 58 (NASHZOO_MAX_HISTORIES)
    # refused every learner's set-up, naming kuhn_poker, whatever its own game (review)
    tree = KuhnPokerGame().compile_arrays()
    uniform = tm.uniform_strategy(tree)
    uniform.flags.writeable = False  # as policies' tables are
    for seat in (0, 1):
        step = tm.FullWidthStep(tree, seat)
        shape = (tree.num_infosets, tree.num_actions)
        step(np.zeros(shape), np.zeros(shape), uniform, uniform, tm.IterationWeights())
        tm.counterfactual_pass(tree, uniform, seat, others=uniform)  # a plugin learner's path
    tm.nash_conv(tree, uniform)
    tm.distribution_status(tree, uniform, 1e-6, 1e-12)


def __getattr__(name: str) -> Any:
    # ENABLED: whether the tree arithmetic uses these kernels, read as ``_jit.ENABLED`` by the
    # treemath modules at each call (and switched off by tests). numba's own switch
    # (``games._numba.ENABLED``, which imports numba) on first read, then a plain attribute.
    if name == "ENABLED":
        value = globals()["ENABLED"] = _numba.ENABLED
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _enabled() -> bool:
    """``ENABLED`` as a reader outside this module sees it (a test may have set it)."""
    return globals()["ENABLED"] if "ENABLED" in globals() else __getattr__("ENABLED")


def pack(*arrays: np.ndarray) -> np.ndarray:
    """One integer vector holding ``arrays`` after a header of their boundaries: array ``k`` is
    ``packed[packed[k]:packed[k + 1]]`` (what the kernels read). int32 when every boundary and
    value fits (half the memory of the index on all but astronomically large trees), else
    int64; the kernels are compiled for either."""
    header = len(arrays) + 1
    bounds = np.cumsum([header] + [a.size for a in arrays])
    largest = max([int(bounds[-1])] + [max(int(a.max()), -int(a.min())) for a in arrays if a.size])
    dtype = np.int32 if largest < 2**31 else np.int64
    packed = np.empty(int(bounds[-1]), dtype=dtype)
    packed[:header] = bounds
    for k, array in enumerate(arrays):
        packed[bounds[k] : bounds[k + 1]] = np.asarray(array).ravel()
    return packed


# --- building blocks, each the loop form of one numpy kernel step ----------------------------
@compiled
def _segment(index: np.ndarray, k: int) -> np.ndarray:
    """Array ``k`` of an index made by :func:`pack`."""
    return index[index[k] : index[k + 1]]


@compiled
def _plan(sequences: np.ndarray, parents: np.ndarray, flat: np.ndarray, out: np.ndarray) -> None:
    """``SequenceForm.plan``: ``out[s] = out[parent(s)] * flat[s]``, sequences in own-depth
    order (the caller sets the empty sequence's 1)."""
    for i in range(sequences.shape[0]):
        s = sequences[i]
        out[s] = out[parents[i]] * flat[s]


@compiled
def _terminal_sums(
    last_own: np.ndarray,
    last_other: np.ndarray,
    terminal_weight: np.ndarray,
    other_plan: np.ndarray,
    q: np.ndarray,
) -> None:
    """``q = bincount(last_own, weights=terminal_weight * other_plan[last_other])``, in
    terminal order as numpy sums it. The callers pass the terminals sorted by ``last_own``
    (stably, see ``SequenceForm.kernel_arguments``), so each sequence's terminals are one run:
    the run is summed in a register, from zero and in order as numpy's sum, and added to
    ``q`` once, which gives numpy's number and keeps consecutive terminals from waiting on
    each other's store to memory. Unsorted terminals give the same sums up to rounding."""
    q[:] = 0.0
    n = last_own.shape[0]
    if n == 0:
        return
    run = last_own[0]
    total = 0.0
    for z in range(n):
        s = last_own[z]
        if s != run:
            q[run] += total
            run = s
            total = 0.0
        total += terminal_weight[z] * other_plan[last_other[z]]
    q[run] += total


@compiled
def _add_pushed(parents: np.ndarray, q: np.ndarray, pushed: np.ndarray) -> None:
    """``q[parent_ids] += sums``: each distinct parent once (NaN marks one already added)."""
    for i in range(parents.shape[0]):
        p = parents[i]
        if pushed[p] == pushed[p]:
            q[p] += pushed[p]
            pushed[p] = np.nan


@compiled
def _back_up(
    sequences: np.ndarray,
    parents: np.ndarray,
    offsets: np.ndarray,
    flat: np.ndarray,
    q: np.ndarray,
    pushed: np.ndarray,
) -> None:
    """``SequenceForm.backup``'s climb: per own depth, deepest first,
    ``q[parent] += sum_a sigma(I, a) q[I, a]``, the sums taken in sequence order."""
    for d in range(offsets.shape[0] - 2, -1, -1):
        start, stop = offsets[d], offsets[d + 1]
        for i in range(start, stop):
            pushed[parents[i]] = 0.0
        for i in range(start, stop):
            s = sequences[i]
            pushed[parents[i]] += flat[s] * q[s]
        _add_pushed(parents[start:stop], q, pushed)


@compiled
def _best_back_up(
    infosets: np.ndarray,
    offsets: np.ndarray,
    parent_sequence: np.ndarray,
    legal: np.ndarray,
    q: np.ndarray,
    pushed: np.ndarray,
) -> None:
    """``SequenceForm.best_backup``'s climb: per own depth, deepest first, each information
    set's best legal action value is added to the sequence leading to it (the sums taken in
    information-set order)."""
    num_actions = legal.shape[0] // max(parent_sequence.shape[0], 1)  # no sets: no loop
    for d in range(offsets.shape[0] - 2, -1, -1):
        start, stop = offsets[d], offsets[d + 1]
        for k in range(start, stop):
            pushed[parent_sequence[infosets[k]]] = 0.0
        for k in range(start, stop):
            first = infosets[k] * num_actions
            best = -np.inf
            for s in range(first, first + num_actions):
                if legal[s] and q[s] > best:
                    best = q[s]
            pushed[parent_sequence[infosets[k]]] += best
        for k in range(start, stop):
            parent = parent_sequence[infosets[k]]
            if pushed[parent] == pushed[parent]:  # NaN marks a parent already added
                q[parent] += pushed[parent]
                pushed[parent] = np.nan


@compiled
def regret_matching_rows(
    regrets: np.ndarray, legal: np.ndarray, inverse_count: np.ndarray, out: np.ndarray
) -> None:
    """Row-wise regret matching of ``[rows, actions]`` regrets into ``out``; a row without
    positive regret becomes uniform over its legal actions (``inverse_count``: one over each
    row's number of legal actions, at least one)."""
    for i in range(regrets.shape[0]):
        total = 0.0
        for a in range(regrets.shape[1]):
            if legal[i, a] and regrets[i, a] > 0.0:
                total += regrets[i, a]
        if total > 0.0:
            for a in range(regrets.shape[1]):
                r = regrets[i, a]
                out[i, a] = r / total if legal[i, a] and r > 0.0 else 0.0
        else:
            for a in range(regrets.shape[1]):
                out[i, a] = inverse_count[i] if legal[i, a] else 0.0


@compiled
def _sum_as_numpy(values: np.ndarray, n: int) -> float:
    """``values[:n].sum()`` added in numpy's order for a contiguous row of at most 128 numbers
    (its pairwise summation's base case: one running sum below 8 numbers, else eight running
    sums combined pairwise, then the rest), so the two agree to the last bit."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += values[i]
        return total
    r0, r1, r2, r3 = values[0], values[1], values[2], values[3]
    r4, r5, r6, r7 = values[4], values[5], values[6], values[7]
    i = 8
    while i < n - n % 8:
        r0 += values[i]
        r1 += values[i + 1]
        r2 += values[i + 2]
        r3 += values[i + 3]
        r4 += values[i + 4]
        r5 += values[i + 5]
        r6 += values[i + 6]
        r7 += values[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += values[i]
        i += 1
    return total


SUM_AS_NUMPY_WIDTH = 128
"""The widest row :func:`_sum_as_numpy` adds as numpy does."""


@compiled
def distribution_status(
    probs: np.ndarray, legal: np.ndarray, tolerance: float, exact: float
) -> int:
    """One pass over a ``[rows, actions]`` table (at most :data:`SUM_AS_NUMPY_WIDTH` actions):
    2 if some row is not a distribution over its legal actions within ``tolerance`` (a
    number not finite or below ``-tolerance``, more than ``tolerance`` on an illegal action,
    a legal sum off one by more than ``tolerance``); else 1 if some row is one only within
    the tolerance (a negative number, anything on an illegal action, or a legal sum, added as
    numpy adds it, off one by more than ``exact``); else 0. What ``policy``'s whole-table
    check and ``made_exact`` decide with several passes each."""
    rows, width = probs.shape
    row = np.empty(width)
    status = 0
    for i in range(rows):
        for a in range(width):
            p = probs[i, a]
            if not np.isfinite(p) or p < -tolerance:
                return 2
            if legal[i, a]:
                row[a] = p
            else:
                if abs(p) > tolerance:
                    return 2
                if p != 0.0:
                    status = 1
                row[a] = 0.0
            if p < 0.0:
                status = 1
        off = abs(_sum_as_numpy(row, width) - 1.0)
        if off > tolerance:
            return 2
        if off > exact:
            status = 1
    return status


# --- the kernels the treemath functions call -------------------------------------------------
@compiled
def two_player_pass(
    index: np.ndarray,
    terminal_weight: np.ndarray,
    num_actions: int,
    own_flat: np.ndarray,
    other_flat: np.ndarray,
    q: np.ndarray,
    plan: np.ndarray,
    values: np.ndarray,
    work: np.ndarray,
    tidy: bool,
) -> None:
    """Fill ``q`` (counterfactual values, root value last), ``plan`` (own realization plan)
    and ``values`` (per-infoset ``sum_a sigma q``); ``work`` is scratch space of shape
    ``(2, len(q))`` (passed in so that a learner's every step reuses the same memory);
    ``plan`` may be ``work[0]``, which holds the other player's plan until the own plan is
    built, last.
    With ``tidy`` every entry of ``q`` and ``plan`` that is not the player's is 0, as in the
    numpy kernels; without it only the player's sequences and the root are written (what
    the pass itself and a learner's update read), and the scratch rows are not cleared
    either: on a tree of tens of millions of sequences those clears are a third of the
    memory a step moves. The numbers read are the same either way: every plan entry is
    written before it is read (parents come first), ``q`` is summed from zero, and each
    parent's pushed sum is reset before it is added to.
    ``index`` packs the own sequences, their parents, the own depths' offsets, the other
    player's sequences and parents, and each terminal's last own and other sequence. Sequences
    are in own-depth order (depth ``d`` is ``own_offsets[d]:own_offsets[d + 1]``), so every
    parent comes before its children. Every sum is taken in the same order as the numpy
    kernels take it, so both paths give the same floating-point numbers."""
    own_sequences, own_parents = _segment(index, 0), _segment(index, 1)
    n_seq = q.shape[0] - 1
    if tidy:
        work[:] = 0.0  # row 0: the other player's plan; row 1: the sums pushed to parents
    work[0, n_seq] = 1.0
    _plan(_segment(index, 3), _segment(index, 4), other_flat, work[0])
    _terminal_sums(_segment(index, 5), _segment(index, 6), terminal_weight, work[0], q)
    _back_up(own_sequences, own_parents, _segment(index, 2), own_flat, q, work[1])
    values[:] = 0.0
    for i in range(own_sequences.shape[0]):
        s = own_sequences[i]
        values[s // num_actions] += own_flat[s] * q[s]
    if tidy:
        plan[:] = 0.0
    plan[n_seq] = 1.0
    _plan(own_sequences, own_parents, own_flat, plan)


@compiled
def full_width_step(
    index: np.ndarray,
    terminal_weight: np.ndarray,
    legal: np.ndarray,
    inverse_count: np.ndarray,
    current: np.ndarray,
    others: np.ndarray,
    regrets: np.ndarray,
    strategy_sum: np.ndarray,
    out: np.ndarray,
    workspace: np.ndarray,
    values: np.ndarray,
    positive: float,
    negative: float,
    floor: bool,
    weight: float,
    decay: float,
) -> float:
    """One full-width iteration of one seat (see :class:`~nashzoo.games.treemath.FullWidthStep`
    for the update rules): the pass of ``current`` against ``others``, then, on the seat's
    legal sequences, ``R <- R + q - v`` discounted (``positive``/``negative``; ``floor``: a
    non-positive entry becomes 0, as numpy's ``maximum(R, 0)``) and
    ``S <- (S + weight * plan) * decay``, then regret matching of ``R`` into ``out``. Returns
    the seat's expected return. ``index`` is the pass's (:func:`two_player_pass`);
    ``workspace`` (``(3, regrets.size + 1)``) and ``values`` (one per information set) are
    scratch space the caller keeps from step to step, and ``out`` is the caller's too
    (:class:`~nashzoo.games.treemath.FullWidthStep` recycles the tables nobody holds), so a
    big tree's step writes no fresh pages. The own plan takes the row of the other player's
    plan, which the pass no longer needs when it builds the own one."""
    num_actions = regrets.shape[1]
    n_seq = regrets.size
    q, plan = workspace[0], workspace[1]
    own_flat, other_flat = current.reshape(-1), others.reshape(-1)
    two_player_pass(
        index,
        terminal_weight,
        num_actions,
        own_flat,
        other_flat,
        q,
        plan,
        values,
        workspace[1:],
        False,  # reads only the seat's own sequences of q and plan
    )
    flat_regrets, flat_sum = regrets.reshape(-1), strategy_sum.reshape(-1)
    own_sequences = _segment(index, 0)
    for i in range(own_sequences.shape[0]):
        s = own_sequences[i]
        x = flat_regrets[s] + (q[s] - values[s // num_actions])
        if floor and not x > 0.0 and x == x:  # numpy's maximum(x, 0.0), NaN kept
            x = 0.0
        flat_regrets[s] = x * (positive if x > 0.0 else negative)
        flat_sum[s] = (flat_sum[s] + plan[s] * weight) * decay
    regret_matching_rows(regrets, legal, inverse_count, out)
    return q[n_seq]


@compiled
def two_player_values(
    index: np.ndarray, terminal_weight: np.ndarray, flat: np.ndarray
) -> tuple[float, float, float, float]:
    """:func:`two_player_values_into` with scratch rows of its own (on a small tree, two
    fewer arguments to dispatch are worth more than the memory)."""
    n_seq = flat.shape[0]
    work = np.empty((3, n_seq + 1))
    more = np.empty((2, n_seq + 1))
    return two_player_values_into(index, terminal_weight, flat, work, more)


@compiled
def two_player_values_into(
    index: np.ndarray,
    terminal_weight: np.ndarray,
    flat: np.ndarray,
    work: np.ndarray,
    more: np.ndarray,
) -> tuple[float, float, float, float]:
    """Both players' best-response values and on-policy values under the joint ``flat``
    strategy, as :func:`nashzoo.games.treemath.nash_conv` takes them: each player's terminal
    weights ``pi_c u_p pi_{-p}`` summed into its last sequences, then backed up its own depths
    twice, along its own strategy (``SequenceForm.backup``) and along its best actions
    (``SequenceForm.best_backup``). ``index`` and ``terminal_weight`` are
    ``SequenceForm.nash_conv_arguments``: per player the sequences in own-depth order, their
    parents, the own depths' offsets, the player's and the other's last sequence before every
    terminal (terminals in the player's order, as its weights row), the information sets in
    own-depth order and their depths' offsets; then every information set's parent sequence
    and the legal mask (flat, 0/1). ``work`` (``[3, S + 1]``: both plans, the best values) and
    ``more`` (``[2, S + 1]``: the on-policy values, the sums pushed to parents) are scratch
    space, every entry read written first."""
    n_seq = flat.shape[0]
    for p in range(2):
        work[p, n_seq] = 1.0
        _plan(_segment(index, 7 * p), _segment(index, 7 * p + 1), flat, work[p])
    parent_sequence, legal = _segment(index, 14), _segment(index, 15)
    best0 = on0 = 0.0
    for p in range(2):
        o = 7 * p  # sequences, parents, offsets, last, other's last, infosets, offsets
        last, other_last = _segment(index, o + 3), _segment(index, o + 4)
        _terminal_sums(last, other_last, terminal_weight[p], work[1 - p], work[2])
        more[0] = work[2]
        _back_up(
            _segment(index, o),
            _segment(index, o + 1),
            _segment(index, o + 2),
            flat,
            more[0],
            more[1],
        )
        _best_back_up(
            _segment(index, o + 5), _segment(index, o + 6), parent_sequence, legal, work[2], more[1]
        )
        if p == 0:
            best0, on0 = work[2, n_seq], more[0, n_seq]
    return best0, work[2, n_seq], on0, more[0, n_seq]
