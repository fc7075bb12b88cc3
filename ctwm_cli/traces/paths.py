"""Path-level reading: from trace paths to scans or per-item counts in one call.

Every command that reads traces (inspect, audit, concentration, psd, finite-size, health,
simulate --trace) goes through :class:`ReadOptions` and these functions, so the column map, the
``where`` filter and the engine are applied the same way everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ..common.errors import InputError, UsageError
from ..common.labels import check_unique, trace_name
from ..runtime.progress import ProgressCallback
from .aggregate import count_items, event_kinds, item_counts, scan_trace
from .base import TraceReader
from .counts import ItemCounts, TraceScan
from .engine import ReadOptions, as_read_options
from .readers import open_trace
from .schema import ColumnMap

__all__ = ["ReadOptions", "open_path", "read_counts", "scan_paths"]


def _keep_for(columns: ColumnMap, extra: Sequence[str] = ()) -> tuple[str, ...]:
    canonical = columns.canonical()
    return tuple(dict.fromkeys(c for c in extra if c and c not in canonical))


def open_path(
    path: str | Path, read: ReadOptions | ColumnMap | None = None, *, group_by: str | None = None,
    keep: Sequence[str] = (), optional: Sequence[str] = (),
) -> TraceReader:
    """Open one trace with ``read``'s options, carrying ``group_by`` and ``keep`` columns along. A
    ``group_by`` column the trace lacks is read out of the scope text in ``run`` when it has one
    (:func:`~ctwm_cli.traces.aggregate.group_expression`), else refused when counting."""
    read = as_read_options(read)
    grouped = _keep_for(read.columns, [group_by] if group_by else [])
    return open_trace(path, read.columns, keep=_keep_for(read.columns, keep),
                      optional=tuple(dict.fromkeys([*grouped, *optional])), input_format=read.input_format,
                      where=read.where, engine=read.engine)


def _by_scope(reader: TraceReader, group_by: str | None) -> bool:
    """Whether ``group_by`` is read out of the scope texts in ``run`` (the trace has no such column)."""
    return bool(group_by) and group_by not in reader.columns.canonical() and group_by not in reader.columns_found


def _scoped_counts(reader: TraceReader, group_by: str | None, counts: list[ItemCounts]) -> list[ItemCounts]:
    """``counts``, or an error when ``group_by`` came from ``run`` and no row's scope text holds it."""
    if _by_scope(reader, group_by) and all(not c.group for c in counts):
        from .scopekeys import key_names

        raise InputError(f"{reader.source}: no column {group_by!r} to group by, and no run value is a scope text "
                         f"holding {' or '.join(repr(k) for k in key_names(group_by))} (such as user_id=alice)")
    return counts


def scan_paths(
    paths: Sequence[str | Path], read: ReadOptions | ColumnMap | None = None, *, group_by: str | None = None,
    progress: ProgressCallback | None = None, stats: bool = True, labels: Sequence[str | None] | None = None,
    table: bool = True,
) -> list[TraceScan]:
    """One :class:`TraceScan` per path (what ``ctwm inspect`` reports); ``labels`` as in :func:`read_counts`;
    ``stats`` and ``table`` as in :func:`~ctwm_cli.traces.aggregate.scan_trace` (the Dask engine always
    returns the table)."""
    read = as_read_options(read)
    named = path_labels(paths, labels)
    if read.engine.engine == "dask":
        from .dask_engine import dask_scan

        return [relabelled(dask_scan(open_path(p, read, group_by=group_by), group_by=group_by), name)
                for p, name in zip(paths, named, strict=True)]
    return [relabelled(scan_trace(open_path(p, read, group_by=group_by), group_by=group_by, progress=progress,
                              stats=stats, table=table), name)
            for p, name in zip(paths, named, strict=True)]


def read_counts(
    paths: Sequence[str | Path], read: ReadOptions | ColumnMap | None = None, *, group_by: str | None = None,
    events: Sequence[str] | None = None, progress: ProgressCallback | None = None,
    labels: Sequence[str | None] | None = None,
) -> list[ItemCounts]:
    """Per-item counts of every path (one entry per path, or per group of each path).

    Each entry's ``source`` is its path's identity (:func:`~ctwm_cli.common.labels.trace_name`) or, when
    ``labels`` gives one per path, that label (None keeps the path's).

    With ``read.engine.engine == 'dask'`` the counting runs as ``dask.dataframe`` tasks on the
    scheduler ``read.engine.scheduler``; the counts are identical to DuckDB's.
    """
    events = event_kinds(events)
    read = as_read_options(read)
    named = path_labels(paths, labels)
    if read.engine.engine == "duckdb":
        out: list[ItemCounts] = []
        for p, name in zip(paths, named, strict=True):
            reader = open_path(p, read, group_by=group_by)
            counts = count_items(reader, group_by=group_by, events=events, progress=progress)
            out += [relabelled(c, name) for c in _scoped_counts(reader, group_by, counts)]
        return out
    scans = scan_paths(paths, read, group_by=group_by, progress=progress, stats=False, labels=labels)
    out: list[ItemCounts] = []
    for scan in scans:
        out += item_counts(scan, events)
    return out


def _checked(paths: Sequence[str | Path]) -> Sequence[str | Path]:
    if isinstance(paths, (str, Path)) or not paths:
        raise UsageError("paths must be a non-empty sequence of trace paths", params=("paths",))
    return paths


def path_labels(paths: Sequence[str | Path], labels: Sequence[str | None] | None) -> list[str | None]:
    """One label (or None) per path; a label list of another length is a usage error naming ``labels``."""
    paths = _checked(paths)
    if labels is None:
        check_unique([_name(p) for p in paths])
        return [None] * len(paths)
    if isinstance(labels, str) or len(labels) != len(paths):
        n = 1 if isinstance(labels, str) else len(labels)
        raise UsageError(f"labels: {n} label(s) for {len(paths)} trace(s); give one label per trace",
                         params=("labels",))
    if any(label is not None and not str(label).strip() for label in labels):
        raise UsageError("labels: a label must not be empty", params=("labels",))
    named = [None if label is None else str(label) for label in labels]
    check_unique([_name(p) if label is None else label for p, label in zip(paths, named, strict=True)])
    return named


def _name(path: str | Path) -> str:
    """A trace's name when it has no label: its identity (a URL as written)."""
    return trace_name(str(path))


def relabelled(result, label: str | None):
    return result if label is None else dataclasses.replace(result, source=label)
