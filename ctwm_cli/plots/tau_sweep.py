"""Figure: core mass and Gini of the CTWM allocation against τ (and, for a trace, accesses served).

Built with the shared helpers of :mod:`ctwm_cli.plots` (object-oriented matplotlib, imported only
when a figure is drawn; no pyplot, no global backend state).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..common.errors import UsageError
from . import figure_axes

if TYPE_CHECKING:  # pragma: no cover
    from ..allocation import TauSweep, TraceSimulation


def plot_tau_sweep(sweep: TauSweep | None, *, trace: TraceSimulation | None = None, ax: Any = None) -> Any:
    """Core mass C(K, τ) and Gini against τ (paper Fig. 7); with ``trace`` add the share of accesses
    served in the prompt and summarised (a per-step trace has no single allocation: ``sweep`` may then
    be ``None``)."""
    if sweep is None and trace is None:
        raise UsageError("plot_tau_sweep needs a sweep or a trace simulation", params=("sweep", "trace"))
    fig, ax = figure_axes(ax, 6.5, 4.2)
    if sweep is not None:
        taus = [r.tau for r in sweep.results]
        ax.plot(taus, [r.core_mass for r in sweep.results], marker="o", label=f"core mass C(K={sweep.core}, τ)")
        ax.plot(taus, [r.gini for r in sweep.results], marker="s", label="Gini of b(·; τ)")
        ax.set_title(f"CTWM allocation, M={sweep.n_items:,}, K={sweep.core}, B={sweep.budget:,}")
    if trace is not None:
        taus = [r.tau for r in trace.results]
        ax.plot(taus, [r.access_share_prompt for r in trace.results], marker="^", linestyle="--",
                label="accesses served in the prompt")
        ax.plot(taus, [r.access_share_summarised for r in trace.results], marker="v", linestyle=":",
                label="accesses summarised (tail)")
        if sweep is None:
            ax.set_title(f"CTWM on {Path(trace.source).name} (per-step ranks), K={trace.core}, B={trace.budget:,}")
    ax.set_xlabel("τ")
    ax.set_ylabel("share")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig
