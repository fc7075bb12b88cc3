"""Reading for :mod:`.finite_size`: one pass per trace (counted by DuckDB) into counts keyed by
(family, size, run, event, item), the event kinds to count, and the store capacity recorded in world manifests."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..common.errors import InputError, UsageError
from ..runtime.progress import ProgressCallback
from ..traces import ColumnMap, open_trace
from ..traces.aggregate import DEFAULT_COUNTED, count_by

DEFAULT_FAMILY = "all"


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
    """Counts keyed by (family, size, run, event, item), counted by the trace engine in one pass."""
    canonical = set(ColumnMap().canonical())
    keep = tuple(dict.fromkeys(c for c in (size_col, group_by) if c is not None and c not in canonical))
    reader = open_trace(path, columns, keep=keep)
    by = [c for c in dict.fromkeys((group_by, size_col)) if c is not None]
    has_run = "run" in reader.mapping
    t = count_by(reader, [*by, "run"] if has_run else by, progress)
    n = t.num_rows
    fam = t.column(group_by) if group_by else pa.repeat(family or DEFAULT_FAMILY, n)
    sz = _sizes(t.column(size_col), size_col, reader.source) if size_col else pa.array(np.full(n, size, np.float64))
    run = pc.fill_null(t.column("run"), "") if has_run else pa.repeat("", n)
    run = pc.if_else(pc.equal(run, ""), reader.source, pc.binary_join_element_wise(reader.source, run, "#"))
    keys = ["family", "size", "run", "event", "item"]
    part = pa.table({"family": pc.fill_null(fam, ""), "size": sz, "run": run, "event": t.column("event"),
                     "item": t.column("item"), "n": t.column("n")})
    return part.group_by(keys).aggregate([("n", "sum")]).rename_columns([*keys, "n"])


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
        "choose with events",
        params=("events",),
    )


def store_capacity(specs: Sequence[tuple[str, float | None]], stated: int | None) -> tuple[tuple[int, ...], str]:
    bad = isinstance(stated, bool) or not isinstance(stated, (int, np.integer))
    if stated is not None and (bad or stated < 1):
        raise UsageError(f"capacity must be a positive integer, got {stated!r}", params=("capacity",))
    recorded = [recorded_capacity(path) for path, _ in specs]
    found = sorted({c for c in recorded if c is not None})
    if found:
        if stated is not None and found != [stated]:
            raise UsageError(f"capacity {stated} contradicts the manifests, which record {', '.join(map(str, found))}",
                             params=("capacity",))
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
