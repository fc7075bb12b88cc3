"""Finite-size trend: σ_top10 against system size per family, with each family's fitted line."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import MAX_SERIES, figure_axes
from .bands import legend_below


def plot_finite_size(report: Any, *, ax: Any = None) -> Any:
    """σ_top10 per size (mean ± sd over runs) for each family of a ``FiniteSizeReport``, and its OLS line."""
    fig, ax = figure_axes(ax, 7.5, 5.8)
    base = {"e": math.e, "10": 10.0, "2": 2.0}[report.log_base]
    logname = {"e": "ln", "10": "log10", "2": "log2"}[report.log_base]
    for i, fam in enumerate(report.families[:MAX_SERIES]):
        color = f"C{i % 10}"
        x = np.array(fam.sizes)
        y = np.array(fam.sigma, dtype=float)
        sd = np.nan_to_num(np.array(fam.sigma_sd, dtype=float))
        ax.errorbar(x, y, yerr=sd, fmt="o", color=color, capsize=3)
        label = fam.family
        if math.isfinite(fam.slope):
            xs = np.geomspace(x.min(), x.max(), 50)
            ax.plot(xs, fam.intercept + fam.slope * np.log(xs) / math.log(base), color=color, linewidth=1.5)
            label = f"{fam.family}: slope {fam.slope:.3f} per {logname}(size), R² {fam.r2:.3f}"
        ax.plot([], [], "o-", color=color, label=label)
        nul = np.array(fam.sigma_null, dtype=float) if fam.sigma_null else np.array([])
        if nul.size and np.isfinite(nul).any():
            ax.plot(x, nul, linestyle=":", marker="x", color=color, linewidth=1.2,
                    label=f"{fam.family}: uniform-access null, slope {fam.slope_null:.3f}")
    ax.set_xscale("log")
    sizes = sorted({s for fam in report.families for s in fam.sizes})
    if 0 < len(sizes) <= 8:
        from matplotlib.ticker import NullFormatter

        ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("system size (log scale)")
    ax.set_ylabel("σ_top10 = sd of ln(count), top decile (mean ± sd over runs)")
    cap = ", ".join(map(str, getattr(report, "store_capacity", ()))) or "unknown"
    ax.set_title(f"Finite-size trend of top-decile concentration (store capacity {cap})\n"
                 f"OLS of σ_top10 on {logname}(size), one line per family")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax)
    return fig
