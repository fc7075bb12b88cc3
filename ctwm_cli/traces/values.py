"""Real-valued data sets: one observation per row in a named column (``ctwm audit --value-col``).

City populations, fire sizes, flare intensities: the data sets of Clauset et al. 2009 that are not
access counts. Each row is one observation, so there is no item to count; the column's values are the
sample the audit fits (continuously unless told otherwise). The reader is the trace reader of the
file (same formats, sandbox and ``where`` filter); :class:`ItemCounts` carries the values with the
row numbers as items, so the audit, its labels and groups work unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..common.errors import InputError, UsageError
from ..runtime.progress import ProgressCallback
from .counts import ItemCounts
from .engine import ReadOptions, as_read_options
from .paths import open_path, path_labels, relabelled
from .schema import FIELDS, ColumnMap

VALUE_EVENT = "value"  # the "event kind" of a values data set, as ItemCounts records it


def read_values(
    paths: Sequence[str | Path], read: ReadOptions | ColumnMap | None = None, *, column: str,
    group_by: str | None = None, progress: ProgressCallback | None = None,
    labels: Sequence[str | None] | None = None,
) -> list[ItemCounts]:
    """The values of ``column`` in every path (one entry per path, or per group of each path); ``labels``
    names the paths as in :func:`~ctwm_cli.traces.paths.read_counts`."""
    named = path_labels(paths, labels)
    if not column:
        raise UsageError("value_col must name a column", params=("value_col",))
    read = as_read_options(read)
    if read.engine.engine != "duckdb":
        raise UsageError("value_col is read by the duckdb engine only", params=("engine",))
    out: list[ItemCounts] = []
    for p, name in zip(paths, named, strict=True):
        try:
            reader = open_path(p, dataclasses.replace(read, columns=_as_item(read.columns, column)),
                               group_by=group_by)
        except InputError as exc:
            if exc.params != ("item_col",):
                raise
            # the readers' message for a missing item column, without its item-column hint
            raise InputError(str(exc).split("; remap with")[0], params=("value_col",)) from None
        with reader.open_engine(preserve_order=True) as engine:
            sql, checks = reader.values_sql(engine, column, group_by)
            order = ' ORDER BY "group"' if group_by is not None else ""
            t = reader.fetch(engine, f"SELECT * FROM ({sql}){order}", checks, arrow=True)
        if t.num_rows == 0:
            what = f"no rows match where {reader.where!r}" if reader.where else "trace is empty (no rows)"
            raise InputError(f"{reader.source}: {what}")
        if progress is not None:
            progress(t.num_rows, t.num_rows)
        out += [relabelled(c, name) for c in _split(reader.source, t, group_by is not None)]
    return out


def _as_item(columns: ColumnMap, column: str) -> ColumnMap:
    """The column map with ``column`` as the (required) item column: the readers insist on an item
    column, and here the value column is the one that must exist. A canonical field that already
    points at ``column`` is moved out of the way."""
    moved = {f: f"\0{f}" for f in FIELDS if f != "item" and getattr(columns, f) == column}
    given = {f: o for f, o in columns.given.items() if f not in moved and f != "item"}
    return dataclasses.replace(columns, item=column, given=given, **moved)


def _split(source: str, t: pa.Table, grouped: bool) -> list[ItemCounts]:
    values = t.column("value").to_numpy()
    if not grouped:
        return [_values(source, None, values)]
    groups = t.column("group").to_pylist()
    out, start = [], 0
    for i in range(1, len(groups) + 1):
        if i == len(groups) or groups[i] != groups[start]:
            out.append(_values(source, groups[start], values[start:i]))
            start = i
    return out


def _values(source: str, group: str | None, values: np.ndarray) -> ItemCounts:
    return ItemCounts(source=source, group=group, events=(VALUE_EVENT,),
                      items=pa.array(np.arange(1, values.size + 1)), counts=np.asarray(values, dtype=np.float64))
