"""Reading for :mod:`.finite_size`: one streaming pass per trace into counts keyed by (family, size,
run, event, item), the event kinds to count, and the store capacity recorded in world manifests."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..traces import ColumnMap, TraceReader, open_trace
from ..traces.aggregate import DEFAULT_COUNTED
from ..traces.schema import DEFAULT_EVENT

DEFAULT_FAMILY = "all"
_MERGE_ROWS = 1 << 20


def aggregate_sized(
    path: str,
    columns: ColumnMap | None,
    *,
    size: float | None,
    family: str | None,
    size_col: str | None,
    group_by: str | None,
    progress: ProgressCallback | None,
) -> pa.Table:
    """One streaming pass: counts keyed by (family, size, run, event, item)."""
    canonical = set(ColumnMap().canonical())
    keep = tuple(dict.fromkeys(c for c in (size_col, group_by) if c is not None and c not in canonical))
    reader = open_trace(path, columns, keep=keep)
    keys = ["family", "size", "run", "event", "item"]
    merged: pa.Table | None = None
    parts: list[pa.Table] = []
    pending = 0
    rows = 0
    for batch in reader.batches():
        n = batch.num_rows
        rows += n
        cols = batch.column_names
        fam = _column(batch, group_by, reader) if group_by else pa.repeat(family or DEFAULT_FAMILY, n)
        if size_col:
            sz = _sizes(_column(batch, size_col, reader), size_col, reader.source)
        else:
            sz = pa.array(np.full(n, size, dtype=np.float64))
        run = pc.fill_null(batch.column("run"), "") if "run" in cols else pa.repeat("", n)
        run = pc.if_else(pc.equal(run, ""), reader.source, pc.binary_join_element_wise(reader.source, run, "#"))
        event = pc.fill_null(batch.column("event"), DEFAULT_EVENT) if "event" in cols else pa.repeat(DEFAULT_EVENT, n)
        weight = batch.column("count") if "count" in cols else pa.array(np.ones(n, dtype=np.int64))
        part = pa.table({"family": pc.fill_null(fam, ""), "size": sz, "run": run, "event": event,
                         "item": batch.column("item"), "n": weight})
        parts.append(part.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n"]))
        pending += parts[-1].num_rows
        if pending > max(_MERGE_ROWS, merged.num_rows if merged is not None else 0):
            merged = _merge([merged, *parts] if merged is not None else parts, keys)
            parts, pending = [], 0
        if progress is not None:
            progress(rows, None)
    if rows == 0:
        raise InputError(f"{reader.source}: trace is empty (no rows)")
    return _merge([merged, *parts] if merged is not None else parts, keys)


def _merge(tables: Sequence[pa.Table], keys: list[str]) -> pa.Table:
    t = pa.concat_tables(tables)
    return t.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n"])


def _column(batch: pa.Table, name: str, reader: TraceReader) -> pa.ChunkedArray:
    canonical = {src: canon for canon, src in reader.columns.canonical().items()}
    col_name = canonical.get(name, name)
    if col_name not in batch.column_names:
        found = ", ".join(reader.columns_found)
        raise InputError(f"{reader.source}: missing column {name!r} (columns found: {found})")
    col = batch.column(col_name)
    return col if pa.types.is_string(col.type) else pc.cast(col, pa.string())


def _sizes(col: pa.ChunkedArray, name: str, source: str) -> pa.ChunkedArray:
    if col.null_count:
        raise InputError(f"{source}: missing value in size column {name!r}")
    try:
        sz = pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError(f"{source}: size column {name!r} must hold numbers") from None
    if len(sz) and (pc.min(sz).as_py() <= 0 or not math.isfinite(pc.max(sz).as_py())):
        raise InputError(f"{source}: size column {name!r} must hold positive numbers")
    return sz


def resolve_events(table: pa.Table, events: Sequence[str] | None, source: str) -> tuple[str, ...]:
    present = set(pc.unique(table.column("event")).to_pylist())
    if events:
        if not present.intersection(events):
            found = ", ".join(sorted(present))
            raise InputError(f"{source}: no events of kind {', '.join(events)} (kinds found: {found})")
        return tuple(events)
    for ev in DEFAULT_COUNTED:
        if ev in present:
            return (ev,)
    raise InputError(
        f"{source}: no retrieve or inject events to count (kinds found: {', '.join(sorted(present))}); "
        "choose with --event"
    )


def store_capacity(specs: Sequence[tuple[str, float | None]], stated: int | None) -> tuple[tuple[int, ...], str]:
    bad = isinstance(stated, bool) or not isinstance(stated, (int, np.integer))
    if stated is not None and (bad or stated < 1):
        raise UsageError(f"capacity must be a positive integer, got {stated!r}")
    recorded = [recorded_capacity(path) for path, _ in specs]
    found = sorted({c for c in recorded if c is not None})
    if found:
        if stated is not None and found != [stated]:
            raise UsageError(f"capacity {stated} contradicts the manifests, which record {', '.join(map(str, found))}")
        source = "manifest" if all(c is not None for c in recorded) else "manifest (some traces have none)"
        return tuple(found), source
    if stated is not None:
        return (int(stated),), "stated"
    return (), "unknown"


def recorded_capacity(path: str) -> int | None:
    """The store capacity in the world manifest of ``path`` (a grid directory or a run's trace file)."""
    p = Path(path)
    candidates = [(p / "_manifest.json", ("shared", "capacity"))] if p.is_dir() else [
        (p.parent / "manifest.json", ("config", "capacity"))]
    for file, keys in candidates:
        try:
            doc = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        for k in keys:
            doc = doc.get(k) if isinstance(doc, dict) else None
        if isinstance(doc, int) and not isinstance(doc, bool):
            return doc
    return None
