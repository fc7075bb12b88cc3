"""Dead weight over time: at the end of each period (day or ISO week of ``ts``, else window of steps), the share of
live memories that nothing has read since the trace began.

The definition is ``ctwm health``'s own (:mod:`ctwm_cli.health.deadweight`, the lifecycle of
:mod:`ctwm_cli.health.lifecycle`), applied to the trace **cut at the end of each period**: the rows up to the
period's last row, the store judged at that row's time. A period's number is what ``ctwm health`` would have
printed had the trace stopped there, so the last period's equals the dead weight of the whole trace. It is the
state at the period's end, not the period's own reads: a memory read once on day 1 is not dead weight on day 5
(``ctwm health --window 1d`` asks the other question, of one window). Per tenant (``group_by``): each tenant's rows
of the same cut, judged at the same time, as ``ctwm health --group-by`` judges every scope at the trace's end.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from typing import Any

import numpy as np

from ..health.events import EventLog, load_events
from ..health.report import health_of_events
from ..health.retrieval import assign_queries
from ..health.scopes import scope_of_objects, split_by_scope
from ..traces.objects import read_objects
from .model import Table
from .periods import step_windows, window_label

COLUMNS = ("period", "live", "never_retrieved", "dead_weight_share", "dead_token_share")
#: a trace spanning more days than this is cut per ISO week (as the concentration view is)
WEEK_OVER_DAYS = 21


def period_ends(log: EventLog) -> tuple[list[tuple[str, int]], str] | None:
    """``([(label, rows up to the period's end), ...], unit)`` in time order; None when the trace has neither
    timestamps nor steps (row order is no clock)."""
    n = len(log)
    if n == 0 or log.time_kind == "row":
        return None
    if log.time_kind == "timestamp":
        weeks = log.time[-1] - log.time[0] > WEEK_OVER_DAYS * 86400.0
        fmt_, unit = ("%G-W%V", "ISO week") if weeks else ("%Y-%m-%d", "day")
        labels = [dt.datetime.fromtimestamp(t, dt.UTC).strftime(fmt_) for t in log.time]
    else:
        steps = np.asarray(log.time, dtype=np.float64)
        edges = step_windows(steps.astype(int))
        idx = np.clip(np.searchsorted(edges, steps, side="right") - 1, 0, len(edges) - 2)
        labels = [window_label(edges[i], edges[i + 1]) for i in idx.tolist()]
        unit = "window of steps"
    ends = [(labels[i], i + 1) for i in range(n) if i == n - 1 or labels[i + 1] != labels[i]]
    return ends, unit


def _row(label: str, dead: Any) -> tuple[Any, ...]:
    return (label, dead.live, dead.never_retrieved, dead.dead_weight_share, dead.dead_token_share)


def _table(rows: list[tuple[Any, ...]], unit: str, who: str = "") -> Table | None:
    if not rows or all(isinstance(r[3], float) and math.isnan(r[3]) for r in rows):
        return None
    return Table(caption=f"Dead weight at the end of each {unit}{who} (live memories never retrieved since the "
                 "trace began, as ctwm health says of the trace cut there)", columns=COLUMNS, rows=tuple(rows))


def dead_weight_over_time(path: str, read: Any, *, objects: str | None = None, group_by: str | None = None,
                          groups: int = 12) -> tuple[Table | None, dict[str, Table]]:
    """The pooled table and one per ``group_by`` value (the first ``groups`` in order); (None, {}) when the trace
    has no clock or records no reads."""
    objs = read_objects(objects) if isinstance(objects, str) else objects
    log = load_events(path, read, time_kind=objs.time_kind if objs is not None else None,
                      group_column=group_by if group_by not in (None, "run") else None)
    log = dataclasses.replace(log, query=assign_queries(log.run, log.step, log.event, log.item))
    found = period_ends(log)
    if found is None:
        return None, {}
    ends, unit = found
    pooled: list[tuple[Any, ...]] = []
    per: dict[str, list[tuple[Any, ...]]] = {}
    for label, k in ends:
        cut = log.subset(list(range(k)))
        pooled.append(_row(label, health_of_events(cut, objects=objs).dead_weight))
        if group_by is None:
            continue
        scopes, _ = split_by_scope(cut, group_by)
        for g in sorted(scopes)[:groups]:
            sub = cut.subset(scopes[g])
            so = None if objs is None else scope_of_objects(objs, group_by, g, set(sub.item))
            dead = health_of_events(sub, objects=so, end=cut.time[-1]).dead_weight
            per.setdefault(g, []).append(_row(label, dead))
    tables = {g: t for g, rows in per.items() if (t := _table(rows, unit, f" ({group_by}={g})")) is not None}
    return _table(pooled, unit), tables
