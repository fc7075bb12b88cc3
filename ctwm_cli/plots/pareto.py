"""Figure: mean prompt tokens against answerable tail error per memory policy over a budget sweep
(``ctwm replay pareto``), with the bootstrap intervals as error bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import figure_axes

if TYPE_CHECKING:  # pragma: no cover
    from ..replay import ParetoResult


def plot_pareto(res: ParetoResult, *, ax: Any = None) -> Any:
    """One line per series (budgets in order), tokens on x, answerable tail error on y."""
    fig, ax = figure_axes(ax, 6.5, 4.2)
    for label in dict.fromkeys(p.arm for p in res.points):
        pts = [p for p in res.points if p.arm == label and p.answerable_tail_error is not None]
        if not pts:
            continue
        x = [p.tokens_mean for p in pts]
        y = [p.answerable_tail_error for p in pts]
        cis = [p.answerable_tail_error_confidence_interval for p in pts]
        yerr = [[max(0.0, v - (v if ci is None else ci.low)) for v, ci in zip(y, cis, strict=True)],
                [max(0.0, (v if ci is None else ci.high) - v) for v, ci in zip(y, cis, strict=True)]]
        ax.errorbar(x, y, yerr=yerr, marker="o", capsize=3, label=label)
        for p in pts:
            ax.annotate(str(p.budget), (p.tokens_mean, p.answerable_tail_error), fontsize="x-small",
                        textcoords="offset points", xytext=(3, 3))
    cfg = res.config
    ax.set_title(f"{cfg.family}, |V|={cfg.size}, {len(cfg.seeds)} x {cfg.steps:,} steps ({res.loop} loop)")
    ax.set_xlabel("prompt tokens per step (mean)")
    ax.set_ylabel("answerable tail error")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig
