"""The hot list, the cold list and the stale-above-current check of ``ctwm health``, as tables.

Memory texts come from a trace or a dump: they are shown as data (the results console makes control
characters visible; Rich markup is off), one line each, cut to the glossary width.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..common.inert import visible
from .output import fmt_num

TEXT_WIDTH = 60


def _text(value: str | None) -> Text:
    if value is None:
        return Text("")
    one = visible(value)
    return Text(one if len(one) <= TEXT_WIDTH else one[: TEXT_WIDTH - 1] + "…")


def _list_table(title: str, entries, hit_event: str | None) -> Table:
    t = Table(title=Text(title), title_justify="left")
    for col, right in (("memory", False), (f"{hit_event or 'hit'}s", True), ("reads", True), ("state", False),
                       ("text", False)):
        t.add_column(col, justify="right" if right else "left", overflow="fold" if col == "memory" else "ellipsis")
    for e in entries:
        t.add_row(Text(visible(e.item)), f"{e.hits:,}", f"{e.reads:,}", e.state or "", _text(e.text))
    return t


def hot_tables(report, label: str = "") -> list[Table]:
    """The hot and cold lists and the stale-above-current line of one report (``label``: its scope)."""
    h, s = report.hot, report.stale_above_current
    where = f" ({label})" if label else ""
    out = []
    if h.hot:
        out.append(_list_table(f"Hot memories{where}: most hits", h.hot, h.hit_event))
    if h.cold:
        out.append(_list_table(f"Cold memories{where}: live, nothing hit or read them", h.cold, h.hit_event))
    if s.queries_with_results:
        t = Table(show_header=False, box=None)
        t.add_column("line")
        known = "" if s.subjects_known else " (no subjects: pass --objects with subject, or supersede rows with by)"
        t.add_row(Text(f"stale ranked above current{where}: {fmt_num(s.stale_above_current_share)} "
                       f"({s.queries_stale_above:,} of {s.queries_with_results:,} queries with results; "
                       f"{s.queries_with_both:,} returned a stale and a live memory on one subject){known}"))
        out.append(t)
    return out


def scope_hot_tables(report) -> list[Table]:
    """Each scope's hot and cold lists (``--group-by``)."""
    out = []
    for g in report.groups:
        out += hot_tables(g.report, f"{report.group_by}={g.group}")
    return out


def scope_table(report) -> Table:
    """One summary row per scope (``--group-by``)."""
    t = Table(title=Text(f"Per {report.group_by}"), title_justify="left")
    for col in (report.group_by, "rows", "store", "live", "never retrieved", "dead_weight_share", "queries",
                "stale_hit_share", "hit_rate", "revoked", "expired", "stale_above"):
        t.add_column(col, justify="left" if col == report.group_by else "right")
    for g in report.groups:
        s = g.summary
        t.add_row(Text(s.group), f"{s.n_rows:,}", f"{s.store_size:,}", f"{s.live:,}", f"{s.never_retrieved:,}",
                  fmt_num(s.dead_weight_share), f"{s.queries:,}", fmt_num(s.stale_hit_share),
                  fmt_num(s.retrieval_hit_rate), f"{s.revoked_items:,}", f"{s.expired_items:,}",
                  fmt_num(s.stale_above_current_share))
    return t


def health_tables(report) -> list[Table]:
    """The health report's metric table and the tables that follow it."""
    m = report.metrics
    t = Table(title=Text(f"Memory health of {report.source}"), title_justify="left", show_header=True)
    t.add_column("metric", no_wrap=True)
    t.add_column("value", justify="right")
    t.add_column("detail")
    c, r, f, g = report.context, report.retrieval, report.failures, report.growth
    budget = f"budget {c.budget:,} tokens" if c.budget else "no --budget"
    t.add_row("context_usage", fmt_num(m["context_usage"]), f"{budget}; {c.context_steps:,} steps with a context row, "
        f"mean {fmt_num(c.context_tokens_mean)} tokens")
    t.add_row("memory_token_share", fmt_num(m["memory_token_share"]), f"mean {fmt_num(c.memory_tokens_mean)} "
        f"{c.memory_event or 'memory'} tokens per step (max {fmt_num(c.memory_tokens_max)})")
    t.add_row(
        "memory_share_of_context", fmt_num(m["memory_share_of_context"]), "injected memory tokens / prompt tokens"
    )
    t.add_row("steps_over_budget", fmt_num(m["steps_over_budget"]), f"of {c.steps:,} steps")
    mt = report.maintenance
    t.add_row("maintenance_ratio", fmt_num(m["maintenance_ratio"]), f"{mt.maintenance_steps:,} of {mt.steps:,} steps "
        f"(warn > {mt.warn_above:.0%})")
    ch = report.churn
    t.add_row("net_new_per_task", fmt_num(m["net_new_per_task"]), f"{ch.tasks:,} tasks, median "
        f"{fmt_num(ch.net_new_median)}; {ch.writes:,} writes, {ch.removals:,} removals")
    t.add_row("retrieval_hit_rate", fmt_num(m["retrieval_hit_rate"]), f"{r.queries_with_hits:,} of {r.queries:,} "
        "queries retrieved something")
    reasons = ", ".join(f"{k} {v:,}" for k, v in r.stale_by_reason.items()) or "none"
    t.add_row("stale_hit_share", fmt_num(m["stale_hit_share"]), f"{r.stale_hits:,} of {r.hits:,} "
        f"{r.hit_event or 'hit'} rows ({reasons})")
    t.add_row("failure_attribution", fmt_num(m["failure_attribution"]), f"{f.failures_attributed:,} of "
        f"{f.failed_tasks:,} failed tasks used a stale or since-revoked entry, against "
        f"{f.successes_with_revoked_use:,} of {f.succeeded_tasks:,} successful tasks")
    t.add_row("revoked_share", fmt_num(m["revoked_share"]), f"{f.revoked_items:,} of {f.memory_items:,} items "
        f"superseded or invalidated; counted apart: {f.archived_items:,} archived, {f.evicted_items:,} evicted, "
        f"{f.expired_items:,} expired")
    t.add_row("growth", g.classification, f"slope {fmt_num(g.slope)} items/{g.time_unit}; {g.reason}")
    t.add_row("store_size", fmt_num(report.churn.final_size), f"started at {report.churn.initial_size:,}")
    sc = report.success_curve
    if sc is not None:
        t.add_row("success_rate", fmt_num(sc.success_rate), f"{sc.tasks:,} tasks with an outcome")
        knee = (
            "–" if sc.inflection_volume is None
            else f"slope {fmt_num(sc.slope_before)} before, {fmt_num(sc.slope_after)} after"
        )
        t.add_row(
            "inflection_volume", fmt_num(sc.inflection_volume), knee if sc.inflection_volume is not None else sc.reason
        )
    d = report.dead_weight
    span = "whole trace" if d.window is None else f"last {fmt_num(d.window)} {d.time_unit}s"
    toks = "" if d.dead_token_share is None else f"; {fmt_num(d.dead_token_share)} of {d.live_tokens:,} live tokens"
    t.add_row("dead_weight_share", fmt_num(m["dead_weight_share"]), f"{d.never_retrieved:,} of {d.live:,} live "
        f"memories never retrieved ({span}){toks}")
    if d.oldest:
        t.add_row("oldest never retrieved", "", ", ".join(e.item for e in d.oldest[:5]))
    k = report.contradictions
    t.add_row("supersede_cycles", fmt_num(k.n_cycles), "; ".join(" -> ".join(cyc) for cyc in k.cycles[:3]) or "none")
    t.add_row("max_chain_length", fmt_num(k.max_chain_length), f"{k.chains:,} chains over {k.items_in_chains:,} items")
    retrieved = ", ".join(k.superseded_but_retrieved_items[:5]) or "none"
    t.add_row(
        "superseded_but_retrieved", fmt_num(k.superseded_but_retrieved), f"{k.superseded_hits:,} hits; " + retrieved
    )
    tables = [t]
    if report.notes:
        n = Table(show_header=False, box=None)
        n.add_column("note")
        for note in report.notes:
            n.add_row(f"note: {note}")
        tables.append(n)
    return tables
