"""Opening a trace: JSONL (plain, gzip, stdin), CSV, Parquet (a file or a hive-partitioned
directory), Arrow IPC/Feather, globs of them and fsspec URLs — all read by DuckDB — or telemetry
(OTLP JSON spans, a Mem0 history export; see :mod:`ctwm_cli.traces.telemetry`).

Errors are :class:`~ctwm_cli.errors.InputError` with one line naming the file and the line (JSONL,
CSV) or row (Parquet, Arrow) at fault.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import tempfile
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from ..checks import check_choice
from ..errors import CtwmWarning, InputError, UsageError
from .base import Check, TraceReader, engine_message
from .engine import INPUT_FORMATS, Engine, EngineOptions, ReadOptions, quote_ident, quote_literal
from .guard import MAX_LINE_BYTES
from .predicate import check_where
from .schema import ColumnMap
from .sources import JSONL_SUFFIXES, Layout, is_sqlite, remove_file, resolve, spool_stdin

_JSON_SAMPLE_ROWS = 20480
#: The modules of the inputs that need more than DuckDB's own reader, each imported the first time a
#: trace needs it: ``jsonl`` (JSONL's line-by-line hardening pass and error locator) and ``telemetry``
#: (recognising and reading OTLP spans, OpenInference and Mem0 history, with the Arrow writer behind
#: them). A Parquet, CSV or Arrow IPC trace loads neither: ``ctwm inspect`` of a Parquet file starts
#: ~30 ms sooner without bytecode caches (``benchmarks/bench_inspect.py``).
FORMAT_MODULES = ("jsonl", "telemetry")


def format_module(name: str) -> ModuleType:
    """The module ``name`` of :data:`FORMAT_MODULES`, imported on first use."""
    if name not in FORMAT_MODULES:
        raise KeyError(name)
    return importlib.import_module(f"{__package__}.{name}")


class TornLineWarning(CtwmWarning):
    """A JSONL file's final line is incomplete (its writer stopped mid-line); the lines before it
    are read, the torn one is not."""
_FORMAT_LABEL = {"parquet": "parquet", "jsonl": "jsonl", "csv": "csv", "ipc": "arrow"}


class FileReader(TraceReader):
    """A trace in files DuckDB reads (JSONL, CSV, Parquet, Arrow IPC), local or behind fsspec."""

    def __init__(self, layout: Layout, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = (),
                 *, where: str | None = None, engine: EngineOptions | None = None):
        label = _FORMAT_LABEL[layout.format]
        if layout.format == "parquet" and layout.root is not None:
            label = "parquet-dataset"
        super().__init__(layout.source, label, columns, keep, optional, where=where, engine=engine)
        self.layout = layout
        self._keys: list[str] = []  # wanted JSONL keys found anywhere in the file (not only in DuckDB's sample)
        if layout.format == "jsonl":
            found = format_module("jsonl").harden(layout, self._counted_keys())
            if not found.content:
                raise InputError(f"{self.source}: trace is empty (no rows)")
            self._keys = found.keys
            self._check_kinds([f for f, keys in found.keys_by_file.items() if self.columns.count in keys])
            if found.torn:
                self.layout = layout = self._without_torn(layout, found.torn)
        self._sampled: list[str] = []
        self._types = self._describe()
        self.columns_found = list(self._sampled)
        if layout.format == "parquet" and len(layout.files) > 1 and self.columns.count in self._sampled:
            self._check_kinds(self._parquet_files_with(self.columns.count))
        if layout.format == "jsonl" and self.columns.item not in self._sampled:
            err = format_module("jsonl").locate(layout, self.columns, self.keep, self._required_keep)
            if err is not None:
                raise err
        self.check_required(self.columns_found)

    def _check_kinds(self, with_count: list[str]) -> None:
        """Refuse a dataset of counts tables and event tables together (each would be misread as
        the other), naming the files of each kind."""
        without = [f for f in self.layout.files if f not in set(with_count)]
        if not with_count or not without:
            return

        def some(files: list[str]) -> str:
            names = ", ".join(self.layout.relative(f) for f in files[:3])
            return names + (f" and {len(files) - 3} more" if len(files) > 3 else "")

        raise InputError(
            f"{self.source}: mixes counts tables and event tables: {len(with_count)} file(s) with column "
            f"{self.columns.count!r} ({some(with_count)}) and {len(without)} without ({some(without)}); "
            "point at one kind")

    def _parquet_files_with(self, column: str) -> list[str]:
        """The Parquet files whose schema has ``column`` (footers only)."""
        import duckdb

        with self.open_engine() as engine:
            self._register(engine)
            try:
                rows = engine.con.sql(f"SELECT DISTINCT file_name FROM parquet_schema({self._files_sql()}) "
                                      f"WHERE name = {quote_literal(column)}").fetchall()
            except duckdb.Error as exc:
                raise self._open_error(exc) from None
        have = {r[0] for r in rows}
        return [f for f in self.layout.files if f in have]

    def _without_torn(self, layout: Layout, torn: list[tuple[str, int]]) -> Layout:
        """``layout`` with each file whose final line is torn replaced by a private copy of its
        complete lines (removed with this reader), and a :class:`TornLineWarning` naming the line."""
        files = list(layout.files)
        for path, line_no in torn:
            fd, name = tempfile.mkstemp(prefix="ctwm-torn-", suffix=".jsonl")
            weakref.finalize(self, remove_file, name)
            with os.fdopen(fd, "wb") as out:
                format_module("jsonl").without_torn_line(layout, path, line_no, out)
            where = f"{layout.source}: {layout.relative(path)}" if layout.dataset else layout.source
            warnings.warn(f"{where}: line {line_no}: incomplete final line (the writer stopped mid-line); "
                          f"read the {line_no - 1:,} complete lines before it", TornLineWarning, stacklevel=4)
            files[files.index(path)] = name
        return dataclasses.replace(layout, files=tuple(files), gzip=False)

    # -- raw relation --------------------------------------------------------------------------

    def _files_sql(self) -> str:
        return "[" + ", ".join(quote_literal(f) for f in self.layout.files) + "]"

    def inputs(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(self.layout.files), (() if self.layout.root is None else (self.layout.root,))

    @property
    def column_statistics(self) -> bool:
        return self.layout.format == "parquet" and self.where is None  # a row filter needs the values

    def _register(self, engine: Engine) -> None:
        if self.layout.fs is not None:
            engine.register_filesystem(self.layout.fs)

    def _scan_sql(self, engine: Engine, *, types: dict[str, str] | None, locate: bool = False) -> str:
        self._register(engine)
        files, fmt = self._files_sql(), self.layout.format
        if fmt == "parquet":
            # A directory is a hive dataset; a glob's key=value folders are detected; one file has none.
            hive = "true" if self.layout.root is not None else "false" if len(self.layout.files) == 1 else "auto"
            hive = "" if hive == "auto" else f", hive_partitioning = {hive}"
            extra = ", filename = true, file_row_number = true" if locate else ""
            return f"read_parquet({files}, union_by_name = true{hive}{extra})"
        if fmt == "csv":
            text = self._text_columns(types or {})
            spec = ", types = {" + ", ".join(f"{quote_literal(c)}: 'VARCHAR'" for c in text) + "}" if text else ""
            comp = ", compression = 'gzip'" if self.layout.gzip else ""
            return (f"read_csv({files}, header = true, union_by_name = true, filename = {str(locate).lower()}"
                    f"{comp}{spec})")
        if fmt == "ipc":
            return self._ipc(engine)
        cols = ""
        if types is not None:
            pairs = ", ".join(f"{quote_literal(c)}: {quote_literal(t)}" for c, t in types.items())
            cols = f", columns = {{{pairs}}}"
        comp = ", compression = 'gzip'" if self.layout.gzip else ""
        return (f"read_json({files}, format = 'newline_delimited', records = true, "
                f"maximum_object_size = {MAX_LINE_BYTES}, sample_size = {_JSON_SAMPLE_ROWS}{comp}{cols})")

    def _text_columns(self, types: dict[str, str]) -> list[str]:
        cmap = self.columns.canonical()
        text = [cmap[c] for c in ("item", "run", "event", "ts")] + list(self.keep)
        return [c for c in dict.fromkeys(text) if c in types]

    def _ipc(self, engine: Engine) -> str:
        import pyarrow.dataset as ds

        name = f"ctwm_ipc_{id(self)}"
        try:
            data = ds.dataset(list(self.layout.files), format="ipc", filesystem=self._arrow_fs(),
                              partitioning="hive" if self.layout.root else None,
                              partition_base_dir=self.layout.root)
        except (OSError, ValueError) as exc:
            raise InputError(f"{self.source}: not a readable Arrow IPC/Feather file ({engine_message(exc)})") from None
        engine.con.register(name, data)
        return quote_ident(name)

    def _arrow_fs(self):
        if self.layout.fs is None:
            return None
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(self.layout.fs))

    def _describe(self) -> dict[str, str]:
        import duckdb

        with self.open_engine() as engine:
            try:
                sql = self._scan_sql(engine, types=None)
                if self.layout.format == "csv":  # text columns first need the names
                    rows = engine.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
                    self._types = {r[0]: r[1] for r in rows}
                    sql = self._scan_sql(engine, types=self._types)
                rows = engine.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
            except duckdb.Error as exc:
                raise self._open_error(exc) from None
        types = {r[0]: r[1] for r in rows}
        self._sampled = list(types)
        if self.layout.format == "jsonl":
            if list(types) == ["json"] and types["json"] == "JSON":
                raise InputError(f"{self.source}: trace is empty (no rows)")
            wanted = set(self._wanted())
            types = {c: ("JSON" if c in wanted else "VARCHAR") for c in types}
            for late in self._keys:  # first seen past DuckDB's sample: read it all the same
                if late not in types:
                    types[late] = "JSON"
                    self._sampled.append(late)
            types.setdefault(self.columns.item, "JSON")  # read even if absent from the sample
        return types

    def _wanted(self) -> list[str]:
        return list(dict.fromkeys([*self.columns.canonical().values(), *self.keep]))

    def _counted_keys(self) -> list[str]:
        """The JSONL keys looked for in the whole file: those that change what is counted (``event``,
        ``count``), the step range and runs, and the kept (group-by) columns. Each absent one costs
        a search of the file (measured by ``bench_aggregate.py --jsonl``); ``rank``, ``score``,
        ``tokens`` and ``ts`` are not counted, and a ``where`` naming one the sample lacks is refused."""
        cmap = self.columns.canonical()
        named = [cmap[f] for f in self.columns.given]  # a named column must be found wherever it first appears
        return list(dict.fromkeys([*(cmap[c] for c in ("event", "count", "step", "run")), *named, *self.keep]))

    def _open_error(self, exc: Exception) -> InputError:
        if self.layout.format == "jsonl":
            err = format_module("jsonl").locate(self.layout, self.columns, self.keep, self._required_keep)
            if err is not None:
                return err
        kind = {"parquet": "Parquet", "ipc": "Arrow IPC/Feather", "csv": "CSV", "jsonl": "JSONL"}[self.layout.format]
        return InputError(f"{self.source}: not a readable {kind} file ({engine_message(exc)})")

    def raw_sql(self, engine: Engine) -> str:
        return self._scan_sql(engine, types=self._types)

    def raw_types(self) -> dict[str, str]:
        return dict(self._types)

    # -- errors --------------------------------------------------------------------------------

    def locate(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        import duckdb

        if self.layout.format == "jsonl":
            err = format_module("jsonl").locate(self.layout, self.columns, self.keep, self._required_keep)
            return err or InputError(f"{self.source}: {engine_message(exc)}")
        try:
            hit = self._first_bad_row(checks)
        except duckdb.Error:
            hit = None
        if hit is None:
            return InputError(f"{self.source}: {engine_message(exc)}")
        path, row, message = hit
        prefix = f"{self.layout.relative(path)}: " if self.layout.dataset and path else ""
        label = f"line {row + 1}" if self.layout.format == "csv" else f"row {row}"
        return InputError(f"{self.source}: {prefix}{label}: {message}")

    def _first_bad_row(self, checks: Sequence[Check]) -> tuple[str, int, str] | None:
        order = {f: i for i, f in enumerate(self.layout.files)}
        best: tuple[int, int, str, str] | None = None
        with self.open_engine(preserve_order=True) as engine:
            raw = self._scan_sql(engine, types=self._types, locate=True)
            if self.layout.format == "parquet":
                rel = f"SELECT *, filename AS __file, file_row_number + 1 AS __row FROM {raw}"
            elif self.layout.format == "csv":
                rel = f"SELECT *, filename AS __file, row_number() OVER (PARTITION BY filename) AS __row FROM {raw}"
            else:
                rel = f"SELECT *, '' AS __file, row_number() OVER () AS __row FROM {raw}"
            for check in checks:
                got = engine.con.sql(
                    f"SELECT __file, __row FROM ({rel}) WHERE {check.condition} ORDER BY __file, __row LIMIT 1"
                ).fetchall()
                if not got:
                    continue
                got = got[0]
                key = (order.get(got[0], 0), int(got[1]))
                if best is None or key < best[:2]:
                    best = (*key, got[0], check.message)
        return None if best is None else (best[2], best[1], best[3])


def open_trace(
    path: str | Path,
    columns: ColumnMap | ReadOptions | None = None,
    *,
    keep: Sequence[str] = (),
    optional: Sequence[str] = (),
    input_format: str = "auto",
    where: str | None = None,
    engine: EngineOptions | None = None,
) -> TraceReader:
    """Open a trace by path, directory, glob or URL (``-`` reads JSONL from standard input).

    ``keep`` names extra source columns (e.g. a ``group_by`` column) carried along as text;
    ``optional`` names extra columns carried along when present (null where absent).
    ``input_format``: ``auto`` recognises OTLP JSON spans and Mem0 history exports by content
    (JSON files only), ``otel`` / ``mem0`` force those readers (their rows are already canonical,
    so column remapping does not apply to them). ``where`` is a SQL predicate over the canonical
    columns applied before counting; ``engine`` sets the memory limit and threads. ``columns`` may
    also be a :class:`ReadOptions`, which carries the column map, ``where``, engine and format at once.
    """
    if isinstance(columns, ReadOptions):
        read = columns
        columns, where, engine = read.columns, where or read.where, engine or read.engine
        input_format = read.input_format if input_format == "auto" else input_format
    columns = columns or ColumnMap()
    check_choice("input_format", input_format, INPUT_FORMATS)
    where = check_where(where)
    text = str(path)
    if text == "-":
        if input_format != "auto":
            raise UsageError(f"input_format {input_format} needs a file, not standard input", params=("input_format",))
        holder = _StdinHolder()
        reader = FileReader(spool_stdin(holder), columns, keep, optional, where=where, engine=engine)
        reader._stdin = holder  # type: ignore[attr-defined]  # the spooled file lives as long as the reader
        return reader
    if input_format in ("auto", "mem0") and Path(text).is_file() and is_sqlite(text):
        # Mem0's history.db (a foreign SQLite database gets one line saying so)
        return format_module("telemetry").TelemetryReader(text, "mem0", keep, optional, where=where, engine=engine)
    layout = resolve(text)
    single_json = len(layout.files) == 1 and layout.root is None and layout.format == "jsonl"
    if input_format == "auto" and single_json and layout.fs is None and text.lower().endswith(JSONL_SUFFIXES):
        input_format = format_module("telemetry").sniff_format(layout.files[0], columns) or "auto"
    if input_format != "auto":
        if Path(text).is_dir():
            raise InputError(f"{text}: input_format {input_format} reads a file, not a directory",
                             params=("input_format",))
        return format_module("telemetry").TelemetryReader(text, input_format, keep, optional, where=where,
                                                          engine=engine)
    return FileReader(layout, columns, keep, optional, where=where, engine=engine)


class _StdinHolder:
    """Owner of the spooled standard input; the temporary file is removed when it is collected."""
