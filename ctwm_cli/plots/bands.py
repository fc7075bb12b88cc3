"""Many series as one: the median across series with a band (the 10th to 90th percentile), and the series outside
Tukey's fences named and drawn on their own. A grid of 54 runs drawn as 54 lines is a tangle no one reads (and a
megabyte of SVG); the median and its band show the shape, the named outliers show who departs from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: more series than this are drawn as a median with a band instead of one line each
BAND_OVER = 6
#: percentiles of the band
BAND = (10.0, 90.0)
#: Tukey's fence factor (outliers lie beyond Q1 - k IQR or Q3 + k IQR)
FENCE = 1.5
#: at most this many outliers are drawn and named (the most extreme first)
MAX_OUTLIERS = 5
GRID_POINTS = 200


def outliers(stat: Sequence[float], *, fence: float = FENCE, limit: int = MAX_OUTLIERS) -> list[int]:
    """Indices of the values beyond Tukey's fences, most extreme (distance past the fence) first, at most ``limit``."""
    v = np.asarray(stat, dtype=np.float64)
    ok = np.isfinite(v)
    if ok.sum() < 4:
        return []
    q1, q3 = np.percentile(v[ok], [25.0, 75.0])
    lo, hi = q1 - fence * (q3 - q1), q3 + fence * (q3 - q1)
    past = np.where(ok, np.maximum(lo - v, v - hi), -np.inf)
    idx = [int(i) for i in np.argsort(-past, kind="stable") if past[i] > 0]
    return idx[:limit]


def band(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(median, low, high) over the rows of ``rows`` (series x points), ignoring NaN (a series that has no value
    at a point); a point no series reaches is NaN."""
    rows = np.asarray(rows, dtype=np.float64)
    out = np.full((3, rows.shape[1]), np.nan)
    have = np.isfinite(rows).any(axis=0)
    if have.any():
        sub = rows[:, have]
        out[0, have] = np.nanmedian(sub, axis=0)
        out[1, have], out[2, have] = np.nanpercentile(sub, BAND, axis=0)
    return out[0], out[1], out[2]


def rank_grid(series: Sequence[np.ndarray], points: int = GRID_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Log-spaced ranks 1..(longest series) and each series' count at them (log-interpolated between ranks; NaN
    past its last item)."""
    desc = [np.sort(np.asarray(c, dtype=np.float64))[::-1] for c in series]
    desc = [d[d > 0] for d in desc]
    longest = max((d.size for d in desc), default=1)
    grid = np.unique(np.geomspace(1, max(longest, 1), points))
    rows = np.full((len(desc), grid.size), np.nan)
    for i, d in enumerate(desc):
        if d.size:
            r = np.arange(1, d.size + 1, dtype=np.float64)
            inside = grid <= d.size
            rows[i, inside] = np.exp(np.interp(np.log(grid[inside]), np.log(r), np.log(d)))
    return grid, rows


def lorenz_grid(series: Sequence[np.ndarray], points: int = GRID_POINTS + 1) -> tuple[np.ndarray, np.ndarray]:
    """Shares of items 0..1 and each series' Lorenz curve at them (linear interpolation)."""
    x = np.linspace(0.0, 1.0, points)
    rows = np.full((len(series), x.size), np.nan)
    for i, c in enumerate(series):
        asc = np.sort(np.asarray(c, dtype=np.float64))
        if asc.size and asc.sum() > 0:
            y = np.concatenate([[0.0], np.cumsum(asc) / asc.sum()])
            rows[i] = np.interp(x, np.arange(asc.size + 1) / asc.size, y)
    return x, rows


def legend_below(ax: Any, *, ncol: int = 2) -> None:
    """The legend under the axes, never over the data."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize="small", ncol=ncol, frameon=False)
