"""Counting with ``dask.dataframe`` (``--engine dask``; the ``dask`` extra), for a dataset that
outgrows one machine: the workers read their partitions, each partition is normalised, filtered
and grouped by the same DuckDB SQL as a local read, and Dask sums the partial counts.

Integer sums do not depend on how rows were split, so the counts equal the local engine's exactly.
Parquet (files, hive directories, globs, URLs) and CSV are read this way; JSONL goes through the
local engine (its line-by-line hardening needs one reader per file).
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from ..common.errors import InputError, UsageError
from ..runtime.distributed import dask_client
from .aggregate import aggregate_sql, scan_trace
from .base import ArrowReader, TraceReader
from .counts import TraceScan
from .engine import EngineOptions
from .formats import FORMATS
from .readers import FileReader
from .schema import ColumnMap


def _partition_counts(pdf: pd.DataFrame, source: str, fmt: str, columns: ColumnMap, keep: tuple[str, ...],
                      where: str | None, group_by: str | None) -> pd.DataFrame:
    """One partition's counts by ([group,] event, item), plus its row count (runs on a worker)."""
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    reader = ArrowReader(table, source, fmt, columns, keep, where=where, engine=EngineOptions(threads=1))
    reader.lenient_text = FORMATS[fmt].lenient_text  # CSV partitions arrive as text, checked per row
    with reader.open_engine() as engine:
        rows_sql, checks = reader.canonical_sql(engine, strict_item=False)
        sql, _ = aggregate_sql(reader, rows_sql, group_by)
        return reader.fetch(engine, sql, checks, arrow=True).to_pandas()


def _meta(group_by: str | None) -> pd.DataFrame:
    cols = {"group": pd.Series([], dtype=object)} if group_by else {}
    cols |= {"event": pd.Series([], dtype=object), "item": pd.Series([], dtype=object),
             "n": pd.Series([], dtype="int64"), "rows": pd.Series([], dtype="int64")}
    return pd.DataFrame(cols)


def _frame(reader: FileReader):
    import dask.dataframe as dd

    layout = reader.layout
    opts = {"storage_options": layout.fs.storage_options} if layout.fs is not None else {}
    how = reader.file_format.dask
    if how == "read_parquet":
        dataset = {"partitioning": "hive", "partition_base_dir": layout.root} if layout.root else {}
        return dd.read_parquet(list(layout.files), dataset=dataset, **opts)
    if how == "read_csv":
        return dd.read_csv(list(layout.files), dtype=str, blocksize="64MB",
                           compression="gzip" if layout.gzip else None, **opts)
    readable = " and ".join(f.title for f in FORMATS.values() if f.dask)
    raise UsageError(f"engine dask reads {readable}; {reader.source} is {reader.file_format.title} "
                     "(use engine duckdb)", params=("engine",))


def dask_scan(reader: TraceReader, *, group_by: str | None = None) -> TraceScan:
    """Counts of ``reader`` computed by Dask on ``reader.options.scheduler`` (threads if none)."""
    try:
        import dask
    except ImportError:
        raise UsageError("engine dask needs the dask extra: pip install 'ctwm[dask]'", params=()) from None
    if not isinstance(reader, FileReader):
        readable = " and ".join(f.title for f in FORMATS.values() if f.dask)
        raise UsageError(f"engine dask reads {readable} files; {reader.source} is {reader.format}",
                         params=("engine",))
    frame = _frame(reader)
    keys = ["group", "event", "item"] if group_by else ["event", "item"]
    parts = frame.map_partitions(
        _partition_counts, reader.source, reader.layout.format, reader.columns, reader.keep, reader.where, group_by,
        meta=_meta(group_by),
    )
    total = parts.groupby(keys).sum()
    try:
        with dask_client(reader.options.scheduler) as client:
            result = total.compute() if client is not None else dask.compute(total, scheduler="threads")[0]
    except InputError:
        raise
    except Exception:  # a bad value in some partition: let the local reader locate it
        scan_trace(reader, group_by=group_by, stats=False)
        raise
    table = pa.Table.from_pandas(result.reset_index(), preserve_index=False)
    return _scan_of(reader, table, keys, group_by)


def _scan_of(reader: TraceReader, table: pa.Table, keys: list[str], group_by: str | None) -> TraceScan:
    import pyarrow.compute as pc

    rows = int(pc.sum(table.column("rows")).as_py() or 0)
    if rows == 0:
        what = f"no rows match where {reader.where!r}" if reader.where else "trace is empty (no rows)"
        raise InputError(f"{reader.source}: {what}")
    table = table.select([*keys, "n"]).cast(pa.schema(
        [*(pa.field(k, pa.string()) for k in keys), pa.field("n", pa.int64())]))
    events = table.group_by("event").aggregate([("n", "sum")])
    counts = dict(zip(events.column("event").to_pylist(), events.column("n_sum").to_pylist(), strict=True))
    return TraceScan(
        source=reader.source, format=reader.format, kind="counts" if "count" in reader.mapping else "events",
        n_rows=rows, columns_found=tuple(reader.columns_found), mapping=reader.mapping, group_by=group_by,
        step_min=None, step_max=None, events=dict(sorted(counts.items())), runs=None,
        n_items=len(pc.unique(table.column("item"))), table=table,
    )
