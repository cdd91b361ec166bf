"""Optional compiled versions of the two hottest kernels, used when numba is installed.

On small trees (Kuhn: 58 histories) a full-width CFR step is some 25 numpy calls of under a
microsecond of work each, so the Python cost of the calls, not the arithmetic, sets the speed.
These loops do the same sums in one compiled call each: the fused counterfactual pass of a
two-player tree (the other player's plan, the terminal gather, the bottom-up backup and the
player's own plan) and regret matching. Every sum is taken in the numpy kernels' order, so
both paths give the same numbers bit for bit (tests compare them). Without numba, or with
``NASHZOO_PURE_NUMPY=1`` in the environment, nothing here is used.
"""

from __future__ import annotations

import os

import numpy as np

try:
    if os.environ.get("NASHZOO_PURE_NUMPY") == "1":
        raise ImportError("pure numpy requested")
    from numba import njit
except ImportError:  # the pure-numpy path
    njit = None

ENABLED = njit is not None
"""Whether the compiled kernels are in use."""


def _two_player_pass(
    own_sequences: np.ndarray,
    own_parents: np.ndarray,
    own_offsets: np.ndarray,
    other_sequences: np.ndarray,
    other_parents: np.ndarray,
    last_own: np.ndarray,
    last_other: np.ndarray,
    terminal_weight: np.ndarray,
    num_actions: int,
    own_flat: np.ndarray,
    other_flat: np.ndarray,
    q: np.ndarray,
    plan: np.ndarray,
    values: np.ndarray,
    other_plan: np.ndarray,
    pushed: np.ndarray,
) -> None:
    """Fill ``q`` (counterfactual values, root value last), ``plan`` (own realization plan)
    and ``values`` (per-infoset ``sum_a sigma q``); ``other_plan`` and ``pushed`` are scratch
    (sequence-sized, any contents: only entries written here are read). Sequences are in
    own-depth order (depth ``d`` is ``own_offsets[d]:own_offsets[d + 1]``), so every parent
    comes before its children. Every sum is taken in the same order as the numpy kernels take
    it, so both paths give the same floating-point numbers."""
    n_seq = q.shape[0] - 1
    other_plan[n_seq] = 1.0
    for i in range(other_sequences.shape[0]):
        s = other_sequences[i]
        other_plan[s] = other_plan[other_parents[i]] * other_flat[s]
    q[:] = 0.0
    for z in range(last_own.shape[0]):
        q[last_own[z]] += terminal_weight[z] * other_plan[last_other[z]]
    for d in range(own_offsets.shape[0] - 2, -1, -1):
        start, stop = own_offsets[d], own_offsets[d + 1]
        for i in range(start, stop):
            pushed[own_parents[i]] = 0.0
        for i in range(start, stop):
            s = own_sequences[i]
            pushed[own_parents[i]] += own_flat[s] * q[s]
        for i in range(start, stop):
            p = own_parents[i]
            if pushed[p] == pushed[p]:  # not yet added (NaN marks a parent already added)
                q[p] += pushed[p]
                pushed[p] = np.nan
    values[:] = 0.0
    for i in range(own_sequences.shape[0]):
        s = own_sequences[i]
        values[s // num_actions] += own_flat[s] * q[s]
    plan[:] = 0.0
    plan[n_seq] = 1.0
    for i in range(own_sequences.shape[0]):
        s = own_sequences[i]
        plan[s] = plan[own_parents[i]] * own_flat[s]


def _regret_matching(
    regrets: np.ndarray, legal: np.ndarray, uniform: np.ndarray, out: np.ndarray
) -> None:
    """Row-wise regret matching of ``[rows, actions]`` regrets into ``out``."""
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
                out[i, a] = uniform[i, a]


if njit is not None:
    two_player_pass = njit(cache=True, nogil=True)(_two_player_pass)
    regret_matching_rows = njit(cache=True, nogil=True)(_regret_matching)
else:
    two_player_pass = _two_player_pass
    regret_matching_rows = _regret_matching
