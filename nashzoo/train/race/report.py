"""The race's outputs from its finished runs: ``results.csv``, ``summary.json``,
``summary.md`` and the plots.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nashzoo.games import GameTooLarge, compile_tree, load_game
from nashzoo.games.base import display_id
from nashzoo.io import (
    atomic_write_bytes,
)
from nashzoo.train.race.backends import race_workers
from nashzoo.train.race.config import RaceConfig
from nashzoo.train.race.storage import _rows
from nashzoo.train.race.summary import (
    CrossPlay,
    cross_play,
    leaderboard,
    markdown_summary,
    seed_counts_text,
)
from nashzoo.train.result import write_csv
from nashzoo.train.threads import usable_cpus


@dataclasses.dataclass(frozen=True)
class RaceOutcome:
    """What :func:`run_race` produced."""

    out: Path
    results: tuple[dict[str, Any], ...]
    failures: tuple[dict[str, Any], ...]
    skipped: dict[str, str]
    summary: dict[str, Any]
    markdown: str
    interrupted: bool = False

    def __repr__(self) -> str:
        # The fields hold every run's whole history (80,000 characters for three runs of half
        # a second), which a notebook cell ending with run_race(...) printed in full.
        return (
            f"RaceOutcome(out={str(self.out)!r}, runs_finished={len(self.results)}, "
            f"runs_failed={len(self.failures)}, skipped={sorted(self.skipped)!r}, "
            f"interrupted={self.interrupted}; .markdown is the report)"
        )


def _value_facts(spec: str, shown: str) -> dict[str, Any]:
    """What the report's words need to know of the game's payoffs: their largest size (for the
    decimals that show them and the thresholds' fit), why closeness to equilibrium cannot be
    judged where the game has no value (general-sum), and the constant a constant-sum game's
    payoffs sum to. A game too big to compile keeps the defaults (the LP's size is then the
    reason)."""
    from nashzoo.eval.answers import no_value_reason
    from nashzoo.eval.lp import constant_sum

    try:
        game = load_game(spec)
        reason = no_value_reason(game)  # compiles the tree, whose constant sum is then kept
    except GameTooLarge:
        return {}
    scale = compile_tree(game).largest_payoff
    if reason is not None:
        return {
            "not_judged": f"seat exploitability needs the game value, and {shown} {reason}",
            "general_sum": True,
            "payoff_scale": scale,
        }
    return {"constant": constant_sum(game) or 0.0, "payoff_scale": scale}


def write_reports(
    config: RaceConfig,
    results: Sequence[dict[str, Any]],
    failures: Sequence[dict[str, Any]],
    skipped: dict[str, str],
    interrupted: bool = False,
    planned: int | None = None,
) -> RaceOutcome:
    """Write results.csv, summary.json, summary.md and the plots from finished runs; outputs
    an earlier race left in the folder that this one does not produce are removed."""
    out = Path(config.out)
    game_id = load_game(config.game).id
    shown = display_id(game_id)  # the whole id is in summary.json and race_config.json
    rows = _rows(results, shown)
    if rows:
        write_csv(out / "results.csv", rows)
    else:
        (out / "results.csv").unlink(missing_ok=True)
    board = leaderboard(rows, config.thresholds)
    current = (_runs_at_a_time(config, planned or len(results)), usable_cpus())
    placements = _placements(results)
    known = [way for way, _ in placements.most_common() if way != NOT_RECORDED]
    side_by_side, cpus = known[0] if known else current
    cross = cross_play(rows)
    markdown = markdown_summary(
        shown,
        board,
        cross,
        thresholds=config.thresholds,
        budget=config.budget_text() + _side_by_side_note(placements, current),
        budget_seconds=config.budget_seconds,
        clock_stopped=_clock_stopped(config, results),
        failures=[{"run_id": f["run_id"], "error": f["error"]} for f in failures],
        **_value_facts(config.game, shown),
    )
    markdown = (
        _partial_note(out, len(results), planned, interrupted) + _code_note(results) + markdown
    )
    markdown += _skipped_section(skipped)
    summary = {
        "format": SUMMARY_FORMAT,
        "game": game_id,
        "budget": config.budget_text(),
        "exploitability_convention": "NashConv / 2",
        "time_to_threshold_means": TIME_TO_MEANS,
        "workers": side_by_side,
        "usable_cpus": cpus,
        "placements": [
            {"runs_at_a_time": w, "usable_cpus": c, "runs": n} for (w, c), n in placements.items()
        ],
        "runs_finished": len(results),
        "runs_failed": len(failures),
        "interrupted": interrupted,
        "runs_planned": planned,
        "leaderboard": [e.to_dict() for e in board],
        "cross_play": None if cross is None else cross.to_dict(),
        "failures": [{"run_id": f["run_id"], "error": f["error"]} for f in failures],
        "skipped": skipped,
        "learner_configs": _learner_configs(results),
        "code": sorted({str(res.get("code", "unknown")) for res in results}),
    }
    atomic_write_bytes(out / "summary.json", json.dumps(summary, indent=1).encode())
    atomic_write_bytes(out / "summary.md", markdown.encode())
    for stale in PLOT_FILES:
        (out / stale).unlink(missing_ok=True)
    if config.plots and rows:
        _plots(
            out,
            rows,
            cross,
            shown,
            config.thresholds,
            _plot_note(results, failures, planned, interrupted),
        )
    return RaceOutcome(
        out, tuple(results), tuple(failures), skipped, summary, markdown, interrupted
    )


SUMMARY_FORMAT = "nashzoo.RaceSummary/2"
"""summary.json's format. 2 (2026-11-28): a threshold's ``mean_seconds``, ``ci95``,
``min_seconds``, ``max_seconds`` and ``reached`` are over the times from which each run *held*
the level (1, untagged: the first time at or below it, now ``first_below_seconds``), and
``work_per_second`` is the median over seeds (1: the mean)."""

TIME_TO_MEANS = (
    "wall-clock training seconds (evaluation excluded) from which a run's exploitability "
    "stayed at or below the threshold to the end of its budget; first_below_seconds: the "
    "first time it was at or below it, held or not"
)
"""What summary.json's times to a threshold are."""


def _runs_at_a_time(config: RaceConfig, num_jobs: int) -> int | None:
    """How many runs this race runs side by side on this machine (``None`` on Ray, whose
    cluster this process does not see)."""
    if config.backend == "ray":
        return None
    return 1 if config.backend == "serial" else race_workers(config, num_jobs)


def _clock_stopped(config: RaceConfig, results: Sequence[dict[str, Any]]) -> tuple[int, int] | None:
    """How many of the runs their seconds budget stopped, where they also had an iteration or
    work budget (``None`` otherwise): those are the runs that do not repeat."""
    if config.budget_seconds is None or (
        config.budget_iterations is None and config.budget_work is None
    ):
        return None
    return sum(res.get("stopped_by") == "seconds" for res in results), len(results)


Placement = tuple[int | None, int | None]
NOT_RECORDED: Placement = (None, None)
"""The way of a run that recorded none: on Ray (its cluster's to say), or written by a nashzoo
from before runs recorded it."""


def _placements(results: Sequence[dict[str, Any]]) -> Counter[Placement]:
    """How many runs went how many at a time on how many usable CPUs, as each run recorded
    it (a race resumed with other workers, with fewer runs left than workers, or on another
    machine, ran its runs differently); :data:`NOT_RECORDED` for a run that recorded none,
    never taken for this invocation's way. (A resume checks what a run recorded,
    ``storage._check_result``, and runs it again if it is not two counts.)"""
    found: Counter[Placement] = Counter()
    for res in results:
        placement = res.get("placement")
        way = (
            NOT_RECORDED
            if placement is None
            else (int(placement["runs_at_a_time"]), int(placement["usable_cpus"]))
        )
        found[way] += 1
    return found


def _side_by_side_note(placements: Counter[Placement], current: tuple[int | None, int]) -> str:
    """The budget line's note of how the runs went side by side: one way for all, or each
    way with its number of runs (``current``: this invocation's way, for a race with no
    finished run, and to tell a race on Ray, which records none, from older runs)."""
    if not placements:
        return _side_by_side(*current)
    if len(placements) == 1:
        (workers, cpus), n = next(iter(placements.items()))
        if cpus is not None:
            return _side_by_side(workers, cpus)
        on_ray = current[0] is None
        return "" if on_ray else f"; {_not_recorded(n)}"
    ways = [
        _not_recorded(n)
        if workers is None or cpus is None
        else f"{n} run{'s' * (n != 1)} {workers} at a time on {cpus} usable CPU{'s' * (cpus != 1)}"
        for (workers, cpus), n in placements.most_common()
    ]
    shared = any(w is not None and c is not None and w > c for w, c in placements)
    return (
        "; the runs went side by side in different ways (a resume runs the runs left with "
        "the workers and CPUs it has): "
        + ", ".join(ways)
        + (" (more runs than CPUs in some: their seconds do not compare)" if shared else "")
    )


def _not_recorded(n: int) -> str:
    """The note's words for ``n`` runs that recorded no placement."""
    return f"{n} run{'s' * (n != 1)} with no placement recorded (on Ray, or by an older nashzoo)"


def _side_by_side(workers: int | None, cpus: int) -> str:
    """The budget line's note of how many runs went side by side on how many usable CPUs
    ("" on Ray)."""
    if workers is None:
        return ""
    shared = " (more runs than CPUs: their seconds do not compare)" if workers > cpus else ""
    return (
        f"; {workers} run{'s' * (workers != 1)} at a time on {cpus} usable "
        f"CPU{'s' * (cpus != 1)}{shared}"
    )


def _partial_note(out: Path, finished: int, planned: int | None, interrupted: bool) -> str:
    """The summary's opening warning when the race was interrupted ("" otherwise)."""
    if not interrupted:
        return ""
    of = "" if planned is None else f" of {planned}"
    return (
        f"> **Partial results**: the race was interrupted after {finished}{of} runs; "
        f"`nashzoo race --resume --out {out}` (from Python: `resume=True`) finishes it.\n\n"
    )


def _code_note(results: Sequence[dict[str, Any]]) -> str:
    """The summary's warning when the runs were timed by different nashzoo code (a race
    resumed after an upgrade or an edit: their seconds do not compare), "" otherwise."""
    codes = Counter(str(res.get("code", "unknown")) for res in results)
    if len(codes) < 2:
        return ""
    shown = ", ".join(
        f"{code} ({n} run{'s' * (n != 1)})"
        for code, n in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return (
        f"> **Timed by different code**: these runs were made by {len(codes)} versions of "
        f"nashzoo's code ({shown}; `unknown`: before runs recorded it), so their seconds, and "
        "the times to each threshold, are not comparable across them. `nashzoo race --force` "
        "with the same options runs the whole race with one code.\n\n"
    )


def _plot_note(
    results: Sequence[dict[str, Any]],
    failures: Sequence[dict[str, Any]],
    planned: int | None,
    interrupted: bool,
) -> str:
    """The plots' title line for a race that is not whole ("" when it is): a plot of an
    interrupted race, or one with failed runs, shows fewer runs (or learners) than were raced."""
    parts = []
    if interrupted:
        of = "" if planned is None else f" of {planned}"
        parts.append(f"partial: interrupted after {len(results)}{of} runs")
    if failures:
        parts.append(f"{len(failures)} run{'s' * (len(failures) != 1)} failed, not drawn")
    return "; ".join(parts) + (" (see summary.md)" if parts else "")


def _skipped_section(skipped: dict[str, str]) -> str:
    """The summary's list of learners that could not play the game ("" when none)."""
    if not skipped:
        return ""
    return "\n## Skipped learners\n\n" + "\n".join(f"- {k}: {v}" for k, v in skipped.items()) + "\n"


def _learner_configs(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each raced label's algorithm and full config, as its runs recorded them."""
    out: dict[str, dict[str, Any]] = {}
    for res in results:
        job = res["job"]
        for seat, label in enumerate(job["learners"]):
            algorithm = (job.get("algorithms") or job["learners"])[seat]
            config = res.get("configs", [{}, {}])[seat]
            out.setdefault(label, {"algorithm": algorithm, "config": config})
    return out


PLOT_FILES = ("exploitability_vs_time.png", "exploitability_vs_work.png", "crossplay_heatmap.png")


def _plots(
    out: Path,
    rows: list[dict[str, Any]],
    cross: CrossPlay | None,
    game_id: str,
    thresholds: Sequence[float] = (),
    note: str = "",
) -> None:
    """The race's PNGs. Each label keeps one line style in both convergence plots (and its
    algorithm's colour in every race's), whichever labels have points in each; the title says
    "output policy", as that is what is evaluated: the average policy, or the last one for the
    RL learners that have no average. ``note`` (:func:`_plot_note`) ends each title."""
    from nashzoo.eval.plots import convergence_plot, curves_from_rows, heatmap, line_styles

    tail = f"\n{note}" if note else ""
    points = [r for r in rows if r["seat"] == 0]
    self_rows = [r for r in points if r["mode"] == "self"]
    styles = line_styles({str(r["learner"]): str(r["algorithm"]) for r in self_rows})
    if self_rows:
        convergence_plot(
            curves_from_rows(self_rows, key="learner", x="wall_seconds"),
            out / PLOT_FILES[0],
            xlabel="training wall time (s, evaluation excluded)",
            title=f"Self-play on {game_id}: exploitability of each learner's output policy{tail}",
            styles=styles,
            thresholds=thresholds,
        )
        worked = [r for r in self_rows if float(r["total_work"]) > 0]  # a plugin may count none
        none: dict[str, list[tuple[list[float], list[float]]]] = {name: [] for name in styles}
        convergence_plot(
            none | curves_from_rows(worked, key="learner", x="total_work"),
            out / PLOT_FILES[1],
            xlabel="work (nodes touched + env steps, both seats)",
            title=f"Self-play on {game_id}: exploitability against work{tail}",
            styles=styles,
            thresholds=thresholds,
        )
    if cross is not None:
        heatmap(
            cross.seat_exploitability,
            cross.learners,
            cross.learners,
            out / PLOT_FILES[2],
            title=f"Cross-play on {game_id}\nseat exploitability of the row learner vs column"
            + f"\n{_spread_caption(cross)}"
            + tail,
            colorbar="seat exploitability (lower is better)",
            log=True,
            missing="no runs",
            diagonal="self-play",
            spread=cross.exploitability_range,
        )


def _spread_caption(cross: CrossPlay) -> str:
    """The heatmap's title line that says what a cell's number and its brackets are, and over
    how many seeds."""
    counts = seed_counts_text(cross)
    if counts.startswith("one seed"):
        return "one seed (both seatings pooled): no spread over seeds"
    return f"mean over {counts} (both seatings pooled); under it: lowest to highest seed"
