"""PNG plots of convergence curves and heatmaps (matplotlib, the ``plot`` extra).

Everything here works on plain data (rows of dicts, arrays), so reports can be re-plotted from a
``results.csv`` without re-running anything. Figures are written atomically.

The ``*_figure`` functions return a ``matplotlib.figure.Figure`` made without pyplot, so a
caller's backend, current figure and open-figure list are left as they were: a notebook shows
one returned from a cell and ``fig.savefig(path)`` writes it anywhere. Such a figure belongs to
no pyplot window; to show one with ``plt.show()`` in a script, or to place it in a figure of
your own, pass ``ax=`` (an Axes of yours, ``fig, ax = plt.subplots()``) and it is drawn there.
"""

from __future__ import annotations

import io
import os
import sys
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nashzoo.extras import require
from nashzoo.io import atomic_write_bytes


def require_matplotlib(otherwise: str = "") -> None:
    """Refuse, before any work, plots that could not be drawn (``otherwise``: the caller's
    way to go on without them)."""
    require("plots", "plot", "matplotlib", otherwise=otherwise)


def _figure(figsize: tuple[float, float], ax: Any = None) -> tuple[Any, Any]:
    """The caller's axes and their figure where given (``ax``); otherwise a figure and its
    axes made without pyplot: the caller's backend (a notebook's inline
    one) is left as it was, and pyplot does not keep the figure open or make it its current
    one. Through pyplot, a race or a plot function in a notebook switched the backend to Agg
    for the rest of the session (the user's own ``plt.show()`` then showed nothing), drew the
    user's next ``plt.plot`` into nashzoo's figure, and left every figure open (matplotlib's
    "More than 20 figures" warning after 20 calls). A Figure needs no backend to be written as
    PNG, and a notebook still displays one returned from a cell."""
    require_matplotlib()
    _import_matplotlib()
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    if ax is not None:
        if not isinstance(ax, Axes):
            raise TypeError(
                f"ax must be a matplotlib Axes (fig, ax = plt.subplots()), got {type(ax).__name__}"
            )
        return ax.figure, ax
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _import_matplotlib() -> Any:
    """matplotlib, imported even where ``MPLBACKEND`` names a backend it does not have (a
    notebook's ``module://matplotlib_inline.backend_inline`` left in a shell's environment):
    its import refuses that, and a race that had run every run then failed on its plots with
    matplotlib's ``Key backend: ... is not a valid value`` naming no variable. nashzoo writes
    PNG files, for which no backend is needed: the variable is set aside for the import, with a
    warning that names it."""
    try:
        import matplotlib
    except ValueError as err:
        backend = os.environ.get("MPLBACKEND")
        if backend is None or "Key backend" not in str(err):
            raise
        warnings.warn(
            f"MPLBACKEND={backend} is not a backend matplotlib has here; nashzoo's plots are "
            "written without it (unset the variable to silence this)",
            stacklevel=3,
        )
        del os.environ["MPLBACKEND"]
        for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
            del sys.modules[name]  # the failed import's parts, half set up
        try:
            import matplotlib
        finally:
            os.environ["MPLBACKEND"] = backend
    return matplotlib


def _save(fig: Any, path: str | os.PathLike[str]) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buffer.getvalue())


def step_curve(xs: Sequence[float], ys: Sequence[float], grid: np.ndarray) -> np.ndarray:
    """The value of the latest point at or before each grid position (``nan`` before the first).

    Exploitability is measured at evaluation points; between two points the learner's output is
    the policy evaluated at the earlier one, so a step function is the honest interpolation.
    """
    xs_arr = np.asarray(xs, dtype=float)
    ys_arr = np.asarray(ys, dtype=float)
    order = np.argsort(xs_arr, kind="stable")
    xs_arr, ys_arr = xs_arr[order], ys_arr[order]
    idx = np.searchsorted(xs_arr, grid, side="right") - 1
    out = np.where(idx >= 0, ys_arr[np.clip(idx, 0, None)], np.nan)
    out[grid > xs_arr[-1] * 1.000001] = np.nan
    return out


# Each built-in learner keeps one colour in every plot (tab10 in name order, as the README's
# plots have it; the two past ten get colours of their own), so a learner is recognised from one
# figure to the next however many others a race holds. A label raced under its own config
# (``nfsp_small=nfsp(...)``) takes a shade of its algorithm's colour with a broken line; an
# algorithm from a plugin takes one of PLUGIN_COLOURS.
LEARNER_COLOURS = {
    "cfr": "#1f77b4",
    "cfr_plus": "#ff7f0e",
    "dcfr": "#2ca02c",
    "deep_cfr": "#d62728",
    "dqn": "#9467bd",
    "es_mccfr": "#8c564b",
    "mmd_ppo": "#e377c2",
    "nfsp": "#7f7f7f",
    "os_mccfr": "#bcbd22",
    "ppo": "#17becf",
    "xfp": "#000000",
    "regret_matching": "#b8860b",
}
PLUGIN_COLOURS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d")
# Broken lines for a second, third, ... label of one algorithm; never plain dots, which the
# convergence plot keeps for "not every run" (a variant drawn dotted read as one).
_VARIANT_STYLES: tuple[Any, ...] = ("--", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)))
# The shades those labels take of their algorithm's colour (negative: towards black, positive:
# towards white). Five shades against four lines: the n-th variant's pair (n mod 5, n-1 mod 4)
# is its own for twenty variants, so a sweep of one algorithm (a1=dcfr(...), ..., a6=...)
# draws no two labels alike.
_VARIANT_SHADES = (0.0, -0.35, 0.4, -0.6, 0.65)
_DARK_SHADES = (0.0, 0.2, 0.4, 0.55, 0.7)
"""The shades of a colour too dark to darken (xfp's black): lighter ones only, each its own."""


def _shade(colour: str, index: int) -> str:
    """``colour`` (``"#rrggbb"``) in shade ``index`` of :data:`_VARIANT_SHADES`: moved that
    amount of the way to white (> 0) or black (< 0); a colour too dark to darken (xfp's black)
    takes :data:`_DARK_SHADES` instead (darkening and lightening it alike made two shades one)."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    amount = (_DARK_SHADES if max(rgb) < 64 else _VARIANT_SHADES)[index]
    target = 255 if amount > 0 else 0
    mixed = [round(c + (target - c) * abs(amount)) for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def line_styles(algorithms: Mapping[str, str]) -> dict[str, tuple[str, Any]]:
    """``{label: (colour, line style)}`` for labels raced as ``{label: algorithm}``.

    A built-in algorithm's label draws in :data:`LEARNER_COLOURS`' colour, solid; other labels
    of the same algorithm draw in shades of that colour with broken lines, no two alike (for up
    to twenty labels of one algorithm). Algorithms
    without a fixed colour share out :data:`PLUGIN_COLOURS` in name order. Pass every label of
    a race (not one plot's), so its plots agree with one another.
    """
    first: dict[str, tuple[str, int]] = {a: (c, 0) for a, c in LEARNER_COLOURS.items()}
    plugins = sorted(set(algorithms.values()) - set(LEARNER_COLOURS))
    for k, algorithm in enumerate(plugins):  # past the palette, colours repeat with broken lines
        first[algorithm] = (PLUGIN_COLOURS[k % len(PLUGIN_COLOURS)], k // len(PLUGIN_COLOURS))
    seen: dict[str, int] = defaultdict(int)
    out: dict[str, tuple[str, Any]] = {}
    # the label named as its algorithm first: it keeps the solid line
    for label in sorted(algorithms, key=lambda name: (name != algorithms[name], name)):
        colour, n = first[algorithms[label]]
        n += seen[algorithms[label]]
        seen[algorithms[label]] += 1
        if n == 0:
            out[label] = (colour, "-")
        else:
            shade = _shade(colour, n % len(_VARIANT_SHADES))
            out[label] = (shade, _VARIANT_STYLES[(n - 1) % len(_VARIANT_STYLES)])
    return out


def convergence_plot(
    curves: Mapping[str, Sequence[tuple[Sequence[float], Sequence[float]]]],
    path: str | os.PathLike[str],
    **kwargs: Any,
) -> None:
    """Write :func:`convergence_figure` of ``curves`` to ``path`` (PNG)."""
    _save(convergence_figure(curves, **kwargs), path)


def convergence_figure(
    curves: Mapping[str, Sequence[tuple[Sequence[float], Sequence[float]]]],
    *,
    xlabel: str,
    ylabel: str = "exploitability (NashConv / 2)",
    title: str = "",
    styles: Mapping[str, tuple[str, Any]] | None = None,
    thresholds: Sequence[float] = (),
    ax: Any = None,
) -> Any:
    """Log-log figure: one line per name, the median across its runs, a band from min to max.

    The median is drawn solid only where every run has a point; where some runs have ended (or
    not yet reached their first point) it is dotted, as it is then the median of fewer runs
    (one run's curve, at the far end of a work axis, where each run stops at its own work).
    The legend sits beside the axes, so it never covers a curve. An exploitability of 0 (an
    exact equilibrium, which a log axis cannot show) is drawn on a marked line below the
    smallest positive value, so a learner that gets there exactly is not left out; a name
    with nothing to draw is listed in the legend as such, and a figure with nothing at all to
    draw says so in its middle.

    Args:
        curves: ``{name: [(xs, ys) for each run (seed)]}``.
        styles: ``{name: (colour, line style)}``, from :func:`line_styles` (by default
            ``curves``' names as algorithms).
        thresholds: exploitability levels drawn as faint horizontal lines (the race's targets).
        ax: a matplotlib Axes of yours to draw on (its figure is returned); by default a new
            figure made without pyplot.
    """
    fig, ax = _figure((8.6, 4.8), ax)
    styles = styles if styles is not None else line_styles({name: name for name in curves})
    positive = [
        x for runs in curves.values() for xs, _ in runs for x in xs if x is not None and x > 0
    ]
    if not positive:  # say so on the figure: a race's report must not fail, nor show blank axes
        ax.text(
            0.5,
            0.5,
            f"nothing to draw: no evaluation point of {', '.join(sorted(curves)) or 'any run'}\n"
            f"has a positive {xlabel}",
            ha="center",
            va="center",
            transform=ax.transAxes,
            wrap=True,
        )
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        return fig
    # each run's own last point on the grid too: a run that ended before the latest one
    # would otherwise lose its final evaluation, the one the race's table reports
    ends = [
        max(x for x in xs if x is not None and x > 0)
        for runs in curves.values()
        for xs, _ in runs
        if any(x is not None and x > 0 for x in xs)
    ]
    grid = np.union1d(np.geomspace(min(positive), max(positive), 200), ends)
    ys_all = [y for runs in curves.values() for _, ys in runs for y in ys]
    floor = _zero_line(ys_all)
    # (line, label) pairs given to the legend explicitly: matplotlib leaves out any label that
    # starts with "_", and a learner's name may
    entries: list[tuple[Any, str]] = []
    for name, runs in sorted(curves.items()):
        stacked = []
        for xs, ys in runs:
            # a negative value is rounding noise around 0; nan (not evaluated) is left out
            pairs = [(x, max(y, floor)) for x, y in zip(xs, ys, strict=True) if x > 0 and y == y]
            if pairs:
                px, py = zip(*pairs, strict=True)
                stacked.append(step_curve(px, py, grid))
        if not stacked:
            entries.append((ax.plot([], [], " ")[0], f"{name}: no point to draw"))
            continue
        data = np.vstack(stacked)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-nan columns give nan
            median = np.nanmedian(data, axis=0)
            low, high = np.nanmin(data, axis=0), np.nanmax(data, axis=0)
        every = np.isfinite(data).all(axis=0)
        # the dotted part overlaps the solid one by a grid point, so the line has no gap
        some = np.convolve((~every).astype(float), [1, 1, 1], mode="same") > 0
        color, style = styles[name]
        (line,) = ax.plot(grid, np.where(every, median, np.nan), color=color, ls=style, lw=1.8)
        entries.append((line, f"{name} ({len(stacked)} run{'s' * (len(stacked) != 1)})"))
        if len(stacked) > 1 and (~every & np.isfinite(median)).any():
            ax.plot(grid, np.where(some, median, np.nan), color=color, ls=":", lw=1.0)
        ax.fill_between(grid, low, high, color=color, alpha=0.18, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if any(y <= floor for y in ys_all):
        ax.axhline(floor, color="0.3", lw=0.8, zorder=0)
        ax.annotate(
            "0: exact equilibrium (drawn on this line)",
            (0.01, floor),
            xycoords=("axes fraction", "data"),
            xytext=(0, 2),
            textcoords="offset points",
            fontsize=7,
            color="0.3",
        )
        ax.set_ylim(bottom=floor / 2)
    for level in thresholds:
        ax.axhline(level, color="0.45", lw=0.8, ls=(0, (1, 3)), zorder=0)
    if thresholds:  # label the levels on the right-hand axis, clear of the curves
        right = ax.secondary_yaxis("right")
        right.set_yticks(list(thresholds), labels=[f"{t:g}" for t in thresholds])
        right.tick_params(labelsize=7, colors="0.35", length=0)
        right.set_ylabel("thresholds", fontsize=7, color="0.35")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    several = any(len(runs) > 1 for runs in curves.values())
    ax.legend(
        [line for line, _ in entries],
        [label for _, label in entries],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.09 if thresholds else 1.01, 1.0),
        title=(
            "median over runs\n(dotted: not every run)\nband: min to max"
            if several
            else "one run each:\nno spread over seeds"
        ),
        title_fontsize=7,
        alignment="left",
    )
    return fig


def _zero_line(values: Sequence[float]) -> float:
    """Where a log axis draws exploitability 0: one and a half decades below the power of ten
    under the smallest positive value (so never on a labelled tick, which would read as that
    value); 10^-3.5 when no value is positive."""
    positive = [v for v in values if v > 0]  # nan compares false: left out
    bottom = np.floor(np.log10(min(positive))) if positive else -2.0
    return float(10 ** (bottom - 1.5))


def _text_colour(rgba: tuple[float, ...]) -> str:
    """Black on light cells, white on dark ones (relative luminance of the cell colour)."""
    red, green, blue = rgba[:3]
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "white"


def short_label(name: str, width: int = 24) -> str:
    """``name`` cut to ``width`` characters with an ellipsis in the middle, so a long entrant
    or learner name (a checkpoint path, a learner spec) labels a tick without squeezing the
    plot; both ends are kept, as names often differ only in a seed or suffix."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "\u2026" + name[len(name) - (width - 1 - head) :]


def _tick_labels(names: Sequence[str]) -> list[str]:
    """:func:`short_label` of each name, or the names in full where shortening makes two alike."""
    short = [short_label(str(name)) for name in names]
    return short if len(set(short)) == len(set(names)) else [str(name) for name in names]


def heatmap(
    matrix: np.ndarray,
    row_names: Sequence[str],
    col_names: Sequence[str],
    path: str | os.PathLike[str],
    **kwargs: Any,
) -> None:
    """Write :func:`heatmap_figure` of ``matrix`` to ``path`` (PNG)."""
    _save(heatmap_figure(matrix, row_names, col_names, **kwargs), path)


def heatmap_figure(
    matrix: np.ndarray,
    row_names: Sequence[str],
    col_names: Sequence[str],
    *,
    title: str,
    colorbar: str,
    cmap: str = "viridis_r",
    fmt: str = "{:.3g}",
    center_zero: bool = False,
    log: bool = False,
    missing: str = "n/a",
    diagonal: str | None = None,
    spread: np.ndarray | None = None,
    ax: Any = None,
) -> Any:
    """Annotated heatmap. A ``nan`` cell (nothing measured) is grey and says ``missing``
    (``diagonal`` on the diagonal, when given: a cross-play matrix has no cell of a learner
    against itself, which is self-play);
    long names are shortened on the ticks (:func:`short_label`); a value that rounds to zero
    is written as zero is (``fmt.format(0.0)``), never ``-0.000`` beside ``+0.000``.

    ``spread`` (``[rows, cols, 2]``, e.g. the lowest and highest seed of each cell) is written
    under each value as ``[low, high]`` in smaller type, where both are numbers (a ``nan``
    pair, as from a single seed, writes nothing); the title is the caller's to say what the
    brackets are. ``ax``: a matplotlib Axes of yours to draw on (its figure is returned, and
    sized as you made it); by default a new figure, sized to the matrix, made without
    pyplot."""
    require_matplotlib()
    matplotlib = _import_matplotlib()
    matrix = np.asarray(matrix, dtype=float)
    spread = None if spread is None else np.asarray(spread, dtype=float)
    if spread is not None and spread.shape != (*matrix.shape, 2):
        raise ValueError(
            f"heatmap spread has shape {spread.shape}; it needs {(*matrix.shape, 2)} "
            "(a low and a high for each cell)"
        )
    wide = 1.5 if spread is not None else 0.9  # room for "[low, high]" under each value
    size = (1.2 + wide * len(col_names), 1.0 + 0.6 * len(row_names))
    fig, ax = _figure((max(5.0, size[0]), max(3.5, size[1])), ax)
    masked = np.ma.masked_invalid(matrix)
    scale: dict[str, Any] = {}
    finite = matrix[np.isfinite(matrix)]
    if log and finite.size and (finite > 0).all() and finite.max() > 10 * finite.min():
        from matplotlib.colors import LogNorm

        scale["norm"] = LogNorm(vmin=finite.min(), vmax=finite.max())
    elif center_zero and np.isfinite(matrix).any():
        bound = float(np.nanmax(np.abs(matrix))) or 1.0
        scale = {"vmin": -bound, "vmax": bound}
    colours = matplotlib.colormaps[cmap].with_extremes(bad="0.9")
    image = ax.imshow(masked, cmap=colours, aspect="auto", **scale)
    ax.set_xticks(range(len(col_names)), labels=_tick_labels(col_names), rotation=35, ha="right")
    ax.set_yticks(range(len(row_names)), labels=_tick_labels(row_names))
    zero = fmt.format(0.0)
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            value = matrix[i, j]
            if not np.isfinite(value):
                note = diagonal if diagonal is not None and i == j else missing
                ax.text(j, i, note, ha="center", va="center", fontsize=7, color="0.4")
                continue
            colour = _text_colour(image.cmap(image.norm(value)))
            pair = None if spread is None else spread[i, j]
            shown = pair is not None and bool(np.isfinite(pair).all())
            # with a spread, the value sits just above the cell's middle and the spread below
            ax.text(
                j,
                i,
                _cell_text(fmt, value, zero),
                ha="center",
                va="bottom" if shown else "center",
                fontsize=8,
                color=colour,
            )
            if shown and pair is not None:
                low, high = (_cell_text(fmt, float(v), zero) for v in pair)
                ax.text(j, i, f"[{low}, {high}]", ha="center", va="top", fontsize=6, color=colour)
    bar = fig.colorbar(image, ax=ax, label=colorbar)
    if "norm" not in scale:
        from matplotlib.ticker import FuncFormatter

        # each tick says its own size: matplotlib's default writes tiny or huge payoffs as
        # multiples of a "1e-7" above the bar, where it runs into the title
        bar.formatter = FuncFormatter(lambda v, _: f"{v:.3g}")
        bar.update_ticks()
    ax.set_title(title)
    return fig


def _cell_text(fmt: str, value: float, zero: str) -> str:
    """``value`` as ``fmt`` writes it, but a value that rounds to zero as zero is written
    (``zero``), never ``-0.000`` beside ``+0.000``."""
    text = fmt.format(value)
    return zero if text.lstrip("+-") == zero.lstrip("+-") else text


def curves_from_rows(
    rows: Sequence[Mapping[str, Any]], *, key: str, x: str, y: str = "exploitability"
) -> dict[str, list[tuple[list[float], list[float]]]]:
    """Group long-form rows into ``{row[key]: [(xs, ys) per run]}`` (runs told apart by
    ``run_id``), the input of :func:`convergence_plot`."""
    grouped: dict[str, dict[str, tuple[list[float], list[float]]]] = defaultdict(dict)
    for row in rows:
        run = grouped[str(row[key])].setdefault(str(row["run_id"]), ([], []))
        run[0].append(float(row[x]))
        run[1].append(float(row[y]))
    return {name: list(runs.values()) for name, runs in grouped.items()}
