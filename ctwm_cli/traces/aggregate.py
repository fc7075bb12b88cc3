"""Counting a trace: per ``(group, event, item)`` inside DuckDB, out of core under its memory limit.

:func:`scan_trace` runs one grouped aggregation (and, for what ``ctwm inspect`` reports, one light
pass for the step range and distinct runs); :func:`item_counts` turns the aggregated table into
per-item counts of the chosen event kinds. Memory grows with the number of distinct keys, and
DuckDB spills its hash tables to disk when they outgrow ``memory_limit``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..results import ToDict, result
from .base import TraceReader
from .engine import Engine, quote_ident, quote_literal
from .mem0 import MEM0_NOTE
from .schema import DEFAULT_EVENT

#: Event kinds counted when the caller names none: ``retrieve`` if the trace has any, else ``inject``.
DEFAULT_COUNTED = ("retrieve", "inject")


@result
class ItemCounts(ToDict):
    """Per-item access counts of one trace (or one group of it)."""

    source: str
    group: str | None
    events: tuple[str, ...]
    items: pa.Array
    counts: np.ndarray

    @property
    def n_items(self) -> int:
        return int(self.counts.size)

    @property
    def n_events(self) -> int:
        return int(self.counts.sum())

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "group": self.group,
            "events": list(self.events),
            "n_items": self.n_items,
            "n_events": self.n_events,
        }


@result
class TraceScan(ToDict):
    """What one pass over a trace found; ``table`` holds the aggregated ``([group,] event, item, n)``."""

    source: str
    format: str
    kind: str  # "events" or "counts"
    rows: int
    columns_found: tuple[str, ...]
    mapping: dict[str, str]
    group_by: str | None
    step_min: int | None
    step_max: int | None
    events: dict[str, int]
    runs: int | None
    distinct_items: int
    table: pa.Table

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "format": self.format,
            "kind": self.kind,
            "rows": self.rows,
            "distinct_items": self.distinct_items,
            "runs": self.runs,
            "events": dict(self.events),
            "step_min": self.step_min,
            "step_max": self.step_max,
            "columns_found": list(self.columns_found),
            "mapping": dict(self.mapping),
            "group_by": self.group_by,
        }


def _group_name(reader: TraceReader, group_by: str, what: str = "group-by column") -> str:
    """The canonical column behind ``group_by`` (a source name or a kept extra column)."""
    canonical = {src: canon for canon, src in reader.columns.canonical().items()}
    name = canonical.get(group_by, group_by)
    present = set(reader.mapping) | {k for k in reader.keep if k in reader.columns_found}
    if name not in present:
        found = ", ".join(reader.columns_found)
        raise InputError(f"{reader.source}: missing {what} {group_by!r} (columns found: {found})")
    return name


def aggregate_sql(
    reader: TraceReader, rows_sql: str, group_by: str | None, by: Sequence[str] = (),
) -> tuple[str, list[str]]:
    """The grouped count over ``rows_sql`` and its key columns (``by``: more key columns, as text)."""
    has = set(reader.mapping)
    keys = []
    select = []
    if group_by is not None:
        select.append(f"coalesce(CAST({quote_ident(_group_name(reader, group_by))} AS VARCHAR), '') AS \"group\"")
        keys.append("group")
    for name in by:
        select.append(f"CAST({quote_ident(_group_name(reader, name, 'column'))} AS VARCHAR) AS {quote_ident(name)}")
        keys.append(name)
    event = f"coalesce(event, {quote_literal(DEFAULT_EVENT)})" if "event" in has else quote_literal(DEFAULT_EVENT)
    select += [f"{event} AS event", "item"]
    keys += ["event", "item"]
    weight = "sum(\"count\")::BIGINT" if "count" in has else "count(*)"
    sql = (f"SELECT {', '.join(select)}, {weight} AS n, count(*) AS rows FROM ({rows_sql}) "
           f"GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}")
    return sql, keys


def _stats(reader: TraceReader, engine: Engine, rows_sql: str, checks) -> tuple[int | None, int | None, int | None]:
    has = set(reader.mapping)
    parts = ["min(step)", "max(step)"] if "step" in has else ["NULL", "NULL"]
    parts.append("count(DISTINCT run)" if "run" in has else "NULL")
    got = reader.fetch(engine, f"SELECT {', '.join(parts)} FROM ({rows_sql})", checks)[0]
    return got[0], got[1], got[2]


def _aggregate(
    reader: TraceReader, group_by: str | None, by: Sequence[str], stats: bool,
) -> tuple[pa.Table, list[str], int, tuple[int | None, int | None, int | None]]:
    """Run the grouped count (and the stats pass); a bad value or an empty result is an InputError."""
    with Engine(reader.options) as engine:
        rows_sql, checks = reader.canonical_sql(engine, strict_item=False)
        sql, keys = aggregate_sql(reader, rows_sql, group_by, by)
        table = reader.fetch(engine, sql, checks, arrow=True)
        if table.column("item").null_count:
            raise reader.error_for(engine, checks, RuntimeError("missing value in column item"))
        found = (None, None, None)
        if stats and table.num_rows:
            found = _stats(reader, engine, rows_sql, checks)
    rows = int(pc.sum(table.column("rows")).as_py() or 0)
    if rows == 0:
        what = f"no rows match where {reader.where!r}" if reader.where else "trace is empty (no rows)"
        raise InputError(f"{reader.source}: {what}")
    return table.select([*keys, "n"]), keys, rows, found


def scan_trace(
    reader: TraceReader,
    *,
    group_by: str | None = None,
    progress: ProgressCallback | None = None,
    stats: bool = True,
) -> TraceScan:
    """Count ``reader``'s rows by ``([group,] event, item)`` inside DuckDB.

    ``group_by`` is a canonical column (``run``) or any source column kept by the reader.
    ``stats=False`` skips the second, light pass for the step range and the number of runs (the
    counts alone need one aggregation).
    """
    table, _, rows, (step_lo, step_hi, runs) = _aggregate(reader, group_by, (), stats)
    if progress is not None:
        progress(rows, rows)
    events = table.group_by("event").aggregate([("n", "sum")])
    event_counts = dict(zip(events.column("event").to_pylist(), events.column("n_sum").to_pylist(), strict=True))
    return TraceScan(
        source=reader.source, format=reader.format, kind="counts" if "count" in reader.mapping else "events",
        rows=rows, columns_found=tuple(reader.columns_found), mapping=reader.mapping, group_by=group_by,
        step_min=step_lo, step_max=step_hi, events=dict(sorted(event_counts.items())),
        runs=runs if "run" in reader.mapping else None, distinct_items=len(pc.unique(table.column("item"))),
        table=table,
    )


def count_by(reader: TraceReader, by: Sequence[str], progress: ProgressCallback | None = None) -> pa.Table:
    """Counts keyed by the columns ``by`` (as text, nulls kept), ``event`` and ``item``, plus ``n``.

    For analyses that need keys of their own (``ctwm finite-size``: family, size, run)."""
    table, _, rows, _ = _aggregate(reader, None, list(dict.fromkeys(by)), False)
    if progress is not None:
        progress(rows, rows)
    return table


def resolve_events(scan: TraceScan, events: Sequence[str] | None) -> tuple[str, ...]:
    """The event kinds to count: the caller's, else ``retrieve`` if present, else ``inject``."""
    if events:
        unknown = [e for e in events if e not in scan.events]
        if len(unknown) == len(events):
            have = ", ".join(scan.events) or "none"
            raise InputError(f"{scan.source}: no events of kind {', '.join(events)} (kinds found: {have})")
        return tuple(events)
    for kind in DEFAULT_COUNTED:
        if kind in scan.events:
            return (kind,)
    have = ", ".join(scan.events)
    if scan.format == "mem0":
        raise InputError(f"{scan.source}: no retrieve or inject events to count (kinds found: {have}): {MEM0_NOTE}")
    raise InputError(
        f"{scan.source}: no retrieve or inject events to count (kinds found: {have}); choose with --event"
    )


def item_counts(scan: TraceScan, events: Sequence[str] | None = None) -> list[ItemCounts]:
    """Per-item counts of the chosen event kinds; one entry per group (one if not grouped).

    Each group's items are sorted by count (descending), ties by item id (ascending)."""
    if events is not None and isinstance(events, str):
        raise UsageError("events must be a sequence of event kinds, not a string")
    chosen = resolve_events(scan, events)
    t = scan.table
    if set(scan.events) - set(chosen):
        t = t.filter(pc.is_in(t.column("event"), value_set=pa.array(chosen)))
    grouped = scan.group_by is not None
    keys = ["group", "item"] if grouped else ["item"]
    if len(chosen) > 1 or len(scan.events) > 1:
        t = t.group_by(keys, use_threads=False).aggregate([("n", "sum")]).rename_columns([*keys, "n"])
    sort = [("n", "descending"), ("item", "ascending")]
    t = t.take(pc.sort_indices(t, sort_keys=[("group", "ascending"), *sort] if grouped else sort))
    if not grouped:
        return [_counts(scan.source, None, chosen, t)]
    out = []
    groups = t.column("group").combine_chunks()
    bounds = np.flatnonzero(pc.not_equal(groups.slice(1), groups.slice(0, len(groups) - 1)).to_numpy(
        zero_copy_only=False)) + 1 if len(groups) > 1 else np.array([], dtype=np.int64)
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(groups)]))
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        if e > s:
            out.append(_counts(scan.source, groups[s].as_py(), chosen, t.slice(s, e - s)))
    return out


def _counts(source: str, group: str | None, events: tuple[str, ...], t: pa.Table) -> ItemCounts:
    return ItemCounts(
        source=source,
        group=group,
        events=events,
        items=t.column("item").combine_chunks(),
        counts=t.column("n").to_numpy().astype(np.int64, copy=False),
    )
