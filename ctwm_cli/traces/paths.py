"""Path-level reading: from trace paths to scans or per-item counts in one call.

Every command that reads traces (inspect, audit, concentration, psd, finite-size, health,
simulate --trace) goes through :class:`ReadOptions` and these functions, so the column map, the
``where`` filter and the engine are applied the same way everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from ..progress import ProgressCallback
from .aggregate import ItemCounts, TraceScan, item_counts, scan_trace
from .base import TraceReader
from .engine import EngineOptions, check_where
from .readers import INPUT_FORMATS, open_trace
from .schema import ColumnMap


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """How to read a trace: column map, row filter (SQL predicate), engine, telemetry format."""

    columns: ColumnMap = dataclasses.field(default_factory=ColumnMap)
    where: str | None = None
    engine: EngineOptions = dataclasses.field(default_factory=EngineOptions)
    input_format: str = "auto"

    def __post_init__(self) -> None:
        check_where(self.where)
        if self.input_format not in INPUT_FORMATS:
            raise UsageError(f"input_format must be one of {', '.join(INPUT_FORMATS)}, got {self.input_format!r}")


def _keep_for(group_by: str | None, columns: ColumnMap, extra: Sequence[str] = ()) -> tuple[str, ...]:
    canonical = columns.canonical()
    wanted = [group_by, *extra] if group_by else list(extra)
    return tuple(dict.fromkeys(c for c in wanted if c and c not in canonical))


def open_path(
    path: str | Path, read: ReadOptions | None = None, *, group_by: str | None = None,
    keep: Sequence[str] = (), optional: Sequence[str] = (),
) -> TraceReader:
    """Open one trace with ``read``'s options, carrying ``group_by`` and ``keep`` columns along."""
    read = read or ReadOptions()
    return open_trace(path, read.columns, keep=_keep_for(group_by, read.columns, keep), optional=optional,
                      input_format=read.input_format, where=read.where, engine=read.engine)


def scan_paths(
    paths: Sequence[str | Path], read: ReadOptions | None = None, *, group_by: str | None = None,
    progress: ProgressCallback | None = None, stats: bool = True,
) -> list[TraceScan]:
    """One :class:`TraceScan` per path (what ``ctwm inspect`` reports)."""
    if isinstance(paths, (str, Path)) or not paths:
        raise UsageError("paths must be a non-empty sequence of trace paths")
    return [scan_trace(open_path(p, read, group_by=group_by), group_by=group_by, progress=progress, stats=stats)
            for p in paths]


def read_counts(
    paths: Sequence[str | Path], read: ReadOptions | None = None, *, group_by: str | None = None,
    events: Sequence[str] | None = None, progress: ProgressCallback | None = None,
) -> list[ItemCounts]:
    """Per-item counts of every path (one entry per path, or per group of each path).

    With ``read.engine.engine == 'dask'`` the counting runs as ``dask.dataframe`` tasks on the
    scheduler ``read.engine.scheduler``; the counts are identical to DuckDB's.
    """
    read = read or ReadOptions()
    if isinstance(events, str):
        raise UsageError("events must be a sequence of event kinds, not a string")
    if read.engine.engine == "dask":
        from .dask_engine import dask_scan

        scans = [dask_scan(open_path(p, read, group_by=group_by), group_by=group_by) for p in _checked(paths)]
    else:
        scans = scan_paths(_checked(paths), read, group_by=group_by, progress=progress, stats=False)
    out: list[ItemCounts] = []
    for scan in scans:
        out += item_counts(scan, events)
    return out


def _checked(paths: Sequence[str | Path]) -> Sequence[str | Path]:
    if isinstance(paths, (str, Path)) or not paths:
        raise UsageError("paths must be a non-empty sequence of trace paths")
    return paths
