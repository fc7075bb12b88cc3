"""Lorenz curve of per-item access counts, with each curve's Gini coefficient in the legend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import MAX_SERIES, figure_axes

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


def draw_lorenz(ax: Any, series: Sequence[tuple[str, np.ndarray, float]]) -> None:
    """Draw Lorenz curves of ``(label, counts, gini)`` on ``ax``, with the line of equality."""
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="equal access (Gini 0)")
    for label, counts, g in list(series)[:MAX_SERIES]:
        x, y = lorenz_points(counts)
        ax.plot(x, y, linewidth=1.6, label=f"{label} (Gini {g:.3f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("share of items (least to most accessed)")
    ax.set_ylabel("share of accesses")
    ax.set_title("Lorenz curve")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")


def plot_lorenz(series: Sequence[tuple[str, np.ndarray, float]], *, ax: Any = None) -> Any:
    """A one-panel Lorenz figure of ``(label, counts, gini)`` series."""
    fig, ax = figure_axes(ax, 5.5, 5.5)
    draw_lorenz(ax, series)
    return fig
