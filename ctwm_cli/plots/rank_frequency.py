"""Rank-frequency plot (log-log) of per-item access counts; with the Lorenz curve as a second panel
it is the figure of ``ctwm concentration --plot``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import MAX_SERIES, figure_axes, series_label

MAX_POINTS = 2000


def rank_points(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank, count) with rank 1 = most accessed; thinned to log-spaced ranks for large inputs."""
    desc = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    ranks = np.arange(1, desc.size + 1)
    if desc.size > MAX_POINTS:
        idx = np.unique(np.geomspace(1, desc.size, MAX_POINTS).round().astype(np.int64)) - 1
        return ranks[idx], desc[idx]
    return ranks, desc


def draw_rank_frequency(ax: Any, series: Sequence[tuple[str, np.ndarray]]) -> None:
    """Draw ``(label, counts)`` as access count against rank on log-log axes."""
    for label, counts in list(series)[:MAX_SERIES]:
        r, c = rank_points(counts)
        keep = c > 0
        ax.plot(r[keep], c[keep], marker=".", markersize=3, linewidth=1, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("item rank (1 = most accessed)")
    ax.set_ylabel("access count")
    ax.set_title("Rank-frequency (log-log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")


def plot_concentration(report: Any, *, ax: Any = None) -> Any:
    """Two panels for a :class:`~ctwm_cli.diagnostics.ConcentrationReport`: rank-frequency and Lorenz
    (``ax``: two axes)."""
    from .lorenz import draw_lorenz

    labels = [series_label(r.source, r.group) for r in report.rows]
    fig, (left, right) = figure_axes(ax, 12.0, 5.5, ncols=2)
    draw_rank_frequency(left, list(zip(labels, report.counts, strict=True)))
    draw_lorenz(right, [(lab, c, r.gini) for lab, c, r in zip(labels, report.counts, report.rows, strict=True)])
    n = len(report.rows)
    more = f" (first {MAX_SERIES} of {n} shown)" if n > MAX_SERIES else ""
    events = ", ".join(report.events)
    fig.suptitle(f"Concentration of per-item access counts ({events} events){more}")
    return fig
