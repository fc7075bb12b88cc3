"""Paper Fig. 4: the tail audit of several groups (topologies, runs) side by side — α̂ with its standard
error, the bootstrap p_gof against p*, and Vuong's z for TPL vs log-normal against ±z*, each group
coloured by its verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import figure_axes

COLOURS = {"tpl-compatible": "C0", "lognormal-compatible": "C2", "inconclusive": "0.55"}


def _label(r: Any) -> str:
    return Path(r.label).name if r.label and "/" in r.label else (r.label or "counts")


def plot_audit_groups(results: Sequence[Any], *, ax: Any = None) -> Any:
    """Three panels over the groups of ``audit --group-by`` (``ax``: three axes); returns the Figure."""
    # one row per group: the figure grows in height with the groups (54 runs of a grid stay legible)
    fig, (a1, a2, a3) = figure_axes(ax, 11.0, max(4.8, 0.17 * len(results) + 2.2), ncols=3)
    y = np.arange(len(results))[::-1]
    labels = [_label(r) for r in results]
    for yi, r in zip(y, results, strict=True):
        colour = COLOURS.get(r.verdict.verdict, "0.3")
        pl, c = r.power_law, r.tpl_vs_lognormal
        if pl is not None:
            a1.errorbar(pl.alpha, yi, xerr=pl.alpha_se if math.isfinite(pl.alpha_se) else 0, fmt="o", color=colour,
                        capsize=3)
        if r.gof is not None:
            a2.plot(r.p_gof, yi, "o", color=colour)
        if c is not None and math.isfinite(c.z):
            a3.plot(c.z, yi, "o", color=colour)
    s = results[0].settings
    a2.axvline(s.p_star, color="0.4", linestyle="--", linewidth=1, label=f"p* = {s.p_star:g}")
    a3.axvspan(-s.z_star, s.z_star, color="0.85", label=f"|z| < z* = {s.z_star:g}: no preference")
    a3.axvline(0, color="0.4", linewidth=0.8)
    for axis, title, xlabel in ((a1, "power-law exponent", "α̂ ± se (above each group's x_min)"),
                                (a2, "goodness of fit", "bootstrap p_gof"),
                                (a3, "TPL vs log-normal", "Vuong z (> 0 favours TPL)")):
        axis.set_yticks(y, labels if axis is a1 else [""] * len(labels), fontsize=8)
        axis.set_title(title, fontsize="medium")
        axis.set_xlabel(xlabel)
        axis.grid(True, axis="x", alpha=0.3)
    a2.set_xlim(-0.03, 1.03)
    for v, colour in COLOURS.items():
        a1.plot([], [], "o", color=colour, label=v)
    for axis in (a1, a2, a3):  # under each panel, never over a group's marker
        axis.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.08 if len(results) > 20 else -0.14),
                    frameon=False, title="verdict" if axis is a1 else None, title_fontsize="small")
    fig.suptitle(f"Tail audit per group ({len(results)} groups; paper Fig. 4 layout)", fontsize="medium")
    return fig
