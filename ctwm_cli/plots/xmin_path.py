"""Paper Appendix D: α̂ against τ (with the Zipf reference 1 + 1/τ) and, beside it, the selected cutoff
x_min against τ, one point per replicate, so the two can be read together."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import figure_axes


def plot_xmin_path(res: Any, *, ax: Any = None) -> Any:
    """Two panels of an :class:`~ctwm_cli.diagnostics.xmin_path.XminPath` (``ax``: two axes)."""
    fig, (left, right) = figure_axes(ax, 11.0, 4.6, ncols=2)
    taus = np.array([s.tau for s in res.steps])
    fitted = [r for r in res.runs if r.alpha is not None]
    jitter = {r.replicate: (r.replicate - (res.replicates - 1) / 2) * 0.008 for r in res.runs}
    left.plot(np.linspace(taus.min(), taus.max(), 100), 1 + 1 / np.linspace(taus.min(), taus.max(), 100),
              color="0.5", linestyle="--", label="Zipf limit α = 1 + 1/τ")
    left.scatter([r.tau + jitter[r.replicate] for r in fitted], [r.alpha for r in fitted], s=14, color="C0",
                 alpha=0.7, label=f"α̂ per replicate ({res.replicates} per τ)")
    left.plot(taus, [s.alpha_mean for s in res.steps], color="C0", marker="o", label="mean α̂")
    left.set_xlabel("allocation exponent τ")
    left.set_ylabel("α̂ (discrete MLE above the selected x_min)")
    left.set_title("Clauset α̂ across the τ scan", fontsize="medium")
    left.grid(True, alpha=0.3)
    left.legend(fontsize="small")
    right.scatter([r.tau + jitter[r.replicate] for r in fitted], [r.xmin for r in fitted], s=14, color="C3",
                  alpha=0.7, label="x_min per replicate")
    right.plot(taus, [s.xmin_median for s in res.steps], color="C3", marker="s", label="median x_min")
    right.set_yscale("log")
    right.set_xlabel("allocation exponent τ")
    right.set_ylabel("selected cutoff x_min (accesses, log scale)")
    right.set_title(f"…and the cutoff it was fitted above (Spearman α̂ vs x_min: {res.alpha_xmin_spearman:.2f})",
                    fontsize="medium")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize="small")
    fig.suptitle(f"Appendix D: α̂ and the selected cutoff x_min across a τ scan — {res.n_events:,} accesses from "
                 f"b(r; τ) over {res.n_items:,} items per replicate; min tail {res.min_tail}", fontsize="medium")
    return fig
