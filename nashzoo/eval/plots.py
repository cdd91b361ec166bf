"""PNG plots of convergence curves and heatmaps (matplotlib, the ``plot`` extra).

Everything here works on plain data (rows of dicts, arrays), so reports can be re-plotted from a
``results.csv`` without re-running anything. Figures are written atomically and closed.
"""

from __future__ import annotations

import io
import os
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


def _pyplot() -> Any:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str]) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    atomic_write_bytes(path, buffer.getvalue())
    _pyplot().close(fig)


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


def convergence_plot(
    curves: Mapping[str, Sequence[tuple[Sequence[float], Sequence[float]]]],
    path: str | os.PathLike[str],
    *,
    xlabel: str,
    ylabel: str = "exploitability (NashConv / 2)",
    title: str = "",
) -> None:
    """Log-log plot: one line per name (median across its runs), a band from min to max.

    Args:
        curves: ``{name: [(xs, ys) for each run (seed)]}``.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    positive = [
        x for runs in curves.values() for xs, _ in runs for x in xs if x is not None and x > 0
    ]
    if not positive:
        raise ValueError("nothing to plot: no positive x values")
    grid = np.geomspace(min(positive), max(positive), 200)
    colors = plt.get_cmap("tab10")
    for k, (name, runs) in enumerate(sorted(curves.items())):
        stacked = []
        for xs, ys in runs:
            pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
            if pairs:
                px, py = zip(*pairs, strict=True)
                stacked.append(step_curve(px, py, grid))
        if not stacked:
            continue
        data = np.vstack(stacked)
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                median = np.nanmedian(data, axis=0)
                low, high = np.nanmin(data, axis=0), np.nanmax(data, axis=0)
        # Ten colours; past ten curves the line style changes, so no two curves look alike.
        color, style = colors(k % 10), ("-", "--", ":", "-.")[k // 10 % 4]
        ax.plot(
            grid,
            median,
            label=f"{name} ({len(stacked)} run{'s' * (len(stacked) != 1)})",
            color=color,
            ls=style,
            lw=1.8,
        )
        ax.fill_between(grid, low, high, color=color, alpha=0.18, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="best")
    _save(fig, path)


def _text_colour(rgba: tuple[float, ...]) -> str:
    """Black on light cells, white on dark ones (relative luminance of the cell colour)."""
    red, green, blue = rgba[:3]
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "white"


def heatmap(
    matrix: np.ndarray,
    row_names: Sequence[str],
    col_names: Sequence[str],
    path: str | os.PathLike[str],
    *,
    title: str,
    colorbar: str,
    cmap: str = "viridis_r",
    fmt: str = "{:.3g}",
    center_zero: bool = False,
    log: bool = False,
) -> None:
    """Annotated heatmap (``nan`` cells left blank)."""
    plt = _pyplot()
    matrix = np.asarray(matrix, dtype=float)
    size = (1.2 + 0.9 * len(col_names), 1.0 + 0.6 * len(row_names))
    fig, ax = plt.subplots(figsize=(max(5.0, size[0]), max(3.5, size[1])))
    masked = np.ma.masked_invalid(matrix)
    kwargs: dict[str, Any] = {}
    finite = matrix[np.isfinite(matrix)]
    if log and finite.size and (finite > 0).all() and finite.max() > 10 * finite.min():
        from matplotlib.colors import LogNorm

        kwargs["norm"] = LogNorm(vmin=finite.min(), vmax=finite.max())
    elif center_zero and np.isfinite(matrix).any():
        bound = float(np.nanmax(np.abs(matrix))) or 1.0
        kwargs = {"vmin": -bound, "vmax": bound}
    image = ax.imshow(masked, cmap=cmap, aspect="auto", **kwargs)
    ax.set_xticks(range(len(col_names)), labels=list(col_names), rotation=35, ha="right")
    ax.set_yticks(range(len(row_names)), labels=list(row_names))
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            if np.isfinite(matrix[i, j]):
                ax.text(
                    j,
                    i,
                    fmt.format(matrix[i, j]),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=_text_colour(image.cmap(image.norm(matrix[i, j]))),
                )
    fig.colorbar(image, ax=ax, label=colorbar)
    ax.set_title(title)
    _save(fig, path)


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
