"""The over-time and retrieval views drawn: each table of :mod:`.views` (and dead weight over time,
:mod:`.deadweight_time`) as an inline SVG figure with its finding in the alt text and the table as its numbers.
The figure is drawn from the table's own rows (:mod:`ctwm_cli.plots.over_time`), so the two cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..common.inert import visible
from ..plots.over_time import plot_bars, plot_periods
from .model import Figure, Table
from .svg import draw_svg

#: ranks beyond this are drawn on a log axis
LOG_RANKS = 20


def _col(t: Table, name: str) -> list[Any]:
    i = t.columns.index(name)
    return [r[i] for r in t.rows]


def _labels(t: Table) -> list[str]:
    return [visible(str(p)) for p in _col(t, "period")]


def _range(t: Table, name: str, pct: bool = True) -> str:
    vals = [(v, p) for v, p in zip(_col(t, name), _col(t, "period"), strict=True)
            if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return "not known"
    lo, hi = min(vals, key=lambda vp: vp[0]), max(vals, key=lambda vp: vp[0])
    f = (lambda v: f"{v:.1%}") if pct else (lambda v: f"{v:,.4g}")
    return f"from {f(lo[0])} ({lo[1]}) to {f(hi[0])} ({hi[1]})"


def _concentration(t: Table) -> tuple[str, str, Callable[[], Any]]:
    alt = (f"Over {len(t.rows)} periods the Gini of each period's accesses runs {_range(t, 'gini', False)}; the "
           f"top-10% share {_range(t, 'top10_share')}.")
    return "Concentration over time", alt, lambda: plot_periods(
        _labels(t), {"Gini": _col(t, "gini"), "top-10% share": _col(t, "top10_share")}, ylabel="share",
        title="Concentration per period", share=True)


def _dead_weight(t: Table) -> tuple[str, str, Callable[[], Any]]:
    last = t.rows[-1]
    series = {"share never retrieved": _col(t, "dead_weight_share")}
    if any(v is not None for v in _col(t, "dead_token_share")):
        series["token share never retrieved"] = _col(t, "dead_token_share")
    share = last[3]
    at_end = (f"at the end of {last[0]}, {last[2]:,} of {last[1]:,} live memories "
              f"({'not known' if share is None or math.isnan(share) else f'{share:.1%}'}) had never been retrieved")
    alt = (f"Dead weight {at_end}; over {len(t.rows)} periods the share runs {_range(t, 'dead_weight_share')}.")
    return "Dead weight over time", alt, lambda: plot_periods(
        _labels(t), series, ylabel="share of live memories", title="Dead weight at the end of each period",
        share=True)


def _injection(t: Table) -> tuple[str, str, Callable[[], Any]]:
    ranks, rates = _col(t, "rank"), _col(t, "injection_rate")
    parts = [f"rank {r}: {v:.0%}" for r, v in list(zip(ranks, rates, strict=True))[:5]]
    alt = ("Share of retrieved items injected at the same step, " + ", ".join(parts)
           + (f", … rank {ranks[-1]}: {rates[-1]:.0%}" if len(ranks) > 5 else "") + ".")
    log_x = max(ranks) > LOG_RANKS
    lefts = [r * 0.85 if log_x else r - 0.4 for r in ranks]
    widths = [r * 0.3 if log_x else 0.8 for r in ranks]
    return "Injection rate by rank", alt, lambda: plot_bars(
        lefts, widths, rates, xlabel="rank in the retrieved list", ylabel="injected", title="Injection rate by rank",
        share=True, log_x=log_x)


def _scores(t: Table) -> tuple[str, str, Callable[[], Any]]:
    lo, hi, n = _col(t, "score_low"), _col(t, "score_high"), _col(t, "rows")
    top = max(range(len(n)), key=lambda i: (n[i], -i))
    alt = (f"{sum(n):,} retriever scores from {lo[0]:.4g} to {hi[-1]:.4g}; the fullest bin, {lo[top]:.4g}–"
           f"{hi[top]:.4g}, holds {n[top]:,} rows.")
    return "Score distribution", alt, lambda: plot_bars(
        lo, [b - a for a, b in zip(lo, hi, strict=True)], n, xlabel="score", ylabel="retrieve rows",
        title="Retriever scores")


def _tokens(t: Table) -> tuple[str, str, Callable[[], Any]]:
    alt = f"Prompt tokens per step over {len(t.rows)} periods run {_range(t, 'tokens_per_step', False)}."
    return "Tokens per step over time", alt, lambda: plot_periods(
        _labels(t), {"tokens per step": _col(t, "tokens_per_step")}, ylabel="tokens per step",
        title="Prompt tokens per step")


#: caption prefix -> (figure key suffix, builder)
_KINDS: tuple[tuple[str, str, Callable[[Table], tuple[str, str, Callable[[], Any]]]], ...] = (
    ("Concentration per", "conc-time", _concentration),
    ("Dead weight at the end", "dead-time", _dead_weight),
    ("Injection rate by rank", "rank", _injection),
    ("Retriever scores", "scores", _scores),
    ("Prompt tokens per step", "tokens", _tokens),
)


def view_figure(t: Table, key: str) -> Figure | None:
    """The figure of one view table (None: a table of no known view)."""
    for prefix, suffix, build in _KINDS:
        if t.caption.startswith(prefix):
            title, alt, draw = build(t)
            k = f"{key}-{suffix}"
            return Figure(key=k, title=title, alt=alt, table=t, svg=draw_svg(draw, key=k, alt=alt))
    return None
