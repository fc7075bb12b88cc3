"""Paper Fig. 8: token reduction of CTWM against Graph Memory per benchmark configuration, with the
paired bootstrap interval, as a forest plot (``ctwm bench report --plot``)."""

from __future__ import annotations

import textwrap
from typing import Any

from . import figure_axes


def _bounds(row: Any) -> tuple[float, float]:
    """The reduction's interval, or the reduction itself at both ends when none was formed."""
    ci = row.reduction_confidence_interval
    return (row.reduction, row.reduction) if ci is None else (ci.low, ci.high)


def plot_bench_report(report: Any, *, ax: Any = None) -> Any:
    """One row per comparison of a ``BenchReport``: reduction 1 - tokens(CTWM)/tokens(Graph) in percent,
    its interval as a whisker, zero dashed; the parity metric's change and the quality difference (with
    its interval) are written at the right."""
    rows = [r for r in report.results if r.reduction is not None]
    fig, ax = figure_axes(ax, 10.0, max(3.0, 0.7 * len(rows) + 1.6))
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        lo, hi = _bounds(r)
        ax.errorbar(100 * r.reduction, y, xerr=[[100 * (r.reduction - lo)], [100 * (hi - r.reduction)]], fmt="o",
                    color="C0" if r.reduction >= 0 else "C3", capsize=3)
        parity = "" if r.parity_delta is None else f"; Δ {r.parity_metric} {r.parity_delta:+.3f}"
        if r.quality_delta is not None:  # the quality that comes with the saving, with its interval
            q = r.quality_confidence_interval
            ci = "" if q is None else f" [{q.low:+.3f}, {q.high:+.3f}]"
            parity += f"\nΔ {r.quality_metric.replace('_', ' ')} {r.quality_delta:+.3f}{ci}"
        ax.annotate(f"{100 * r.reduction:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}]{parity}\n{r.treatment} vs "
                    f"{r.baseline}, n = {r.n:,} {r.units}", (100 * hi, y), xytext=(8, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [textwrap.fill(r.configuration, 28) for r in reversed(rows)], fontsize=8)
    ax.axvline(0, color="0.5", linestyle="--", linewidth=1)
    ax.set_xlabel("token reduction 1 − tokens(CTWM) / tokens(Graph Memory), %\n(whisker: paired bootstrap interval)")
    ax.set_title("CTWM against Graph Memory across workloads (paper Fig. 8 / Table 5)", fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    lows = [100 * _bounds(r)[0] for r in rows] or [0.0]
    highs = [100 * _bounds(r)[1] for r in rows] or [0.0]
    lo, hi = min(0.0, *lows), max(0.0, *highs)
    span = max(hi - lo, 1.0)
    ax.set_xlim(lo - 0.1 * span, hi + 1.2 * span)  # room on the right for the labels
    ax.set_ylim(-0.6, len(rows) - 0.4)
    return fig
