"""The reader base every trace source shares.

A reader describes its raw rows as a DuckDB relation (:meth:`TraceReader.raw_sql`) with known source
column types. Normalisation is SQL built from those types (:mod:`.normalise`): mapped columns renamed to the
schema's names and cast to its types; a value that cannot be cast (a fraction in ``step``, a
boolean ``count``, an object where an id belongs) raises inside DuckDB, after which the reader
locates the first offending row or line precisely (:meth:`TraceReader.locate`) and reports it in
one line naming the file and the line or row. The telemetry importers build their rows as an Arrow
table and reuse the same normalisation, so there is one reading path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

import pyarrow as pa

from ..common.errors import InputError, UsageError
from .column_checks import check_named
from .engine import Engine, EngineOptions, quote_ident
from .normalise import CHECK_MARK, Check, canonical_select, error_sql, score_expr, text_expr
from .predicate import check_where
from .schema import ColumnMap, missing_column_message
from .shapes import ColumnPath, resolve_paths, shape_of, shaped_sql


class TraceReader(ABC):
    """An open trace: a raw DuckDB relation plus the column map, extras and row filter applied to it.

    ``keep`` names extra source columns that must exist (a ``group_by`` column), carried as text;
    ``optional`` extra columns are carried when present (null where absent). ``where`` is a SQL
    predicate over the canonical columns (and any other source column), applied before counting.
    """

    def __init__(
        self, source: str, fmt: str, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = (),
        *, where: str | None = None, engine: EngineOptions | None = None,
    ):
        self.source = source
        self.format = fmt
        self.columns = columns
        self.keep = tuple(dict.fromkeys([*keep, *optional]))
        self._required_keep = tuple(keep)
        self.where = check_where(where)  # every reader, whatever path it came by
        self.options = engine or EngineOptions()
        self.columns_found: list[str] = []
        self.lenient_text = False  # numbers may arrive as text, checked per row (CSV)
        self.untyped = False  # columns it does not map are not typed (JSONL)
        self.paths: tuple[ColumnPath, ...] = ()  # list and nested columns (:mod:`.shapes`), set by check_required

    @property
    def mapping(self) -> dict[str, str]:
        """Which canonical fields exist, as ``{canonical: source}``."""
        found = set(self.columns_found) | {p.name for p in self.paths}
        if any(p.explode for p in self.paths):
            found.add(self.columns.rank)
        return {c: s for c, s in self.columns.canonical().items() if s in found}

    @property
    def item_reading(self) -> list[str]:
        """How list and nested columns were read (``ctwm inspect``), one line each."""
        return [p.describe() for p in self.paths]

    def column_kinds(self) -> dict[str, str]:
        """Each raw column's shape (list, struct, json, scalar), to resolve list columns and dotted paths."""
        return {name: shape_of(t) for name, t in self.raw_types().items()}

    def shaped(self, engine: Engine, raw: str, types: dict[str, str]) -> tuple[str, dict[str, str]]:
        """``raw`` with its list and nested columns read out (:func:`.shapes.shaped_sql`), and its types."""
        if not self.paths:
            return raw, types
        import duckdb

        sql = shaped_sql(raw, self.paths, types, self.columns.rank)
        try:
            rows = engine.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
        except duckdb.Error as exc:
            raise InputError(f"{self.source}: {engine_message(exc)}") from None
        return sql, {r[0]: r[1] for r in rows}

    # -- what each source provides -------------------------------------------------------------

    @abstractmethod
    def raw_sql(self, engine: Engine) -> str:
        """A FROM-clause expression over the raw rows (registering what it needs on ``engine``)."""

    @abstractmethod
    def raw_types(self) -> dict[str, str]:
        """Every raw column and its DuckDB type."""

    def locate(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        """The precise error behind a failed query (default: DuckDB's own first line)."""
        return InputError(f"{self.source}: {engine_message(exc)}")

    def inputs(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(files, directories) DuckDB may read for this trace; nothing for a trace already in memory."""
        return (), ()

    @property
    def column_statistics(self) -> bool:
        """Whether DuckDB answers ``min``/``max`` of the canonical rows from the files' own column
        statistics (Parquet footers) without reading the values: False unless a reader says so."""
        return False

    def open_engine(self, *, preserve_order: bool = False) -> Engine:
        """A sandboxed :class:`Engine` that can read this trace's inputs and nothing else."""
        files, dirs = self.inputs()
        return Engine(self.options, preserve_order=preserve_order, allowed=files, allowed_dirs=dirs)

    # -- shared --------------------------------------------------------------------------------

    def check_required(self, names: Sequence[str]) -> None:
        try:
            self.paths = resolve_paths(self.columns, self.column_kinds())
        except InputError as exc:
            raise InputError(f"{self.source}: {exc}") from None
        resolved = [*names, *(p.name for p in self.paths)]
        self.check_configured_item(resolved, names)
        missing = [c for c in (self.columns.item, *self._required_keep) if c not in resolved]
        if missing:
            msg = missing_column_message(self.source, missing[0], list(names), item=missing[0] == self.columns.item)
            raise InputError(msg, params=("item_col",))
        check_named(self.source, self.columns, resolved, shown=names)

    def check_configured_item(self, resolved: Sequence[str], names: Sequence[str]) -> None:
        """An item column named by the project's column map and absent: the error says where it was named."""
        if self.columns.given.get("item", "item_col") != "item_col" and self.columns.item not in resolved:
            check_named(self.source, self.columns, resolved, shown=names)

    def canonical_sql(self, engine: Engine, *, strict_item: bool) -> tuple[str, list[Check]]:
        """``SELECT`` of canonical rows (filtered by ``where``) and the checks behind its casts."""
        raw, types = self.shaped(engine, self.raw_sql(engine), self.raw_types())
        try:
            select, checks = canonical_select(types, self.columns, self.keep, lenient_text=self.lenient_text)
        except InputError as exc:
            raise InputError(f"{self.source}: {exc}") from None
        item = quote_ident("item")
        sql = f"SELECT {', '.join(select)} FROM {raw}"
        if self.where:
            self._bind_where(engine, sql)
            sql = f"SELECT * FROM ({sql}) WHERE ({self.where})"
        if strict_item:
            msg = f"missing value in column {self.columns.item!r}"
            sql = (f"SELECT * REPLACE (CASE WHEN {item} IS NULL THEN {error_sql(msg)} ELSE {item} END AS {item}) "
                   f"FROM ({sql})")
        checks = [Check(f"{quote_ident(self.columns.item)} IS NULL", f"missing value in column {self.columns.item!r}"),
                  *checks]
        return sql, checks

    def values_sql(self, engine: Engine, column: str, group_by: str | None) -> tuple[str, list[Check]]:
        """``SELECT`` of the observations in ``column`` as a DOUBLE ``value`` (and ``group`` as text), rows
        filtered by ``where`` first: a data set of real-valued sizes, one observation per row (``ctwm audit
        --value-col``). A missing, non-numeric or non-positive value is an error naming its column."""
        raw, types = self.shaped(engine, self.raw_sql(engine), self.raw_types())
        for name in (column, group_by):
            if name is not None and name not in types:
                found = ", ".join(types)
                raise InputError(f"{self.source}: missing column {name!r} (columns found: {found})",
                                 params=("value_col",) if name == column else ("group_by",))
        c = quote_ident(column)
        try:
            expr, checks = score_expr(c, column, types[column], self.lenient_text)
        except InputError as exc:
            raise InputError(f"{self.source}: {exc}", params=("value_col",)) from None
        bad = f"({expr}) IS NULL OR isnan({expr}) OR isinf({expr}) OR NOT (({expr}) > 0)"
        msg = f"column {column!r} must hold positive numbers (filter other rows with where)"
        checks = [*checks, Check(f"{c} IS NULL", f"missing value in column {column!r}"), Check(bad, msg)]
        select = [f"CASE WHEN {bad} THEN {error_sql(msg)} ELSE {expr} END AS value"]
        if group_by is not None:
            g, more = text_expr(quote_ident(group_by), group_by, types[group_by])
            select.append(f'{g} AS "group"')
            checks += more
        rows = f"SELECT * FROM {raw}"
        if self.where:
            self._bind_where(engine, rows)
            rows = f"SELECT * FROM ({rows}) WHERE ({self.where})"
        return f"SELECT {', '.join(select)} FROM ({rows})", checks

    def _bind_where(self, engine: Engine, rows_sql: str) -> None:
        """The predicate must name columns this trace has and be true or false for each row: a
        usage error (quoting it) before any row is read, not a cast failure half-way through."""
        import duckdb

        try:
            kind = engine.con.sql(f"SELECT ({self.where}) AS ctwm_where FROM ({rows_sql}) LIMIT 0").types[0]
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as exc:
            found = ", ".join(self.columns_found)
            raise UsageError(f"where: {self.where!r}: {engine_message(exc)} (columns: {found})",
                             params=("where",)) from None
        if str(kind).upper() not in ("BOOLEAN", "NULL", '"NULL"'):
            raise UsageError(f"where: {self.where!r} must be a condition, true or false for each row "
                             f"(it is a {str(kind).upper()} expression)", params=("where",))

    def query(self, engine: Engine, sql: str, checks: Sequence[Check]):
        """Run ``sql`` on ``engine``; a DuckDB error becomes a located :class:`InputError`."""
        import duckdb

        try:
            return engine.con.sql(sql)
        except duckdb.Error as exc:
            raise self.error_for(engine, checks, exc) from None

    def fetch(self, engine: Engine, sql: str, checks: Sequence[Check], *, arrow: bool = False):
        """Run ``sql`` and fetch all of it (an Arrow table, or a list of tuples); errors located."""
        import duckdb

        rel = self.query(engine, sql, checks)
        try:
            return engine.run(rel.to_arrow_table if arrow else rel.fetchall)  # a signal interrupts it at once
        except duckdb.Error as exc:
            raise self.error_for(engine, checks, exc) from None

    def error_for(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        import duckdb

        if isinstance(exc, duckdb.InterruptException):
            raise KeyboardInterrupt from None
        if self.where and isinstance(exc, (duckdb.BinderException, duckdb.ParserException, duckdb.CatalogException)):
            found = ", ".join(self.columns_found)
            raise UsageError(f"where: {self.where!r}: {engine_message(exc)} (columns: {found})",
                             params=("where",)) from None
        if (self.where and isinstance(exc, (duckdb.ConversionException, duckdb.OutOfRangeException))
                and CHECK_MARK not in str(exc)):
            # The predicate failed on a value (a cast of text to a number, say): its fault, named as such.
            raise UsageError(f"where: {self.where!r} cannot be evaluated on {self.source}: {engine_message(exc)}",
                             params=("where",)) from None
        if isinstance(exc, duckdb.OutOfMemoryException):
            return InputError(f"{self.source}: out of memory under memory_limit {self.options.memory_limit!r} "
                              f"({engine_message(exc)})")
        return self.locate(engine, checks, exc)

    def batches(self, *, dictionary_items: bool = False, batch_rows: int = 1 << 18) -> Iterator[pa.Table]:
        """Canonical rows as Arrow tables of up to ``batch_rows`` rows, in file order (streamed from
        DuckDB). ``dictionary_items`` is accepted for compatibility; items always come back as text."""
        import duckdb

        with self.open_engine(preserve_order=True) as engine:
            sql, checks = self.canonical_sql(engine, strict_item=True)
            rel = self.query(engine, sql, checks)
            try:
                reader = rel.to_arrow_reader(batch_rows)
                for batch in reader:
                    if batch.num_rows:
                        yield pa.Table.from_batches([batch])
            except duckdb.Error as exc:
                raise self.error_for(engine, checks, exc) from None


def engine_message(exc: BaseException) -> str:
    """The first line of a DuckDB error, without its class prefix; where a filesystem callback raised (fsspec on a
    server without byte ranges), DuckDB's message is that Python traceback, and its last line says what failed."""
    text = [t for t in str(exc).strip().splitlines() if t.strip()]
    line = text[0] if text else type(exc).__name__
    if "Traceback (most recent call last)" in line:
        line = text[-1].strip() if len(text) > 1 else type(exc).__name__
    for prefix in ("Invalid Input Error: ", "Conversion Error: ", "IO Error: ", "Binder Error: "):
        line = line.removeprefix(prefix)
    return line.removeprefix(CHECK_MARK + ": ")


def duckdb_type(t: pa.DataType) -> str:
    """The DuckDB type normalisation sees for an Arrow column type."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return "BIGINT" if pa.types.is_signed_integer(t) or t.bit_width < 64 else "UBIGINT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "VARCHAR"
    if pa.types.is_dictionary(t):
        return duckdb_type(t.value_type)
    if pa.types.is_struct(t):
        return "STRUCT"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "LIST[]"
    return str(t).upper()


class ArrowReader(TraceReader):
    """A trace already in memory as an Arrow table (telemetry rows, a DataFrame, a Dask partition)."""

    def __init__(self, table: pa.Table, source: str, fmt: str, columns: ColumnMap, keep: Sequence[str] = (),
                 optional: Sequence[str] = (), *, where: str | None = None, engine: EngineOptions | None = None):
        super().__init__(source, fmt, columns, keep, optional, where=where, engine=engine)
        decoded = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
        self.table = pa.table(decoded, names=table.column_names)
        self.columns_found = list(table.column_names)
        self.check_required(self.columns_found)

    def raw_types(self) -> dict[str, str]:
        return {f.name: duckdb_type(f.type) for f in self.table.schema}

    def raw_sql(self, engine: Engine) -> str:
        name = f"ctwm_table_{id(self)}"
        engine.con.register(name, self.table)
        return quote_ident(name)

    def locate(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        """The first row (1-based, in table order) that breaks a check, else DuckDB's own message."""
        import duckdb

        rows, _ = self.shaped(engine, f"(SELECT *, row_number() OVER () AS __row FROM {self.raw_sql(engine)})",
                              self.raw_types())
        for check in checks:
            try:
                (hit,), = engine.con.sql(f"SELECT min(__row) FROM {rows} WHERE {check.condition}").fetchall()
            except duckdb.Error:
                continue
            if hit is not None:
                return InputError(f"{self.source}: row {hit}: {check.message}")
        return super().locate(engine, checks, exc)
