"""Race reports: leaderboard, convergence verdicts and the cross-play matrix, from plain rows.

Input is the long-form table a race writes (``results.csv``: one row per run, evaluation point
and seat). Everything here is a plain function of those rows, so a report can be rebuilt from the
CSV alone. Exploitability is NashConv / 2 throughout (OpenSpiel's convention).

Statistics across seeds: the self-play leaderboard gives each number as the median over seeds
with the lowest and highest seed (min to max, as the plots' bands are: a curve that jumps is
summed up by what its seeds do, not by a mean and an interval that can reach below zero);
summary.json keeps each seed's number, and the mean with its two-sided 95% Student-t interval
beside them. A cross-play cell is the mean over seeds with the lowest and highest seed (none
from a single seed).

"Time to" a level is when a run began to *hold* it: the first evaluation from which the run's
exploitability stayed at or below the level until the end of its budget (:func:`time_to`). A
dip below the level that came back up does not count (sampled and neural learners' curves
jump), and a run whose last evaluation is above the level has not reached it.

Verdicts that name a winner (the cross-play pairs, the fastest learner) do so only when the
seeds' ranges do not overlap (:func:`separated_by_seeds`): every seed of one learner beats every
seed of the other. Means alone call winners inside seed noise.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nashzoo.eval.numbers import format_number, payoff_spec

DEFAULT_THRESHOLDS = (0.1, 0.05, 0.01, 0.001)
MIN_TREND_POINTS = 5
"""A trend (log-log slope) needs at least this many evaluation points; fewer give no verdict
on the trend, only on the level."""


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% Student-t interval (``nan`` width for one value)."""
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if data.size == 0:
        return math.nan, math.nan
    if data.size == 1:
        return float(data[0]), math.nan
    from scipy import stats

    half = float(stats.t.ppf(0.975, data.size - 1) * data.std(ddof=1) / math.sqrt(data.size))
    return float(data.mean()), half


def separated_by_seeds(low_a: float, high_a: float, low_b: float, high_b: float) -> int | None:
    """Which of two learners is lower on every seed: ``0`` when all of ``a``'s seeds (its
    range ``[low_a, high_a]``) lie below all of ``b``'s, ``1`` when ``b``'s lie below ``a``'s,
    ``None`` when the ranges overlap (touching counts: a shared value is no separation) or a
    bound is not a number. Lower is better (exploitability, seconds). This is the race's one
    rule for naming a winner: a gap between means that the seeds' own spread covers is noise."""
    bounds = (low_a, high_a, low_b, high_b)
    if not all(math.isfinite(v) for v in bounds):
        return None
    if low_a > high_a or low_b > high_b:
        raise ValueError(
            f"a seed range runs low to high: got [{low_a}, {high_a}] and [{low_b}, {high_b}]"
        )
    if high_a < low_b:
        return 0
    if high_b < low_a:
        return 1
    return None


def _runs(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    runs: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        runs[str(row["run_id"])].append(row)
    return runs


def _points(run_rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One row per checkpoint (seat 0's rows carry the joint numbers), in time order."""
    pts = [r for r in run_rows if int(r["seat"]) == 0]
    return sorted(pts, key=lambda r: int(r["checkpoint"]))


def time_to(points: Sequence[Mapping[str, Any]], threshold: float, x: str) -> float | None:
    """The ``x`` (wall seconds or work) from which a run held exploitability <= ``threshold``:
    the first point of the run's last stretch at or below it, ``None`` when its last point is
    above it. A dip that came back up is not counted, so a noisy curve is credited with the
    level it holds, not the first moment it touched it."""
    held: float | None = None
    for p in points:
        if float(p["exploitability"]) <= threshold:
            if held is None:
                held = float(p[x])
        else:
            held = None
    return held


def first_below(points: Sequence[Mapping[str, Any]], threshold: float, x: str) -> float | None:
    """The first ``x`` at which exploitability was <= ``threshold``, held or not (kept in
    summary.json beside :func:`time_to`, which the tables use)."""
    for p in points:
        if float(p["exploitability"]) <= threshold:
            return float(p[x])
    return None


@dataclass(frozen=True)
class SeedSpread:
    """A number over seeds: the median, the lowest and the highest seed (``nan`` when no seed
    has it), and how many seeds have it."""

    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float | None]) -> SeedSpread:
        data = [float(v) for v in values if v is not None and math.isfinite(v)]
        if not data:
            return cls(math.nan, math.nan, math.nan, 0)
        return cls(float(np.median(data)), min(data), max(data), len(data))

    def shown(self, fmt: Any) -> str:
        """``median [low, high]`` with ``fmt`` (a function of one number); the median alone
        from one seed or where every seed has the same number."""
        text = fmt(self.median)
        low, high = fmt(self.low), fmt(self.high)
        return text if self.count < 2 or low == high else f"{text} [{low}, {high}]"


def trend_slope(points: Sequence[Mapping[str, Any]]) -> float | None:
    """Least-squares slope of log10(exploitability) against log10(wall seconds) over the
    second half (in log time) of the run (at least the last ``MIN_TREND_POINTS`` points):
    about -1 for CFR+-like, -0.5 for sampled methods, 0 when stuck; ``None`` with fewer points."""
    log_times, log_exploits = [], []
    for point in points:
        seconds, exploit = float(point["wall_seconds"]), float(point["exploitability"])
        if seconds > 0 and exploit > 0:
            log_times.append(math.log10(seconds))
            log_exploits.append(math.log10(exploit))
    if len(log_times) < MIN_TREND_POINTS:
        return None
    x, y = np.asarray(log_times), np.asarray(log_exploits)
    keep = x >= (x.min() + x.max()) / 2
    if keep.sum() < MIN_TREND_POINTS:
        keep = x >= np.sort(x)[-MIN_TREND_POINTS]
    if np.ptp(x[keep]) == 0:
        return None
    return float(np.polyfit(x[keep], y[keep], 1)[0])


@dataclass(frozen=True)
class LeaderboardEntry:
    """One self-play algorithm's results across seeds: each run's own numbers, in seed order,
    and what the table and summary.json derive from them."""

    learner: str
    finals: tuple[float, ...]
    """Each run's final exploitability."""
    held_from: dict[float, tuple[float | None, ...]]
    """threshold -> each run's seconds from which it held the level (:func:`time_to`;
    ``None``: not held at the end of the run)."""
    work_per_second: float
    slope: float | None
    verdict: str
    first_below: dict[float, tuple[float | None, ...]] = field(default_factory=dict)
    """threshold -> each run's first seconds at or below the level, held or not."""
    held_from_iteration: dict[float, tuple[float | None, ...]] = field(default_factory=dict)
    """threshold -> each run's trainer iteration from which it held the level: unlike the
    seconds, the same from one race to the next with the same seeds."""
    trained: tuple[float, ...] = ()
    """Each run's training seconds at its last evaluation (a seconds budget is checked between
    steps, so a learner with long steps trains past it)."""

    @property
    def runs(self) -> int:
        return len(self.finals)

    @property
    def final(self) -> SeedSpread:
        return SeedSpread.of(self.finals)

    def time_to(self, threshold: float) -> SeedSpread:
        """When the runs held ``threshold``: median, fastest and slowest seed among those
        that held it, and how many did."""
        return SeedSpread.of(self.held_from.get(threshold, ()))

    def to_dict(self) -> dict[str, Any]:
        final, (mean, ci) = self.final, mean_ci(self.finals)
        return {
            "learner": self.learner,
            "runs": self.runs,
            "final_exploitability_median": _nan_none(final.median),
            "final_exploitability_min": _nan_none(final.low),
            "final_exploitability_max": _nan_none(final.high),
            "final_exploitability_seeds": [_nan_none(v) for v in self.finals],
            "final_exploitability_mean": _nan_none(mean),
            "final_exploitability_ci95": _nan_none(ci),
            "time_to_threshold": {
                str(t): self._threshold_dict(t, seconds) for t, seconds in self.held_from.items()
            },
            "train_seconds_seeds": list(self.trained),
            "work_per_second": self.work_per_second,
            "trend_slope": self.slope,
            "verdict": self.verdict,
        }

    def _threshold_dict(self, threshold: float, seconds: Sequence[float | None]) -> dict:
        held = self.time_to(threshold)
        mean, ci = mean_ci([v for v in seconds if v is not None])
        return {
            "median_seconds": _nan_none(held.median),
            "min_seconds": _nan_none(held.low),
            "max_seconds": _nan_none(held.high),
            "reached": held.count,
            "seed_seconds": list(seconds),
            "seed_iterations": [
                None if v is None else int(v) for v in self.held_from_iteration.get(threshold, ())
            ],
            "first_below_seconds": list(self.first_below.get(threshold, ())),
            "mean_seconds": _nan_none(mean),
            "ci95": _nan_none(ci),
        }


def _nan_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def verdict(
    final: float,
    slope: float | None,
    first: float,
    thresholds: Sequence[float],
    worst_final: float | None = None,
) -> str:
    """Plain-words convergence verdict from the final level (the mean, and the worst seed's:
    "reaches" is said only when every seed does) and the late trend. Without a trend (too few
    evaluation points) it says so whichever way the level moved: "not converging" from three
    points that went 0.25, 1.29, 0.60 claimed a trend the data cannot show."""
    tight = min(thresholds)
    if (final if worst_final is None else worst_final) <= tight:
        return f"converges: reaches exploitability <= {tight:g}"
    if slope is None:
        moved = "improved" if final < 0.8 * first else "went"
        return f"{moved} from {first:.3g} to {final:.3g}; too few evaluation points for a trend"
    if slope <= -0.15 and final < 0.8 * first:
        return f"converging: exploitability falls like t^{slope:.2f}, {final:.3g} at the end"
    if final < 0.8 * first:
        return f"slowing: improved from {first:.3g} to {final:.3g} but the late trend is flat"
    return f"not converging: exploitability stays near {final:.3g}"


def leaderboard(
    rows: Sequence[Mapping[str, Any]], thresholds: Sequence[float] = DEFAULT_THRESHOLDS
) -> list[LeaderboardEntry]:
    """Self-play leaderboard, best (lowest median final exploitability) first."""
    by_learner: dict[str, list[list[Mapping[str, Any]]]] = defaultdict(list)
    for run_rows in _runs([r for r in rows if r["mode"] == "self"]).values():
        by_learner[str(run_rows[0]["learner_seat0"])].append(_points(run_rows))
    entries = []
    for learner, runs in by_learner.items():
        runs = sorted((run for run in runs if run), key=lambda run: _seed_of(run[0]))
        finals = tuple(float(run[-1]["exploitability"]) for run in runs)
        firsts = [float(run[0]["exploitability"]) for run in runs]
        speed = [
            float(run[-1]["total_work"]) / float(run[-1]["wall_seconds"])
            for run in runs
            if float(run[-1]["wall_seconds"]) > 0
        ]
        slopes = [slope for slope in map(trend_slope, runs) if slope is not None]
        slope = float(np.median(slopes)) if slopes else None
        median = float(np.median(finals))
        entries.append(
            LeaderboardEntry(
                learner=learner,
                finals=finals,
                held_from={
                    t: tuple(time_to(run, t, "wall_seconds") for run in runs) for t in thresholds
                },
                work_per_second=float(np.median(speed)) if speed else math.nan,
                slope=slope,
                verdict=verdict(median, slope, float(np.median(firsts)), thresholds, max(finals)),
                first_below={
                    t: tuple(first_below(run, t, "wall_seconds") for run in runs)
                    for t in thresholds
                },
                held_from_iteration={
                    t: tuple(time_to(run, t, "iteration") for run in runs) for t in thresholds
                },
                trained=tuple(float(run[-1]["wall_seconds"]) for run in runs),
            )
        )
    entries.sort(key=lambda entry: (entry.final.median, entry.learner))
    return entries


def _seed_of(row: Mapping[str, Any]) -> int:
    """A run's seed, for ordering its numbers in summary.json (0 where a row has none)."""
    try:
        return int(row.get("seed", 0))
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class CrossPlay:
    """Cross-play results: ``learners[i]`` against ``learners[j]`` (both seatings pooled).

    Attributes:
        seat_exploitability: ``[n, n]`` mean final seat exploitability of row learner ``i``
            when its opponent is ``j`` (lower = closer to equilibrium); ``nan`` on the diagonal.
        payoff: ``[n, n]`` mean payoff row ``i`` earned against ``j`` while learning
            (time-weighted exact payoff of the current policies over the run).
        wins: ``[n, n]`` fraction of the seats on which ``i`` ended closer to equilibrium than
            ``j`` on the same seat (means over seeds; 0, 0.5 or 1 in a two-player game); ``nan``
            where seat exploitability was not evaluated (a game too big for the LP).
        seeds: ``[n, n]`` how many seeds each cell's numbers are over (0 where the pair never
            met); ``None`` when not known.
        exploitability_range, payoff_range: ``[n, n, 2]`` the lowest and highest seed of each
            cell (a seed's number: its mean over the seatings it played); ``nan`` where there
            is one seed or none, so a single seed shows no spread.
    """

    learners: tuple[str, ...]
    seat_exploitability: np.ndarray
    payoff: np.ndarray
    wins: np.ndarray
    seeds: np.ndarray | None = None
    exploitability_range: np.ndarray | None = None
    payoff_range: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; the keys of earlier races are kept as they were, the seed counts and
        spreads are added beside them (``null`` where a cell has no spread)."""

        def clean(a: np.ndarray) -> list[list[float | None]]:
            return [[_nan_none(float(v)) for v in row] for row in a]

        out: dict[str, Any] = {
            "learners": list(self.learners),
            "seat_exploitability": clean(self.seat_exploitability),
            "payoff_while_learning": clean(self.payoff),
            "closer_to_equilibrium_fraction": clean(self.wins),
        }
        if self.seeds is not None:
            out["seeds"] = [[int(v) for v in row] for row in self.seeds]
            out["spread"] = SPREAD_TEXT
        for key, spread in (
            ("seat_exploitability", self.exploitability_range),
            ("payoff_while_learning", self.payoff_range),
        ):
            if spread is not None:
                out[f"{key}_min"] = clean(spread[..., 0])
                out[f"{key}_max"] = clean(spread[..., 1])
        return out


SPREAD_TEXT = (
    "cells are means over seeds (both seatings pooled); *_min and *_max are the lowest and "
    "highest seed (each seed's mean over its seatings), null with a single seed"
)


def seed_counts_text(cross: CrossPlay) -> str:
    """How many seeds the cells are over, in words, for captions: ``"3 seeds"``, ``"1 to 3
    seeds"`` (a partial race), ``"one seed: no spread over seeds"`` (``""`` when unknown)."""
    if cross.seeds is None:
        return ""
    counts = sorted({int(n) for n in cross.seeds.flat if n > 0})
    if not counts:
        return ""
    if counts[-1] == 1:
        return "one seed: no spread over seeds"
    if len(counts) == 1:
        return f"{counts[0]} seeds"
    return f"{counts[0]} to {counts[-1]} seeds (a cell with one seed shows no spread)"


def learning_payoff(points: Sequence[Mapping[str, Any]], seat: int) -> float:
    """Mean exact payoff of ``seat``'s current policy over a run, weighted by iterations (not
    by seconds: one run's slower first step, a one-time cost, would weigh its first point)."""
    xs = [float(p["iteration"]) for p in points]
    ys = [float(p[f"current_value_seat{seat}"]) for p in points]
    if len(xs) == 1 or xs[-1] <= xs[0]:
        return float(np.mean(ys))
    return float(np.trapezoid(ys, xs) / (xs[-1] - xs[0]))


def cross_play(rows: Sequence[Mapping[str, Any]]) -> CrossPlay | None:
    """The cross-play matrix, or ``None`` when the rows hold no cross-play runs."""
    runs = [run for run in _runs([r for r in rows if r["mode"] == "cross"]).values() if run]
    if not runs:
        return None
    names = sorted(
        {str(run[0]["learner_seat0"]) for run in runs}
        | {str(run[0]["learner_seat1"]) for run in runs}
    )
    index = {name: i for i, name in enumerate(names)}
    exploit: dict[tuple[int, int], list[float]] = defaultdict(list)
    payoff: dict[tuple[int, int], list[float]] = defaultdict(list)
    on_seat: dict[tuple[int, int, int], list[float]] = defaultdict(list)  # (i, j, seat of i)
    # (i, j) -> seed -> values, for the spread over seeds
    exploit_by_seed: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    payoff_by_seed: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run_rows in runs:
        points = _points(run_rows)
        last = points[-1]
        seat0, seat1 = index[str(last["learner_seat0"])], index[str(last["learner_seat1"])]
        seed = str(last["seed"])
        exploit0 = _seat_number(last["seat_exploitability_seat0"])
        exploit1 = _seat_number(last["seat_exploitability_seat1"])
        payoff0, payoff1 = learning_payoff(points, 0), learning_payoff(points, 1)
        exploit[seat0, seat1].append(exploit0)
        exploit[seat1, seat0].append(exploit1)
        on_seat[seat0, seat1, 0].append(exploit0)
        on_seat[seat1, seat0, 1].append(exploit1)
        payoff[seat0, seat1].append(payoff0)
        payoff[seat1, seat0].append(payoff1)
        exploit_by_seed[seat0, seat1][seed].append(exploit0)
        exploit_by_seed[seat1, seat0][seed].append(exploit1)
        payoff_by_seed[seat0, seat1][seed].append(payoff0)
        payoff_by_seed[seat1, seat0][seed].append(payoff1)

    def matrix(data: Mapping[tuple[int, int], list[float]]) -> np.ndarray:
        out = np.full((len(names), len(names)), np.nan)
        for (i, j), values in data.items():
            out[i, j] = float(np.mean(values))
        return out

    # A learner is compared with its rival on the same seat (the two seats of a game are not
    # alike): i wins seat s when its mean there, against j, is below j's mean there against i.
    wins = np.full((len(names), len(names)), np.nan)
    for i, j in itertools.permutations(range(len(names)), 2):
        scores = []
        for seat in (0, 1):
            mine, theirs = on_seat.get((i, j, seat)), on_seat.get((j, i, seat))
            if mine and theirs:
                a, b = float(np.mean(mine)), float(np.mean(theirs))
                scores.append(math.nan if math.isnan(a + b) else float(a < b) + 0.5 * (a == b))
        if scores:
            wins[i, j] = float(np.mean(scores))
    seeds = np.zeros((len(names), len(names)), dtype=int)
    for (i, j), per_seed in exploit_by_seed.items():
        seeds[i, j] = len(per_seed)
    return CrossPlay(
        tuple(names),
        matrix(exploit),
        matrix(payoff),
        wins,
        seeds,
        _seed_range(exploit_by_seed, len(names)),
        _seed_range(payoff_by_seed, len(names)),
    )


def _seed_range(data: Mapping[tuple[int, int], Mapping[str, list[float]]], n: int) -> np.ndarray:
    """``[n, n, 2]``: each cell's lowest and highest seed, a seed's number being its mean over
    the seatings it played (so the spread is over seeds, not over the two seats, which are not
    alike); ``nan`` for a cell with fewer than two seeds, or with a value not evaluated."""
    out = np.full((n, n, 2), np.nan)
    for (i, j), per_seed in data.items():
        if len(per_seed) > 1:
            means = np.array([np.mean(values) for values in per_seed.values()])
            out[i, j] = (np.min(means), np.max(means))  # a nan seed makes both nan
    return out


def fmt_seconds(seconds: float) -> str:
    """Readable duration: ``850 µs``, ``12.3 ms``, ``4.56 s``."""
    if not math.isfinite(seconds):
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def _fmt_time(held: SeedSpread, runs: int) -> str:
    """A "time to" cell: the median [fastest, slowest] seed among the runs that held the
    level, and ``(k/n)`` where only k of the n runs did."""
    if held.count == 0:
        return "not reached"
    return held.shown(fmt_seconds) + (f" ({held.count}/{runs})" if held.count < runs else "")


def _earned(a: str, b: str, payoff_a: float, spec: str = "+.3f") -> str:
    """Who earned what while learning, in words (``payoff_a``: ``a``'s mean payoff vs ``b``,
    shown with ``spec``, whose decimals suit the game's payoffs: what rounds to zero there is
    nobody's gain)."""
    if not math.isfinite(payoff_a):
        return "no payoff recorded"
    shown = format_number(payoff_a, spec)  # +0.000, never -0.000
    if float(shown) == 0.0:
        return f"neither earns from the other while learning ({shown} per game)"
    earner, other = (a, b) if payoff_a > 0 else (b, a)
    amount = format_number(abs(payoff_a), spec.lstrip("+"))
    return f"{earner} earns {amount} per game from {other} while learning"


NOT_JUDGED_TOO_BIG = (
    "seat exploitability needs the game value, and this game is too big for the LP that gives it"
)
"""Why a cross-play pair is not judged, where the game has a value the LP could not reach."""


def markdown_summary(
    game_id: str,
    board: Sequence[LeaderboardEntry],
    cross: CrossPlay | None,
    *,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    budget: str,
    failures: Sequence[Mapping[str, Any]] = (),
    not_judged: str = NOT_JUDGED_TOO_BIG,
    constant: float = 0.0,
    general_sum: bool = False,
    payoff_scale: float | None = None,
    budget_seconds: float | None = None,
    clock_stopped: tuple[int, int] | None = None,
) -> str:
    """The human summary: leaderboard, plain-words answers, cross-play matrix. ``not_judged``:
    why closeness to equilibrium was not evaluated where it was not; ``constant``: what the
    payoffs sum to (a constant-sum game's payoffs are read against an even split of it);
    ``general_sum``: nobody earns from the other, so each side's payoff is said on its own;
    ``payoff_scale``: the game's largest absolute payoff, where it is known (the payoffs are
    then shown with decimals that suit it, and thresholds far from it are pointed out);
    ``budget_seconds``: the runs' seconds budget, where there is one (learners that trained
    well past it are named); ``clock_stopped``: where the runs also had an iteration or work
    budget, how many of how many runs the clock stopped (the report then says which of its
    numbers repeat from race to race)."""
    lines = [
        f"# nashzoo race on {game_id}",
        "",
        f"Budget: {budget}. Exploitability = NashConv / 2.",
        "",
    ]
    if board:
        lines += _leaderboard_section(board, thresholds)
        lines += _overshoot_note(board, budget_seconds)
        if budget_seconds is None:
            lines += [CLOCK_NOTE, ""]
        elif clock_stopped is not None:
            by_clock, runs = clock_stopped
            lines += [f"{BOTH_BUDGETS_NOTE} Here the clock stopped {by_clock} of {runs} runs.", ""]
        lines += _thresholds_note(thresholds, payoff_scale)
    if cross is not None:
        spec = payoff_spec([payoff_scale] if payoff_scale else cross.payoff.ravel())
        lines += _cross_play_section(cross, not_judged, constant, general_sum, spec)
    if failures:
        lines += ["## Failed runs", ""]
        lines += [f"- {failure['run_id']}: {failure['error']}" for failure in failures]
        lines.append("")
    return "\n".join(lines)


CLOCK_NOTE = (
    "Note: the budget is not in seconds, so the runs are the same from one race to the next "
    "with the same seeds, but the times above are wall clock and are not: summary.json gives "
    "each seed's iteration from which it held each level (`seed_iterations`), which is. One "
    "iteration is a different amount of work for each learner (a full-width pass, a batch of "
    "sampled walks, a number of episodes)."
)
"""Said under the leaderboard of a race whose budget is iterations or work."""

BOTH_BUDGETS_NOTE = (
    "Note: each run stopped at its seconds budget or its iteration (or work) budget, "
    "whichever came first. A run the count stopped ends in the same state from one race to the "
    "next with the same seeds (its final exploitability repeats), as long as the clock does not "
    "stop it first on a slower or busier machine; a run the clock stopped does not. The rest is "
    "wall clock and does not repeat: the times above, and the iterations at which runs were "
    "evaluated (every 25th of the seconds budget, in training time), so `seed_iterations` in "
    "summary.json too."
)
"""Said under the leaderboard of a race with both a seconds and a counted budget."""

OVERSHOOT = 1.1
"""A learner whose median run trained this many times its seconds budget or more is named under
the leaderboard: its times and final are over that longer training."""


def _overshoot_note(board: Sequence[LeaderboardEntry], budget_seconds: float | None) -> list[str]:
    """The line under the leaderboard that names the learners whose runs trained well past a
    seconds budget (the budget is checked between steps; PPO's step of about 3 s took a 10 s
    budget to 12.9), [] where none did or there is no seconds budget."""
    if not budget_seconds:
        return []
    over = []
    for entry in board:
        trained = SeedSpread.of(entry.trained)
        if trained.count and trained.median >= OVERSHOOT * budget_seconds:
            over.append(f"{entry.learner} ({trained.shown(fmt_seconds)})")
    if not over:
        return []
    return [
        f"Note: trained past the {budget_seconds:g} s budget (it is checked between steps, and "
        f"these learners' steps are long): {', '.join(over)}; their times and finals are over "
        "that longer training.",
        "",
    ]


THRESHOLD_FIT = (1e-3, 0.5)
"""Default thresholds suit a game whose largest payoff is within these multiples of the
largest threshold's: between twice and a thousand times it. Kuhn (2), Leduc (13) and Liar's dice
(1) are; a game paying thousands (whose smaller thresholds are a millionth of its payoffs) or
thousandths (whose thresholds are met at the first evaluation) is not."""


def _thresholds_note(thresholds: Sequence[float], payoff_scale: float | None) -> list[str]:
    """A warning under the leaderboard where the thresholds do not suit the game's payoffs
    (the largest at least half the largest payoff: each is reached at the first evaluation;
    the largest below a thousandth of it: the smaller ones are likely never reached), naming
    the option that sets them; [] where they suit it or the scale is not known."""
    if not payoff_scale:
        return []
    low, high = THRESHOLD_FIT
    largest = max(thresholds)
    if low * payoff_scale <= largest <= high * payoff_scale:
        return []
    levels = ", ".join(f"{t:g}" for t in thresholds)
    what = (
        "too coarse for it (likely met at the first evaluation)"
        if largest > high * payoff_scale
        else "too fine for it (the smaller ones likely never met)"
    )
    return [
        f"Note: the thresholds ({levels}) are exploitability in this game's payoff units, and its "
        f"largest payoff is {payoff_scale:.3g}: they are {what}. `nashzoo race --thresholds "
        "E1,E2,...` (or `RaceConfig(thresholds=...)`) sets levels that suit it; `--resume` with "
        "new thresholds rewrites the report without running anything again.",
        "",
    ]


LEADERBOARD_READING = (
    "Each cell is the median over the seeds, then in brackets the lowest and highest seed. "
    '"Time to X" is the training time (wall clock, evaluation excluded) from which a run\'s '
    "exploitability stayed at or below X to the end of its budget: a dip below X that came "
    "back up does not count, and (k/n) says only k of the n runs held X at the end. Rank is by "
    "the median final exploitability; equal medians share a rank."
)
"""What the leaderboard's numbers are, said once above it in summary.md."""


def _leaderboard_section(
    board: Sequence[LeaderboardEntry], thresholds: Sequence[float]
) -> list[str]:
    """The self-play table, each learner's verdict, and the fastest to the first threshold."""
    lines = ["## Self-play leaderboard", "", LEADERBOARD_READING, ""]
    head = (
        "| rank | learner | runs | final exploitability | "
        + " | ".join(f"time to {t:g}" for t in thresholds)
        + " | work/s | verdict |"
    )
    lines += [head, "|" + "---|" * (6 + len(thresholds))]
    rank, previous = 0, None
    for place, entry in enumerate(board, 1):
        final = entry.final.shown(lambda v: f"{v:.4g}")
        if entry.final.median != previous:  # standard competition ranking: 1, 1, 3
            rank, previous = place, entry.final.median
        times = " | ".join(_fmt_time(entry.time_to(t), entry.runs) for t in thresholds)
        lines.append(
            f"| {rank} | {entry.learner} | {entry.runs} | {final} | {times} | "
            f"{entry.work_per_second:.3g} | {entry.verdict} |"
        )
    lines += ["", "## Same algorithm on both seats: do they reach equilibrium?", ""]
    lines += [f"- **{entry.learner}** {entry.verdict}." for entry in board]
    fastest = _fastest_line(board, thresholds[0])
    lines += [fastest, ""] if fastest else [""]
    return lines


def _fastest_line(board: Sequence[LeaderboardEntry], first: float) -> str:
    """The sentence on which learner holds exploitability ``first`` soonest ("" with fewer
    than two learners, or none that held it in every run). A learner is named only when it
    held the level in every run, with at least two runs, and every one of its seeds got there
    before every seed of each other learner that held it in any run
    (:func:`separated_by_seeds`); otherwise the sentence says which test failed."""
    if len(board) < 2:
        return ""
    always = [entry for entry in board if entry.time_to(first).count == entry.runs]
    if not always:
        return ""
    best = min(always, key=lambda entry: (entry.time_to(first).median, entry.learner))
    held = best.time_to(first)
    if best.runs < 2:
        return (
            f"- No learner is named fastest to exploitability {first:g}: {best.learner} held it "
            f"soonest ({fmt_seconds(held.median)}) on one run, which shows no spread over seeds "
            "to judge noise by (`--seeds` sets more)."
        )
    others = [e for e in board if e is not best and e.time_to(first).count > 0]
    for other in sorted(others, key=lambda entry: entry.time_to(first).low):
        theirs = other.time_to(first)
        apart = separated_by_seeds(held.low, held.high, theirs.low, theirs.high)
        if apart == 1:  # quicker on every seed that held it, but it did not hold it in all
            return (
                f"- No learner is named fastest to exploitability {first:g}: {other.learner} "
                f"held it sooner on every seed that held it ({fmt_seconds(theirs.high)} at the "
                f"latest, {best.learner} {fmt_seconds(held.low)} at the earliest), but only in "
                f"{theirs.count} of its {other.runs} runs; {best.learner} held it in every run."
            )
        if apart is None:
            return (
                f"- No learner is clearly fastest to exploitability {first:g}: "
                f"{best.learner} (median {fmt_seconds(held.median)}) and {other.learner} "
                f"({fmt_seconds(theirs.median)}) are level within seed noise: the seeds' "
                f"ranges overlap ({best.learner}'s slowest seed {fmt_seconds(held.high)}, "
                f"{other.learner}'s fastest {fmt_seconds(theirs.low)})."
            )
    never = [e.learner for e in board if e is not best and e.time_to(first).count == 0]
    behind = (
        f", next {min(others, key=lambda e: e.time_to(first).median).learner}"
        f" ({fmt_seconds(min(e.time_to(first).median for e in others))})"
        if others
        else ""
    )
    return (
        f"- Fastest to exploitability {first:g} (held it in every run, and every seed got "
        f"there before every seed of the others): **{best.learner}** (median "
        f"{fmt_seconds(held.median)} [{fmt_seconds(held.low)}, {fmt_seconds(held.high)}]"
        f"{behind}" + (f"; never held by {', '.join(never)}" if never else "") + ")."
    )


def _matrix_table(
    names: Sequence[str], values: np.ndarray, spec: str, spread: np.ndarray | None = None
) -> list[str]:
    """A row-by-column Markdown table of ``values`` (``—`` where there is no number), each
    followed by its ``[low, high]`` from ``spread`` (``[n, n, 2]``) where that is a number."""
    lines = ["| row \\ column | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for i, (name, row) in enumerate(zip(names, values, strict=True)):
        cells = []
        for j, value in enumerate(row):
            if not math.isfinite(value):
                cells.append("—")
                continue
            cell = format_number(value, spec)
            if spread is not None and np.isfinite(spread[i, j]).all():
                low, high = (format_number(float(v), spec) for v in spread[i, j])
                cell += f" [{low}, {high}]"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _over_seeds(cross: CrossPlay) -> str:
    """The sentence under the cross-play heading that says what a cell's number and its
    brackets are, and over how many seeds ("" when the seeds are not known)."""
    counts = seed_counts_text(cross)
    if not counts:
        return ""
    if counts.startswith("one seed"):
        return "Each cell is one seed's number (both seatings pooled); one seed: no spread."
    return (
        f"Each cell is the mean over {counts} (both seatings pooled), then in brackets the "
        "lowest and highest seed (min to max)."
    )


def _cross_play_section(
    cross: CrossPlay, not_judged: str, constant: float, general_sum: bool, spec: str
) -> list[str]:
    """The seat-exploitability and payoff matrices, then one sentence per pair of learners
    (:func:`markdown_summary` says what the other arguments are)."""
    names = cross.learners
    over = _over_seeds(cross)
    lines = [
        "## Different algorithms: which side gets closer to equilibrium?",
        "",
        "Final seat exploitability of the row learner when the column learner holds the "
        "other seat (both seatings and all seeds pooled; lower is closer to equilibrium). A "
        "seat's exploitability is what its policy alone gives away to a best responder, "
        "relative to the game value (zero exactly for an equilibrium strategy; the two seats' "
        "sum is the pair's NashConv). It is read at the end of the budget: cross-play ranks "
        "who ends closer, not who gets there first.",
        *([over] if over else []),
        "",
    ]
    lines += _matrix_table(names, cross.seat_exploitability, ".3g", cross.exploitability_range)
    lines += ["", "Payoff the row learner earned against the column learner while learning:", ""]
    lines += _matrix_table(names, cross.payoff, spec, cross.payoff_range)
    if constant:
        lines += [
            "",
            f"(A constant-sum game: the two seats' payoffs sum to {constant:g}, so an even "
            f"split is {constant / 2:g} each; the words below read the payoffs against it.)",
        ]
    lines += ["", "In plain words:", ""]
    if cross.seeds is not None:
        lines += [NOISE_RULE_TEXT, ""]
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            a, b = names[i], names[j]
            if not math.isfinite(cross.payoff[i, j]):
                continue  # the pair never met
            closer = (
                _closer_to_equilibrium(cross, i, j)
                if math.isfinite(cross.wins[i, j])
                else f"closeness to equilibrium not evaluated ({not_judged})"
            )
            earned = (
                f"{a} averages {format_number(cross.payoff[i, j], spec)} per game and {b} "
                f"{format_number(cross.payoff[j, i], spec)} while learning"
                if general_sum
                else _earned(a, b, cross.payoff[i, j] - constant / 2, spec)
            )
            lines.append(f"- {a} vs {b}: {closer}; {earned}.")
    lines.append("")
    return lines


NOISE_RULE_TEXT = (
    "A learner is named closer to equilibrium only when every seed of it is below every seed "
    "of its rival (the bracketed ranges above: each seed's final seat exploitability against "
    "the other, both seatings pooled, so both sides are scored on the same two seats); where "
    "the ranges overlap or touch, the pair is level within seed noise, and with one seed the "
    "means decide and the verdict says there was no spread to judge noise by."
)
"""The cross-play verdicts' rule, said once in summary.md above them."""


def _closer_to_equilibrium(cross: CrossPlay, i: int, j: int) -> str:
    """Which of learners ``i`` and ``j`` ends closer to equilibrium, in words (the fraction of
    seats it wins, and the means when they disagree with that count). With seed ranges on both
    cells a winner is named only when they do not overlap (:data:`NOISE_RULE_TEXT`); with one
    seed the verdict says it had no spread to go by; a matrix without seed counts (an older
    caller) gets the verdict it always got."""
    win_fraction = cross.wins[i, j]
    exploit_i, exploit_j = cross.seat_exploitability[i, j], cross.seat_exploitability[j, i]
    if win_fraction == 0.5:
        return (
            f"each is closer to equilibrium on one seat ({exploit_i:.3g} vs {exploit_j:.3g} "
            "over both)"
        )
    noise = _seed_noise(cross, i, j)
    if noise.overlap:
        return (
            f"level within seed noise ({noise.shown_i} vs {noise.shown_j}: the seeds' ranges "
            "overlap)"
        )
    return _named_winner(cross, i, j, noise)


@dataclass(frozen=True)
class _SeedNoise:
    """What the seeds say about one cross-play pair: whether their ranges overlap, the two
    cells as shown (``mean [low, high]``, or the mean alone where there is no range), and the
    note a verdict that names a winner carries ("" for an older caller's matrix)."""

    overlap: bool
    shown_i: str
    shown_j: str
    note: str


def _seed_noise(cross: CrossPlay, i: int, j: int) -> _SeedNoise:
    """The pair's seed ranges judged by :func:`separated_by_seeds`, with the note that says
    the ranges separate, or why there is no range to judge by."""
    exploit_i, exploit_j = cross.seat_exploitability[i, j], cross.seat_exploitability[j, i]
    plain_i, plain_j = f"{exploit_i:.3g}", f"{exploit_j:.3g}"
    if cross.seeds is None:
        return _SeedNoise(False, plain_i, plain_j, "")
    if cross.exploitability_range is None or min(cross.seeds[i, j], cross.seeds[j, i]) < 2:
        return _SeedNoise(False, plain_i, plain_j, "one seed: no spread to judge noise by")
    range_i, range_j = cross.exploitability_range[i, j], cross.exploitability_range[j, i]
    if not (np.isfinite(range_i).all() and np.isfinite(range_j).all()):
        return _SeedNoise(False, plain_i, plain_j, "no spread over seeds to judge noise by")
    return _SeedNoise(
        separated_by_seeds(*range_i, *range_j) is None,
        f"{plain_i} [{range_i[0]:.3g}, {range_i[1]:.3g}]",
        f"{plain_j} [{range_j[0]:.3g}, {range_j[1]:.3g}]",
        "the seeds' ranges do not overlap",
    )


def _named_winner(cross: CrossPlay, i: int, j: int, noise: _SeedNoise) -> str:
    """The verdict that names the learner closer to equilibrium on more seats (and the means
    when they disagree with that count), with the seeds' note."""
    win_fraction = cross.wins[i, j]
    exploit_i, exploit_j = cross.seat_exploitability[i, j], cross.seat_exploitability[j, i]
    i_wins = win_fraction > 0.5
    winner, loser = (cross.learners[i], cross.learners[j])[:: 1 if i_wins else -1]
    winner_exploit, loser_exploit = (exploit_i, exploit_j) if i_wins else (exploit_j, exploit_i)
    winner_shown, loser_shown = (
        (noise.shown_i, noise.shown_j) if i_wins else (noise.shown_j, noise.shown_i)
    )
    share = max(win_fraction, 1 - win_fraction)
    note = f"; {noise.note}" if noise.note else ""
    if winner_exploit > loser_exploit:  # the run-by-run count and the means disagree
        return (
            f"**{winner}** is closer to equilibrium on {share:.0%} of the seats, but the mean "
            f"favours {loser} ({loser_shown} vs {winner_shown}{note}): {loser} won its "
            "seat by more"
        )
    return (
        f"**{winner}** gets closer to equilibrium ({winner_shown} vs {loser_shown}; "
        f"on {share:.0%} of the seats, each compared with its rival on the same seat{note})"
    )


def _seat_number(value: Any) -> float:
    """A stored seat exploitability; NaN where the race did not evaluate seats (a game too big
    for the LP that gives the game value: see ``nashzoo.eval.lp_is_cheap``)."""
    return float("nan") if value is None or value == "" else float(value)
