"""Figures of the report's over-time and retrieval views: a few series over periods (concentration, dead weight,
tokens per step), bars over ranks (injection rate) and over score bins (the score distribution).

Each takes the plain numbers of its table, so the figure and its numbers table cannot disagree. An axis whose
positive values span more than :data:`LOG_SPAN` (a factor of 100) is drawn on a log scale; shares stay on [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import figure_axes

#: max/min of the positive values above which an axis is logarithmic
LOG_SPAN = 100.0
#: at most this many period labels are written under the x axis (every n-th otherwise)
MAX_TICKS = 12
_MARKERS = ("o", "s", "^", "v", "D", "P")
_STYLES = ("-", "--", ":", "-.")


def wants_log(values: Sequence[float]) -> bool:
    """True when the positive finite ``values`` span more than :data:`LOG_SPAN` (and none is zero or negative)."""
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool((v > 0).all()) and float(v.max() / v.min()) > LOG_SPAN


def _period_ticks(ax: Any, labels: Sequence[str]) -> None:
    every = max(1, -(-len(labels) // MAX_TICKS))
    ticks = list(range(0, len(labels), every))
    ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=30, ha="right", fontsize="small")


def plot_periods(labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, ylabel: str, title: str,
                 share: bool = False, ax: Any = None) -> Any:
    """One line per entry of ``series`` over the periods ``labels``; ``share``: the y axis is [0, 1], else log
    when the values span orders of magnitude. A missing value (None, NaN) leaves a gap."""
    fig, ax = figure_axes(ax, 6.5, 3.4)
    x = np.arange(len(labels))
    every: list[float] = []
    for i, (name, ys) in enumerate(series.items()):
        y = np.array([np.nan if v is None else float(v) for v in ys], dtype=np.float64)
        every += y[np.isfinite(y)].tolist()
        ax.plot(x, y, marker=_MARKERS[i % len(_MARKERS)], linestyle=_STYLES[i % len(_STYLES)], label=name)
    if share:
        ax.set_ylim(-0.02, 1.02)
    elif wants_log(every):
        ax.set_yscale("log")
    _period_ticks(ax, list(labels))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if len(series) > 1:  # right of the axes: under them it would meet the rotated period labels
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return fig


def plot_bars(lefts: Sequence[float], widths: Sequence[float], heights: Sequence[float], *, xlabel: str,
              ylabel: str, title: str, share: bool = False, log_x: bool = False, ax: Any = None) -> Any:
    """Bars from ``lefts`` of ``widths`` and ``heights`` (a histogram, or one bar per rank); ``share``: y on [0, 1],
    else log when the non-zero heights span orders of magnitude; ``log_x``: ranks on a log axis."""
    fig, ax = figure_axes(ax, 6.5, 3.4)
    ax.bar(lefts, heights, width=widths, align="edge", color="C0", edgecolor="white", linewidth=0.5)
    if share:
        ax.set_ylim(0, 1.02)
    elif wants_log([h for h in heights if h > 0]):
        ax.set_yscale("log")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    return fig
