"""The audit's figure: empirical CCDF with the fitted power-law, truncated power-law and log-normal tails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import figure_axes

_GRID_MAX = 2_000_000


def _model_ccdf(fit: Any, xmin: float, grid: np.ndarray, discrete: bool) -> np.ndarray:
    from ..tail.families import logpmf

    if discrete:
        hi = min(float(grid[-1]), xmin + _GRID_MAX)
        xs = np.arange(xmin, hi + 1.0)
        pmf = np.exp(logpmf(fit, xs))
        tail_mass = np.concatenate([[1.0], 1.0 - np.cumsum(pmf)])  # P(X >= xs[k]) for k = 0..len
        idx = np.clip((grid - xmin).astype(np.int64), 0, xs.size)
        return np.clip(tail_mass[idx], 1e-300, 1.0)
    # continuous: integrate the density on a log grid
    xs = np.geomspace(xmin, grid[-1] * 1.0001, 4000)
    dens = np.exp(logpmf(fit, xs))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(xs))])
    return np.clip(1.0 - np.interp(grid, xs, cdf), 1e-300, 1.0)


def plot_audit(result: Any, counts: np.ndarray, *, ax: Any = None) -> Any:
    """The CCDF figure of one audit: data, the fitted power-law, TPL and log-normal tails, x_min."""
    x = np.sort(np.asarray(counts, dtype=np.float64))
    n = x.size
    values, first = np.unique(x, return_index=True)
    ccdf = (n - first) / n  # P(X >= v)
    fig, ax = figure_axes(ax, 7.0, 4.8)
    ax.loglog(values, ccdf, "o", ms=3, color="0.35", label=f"data (n = {n:,})")
    pl = result.power_law
    if pl is not None:
        grid = values[values >= pl.xmin]
        scale = pl.n_tail / n
        curves = [("power law", pl, f"α = {pl.alpha:.2f}", "C0", "-")]
        for fam, color, style in (("truncated_power_law", "C3", "--"), ("lognormal", "C2", ":")):
            f = result.alternatives.get(fam)
            if f is not None:
                desc = ", ".join(f"{k} = {v:.3g}" for k, v in f.params.items())
                curves.append((fam.replace("_", " "), f, desc, color, style))
        for name, fit, desc, color, style in curves:
            ax.loglog(grid, scale * _model_ccdf(fit, pl.xmin, grid, pl.discrete), style, color=color, lw=1.8,
                      label=f"{name} ({desc})")
        ax.axvline(pl.xmin, color="0.6", lw=0.8)
        ax.annotate(f"x_min = {pl.xmin:g}", (pl.xmin, ax.get_ylim()[0]), xytext=(4, 8), textcoords="offset points",
                    fontsize=8, color="0.4")
    v = result.verdict
    ax.set_title(f"Tail audit of {Path(result.label).name if result.label else 'counts'}: {v.verdict}", fontsize=11)
    ax.set_xlabel("accesses per item, x")
    ax.set_ylabel("P(X ≥ x)")
    ax.legend(fontsize=8, loc="lower left")
    return fig
