"""Counting a trace: per ``(group, event, item)`` inside DuckDB, out of core under its memory limit.

:func:`scan_trace` runs one grouped aggregation (and, for what ``ctwm inspect`` reports, one light
pass for the step range and distinct runs); :func:`item_counts` turns the aggregated table into
per-item counts of the chosen event kinds. Memory grows with the number of distinct keys, and
DuckDB spills its hash tables to disk when they outgrow ``memory_limit``.

``pyarrow.compute`` is imported by the functions that work on the per-item Arrow table, not here:
what ``ctwm inspect`` reports is summed inside DuckDB, and the module costs ~25 ms of its start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..common.errors import InputError, UsageError
from ..runtime.progress import ProgressCallback
from .base import TraceReader, engine_message
from .column_checks import warn_if_counts_like
from .counts import INT64_MAX, ItemCounts, TraceScan, int64_numpy, split_groups
from .engine import quote_ident, quote_literal
from .events import DEFAULT_COUNTED as DEFAULT_COUNTED  # re-exported: the diagnostics count the same default
from .events import choose_events, event_kinds
from .normalise import CHECK_MARK
from .schema import CONTEXT_EVENT_KINDS, DEFAULT_EVENT
from .scopekeys import group_sql as scope_group_sql
from .scopekeys import is_scope_key


def checked_int64(total: str, what: str) -> str:
    """SQL of the HUGEINT ``total`` as BIGINT, or a located error when it does not fit: a per-item
    count past 2**63 - 1 is refused (exit 3), never wrapped."""
    return (f"CASE WHEN {total} > {INT64_MAX} THEN "
            f"error({quote_literal(CHECK_MARK + ': ' + what + ' add up to more than 2**63 - 1 (the 64-bit limit)')}) "
            f"ELSE CAST({total} AS BIGINT) END")


def _group_name(reader: TraceReader, group_by: str, what: str = "group-by column") -> str:
    """The canonical column behind ``group_by`` (a source name or a kept extra column)."""
    canonical = {src: canon for canon, src in reader.columns.canonical().items()}
    name = canonical.get(group_by, group_by)
    present = set(reader.mapping) | {k for k in reader.keep if k in reader.columns_found}
    if name not in present:
        found = ", ".join(reader.columns_found)
        raise InputError(f"{reader.source}: missing {what} {group_by!r} (columns found: {found})")
    return name


def group_expression(reader: TraceReader, group_by: str) -> str:
    """The SQL of a row's group: its ``group_by`` column, else — a wrapper trace, whose owner is a scope
    text in ``run`` (:mod:`.scopekeys`) — that key's part of ``run`` (``--group-by user`` on
    ``agent_id=a&user_id=alice``)."""
    try:
        return f"CAST({quote_ident(_group_name(reader, group_by))} AS VARCHAR)"
    except InputError:
        if "run" not in reader.mapping or not is_scope_key(group_by):
            raise
        return scope_group_sql("run", group_by)  # the rows are canonical: run is "run"


def aggregate_sql(
    reader: TraceReader, rows_sql: str, group_by: str | None, by: Sequence[str] = (),
) -> tuple[str, list[str]]:
    """The grouped count over ``rows_sql`` and its key columns (``by``: more key columns, as text)."""
    has = set(reader.mapping)
    keys = []
    select = []
    if group_by is not None:
        select.append(f"coalesce({group_expression(reader, group_by)}, '') AS \"group\"")
        keys.append("group")
    for name in by:
        select.append(f"CAST({quote_ident(_group_name(reader, name, 'column'))} AS VARCHAR) AS {quote_ident(name)}")
        keys.append(name)
    if "event" in has:
        select.append(f"coalesce(event, {quote_literal(DEFAULT_EVENT)}) AS event")
    select.append("item")
    names = [*keys, *(["event"] if "event" in has else []), "item"]
    # Only varying columns are hashed: a missing event column is the constant retrieve, added after
    # grouping; for event tables the row count is n itself.
    per_item = checked_int64('sum("count")', f"the counts of one item in column {reader.columns.count!r}")
    counts = f"{per_item} AS n, count(*) AS rows" if "count" in has else "count(*) AS n"
    group = ", ".join(str(i + 1) for i in range(len(names)))
    inner = f"SELECT {', '.join(select)}, {counts} FROM ({rows_sql}) GROUP BY {group}"
    outer = [quote_ident(k) for k in keys]
    outer.append("event" if "event" in has else f"{quote_literal(DEFAULT_EVENT)} AS event")
    outer += ["item", "n", "rows" if "count" in has else "n AS rows"]
    return f"SELECT {', '.join(outer)} FROM ({inner})", [*keys, "event", "item"]


class _Counted:
    """The grouped count of one trace, held as a DuckDB table while the engine is open.

    Everything after the one pass over the rows (event totals, distinct items, the per-item
    counts sorted by count then id) is computed on that small table inside DuckDB. With
    ``table=False`` and one row per item (no event column, no other key) the totals are summed as
    the aggregate is computed, and it is never materialised: ``ctwm inspect`` needs no per-item table
    (10M events over 0.8M items: 0.03-0.08 s less, no Arrow conversion)."""

    def __init__(self, reader: TraceReader, group_by: str | None = None, by: Sequence[str] = (), *,
                 table: bool = True):
        self.reader, self.group_by, self.by, self.wanted = reader, group_by, tuple(by), table
        self.engine = reader.open_engine()
        try:
            self.rows_sql, self.checks = reader.canonical_sql(self.engine, strict_item=False)
            sql, self.keys = aggregate_sql(reader, self.rows_sql, group_by, by)
            self.agg: pa.Table | None = None
            source = f"({sql})"
            if table or "event" in reader.mapping or group_by is not None or by:
                self.agg = reader.fetch(self.engine, sql, self.checks, arrow=True)
                self.engine.con.register("ctwm_agg", self.agg)
                source = "ctwm_agg"
            # One query for every total, in DuckDB, not pyarrow's group_by: that one loads Acero,
            # pyarrow.dataset and pandas (~0.2-0.6 s of start-up per command) for a table of a few rows.
            # sum() of BIGINT is a HUGEINT: totals past 2**63 stay exact (pyarrow's sum would wrap).
            totals = reader.fetch(self.engine, "SELECT event, sum(n), sum(rows), count(*) FILTER (WHERE item IS NULL), "
                                  f"count(*) FROM {source} GROUP BY event", self.checks)
            if any(t[3] for t in totals):
                raise reader.error_for(self.engine, self.checks, RuntimeError("missing value in column item"))
            self.rows = int(sum(t[2] for t in totals))
            if self.rows == 0:
                what = f"no rows match where {reader.where!r}" if reader.where else "trace is empty (no rows)"
                raise InputError(f"{reader.source}: {what}")
            self.events = dict(sorted((e, int(n)) for e, n, *_ in totals))  # without an event column: retrieve
            self.n_keys = int(sum(t[4] for t in totals))
        except BaseException:
            self.engine.close()
            raise

    def _one(self, sql: str) -> tuple:
        return self.engine.con.sql(sql).fetchall()[0]

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc) -> None:
        self.engine.close()

    def stats(self) -> tuple[int | None, int | None, int | None]:
        """Step range and number of runs: one light pass over the rows, or, when the trace's own column
        statistics give the step range (:attr:`~ctwm_cli.traces.base.TraceReader.column_statistics`),
        that range from them and a pass over the runs alone (10M events: 1 ms + 18 ms, not 35 ms)."""
        has = set(self.reader.mapping)
        steps = ["min(step)", "max(step)"] if "step" in has else ["NULL", "NULL"]
        runs = ["count(DISTINCT run)" if "run" in has else "NULL"]
        if self.reader.column_statistics and "step" in has and "run" in has:
            (lo, hi), (n_runs,) = self._pass(steps), self._pass(runs)
        else:
            lo, hi, n_runs = self._pass(steps + runs)
        return lo, hi, n_runs

    def _pass(self, parts: list[str]) -> tuple:
        return self.reader.fetch(self.engine, f"SELECT {', '.join(parts)} FROM ({self.rows_sql})", self.checks)[0]

    def table(self) -> pa.Table | None:
        return self.agg.select([*self.keys, "n"]) if self.wanted else None

    def distinct_items(self) -> int:
        """Distinct memory items: rows of the kinds that carry no memory item (a ``search`` row's item is
        its query id) are not items."""
        others = [e for e in self.events if e in CONTEXT_EVENT_KINDS]
        if len(self.events) == 1 and not others and self.group_by is None and not self.by:  # one row per item
            return self.n_keys
        if not others:
            return int(self._one("SELECT count(DISTINCT item) FROM ctwm_agg")[0])
        kinds = ", ".join(quote_literal(e) for e in others)
        return int(self._one(f"SELECT count(DISTINCT item) FROM ctwm_agg WHERE event NOT IN ({kinds})")[0])

    def item_counts(self, chosen: Sequence[str]) -> list[ItemCounts]:
        """Per-item counts of the ``chosen`` event kinds, sorted by count (descending) then item."""
        import duckdb

        grouped = self.group_by is not None
        keys = '"group", item' if grouped else "item"
        where = "" if set(self.events) <= set(chosen) else (
            f"WHERE event IN ({', '.join(quote_literal(e) for e in chosen)})")
        if len(self.events) == 1:  # one row per key already
            sql = f"SELECT {keys}, n FROM ctwm_agg {where}"
        else:
            total = checked_int64("sum(n)", "the counted events of one item")
            sql = f"SELECT {keys}, {total} AS n FROM ctwm_agg {where} GROUP BY {keys}"
        order = '"group", n DESC, item' if grouped else "n DESC, item"
        try:
            t = self.engine.run(self.engine.con.sql(f"{sql} ORDER BY {order}").to_arrow_table)
        except duckdb.Error as exc:
            raise InputError(f"{self.reader.source}: {engine_message(exc)}") from None
        return split_groups(self.reader.source, chosen, t, grouped)


def scan_trace(
    reader: TraceReader,
    *,
    group_by: str | None = None,
    progress: ProgressCallback | None = None,
    stats: bool = True,
    table: bool = True,
) -> TraceScan:
    """Count ``reader``'s rows by ``([group,] event, item)`` inside DuckDB.

    ``group_by`` is a canonical column (``run``) or any source column kept by the reader.
    ``stats=False`` skips the second, light pass for the step range and the number of runs;
    ``table=False`` leaves the aggregated table out of the result (``table`` is None), for a caller
    that reports the totals only.
    """
    with _Counted(reader, group_by, table=table) as counted:
        step_lo, step_hi, runs = counted.stats() if stats else (None, None, None)
        table, distinct = counted.table(), counted.distinct_items()
    if "count" not in reader.mapping and group_by is None:
        _warn_if_counts_like(reader, rows=counted.rows, items=distinct)
    if progress is not None:
        progress(counted.rows, counted.rows)
    return TraceScan(
        source=reader.source, format=reader.format, kind="counts" if "count" in reader.mapping else "events",
        n_rows=counted.rows, columns_found=tuple(reader.columns_found), mapping=reader.mapping, group_by=group_by,
        step_min=step_lo, step_max=step_hi, events=counted.events,
        runs=runs if "run" in reader.mapping else None, n_items=distinct, table=table,
        readings=tuple(reader.item_reading),
        mapping_origins={k: reader.columns.given.get(k, "default") for k in reader.mapping},
    )


def count_items(
    reader: TraceReader, *, group_by: str | None = None, events: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
) -> list[ItemCounts]:
    """Per-item counts straight from the trace: one pass, then sorting inside DuckDB (the fast path
    of :func:`~ctwm_cli.traces.paths.read_counts`; equal to ``item_counts(scan_trace(reader))``)."""
    events = event_kinds(events)
    if "event" not in reader.mapping:  # every row is a retrieve: group, count and sort in one query
        choose_events(reader.source, reader.format, {DEFAULT_EVENT: 1}, events)
        return _direct_counts(reader, group_by, progress)
    with _Counted(reader, group_by) as counted:
        chosen = choose_events(reader.source, reader.format, counted.events, events)
        out = counted.item_counts(chosen)
    if progress is not None:
        progress(counted.rows, counted.rows)
    return out


def _direct_counts(reader: TraceReader, group_by: str | None, progress: ProgressCallback | None) -> list[ItemCounts]:
    with reader.open_engine() as engine:
        rows_sql, checks = reader.canonical_sql(engine, strict_item=False)
        sql, keys = aggregate_sql(reader, rows_sql, group_by)
        grouped = group_by is not None
        cols = '"group", item' if grouped else "item"
        order = '"group", n DESC, item' if grouped else "n DESC, item"
        t = reader.fetch(engine, f"SELECT {cols}, n, rows FROM ({sql}) ORDER BY {order}", checks, arrow=True)
        if t.column("item").null_count:
            raise reader.error_for(engine, checks, RuntimeError("missing value in column item"))
    rows = int(int64_numpy(t.column("rows")).sum())
    if rows == 0:
        what = f"no rows match where {reader.where!r}" if reader.where else "trace is empty (no rows)"
        raise InputError(f"{reader.source}: {what}")
    if "count" not in reader.mapping and not grouped:
        _warn_if_counts_like(reader, rows=rows, items=t.num_rows)
    if progress is not None:
        progress(rows, rows)
    return split_groups(reader.source, (DEFAULT_EVENT,), t.select([*keys[:-2], "item", "n"]), grouped)


def _warn_if_counts_like(reader: TraceReader, *, rows: int, items: int) -> None:
    warn_if_counts_like(reader.source, reader.raw_types(), reader.columns, rows=rows, items=items,
                        untyped=reader.untyped)


def count_by(reader: TraceReader, by: Sequence[str], progress: ProgressCallback | None = None) -> pa.Table:
    """Counts keyed by the columns ``by`` (as text, nulls kept), ``event`` and ``item``, plus ``n``.

    For analyses that need keys of their own (``ctwm finite-size``: family, size, run)."""
    with _Counted(reader, None, list(dict.fromkeys(by))) as counted:
        table = counted.table()
    if progress is not None:
        progress(counted.rows, counted.rows)
    return table


def resolve_events(scan: TraceScan, events: Sequence[str] | None) -> tuple[str, ...]:
    """The event kinds to count: the caller's, else ``retrieve`` if present, else ``inject``."""
    return choose_events(scan.source, scan.format, scan.events, events)


def item_counts(scan: TraceScan, events: Sequence[str] | None = None) -> list[ItemCounts]:
    """Per-item counts of the chosen event kinds; one entry per group (one if not grouped).

    Each group's items are sorted by count (descending), ties by item id (ascending)."""
    import pyarrow.compute as pc

    events = event_kinds(events)
    chosen = resolve_events(scan, events)
    t = scan.table
    if t is None:
        raise UsageError(f"{scan.source}: the scan holds no per-item table (it was made with table=False)",
                         params=("scan",))
    if set(scan.events) - set(chosen):
        t = t.filter(pc.is_in(t.column("event"), value_set=pa.array(chosen)))
    grouped = scan.group_by is not None
    keys = ["group", "item"] if grouped else ["item"]
    if len(chosen) > 1 or len(scan.events) > 1:
        t = t.group_by(keys, use_threads=False).aggregate([("n", "sum")]).rename_columns([*keys, "n"])
    sort = [("n", "descending"), ("item", "ascending")]
    t = t.take(pc.sort_indices(t, sort_keys=[("group", "ascending"), *sort] if grouped else sort))
    return split_groups(scan.source, chosen, t, grouped)
