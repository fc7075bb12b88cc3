"""``ctwm health`` of a trace file: read it, judge the pooled store, then each scope (``--group-by``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ..common.errors import UsageError
from ..common.gates import Check
from ..runtime.progress import ProgressCallback
from ..traces.objects import MemoryObjects, read_objects
from ..traces.schema import ColumnMap
from .deadweight import Window, parse_window, window_start
from .events import EventLog, load_events
from .report import HealthReport, ScopeHealth, health_of_events
from .retrieval import assign_queries
from .scopes import ScopeSummary, scope_of_objects, split_by_scope


def health_of_trace(
    path: str,
    columns: ColumnMap | None = None,
    *,
    objects: str | MemoryObjects | None = None,
    budget: int | None = None,
    run: str | None = None,
    input_format: str = "auto",
    extra_columns: Mapping[str, str] | None = None,
    checks: Sequence[Check] = (),
    group_by: str | None = None,
    window: str | Window | None = None,
    progress: ProgressCallback | None = None,
) -> HealthReport:
    """Every memory-health metric of the trace at ``path`` (see :mod:`.report`).

    ``group_by`` adds one report per scope (:mod:`.scopes`); ``window``: dead weight over the last
    ``500steps`` or a duration such as ``7d`` (a trace timed by ``ts``; :func:`.deadweight.parse_window`)."""
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise UsageError(f"budget must be a positive integer (tokens), got {budget!r}", params=("budget",))
    objs = read_objects(objects) if isinstance(objects, str) else objects
    log = load_events(
        path, columns, time_kind=objs.time_kind if objs is not None else None, run=run,
        input_format=input_format, extra_columns=extra_columns,
        group_column=group_by if group_by not in (None, "run") else None, progress=progress,
    )
    log = dataclasses.replace(log, query=assign_queries(log.run, log.step, log.event, log.item))
    win = parse_window(window, log.time_kind, has_step=log.has_step)
    if run is not None and objs is not None:  # one run's share of the objects, as for one scope of --group-by
        objs = scope_of_objects(objs, "run", run, set(log.item))
    start = window_start(win, log.time, log.step, log.time_kind, log.time[-1]) if len(log) else None
    report = health_of_events(log, objects=objs, budget=budget, run=run, window=win, window_from=start)
    if group_by is not None:
        report = _with_scopes(report, log, group_by, objs, budget, run, win, start)
    return report.with_checks(checks) if checks else report


def _with_scopes(report: HealthReport, log: EventLog, group_by: str, objects: MemoryObjects | None,
                 budget: int | None, run: str | None, window: Window | None, start: float | None) -> HealthReport:
    """One report per scope, each judged at the trace's end, with the trace's window and query rule."""
    groups, missing = split_by_scope(log, group_by)
    out = []
    for g, idx in groups.items():
        sub = log.subset(idx)
        objs = None if objects is None else scope_of_objects(objects, group_by, g, set(sub.item))
        r = health_of_events(sub, objects=objs, budget=budget, run=run, window=window, end=log.time[-1],
                             window_from=start)
        summary = ScopeSummary(
            group=g, n_rows=len(sub), objects=None if objs is None else len(objs.ids), store_size=r.churn.final_size,
            dead_weight_share=r.dead_weight.dead_weight_share, live=r.dead_weight.live,
            never_retrieved=r.dead_weight.never_retrieved, stale_hit_share=r.retrieval.stale_hit_share,
            retrieval_hit_rate=r.retrieval.retrieval_hit_rate, revoked_share=r.failures.revoked_share,
            expired_items=r.failures.expired_items, queries=r.retrieval.queries, hits=r.retrieval.hits,
            stale_hits=r.retrieval.stale_hits, revoked_items=r.failures.revoked_items,
            growth_slope=r.growth.slope,
            stale_above_current_share=r.stale_above_current.stale_above_current_share,
        )
        out.append(ScopeHealth(group=g, summary=summary, report=r))
    notes = report.notes
    if missing:
        notes = (*notes, f"{missing:,} rows have no {group_by!r} and are in no group's report")
    return dataclasses.replace(report, group_by=group_by, groups=tuple(out), notes=notes)
