"""Streaming aggregation of a trace into per-item counts.

One pass over the trace's batches builds a table keyed by ``(group, event, item)`` with summed
counts. Partial group-bys are merged whenever they outgrow the merged table, so peak memory grows
with the number of distinct keys, never with the number of events, and no row becomes a Python
object. The same pass collects what ``ctwm inspect`` reports.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..results import ToDict, result
from .readers import TraceReader
from .schema import DEFAULT_EVENT

#: Event kinds counted when the caller names none: ``retrieve`` if the trace has any, else ``inject``.
DEFAULT_COUNTED = ("retrieve", "inject")
_MERGE_MIN_ROWS = 1 << 18  # partial rows pending before a merge (bounds Arrow memory)


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
    """What one pass over a trace found; ``table`` holds the aggregated ``(group, event, item, n)``."""

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


def scan_trace(
    reader: TraceReader,
    *,
    group_by: str | None = None,
    progress: ProgressCallback | None = None,
) -> TraceScan:
    """Read every batch of ``reader`` once and aggregate counts by ``(group, event, item)``.

    ``group_by`` is a canonical column (``run``) or any source column kept by the reader.
    """
    keys = ["event", "item"] if group_by is None else ["group", "event", "item"]
    partials: list[pa.Table] = []
    merged: pa.Table | None = None
    pending_rows = 0
    rows = 0
    step_lo: int | None = None
    step_hi: int | None = None
    runs: set[str] = set()
    has_run = False
    has_count = False
    for batch in reader.batches(dictionary_items=True):
        n = batch.num_rows
        rows += n
        cols = batch.column_names
        has_count = has_count or "count" in cols
        gcol = None if group_by is None else pc.fill_null(_group_column(batch, group_by, reader), "")
        partials.append(_partial(batch, gcol))
        pending_rows += partials[-1].num_rows
        if "step" in cols and batch.column("step").null_count < n:
            mm = pc.min_max(batch.column("step")).as_py()
            step_lo = mm["min"] if step_lo is None else min(step_lo, mm["min"])
            step_hi = mm["max"] if step_hi is None else max(step_hi, mm["max"])
        if "run" in cols:
            has_run = True
            runs.update(v for v in pc.unique(batch.column("run")).to_pylist() if v is not None)
        if pending_rows > max(_MERGE_MIN_ROWS, merged.num_rows if merged is not None else 0):
            merged = _merge([merged, *partials] if merged is not None else partials, keys)
            partials, pending_rows = [], 0
        if progress is not None:
            progress(rows, None)
    if rows == 0:
        raise InputError(f"{reader.source}: trace is empty (no rows)")
    merged = _merge([merged, *partials] if merged is not None else partials, keys)
    events = merged.group_by("event").aggregate([("n_sum", "sum")])  # accesses per event kind
    event_counts = dict(zip(events.column("event").to_pylist(), events.column(1).to_pylist(), strict=True))
    distinct = len(pc.unique(merged.column("item")))
    return TraceScan(
        source=reader.source,
        format=reader.format,
        kind="counts" if has_count else "events",
        rows=rows,
        columns_found=tuple(reader.columns_found),
        mapping=reader.mapping,
        group_by=group_by,
        step_min=step_lo,
        step_max=step_hi,
        events=dict(sorted(event_counts.items())),
        runs=len(runs) if has_run else None,
        distinct_items=distinct,
        table=merged,
    )


def _partial(batch: pa.Table, group: pa.ChunkedArray | None) -> pa.Table:
    """One batch grouped by ``([group,] event, item)``, summing ``count`` (or counting rows).

    Only the columns that vary are hashed: a batch without an event column is grouped by item
    alone and labelled ``retrieve`` afterwards; a dictionary-encoded item is grouped on its codes
    and decoded once per distinct item, not once per row.
    """
    n = batch.num_rows
    names = batch.column_names
    cols: dict[str, pa.ChunkedArray] = {}
    if group is not None:
        cols["group"] = group
    event = batch.column("event") if "event" in names else None
    if event is not None and event.null_count < n:
        cols["event"] = pc.fill_null(event, DEFAULT_EVENT)
    cols["item"] = batch.column("item")
    if "count" in names:
        cols["n"] = batch.column("count")
        aggregation, result_col = [("n", "sum")], "n_sum"
    else:
        aggregation, result_col = [([], "count_all")], "count_all"
    keys = [k for k in cols if k != "n"]
    t = pa.table(cols).group_by(keys).aggregate(aggregation)
    item = t.column("item")
    if not pa.types.is_string(item.type):
        item = pc.cast(item, pa.string())
    out = {"group": t.column("group")} if group is not None else {}
    out["event"] = t.column("event") if "event" in keys else pa.repeat(pa.scalar(DEFAULT_EVENT), t.num_rows)
    out["item"] = item
    out["n"] = t.column(result_col)
    return pa.table(out)


def _group_column(batch: pa.Table, group_by: str, reader: TraceReader) -> pa.ChunkedArray:
    canonical = {src: canon for canon, src in reader.columns.canonical().items()}
    name = canonical.get(group_by, group_by)
    if name in batch.column_names:
        col = batch.column(name)
        return col if pa.types.is_string(col.type) else pc.cast(col, pa.string())
    found = ", ".join(reader.columns_found)
    raise InputError(f"{reader.source}: missing group-by column {group_by!r} (columns found: {found})")


def _merge(tables: Sequence[pa.Table], keys: list[str]) -> pa.Table:
    table = pa.concat_tables([t.rename_columns([*keys, "n"]) for t in tables])
    return table.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n_sum"])


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
    raise InputError(
        f"{scan.source}: no retrieve or inject events to count (kinds found: {have}); choose with --event"
    )


def item_counts(scan: TraceScan, events: Sequence[str] | None = None) -> list[ItemCounts]:
    """Per-item counts of the chosen event kinds; one entry per group (one if not grouped)."""
    if events is not None and isinstance(events, str):
        raise UsageError("events must be a sequence of event kinds, not a string")
    chosen = resolve_events(scan, events)
    t = scan.table.filter(pc.is_in(scan.table.column("event"), value_set=pa.array(chosen)))
    keys = ["item"] if scan.group_by is None else ["group", "item"]
    t = t.group_by(keys).aggregate([("n_sum", "sum")])
    if scan.group_by is None:
        return [_counts(scan.source, None, chosen, t)]
    # Sort once and slice each group out (filtering per group would cost groups x rows).
    t = t.sort_by([("group", "ascending")])
    sizes = t.group_by("group", use_threads=False).aggregate([([], "count_all")])
    out = []
    offset = 0
    for g, size in zip(sizes.column("group").to_pylist(), sizes.column("count_all").to_pylist(), strict=True):
        out.append(_counts(scan.source, g, chosen, t.slice(offset, size)))
        offset += size
    return out


def _counts(source: str, group: str | None, events: tuple[str, ...], t: pa.Table) -> ItemCounts:
    order = pc.sort_indices(t, sort_keys=[("n_sum_sum", "descending"), ("item", "ascending")])
    t = t.take(order)
    return ItemCounts(
        source=source,
        group=group,
        events=events,
        items=t.column("item").combine_chunks(),
        counts=t.column("n_sum_sum").to_numpy().astype(np.int64, copy=False),
    )
