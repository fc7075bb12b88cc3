"""The figure of a replay experiment (paper Figs 5 and 6: the encoding x allocation ablation, the
encodings of one policy; and the policy comparison of Table 3): prompt tokens per step and tail error
per arm, side by side, with the oracle's tail error as the floor a memory could reach."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import figure_axes

_HATCH = {"verbose": "//", "compact": ""}
#: the cost panel is drawn on a log axis when the dearest arm costs this many times the cheapest
LOG_RATIO = 10.0


def plot_replay(res: Any, *, ax: Any = None) -> Any:
    """Two panels of a ``ReplayResult`` (``ax``: two axes): mean tokens per step (whisker to p95) and
    tail error per arm (answerable tail error as a second bar), the oracle's tail error dashed."""
    fig, (left, right) = figure_axes(ax, max(9.0, 1.3 * len(res.arms) + 5.0), 4.8, ncols=2)
    arms = list(res.arms)
    x = np.arange(len(arms))
    colors = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(a.memory for a in arms))}
    for i, a in enumerate(arms):
        left.bar(i, a.tokens_mean, 0.7, color=colors[a.memory], hatch=_HATCH.get(a.encoding, ""), edgecolor="white")
        left.errorbar(i, a.tokens_mean, yerr=[[0], [max(0.0, a.tokens_p95 - a.tokens_mean)]], color="0.3", capsize=3)
        left.annotate(f"{a.tokens_mean:.0f}", (i, a.tokens_mean), xytext=(0, 2), textcoords="offset points",
                      ha="center", va="bottom", fontsize=7)
        for off, val, alpha in ((-0.18, a.tail_error, 1.0), (0.18, a.answerable_tail_error, 0.5)):
            if val is not None:
                right.bar(i + off, val, 0.34, color=colors[a.memory], alpha=alpha,
                          hatch=_HATCH.get(a.encoding, ""), edgecolor="white")
    oracle = next((r for r in res.references if r.name == "oracle" and r.tail_error is not None), None)
    if oracle is not None:
        right.axhline(oracle.tail_error, color="0.3", linestyle="--", linewidth=1,
                      label=f"oracle tail error {oracle.tail_error:.3f} (true transition probabilities)")
    labels = [a.arm for a in arms]
    tilt = len(arms) > 3
    for axis in (left, right):
        axis.set_xticks(x, labels, rotation=30 if tilt else 0, ha="right" if tilt else "center",
                        rotation_mode="anchor" if tilt else "default")
        axis.grid(True, axis="y", alpha=0.3)
    means = [a.tokens_mean for a in arms if a.tokens_mean and a.tokens_mean > 0]
    log = bool(means) and max(means) / min(means) >= LOG_RATIO
    if log:  # one arm's cost (full history) would flatten the rest on a linear axis
        left.set_yscale("log")
        left.grid(True, axis="y", which="both", alpha=0.2)
    left.set_ylabel("prompt tokens per step, log scale (bar: mean, whisker: p95)" if log else
                    "prompt tokens per step (bar: mean, whisker: p95)")
    left.set_title("Cost", fontsize="medium")
    right.set_ylabel("tail error (solid) / answerable tail error (pale)")
    right.set_ylim(0, 1.05)
    right.set_title("Error on the bottom half of states by visits", fontsize="medium")
    if oracle is not None:
        right.legend(loc="upper right", fontsize="small")
    cfg = res.config
    fig.suptitle(f"{res.command}: {cfg.family}, |V| = {cfg.size}, {len(cfg.seeds)} x {cfg.steps:,} steps, "
                 f"budget {cfg.budget}, {res.loop} loop (hatched: verbose encoding)", fontsize="medium")
    return fig
