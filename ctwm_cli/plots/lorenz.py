"""Lorenz curve of per-item access counts, with each curve's Gini coefficient in the legend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import figure_axes
from .bands import BAND, BAND_OVER, band, legend_below, lorenz_grid, outliers

MAX_POINTS = 2000


def lorenz_points(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(share of items, share of accesses), items ordered from least to most accessed, from (0, 0)."""
    asc = np.sort(np.asarray(counts, dtype=np.float64))
    n = asc.size
    y = np.concatenate([[0.0], np.cumsum(asc) / asc.sum()])
    x = np.arange(n + 1) / n
    if n + 1 > MAX_POINTS:
        idx = np.unique(np.linspace(0, n, MAX_POINTS).round().astype(np.int64))
        x, y = x[idx], y[idx]
    return x, y


def draw_lorenz(ax: Any, series: Sequence[tuple[str, np.ndarray, float]], *,
                named: Sequence[int] | None = None) -> None:
    """Draw Lorenz curves of ``(label, counts, gini)`` on ``ax``, with the line of equality: one curve each, or,
    for more than :data:`~.bands.BAND_OVER` series, their median with a 10–90% band and the series ``named``
    (outliers, by index) as curves of their own."""
    series = list(series)
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="equal access (Gini 0)")
    if len(series) > BAND_OVER:
        named = outliers([g for _, _, g in series]) if named is None else named
        x, rows = lorenz_grid([c for _, c, _ in series])
        med, lo, hi = band(rows)
        ginis = np.array([g for _, _, g in series], dtype=np.float64)
        ax.fill_between(x, lo, hi, color="C0", alpha=0.25, linewidth=0,
                        label=f"{BAND[0]:g}th–{BAND[1]:g}th percentile of {len(series)} series")
        ax.plot(x, med, color="C0", linewidth=2, label=f"median (Gini median {np.nanmedian(ginis):.3f})")
        for j, i in enumerate(named):
            label, counts, g = series[i]
            xs, ys = lorenz_points(counts)
            ax.plot(xs, ys, linewidth=1, linestyle=(0, (3, 1 + j)), color=f"C{j + 1}",
                    label=f"outlier: {label} (Gini {g:.3f})")
    else:
        for label, counts, g in series:
            x, y = lorenz_points(counts)
            ax.plot(x, y, linewidth=1.6, label=f"{label} (Gini {g:.3f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("share of items (least to most accessed)")
    ax.set_ylabel("share of accesses")
    ax.set_title("Lorenz curve")
    ax.grid(True, alpha=0.3)
    legend_below(ax)


def plot_lorenz(series: Sequence[tuple[str, np.ndarray, float]], *, ax: Any = None) -> Any:
    """A one-panel Lorenz figure of ``(label, counts, gini)`` series."""
    fig, ax = figure_axes(ax, 5.5, 5.5)
    draw_lorenz(ax, series)
    return fig
