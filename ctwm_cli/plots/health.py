"""Memory health: live store size over time (with its fitted line) and success rate vs memory volume."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import figure_axes


def plot_health(report: Any, *, ax: Any = None) -> Any:
    """Growth curve of a ``HealthReport``; beside it the success-vs-volume curve when outcomes exist
    (``ax``: one axes for the growth curve only, or two)."""
    curve = report.success_curve
    ncols = 2 if curve is not None and curve.bins else 1
    if ax is not None and not (isinstance(ax, (list, tuple)) or hasattr(ax, "shape")):
        ncols = 1  # one axes given: the growth curve
    fig, axes = figure_axes(ax, 11.0 if ncols == 2 else 7.0, 4.5, ncols=ncols)
    ax = axes[0] if ncols == 2 else axes
    g = report.growth
    series = np.array(report.growth_series, dtype=float).reshape(-1, 2)
    if series.size:
        t0 = series[0, 0]
        x = series[:, 0] - t0 if g.time_unit == "second" else series[:, 0]
        ax.step(x, series[:, 1], where="post", color="C0", linewidth=1.2, label="live store size")
        if math.isfinite(g.slope):
            xm, ym = float(np.mean(x)), float(np.mean(series[:, 1]))
            xs = np.array([x.min(), x.max()])
            ax.plot(xs, ym + g.slope * (xs - xm), color="C3", linestyle="--", linewidth=1.2,
                    label=f"OLS slope {g.slope:.3g} items/{g.time_unit}")
    unit = "seconds since the first row" if g.time_unit == "second" else g.time_unit
    ax.set_xlabel(unit)
    ax.set_ylabel("live memory items")
    ax.set_title(f"Store-size growth: {g.classification}\n{_wrap(g.reason)}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    if ncols == 2:
        ax2 = axes[1]
        vm = [b.volume_mean for b in curve.bins]
        sr = [b.success_rate for b in curve.bins]
        n = [b.tasks for b in curve.bins]
        ax2.plot(vm, sr, "o-", color="C0", label="success rate per volume bin")
        for xv, yv, k in zip(vm, sr, n, strict=True):
            ax2.annotate(str(k), (xv, yv), textcoords="offset points", xytext=(0, 5), ha="center", fontsize="x-small")
        if curve.inflection_volume is not None:
            ax2.axvline(curve.inflection_volume, color="C3", linestyle="--",
                        label=f"inflection at {curve.inflection_volume:g} items\n"
                              f"slope {curve.slope_before:.3g} before, {curve.slope_after:.3g} after")
        ax2.set_ylim(-0.05, 1.05)
        ax2.set_xlabel("live store size at task start")
        ax2.set_ylabel("task success rate")
        ax2.set_title(f"Success vs memory volume ({curve.tasks} tasks; bin sizes annotated)", fontsize="medium")
        ax2.grid(True, alpha=0.3)
        ax2.legend(loc="best", fontsize="small")
    return fig


def _wrap(text: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
