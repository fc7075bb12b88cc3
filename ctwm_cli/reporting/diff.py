"""The pull-request page (``ctwm report --diff BASE HEAD``): what changed between two saved results or two traces.

The verdict and every headline number with its interval and gate are :func:`ctwm_cli.baseline.diff_results` /
:func:`~ctwm_cli.baseline.diff_counts`, the functions ``ctwm diff`` calls, with the same tolerances: the page and
``ctwm diff``'s exit code cannot disagree. For two traces the page adds what moved in the lists a reviewer reads:
the most-accessed items that entered or left the top, and, when the traces carry memory-health events, the
most-read and never-read memories (``ctwm health``'s hot and cold lists) that entered or left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


from ..baseline import diff_counts, diff_results, saved_result
from ..common.errors import InputError
from ..common.labels import identity
from ..health import health_of_trace
from ..traces import item_counts
from ..traces.engine import ReadOptions
from ..traces.paths import scan_paths
from .glossary import header
from .memory_lists import cut
from .model import Block, Card, Estimate, Section, Table

#: items of each side's top list compared (``ctwm health``'s hot list holds as many)
TOP = 10
METRIC_COLUMNS = ("subject", "metric", "base", "head", "change_interval", "pvalue", "tolerance", "status")
HEALTH_EVENTS = frozenset({"write", "update", "supersede", "invalidate", "archive", "evict", "maintain", "search",
                           "context", "task_outcome"})


def _status(c: Any) -> str:
    return "not gated" if c.tolerance is None else ("fail" if c.regression else "pass")


def _metrics_table(res: Any) -> Table:
    rows = []
    for c in res.changes:
        ci = c.confidence_interval
        rows.append((c.subject, c.metric, c.base, c.head,
                     Estimate(value=c.change, low=None if ci is None else ci.low, high=None if ci is None else ci.high),
                     c.pvalue, c.tolerance, _status(c)))
    traces = res.kind == "traces"
    subjects = list(dict.fromkeys(c.subject for c in res.changes))
    drop = {"pvalue"} if not traces else set()
    if len(subjects) == 1:  # one subject (two traces): named in the caption, not on every row
        drop.add("subject")
    keep = [i for i, c in enumerate(METRIC_COLUMNS) if c not in drop]
    cols = tuple(METRIC_COLUMNS[i] for i in keep)
    rows = [tuple(header(r[1]) if METRIC_COLUMNS[i] == "metric" else r[i] for i in keep) for r in rows]
    gated = [c for c in res.changes if c.tolerance is not None]
    of = f" of {subjects[0]}" if len(subjects) == 1 else ""
    how = (f"{res.level:.0%} bootstrap intervals, B = {res.replicates}, seed {res.seed}; permutation p of no change"
           if traces else f"{res.compared} results")
    caption = f"Headline numbers, base → head{of} ({how})"
    return Table(caption=caption, columns=cols, rows=tuple(rows),
                 summary=f"{len(gated)} of {len(res.changes)} numbers gated by a tolerance; {res.regressions} failed.")


def _verdict(res: Any) -> tuple[str, str]:
    gated = [c for c in res.changes if c.tolerance is not None]
    if not gated:
        return "not gated", (f"no tolerance given: {len(res.changes)} numbers compared, none gated (give --tol "
                             "METRIC=VALUE, as ctwm diff takes it)")
    if res.regressions:
        failed = ", ".join(sorted({f"{c.metric}" for c in res.changes if c.regression}))
        gates = "gates" if len(gated) > 1 else "gate"
        return "regression", f"{res.regressions} of {len(gated)} {gates} failed ({failed}): ctwm diff exits 1"
    return "pass", (f"all {len(gated)} gates pass" if len(gated) > 1 else "the gate passes") + ": ctwm diff exits 0"


def _top(counts: Any) -> list[tuple[str, int]]:
    items = [str(x) for x in counts.items.to_pylist()]
    order = sorted(range(len(items)), key=lambda i: (-int(counts.counts[i]), items[i]))[:TOP]
    return [(items[i], int(counts.counts[i])) for i in order]


def _moved_table(caption: str, base: Sequence[tuple[str, Any]], head: Sequence[tuple[str, Any]],
                 value: str) -> Table:
    """The entries of two top lists that are in one and not the other: entered (head only), left (base only)."""
    b, h = dict(base), dict(head)
    rows = [("entered", item, None, h[item]) for item, _ in head if item not in b]
    rows += [("left", item, b[item], None) for item, _ in base if item not in h]
    kept = sum(1 for item in h if item in b)
    return Table(caption=caption, columns=("Change", "Memory", f"Base {value}", f"Head {value}"), rows=tuple(rows),
                 summary=f"{kept} of {len(head)} stay; {len(rows)} moved." if rows else
                 f"the same {kept} entries in base and head.")


def _health_lists(base: str, head: str, read: ReadOptions) -> list[Table]:
    hb, hh = (health_of_trace(p, read) for p in (base, head))
    hot = _moved_table(f"Most-read memories (top {TOP}, as ctwm health lists them) that entered or left",
                       [(e.item, e.hits) for e in hb.hot.hot], [(e.item, e.hits) for e in hh.hot.hot], "hits")
    cold_b = [(e.item, cut(e.text) or "") for e in hb.hot.cold]
    cold_h = [(e.item, cut(e.text) or "") for e in hh.hot.cold]
    dead = _moved_table("Never-read live memories (the cold list) that entered or left", cold_b, cold_h, "text")
    return [hot, dead]


def diff_section(base: str, head: str, read: ReadOptions, *, key: str, tolerances: Mapping[str, float] = (),
                 events: Sequence[str] | None = None, bootstrap: int = 200, level: float = 0.95,
                 seed: int | None = None) -> Section:
    """The section of ``ctwm report --diff BASE HEAD`` (see the module docstring)."""
    saved = saved_result(base), saved_result(head)
    blocks: list[Block] = []
    if all(d is not None for d in saved):
        res = diff_results(saved[0], saved[1], tolerances=tolerances)
        seed = None
    elif any(d is not None for d in saved):
        raise InputError("compare two saved results or two traces, not one of each")
    else:
        counts = []
        for p in (base, head):
            scan = scan_paths([p], read)[0]
            c = item_counts(scan, events)
            if len(c) != 1:
                raise InputError(f"{p}: each trace must give one set of counts")
            counts.append((scan, c[0]))
        res = diff_counts(counts[0][1].counts, counts[1][1].counts,
                          subject=f"{identity(base)} -> {identity(head)}", tolerances=tolerances,
                          replicates=bootstrap, level=level, seed=seed)
        lists = [_moved_table(f"Most-accessed items (top {TOP} by accesses) that entered or left",
                              _top(counts[0][1]), _top(counts[1][1]), "accesses")]
        if all(set(scan.events) & HEALTH_EVENTS for scan, _ in counts):
            lists += _health_lists(base, head, read)
        blocks.append(Block(title="What moved in the lists", tables=tuple(lists)))
    verdict, why = _verdict(res)
    blocks.insert(0, Block(title="Headline numbers and their gates", text=why, tables=(_metrics_table(res),)))
    checks = Table(caption="The gates, as ctwm diff reports them", columns=("Check", "Gate", "Note"),
                   rows=tuple((o.check, o.status, o.note) for o in res.checks))
    if res.checks:
        blocks.append(Block(title="Gates", tables=(checks,)))
    card = Card(headline=f"{verdict}: {why}", verdict=None, fields=(
        ("base", base), ("head", head), ("compared", res.compared),
        ("gated numbers", sum(c.tolerance is not None for c in res.changes)), ("failed", res.regressions),
        *((("bootstrap B / level", f"{res.replicates} / {res.level:.0%}"),) if res.kind == "traces" else ()),
        ("seed", res.seed)))
    return Section(kind="diff", source=f"{base} → {head}", title=f"Diff {Path(base).name} → {Path(head).name}",
                   card=card, blocks=tuple(blocks), seed=res.seed)


