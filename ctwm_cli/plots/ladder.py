"""The retriever ladder (paper Fig. 3): Gini of per-transition memory accesses for each retriever on each
graph family, as grouped bars, so a reader sees without the terminal how much concentration the
retriever itself creates."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import figure_axes

#: what each rung is, in the legend
RUNGS = {
    "uniform-frequency": "uniform reservoir, frequency-sorted",
    "state-frequency": "state-aware, frequency-sorted",
    "state-uniform": "state-aware, non-preferential",
    "none": "no retrieval (writes only)",
}


def plot_ladder(ladder: Any, *, ax: Any = None) -> Any:
    """Grouped bars of Gini per family (groups) and retriever (bars) of a ``world ladder`` result, each bar
    labelled with its value; returns the Figure."""
    families = list(dict.fromkeys(r.family for r in ladder.rows))
    retrievers = list(dict.fromkeys(r.retriever for r in ladder.rows))
    gini = {(r.family, r.retriever): r.gini for r in ladder.rows}
    fig, ax = figure_axes(ax, max(8.5, 1.6 * len(families) + 2.5), 5.4)
    width = 0.8 / max(1, len(retrievers))
    x = np.arange(len(families))
    for j, ret in enumerate(retrievers):
        vals = [gini.get((f, ret)) for f in families]
        heights = [v if v is not None else 0.0 for v in vals]
        bars = ax.bar(x + (j - (len(retrievers) - 1) / 2) * width, heights, width * 0.95, color=f"C{j % 10}",
                      label=f"{ret}: {RUNGS.get(ret, ret)}")
        for b, v in zip(bars, vals, strict=True):
            ax.annotate("n/a" if v is None else f"{v:.2f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, families, rotation=15 if len(families) > 4 else 0)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("Gini of accesses per transition\n(0 = all equal, 1 = one item takes all)")
    sizes = sorted({r.size for r in ladder.rows})
    ax.set_title(f"Retriever ladder (paper Fig. 3): how much concentration does the retriever alone create?\n"
                 f"{ladder.policy} agent, |V| = {', '.join(map(str, sizes))}, {ladder.steps:,} steps, "
                 f"top-k = {ladder.k}, store capacity {ladder.capacity}; counts = retrieve + write events",
                 fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize="small", frameon=False,
              title="retriever (ladder rung)", title_fontsize="small")
    return fig
