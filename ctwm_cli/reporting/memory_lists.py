"""The hot and cold lists and the stale-above-current check of ``ctwm health``, as parts of the report page.

Everything here is read off a :class:`ctwm_cli.health.HealthReport` (its ``hot`` and ``stale_above_current``,
pooled and per scope under ``groups``): the page shows what ``ctwm health`` prints and counts nothing itself.
Memory ids and texts come from a trace or a dump, so they are data: each text is made :func:`visible` (control
and bidi characters as escapes) and cut to :data:`TEXT_CHARS` here, and :func:`.page.text` HTML-escapes every
cell when the page is drawn.
"""

from __future__ import annotations

import math
from typing import Any

from ..common.inert import visible
from .model import Block, Table

#: characters of a memory's text shown in a list (the full text stays in ``ctwm health --json``, cut at 200)
TEXT_CHARS = 60
#: stale-above-current examples shown per scope (health keeps up to 20)
EXAMPLES = 5
#: scopes beyond this many get no lists on the page (a note says so; ``ctwm health --group-by`` has them all)
MAX_SCOPES = 50
#: scopes up to this many are shown open; more, each scope's lists sit in a closed ``<details>``
OPEN_SCOPES = 3
HIT_WORDS = {"retrieve": "Retrievals", "inject": "Injections"}


def cut(value: str | None) -> str:
    """A memory text on one line (:func:`visible`), at most :data:`TEXT_CHARS` characters."""
    one = visible(value or "")
    return one if len(one) <= TEXT_CHARS else one[: TEXT_CHARS - 1] + "…"


def _no_text(entries: Any) -> str:
    return "" if any(e.text for e in entries) else " (no memory texts: give --objects to see them)"


def _hot_table(hot: Any, where: str) -> Table:
    hits = HIT_WORDS.get(hot.hit_event or "", "Hits")
    texts = any(e.text for e in hot.hot)  # a Text column only when some memory has one
    return Table(caption=f"Most-read memories{where}: top {len(hot.hot):,} by {hot.hit_event or 'hit'} rows"
                 + _no_text(hot.hot),
                 columns=("Memory", hits, "Key reads", "State at the end") + (("Text",) if texts else ()),
                 rows=tuple((e.item, e.hits, e.reads, e.state or "–") + ((cut(e.text),) if texts else ())
                            for e in hot.hot))


def _cold_table(hot: Any, where: str, total: int) -> Table:
    texts = any(e.text for e in hot.cold)
    return Table(caption=f"Never-read live memories{where}: {len(hot.cold):,} of {total:,}, oldest first"
                 + _no_text(hot.cold),
                 columns=("Memory",) + (("Text",) if texts else ()),
                 rows=tuple((e.item,) + ((cut(e.text),) if texts else ()) for e in hot.cold))


def stale_line(s: Any) -> str:
    """The stale-above-current check in one sentence."""
    if not s.queries_with_results:
        return "No query returned results, so no stale memory could rank above a live one."
    share = s.stale_above_current_share
    pct = "0%" if not s.queries_stale_above else f"{share:.1%}" if math.isfinite(share) else "–"
    line = (f"In {s.queries_stale_above:,} of {s.queries_with_results:,} queries with results ({pct}), a stale "
            "memory ranked above a live one on the same subject")
    if not s.subjects_known:
        line += " (no subjects known: a memory-object table with a subject column, or supersede rows naming the " \
                "memory that replaces one, says which memories are on the same subject)"
    return line + "."


def _examples_table(s: Any, where: str) -> Table:
    shown = s.examples[:EXAMPLES]
    return Table(caption=f"Stale above current{where}: {len(shown):,} of {s.queries_stale_above:,} queries",
                 columns=("Query", "Stale memory", "Stale rank", "Live memory", "Live rank", "Why stale"),
                 rows=tuple((e["query"], e["stale"], e["stale_rank"], e["current"], e["current_rank"], e["reason"])
                            for e in shown))


def lists_block(report: Any, title: str, *, where: str = "", collapsed: bool = False) -> Block | None:
    """The hot list, the cold list and the stale-above-current line of one health report (``where``: its scope,
    for the captions); None when it has none of them."""
    hot, s = report.hot, report.stale_above_current
    tables = []
    if hot.hot:
        tables.append(_hot_table(hot, where))
    if hot.cold:
        tables.append(_cold_table(hot, where, max(report.dead_weight.never_retrieved, len(hot.cold))))
    if s.examples:
        tables.append(_examples_table(s, where))
    if not tables and not s.queries_with_results:
        return None
    return Block(title=title, text=stale_line(s), tables=tuple(tables), collapsed=collapsed)


def memory_lists(pooled: Any, notes: list[str]) -> tuple[Block, ...]:
    """The pooled lists and, when health was grouped, a block of one part per scope (closed when there are many)."""
    groups = pooled.groups[:MAX_SCOPES]
    many = len(groups) > OPEN_SCOPES
    scopes = []
    for g in groups:
        label = visible(f"{pooled.group_by}={g.group}")
        part = lists_block(g.report, label, where=f" of {label}", collapsed=many)
        if part is not None:
            scopes.append(part)
    if len(pooled.groups) > MAX_SCOPES:
        notes.append(f"memory lists: {len(pooled.groups):,} scopes by {pooled.group_by}; the page lists the first "
                     f"{MAX_SCOPES} (ctwm health --group-by {pooled.group_by} lists them all)")
    top = lists_block(pooled, "Most-read and never-read memories")
    out = () if top is None else (top,)
    if scopes:
        out += (Block(title=f"Memory lists per {visible(pooled.group_by)}: {len(scopes):,} scopes",
                      text="Each scope's own lists, as ctwm health --group-by prints them"
                      + (" (open one to read it)." if many else "."), parts=tuple(scopes)),)
    return out
