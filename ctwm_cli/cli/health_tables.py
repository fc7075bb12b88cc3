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
