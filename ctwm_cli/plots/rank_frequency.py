"""Rank-frequency plot (log-log) of per-item access counts; with the Lorenz curve as a second panel
it is the figure of ``ctwm concentration --plot``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import figure_axes, series_label
from .bands import BAND, BAND_OVER, band, legend_below, outliers, rank_grid

MAX_POINTS = 2000


def rank_points(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank, count) with rank 1 = most accessed; thinned to log-spaced ranks for large inputs."""
    desc = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    ranks = np.arange(1, desc.size + 1)
    if desc.size > MAX_POINTS:
        idx = np.unique(np.geomspace(1, desc.size, MAX_POINTS).round().astype(np.int64)) - 1
        return ranks[idx], desc[idx]
    return ranks, desc


def draw_rank_frequency(ax: Any, series: Sequence[tuple[str, np.ndarray]], *,
                        named: Sequence[int] | None = None) -> None:
    """Draw ``(label, counts)`` as access count against rank on log-log axes: one line each, or, for more than
    :data:`~.bands.BAND_OVER` series, their median with a 10–90% band and the series ``named`` (outliers, by
    index) as lines of their own."""
    series = list(series)
    if len(series) > BAND_OVER:
        grid, rows = rank_grid([c for _, c in series])
        med, lo, hi = band(rows)
        ax.fill_between(grid, lo, hi, color="C0", alpha=0.25, linewidth=0,
                        label=f"{BAND[0]:g}th–{BAND[1]:g}th percentile of {len(series)} series")
        ax.plot(grid, med, color="C0", linewidth=2, label="median")
        for j, i in enumerate(named or ()):
            r, c = rank_points(series[i][1])
            keep = c > 0
            ax.plot(r[keep], c[keep], linewidth=1, linestyle=(0, (3, 1 + j)), color=f"C{j + 1}",
                    label=f"outlier: {series[i][0]}")
    else:
        for label, counts in series:
            r, c = rank_points(counts)
            keep = c > 0
            ax.plot(r[keep], c[keep], marker=".", markersize=3, linewidth=1, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("item rank (1 = most accessed)")
    ax.set_ylabel("access count")
    ax.set_title("Rank-frequency (log-log)")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax)


def plot_concentration(report: Any, *, ax: Any = None) -> Any:
    """Two panels for a :class:`~ctwm_cli.diagnostics.ConcentrationReport`: rank-frequency and Lorenz
    (``ax``: two axes)."""
    from .lorenz import draw_lorenz

    labels = [series_label(r.source, r.group) for r in report.rows]
    fig, (left, right) = figure_axes(ax, 12.0, 6.0, ncols=2)
    n = len(report.rows)
    named = outliers([r.gini for r in report.rows]) if n > BAND_OVER else None  # by Gini, the same in both panels
    draw_rank_frequency(left, list(zip(labels, report.counts, strict=True)), named=named)
    draw_lorenz(right, [(lab, c, r.gini) for lab, c, r in zip(labels, report.counts, report.rows, strict=True)],
                named=named)
    more = (f" ({n} series: median and band; outliers by Gini named: {len(named)})" if named is not None else "")
    events = ", ".join(report.events)
    fig.suptitle(f"Concentration of per-item access counts ({events} events){more}")
    return fig
