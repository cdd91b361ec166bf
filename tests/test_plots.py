"""What the plots draw, read back from the matplotlib objects (Agg): labels, scales, legends,
colours, thresholds, exact zeros, missing data. Nothing is timed and nothing is compared by eye."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from nashzoo.agents import UniformLearner
from nashzoo.agents.registry import _REGISTRY, learner_class, learning_learner_names
from nashzoo.eval.plots import (
    LEARNER_COLOURS,
    convergence_figure,
    heatmap_figure,
    line_styles,
    short_label,
)
from nashzoo.train.race import RaceConfig, run_race
from nashzoo.train.race.report import _plot_note

RUN_A = ([1e-3, 1e-2, 1e-1, 1.0], [0.5, 0.1, 0.01, 0.001])
RUN_B = ([1e-3, 1e-2, 1e-1], [0.4, 0.2, 0.02])  # ends sooner (less work, say)


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def _median(fig, name: str):
    """The solid median line of built-in learner ``name`` (told apart by its fixed colour)."""
    return next(
        line
        for line in fig.axes[0].get_lines()
        if line.get_color() == LEARNER_COLOURS[name] and line.get_linewidth() == 1.8
    )


def test_every_built_in_learner_has_its_own_colour():
    built_in = {
        name
        for name in learning_learner_names()
        if learner_class(name).__module__.startswith("nashzoo.")
    }
    assert built_in <= set(LEARNER_COLOURS)
    assert len(set(LEARNER_COLOURS.values())) == len(LEARNER_COLOURS)


def test_a_learner_keeps_its_colour_whatever_else_is_raced():
    """nfsp was grey beside every learner (README) and green beside cfr and cfr_plus: the
    colour came from the learner's place among those in the plot."""
    few = line_styles({"cfr": "cfr", "cfr_plus": "cfr_plus", "nfsp": "nfsp"})
    everyone = line_styles({name: name for name in LEARNER_COLOURS})
    assert few["nfsp"] == everyone["nfsp"] == (LEARNER_COLOURS["nfsp"], "-")
    assert everyone["xfp"][0] != everyone["cfr"][0]  # the 11th learner no longer reuses blue
    # a label raced under its own config: a shade of its algorithm's colour, a broken line
    variants = line_styles({"nfsp": "nfsp", "nfsp_small": "nfsp", "nfsp_big": "nfsp"})
    assert variants["nfsp"] == (LEARNER_COLOURS["nfsp"], "-")
    assert len({variants[k][1] for k in variants}) == 3
    assert len({variants[k][0] for k in variants}) == 3


def test_a_sweep_of_one_algorithm_draws_no_two_labels_alike():
    """Six labels of dcfr: the sixth was drawn exactly as the second (same colour, '--'), and
    the third dotted, as the plot draws the stretch where not every run has a point."""
    for algorithm in ("dcfr", "xfp"):  # xfp: black, whose shades can only be lighter
        for count in (2, 6, 20):
            sweep = line_styles({f"a{k}": algorithm for k in range(count)} | {"cfr": "cfr"})
            assert len(set(sweep.values())) == count + 1
            assert all(style != ":" for _, style in sweep.values())
            assert sweep["cfr"] == (LEARNER_COLOURS["cfr"], "-")
            # the same dash pattern never comes with the same shade of a label before
            for style in {style for _, style in sweep.values()}:
                shades = [colour for colour, s in sweep.values() if s == style]
                assert len(shades) == len(set(shades))
    greys = line_styles({f"a{k}": "xfp" for k in range(7)})
    assert greys["a2"][1] == greys["a6"][1] and greys["a2"][0] != greys["a6"][0]
    assert [greys[f"a{k}"][0] for k in range(3)] == ["#000000", "#333333", "#666666"]
    plugin = line_styles({"mine": "my_plugin_learner", "cfr": "cfr"})
    assert plugin["mine"][0] not in LEARNER_COLOURS.values()


def test_convergence_figure_axes_legend_and_thresholds():
    fig = convergence_figure(
        {"cfr": [RUN_A, RUN_B]},
        xlabel="training wall time (s)",
        title="Self-play on kuhn_poker",
        thresholds=(0.1, 0.001),
    )
    try:
        ax = fig.axes[0]
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        assert ax.get_xlabel() == "training wall time (s)"
        assert ax.get_ylabel() == "exploitability (NashConv / 2)"
        assert ax.get_title() == "Self-play on kuhn_poker"
        legend = ax.get_legend()
        assert _legend_texts(fig) == ["cfr (2 runs)"]
        assert "median" in legend.get_title().get_text()
        assert legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1  # beside, not over
        levels = {line.get_ydata()[0] for line in ax.get_lines() if len(line.get_ydata()) == 2}
        assert {0.1, 0.001} <= levels
        assert _median(fig, "cfr").get_color() == LEARNER_COLOURS["cfr"]
    finally:
        plt.close(fig)


def test_median_line_is_solid_only_where_every_run_has_a_point():
    """Past the end of the shorter run the 'median of 2 runs' was one run's value, drawn as
    the median (NFSP's work curve fell from 0.13 to 0.08 on one seed)."""
    fig = convergence_figure({"cfr": [RUN_A, RUN_B]}, xlabel="work")
    try:
        ax = fig.axes[0]
        solid = _median(fig, "cfr")
        xs, ys = solid.get_xdata(), solid.get_ydata()
        assert np.isfinite(ys).any() and not np.isfinite(ys[xs > 0.1 * 1.01]).any()
        dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
        assert len(dotted) == 1 and np.isfinite(dotted[0].get_ydata()[-1])
    finally:
        plt.close(fig)


def test_an_exact_zero_is_drawn_and_marked():
    """On rps, cfr and cfr_plus (exploitability 0 from their first point) were missing from
    the plot and its legend: a log axis has no 0 and the points were dropped."""
    fig = convergence_figure(
        {"cfr": [([1e-3, 1e-2], [0.0, 0.0])], "xfp": [([1e-3, 1e-2], [0.3, 2e-3])]},
        xlabel="s",
    )
    try:
        ax = fig.axes[0]
        assert _legend_texts(fig) == ["cfr (1 run)", "xfp (1 run)"]
        zero = np.nanmax(_median(fig, "cfr").get_ydata())
        assert 0 < zero < 2e-3 and ax.get_ylim()[0] < zero
        assert any("0: exact equilibrium" in t.get_text() for t in ax.texts)
        assert not any(np.isclose(np.log10(zero), k) for k in range(-20, 1))  # not on a tick
    finally:
        plt.close(fig)


def test_one_run_each_is_not_called_a_median():
    fig = convergence_figure({"cfr": [RUN_A], "dcfr": [RUN_B]}, xlabel="s")
    try:
        assert fig.axes[0].get_legend().get_title().get_text().startswith("one run each")
    finally:
        plt.close(fig)


def test_nothing_to_draw_says_so():
    fig = convergence_figure({"lazy": [([0.0], [0.5])]}, xlabel="work")
    try:
        assert any("nothing to draw" in t.get_text() for t in fig.axes[0].texts)
    finally:
        plt.close(fig)
    fig = convergence_figure({"lazy": [([1.0], [float("nan")])], "cfr": [RUN_A]}, xlabel="s")
    try:
        assert "lazy: no point to draw" in _legend_texts(fig)
    finally:
        plt.close(fig)


def test_heatmap_cells_names_and_zeros():
    long = "mixed_strategy_from_nfsp_run_20261127_seed3"
    names = ["cfr", long, "x"]
    matrix = np.array([[np.nan, -1e-9, 0.5], [1e-9, np.nan, np.nan], [-0.5, 0.2, np.nan]])
    fig = heatmap_figure(
        matrix,
        names,
        names,
        title="t",
        colorbar="payoff",
        fmt="{:+.3f}",
        center_zero=True,
        missing="no runs",
        diagonal="self-play",
    )
    try:
        ax = fig.axes[0]
        cells = {
            (round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts
        }
        assert cells[0, 0] == cells[1, 1] == "self-play" and cells[1, 2] == "no runs"
        assert cells[0, 1] == cells[1, 0] == "+0.000"  # not -0.000 beside +0.000
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels[1] == short_label(long) and len(labels[1]) == 24
        assert labels[1].startswith("mixed_strat") and labels[1].endswith("seed3")
    finally:
        plt.close(fig)
    # names that would shorten alike are shown in full
    twins = ["a" * 30 + "_seed1", "a" * 30 + "_seed2"]
    assert short_label(twins[0]) != short_label(twins[1])
    same = ["b" * 11 + "x" * 20 + "c" * 12, "b" * 11 + "y" * 20 + "c" * 12]
    fig = heatmap_figure(np.eye(2), same, same, title="t", colorbar="c")
    try:
        assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == same
    finally:
        plt.close(fig)


def test_heatmap_writes_each_cells_spread_under_its_value():
    matrix = np.array([[np.nan, 0.1234], [0.02, np.nan]])
    spread = np.array([[[np.nan, np.nan], [0.1, 0.15]], [[np.nan, np.nan], [np.nan, np.nan]]])
    fig = heatmap_figure(
        matrix, ["a", "b"], ["a", "b"], title="t", colorbar="c", spread=spread, diagonal="self"
    )
    try:
        texts = {t.get_text(): t for t in fig.axes[0].texts}
        value, below = texts["0.123"], texts["[0.1, 0.15]"]
        assert value.get_position() == below.get_position() == (1, 0)
        # the value sits above the cell's middle, the spread under it in smaller type
        assert (value.get_va(), below.get_va()) == ("bottom", "top")
        assert below.get_fontsize() < value.get_fontsize()
        # a cell with no spread (one seed) writes its value alone, in the middle
        assert texts["0.02"].get_va() == "center"
        assert sorted(texts) == ["0.02", "0.123", "[0.1, 0.15]", "self"]
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match=r"heatmap spread has shape \(2, 2\); it needs"):
        heatmap_figure(matrix, ["a", "b"], ["a", "b"], title="t", colorbar="c", spread=matrix)


def test_plot_note_names_a_partial_race():
    assert _plot_note([{}], [], None, False) == ""
    note = _plot_note([{}, {}], [{"run_id": "r", "error": "e"}], 6, True)
    assert note == (
        "partial: interrupted after 2 of 6 runs; 1 run failed, not drawn (see summary.md)"
    )


class _NoWorkLearner(UniformLearner):
    """A plugin that reports no work: the race's work plot has no point to draw."""

    name = "_no_work_for_plot_tests"

    def _step(self, opponent):
        return {}


def test_race_with_a_learner_that_counts_no_work_writes_its_plots(tmp_path, monkeypatch):
    """The race trained every run, then failed writing its reports: 'nothing to plot: no
    positive x values' from the work plot."""
    from nashzoo.agents.registry import register

    register(_NoWorkLearner)
    captured = {}
    from nashzoo.eval import plots

    real = plots.convergence_figure

    def spy(curves, **kw):
        fig = real(curves, **kw)
        captured[kw["xlabel"]] = (fig.axes[0].get_title(), _legend_texts(fig))
        return fig

    monkeypatch.setattr(plots, "convergence_figure", spy)
    try:
        cfg = RaceConfig(
            game="kuhn_poker",
            learners=("cfr", _NoWorkLearner.name),
            seeds=1,
            budget_seconds=None,
            budget_iterations=3,
            out=str(tmp_path / "race"),
            backend="serial",
            plots=True,
        )
        outcome = run_race(cfg, progress=False)
    finally:
        _REGISTRY.pop(_NoWorkLearner.name, None)
    out = Path(cfg.out)
    assert not outcome.failures
    assert (out / "exploitability_vs_work.png").exists()
    title, _ = captured["training wall time (s, evaluation excluded)"]
    assert "output policy" in title and "average policy" not in title
    _, legend = captured["work (nodes touched + env steps, both seats)"]
    assert legend == [f"{_NoWorkLearner.name}: no point to draw", "cfr (1 run)"]
    assert json.loads((out / "summary.json").read_text())["runs_finished"] == 2


def test_each_runs_last_evaluation_is_drawn():
    """A run that ended before the latest one lost its final evaluation from the plot (the grid
    stepped past its end), the number the race's table reports: RUN_B's 0.02 at 0.1 was never
    drawn, in the median or the band."""
    fig = convergence_figure({"cfr": [RUN_A, RUN_B]}, xlabel="work")
    try:
        solid = _median(fig, "cfr")
        xs, ys = np.asarray(solid.get_xdata()), np.asarray(solid.get_ydata())
        at_end = np.isclose(xs, 0.1)
        assert at_end.any() and ys[at_end][0] == pytest.approx((0.01 + 0.02) / 2)
    finally:
        plt.close(fig)


def test_the_plots_leave_pyplot_and_its_backend_alone():
    """In a notebook a race's plots switched the session to Agg (the user's own plt.show()
    then showed nothing), became pyplot's current figure and stayed open: 25 calls left 26."""
    plt.switch_backend("svg")
    try:
        before = plt.get_fignums()
        for _ in range(3):
            convergence_figure({"cfr": [RUN_A]}, xlabel="s")
            heatmap_figure(np.ones((2, 2)), ["a", "b"], ["a", "b"], title="t", colorbar="c")
        assert matplotlib.get_backend() == "svg"
        assert plt.get_fignums() == before
    finally:
        plt.switch_backend("Agg")


def test_the_plots_draw_on_the_callers_axes_so_plt_show_shows_them():
    """A figure made without pyplot belongs to no pyplot window: in a script, ``plt.show()``
    showed nothing and there was no way to put a plot in a figure of one's own. ``ax=`` now
    draws on the caller's axes (here two panels of one pyplot figure)."""
    fig, (left, right) = plt.subplots(1, 2)
    try:
        drawn = convergence_figure({"cfr": [RUN_A]}, xlabel="s", ax=left)
        assert drawn is fig and fig.number in plt.get_fignums()  # pyplot's, so shown
        assert left.get_xscale() == "log" and _median(fig, "cfr") in left.get_lines()
        heatmap = heatmap_figure(
            np.eye(2), ["a", "b"], ["a", "b"], title="t", colorbar="c", ax=right
        )
        assert heatmap is fig
        assert right.get_title() == "t" and len(right.images) == 1
        assert len(fig.axes) == 3  # the two panels and the heatmap's colour bar
    finally:
        plt.close(fig)
    with pytest.raises(TypeError, match=r"ax must be a matplotlib Axes \(fig, ax = plt"):
        convergence_figure({"cfr": [RUN_A]}, xlabel="s", ax="left")
