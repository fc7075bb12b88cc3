"""Opening a trace: JSONL (plain, gzip, stdin), CSV, Parquet (a file or a hive-partitioned
directory), Arrow IPC/Feather, globs of them and fsspec URLs — all read by DuckDB — or telemetry
(OTLP JSON spans, a Mem0 history export; see :mod:`ctwm_cli.traces.telemetry`).

Errors are :class:`~ctwm_cli.common.errors.InputError` with one line naming the file and the line (JSONL,
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

from ..common.checks import check_choice
from ..common.errors import CtwmWarning, InputError, UsageError
from ..runtime.confine import admit_file, admit_name
from .base import Check, TraceReader, engine_message
from .engine import INPUT_FORMATS, Engine, EngineOptions, ReadOptions, quote_literal
from .formats import FORMATS
from .predicate import check_where
from .schema import ColumnMap
from .shapes import resolve_paths, shape_of
from .sources import JSONL_SUFFIXES, Layout, is_sqlite, remove_file, resolve, spool_stdin
from .union import UnionReader

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
class FileReader(TraceReader):
    """A trace in files of one registered format (:data:`~ctwm_cli.traces.formats.FORMATS`), local or behind
    fsspec."""

    def __init__(self, layout: Layout, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = (),
                 *, where: str | None = None, engine: EngineOptions | None = None):
        self.file_format = fmt = FORMATS[layout.format]
        super().__init__(layout.source, fmt.label_for(layout), columns, keep, optional, where=where, engine=engine)
        self.lenient_text, self.untyped = fmt.lenient_text, fmt.line_checked
        self.layout = layout
        self._keys: list[str] = []  # wanted JSONL keys found anywhere in the file (not only in DuckDB's sample)
        if fmt.line_checked:
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
        self._read_paths()
        if fmt.per_file_schema and len(layout.files) > 1 and self.columns.count in self._sampled:
            self._check_kinds(self._files_with(self.columns.count))
        self.check_configured_item([*self._sampled, *(p.name for p in self.paths)], self._sampled)
        if fmt.line_checked and not self.paths and self.columns.item not in self._sampled:
            err = format_module("jsonl").locate(layout, self.columns, self.keep, self._required_keep)
            if err is not None:
                raise err
        self.check_required(self.columns_found)

    def _read_paths(self) -> None:
        """Resolve list and nested columns (:mod:`.shapes`) now the sampled types are known; a dotted name
        read from inside its root column is not a column of its own."""
        try:
            self.paths = resolve_paths(self.columns, self.column_kinds())
        except InputError as exc:
            raise InputError(f"{self.source}: {exc}") from None
        for p in self.paths:
            if p.name != p.root and p.name not in self._sampled:
                self._types.pop(p.name, None)

    def column_kinds(self) -> dict[str, str]:
        return {name: shape_of(t) for name, t in self._sampled_types.items()}

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

    def _files_with(self, column: str) -> list[str]:
        """The files whose schema has ``column`` (from their metadata alone: Parquet footers)."""
        import duckdb

        schema = self.file_format.per_file_schema.format(files=self.files_sql())  # type: ignore[union-attr]
        with self.open_engine() as engine:
            self._register(engine)
            try:
                rows = engine.con.sql(
                    f"SELECT file_name FROM ({schema}) WHERE name = {quote_literal(column)}").fetchall()
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

    def files_sql(self) -> str:
        return "[" + ", ".join(quote_literal(f) for f in self.layout.files) + "]"

    def inputs(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(self.layout.files), (() if self.layout.root is None else (self.layout.root,))

    @property
    def column_statistics(self) -> bool:
        return self.file_format.column_statistics and self.where is None  # a row filter needs the values

    def _register(self, engine: Engine) -> None:
        if self.layout.fs is not None:
            engine.register_filesystem(self.layout.fs)

    def _scan_sql(self, engine: Engine, *, types: dict[str, str] | None, locate: bool = False) -> str:
        self._register(engine)
        return self.file_format.relation(self, engine, types, locate)

    def text_columns(self, types: dict[str, str]) -> list[str]:
        """The mapped text columns and kept columns among ``types`` (CSV reads them as text, not sniffed)."""
        cmap = self.columns.canonical()
        text = [cmap[c] for c in ("item", "run", "event", "ts")] + list(self.keep)
        return [c for c in dict.fromkeys(text) if c in types]

    def arrow_fs(self):
        """The layout's fsspec filesystem as a pyarrow one (None locally)."""
        if self.layout.fs is None:
            return None
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(self.layout.fs))

    def _describe(self) -> dict[str, str]:
        import duckdb

        with self.open_engine() as engine:
            try:
                sql = self._scan_sql(engine, types=None)
                if self.file_format.typed_after_names:  # text columns first need the names
                    rows = engine.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
                    self._types = {r[0]: r[1] for r in rows}
                    sql = self._scan_sql(engine, types=self._types)
                rows = engine.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
            except duckdb.Error as exc:
                raise self._open_error(exc) from None
        types = {r[0]: r[1] for r in rows}
        self._sampled = list(types)
        self._sampled_types = dict(types)
        if self.file_format.line_checked:
            if list(types) == ["json"] and types["json"] == "JSON":
                raise InputError(f"{self.source}: trace is empty (no rows)")
            wanted = set(self._wanted())
            types = {c: ("JSON" if c in wanted else "VARCHAR") for c in types}
            for late in self._keys:  # first seen past DuckDB's sample: read it all the same
                if late not in types:
                    types[late] = self._sampled_types[late] = "JSON"
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
        if self.file_format.line_checked and not self.paths:
            err = format_module("jsonl").locate(self.layout, self.columns, self.keep, self._required_keep)
            if err is not None:
                return err
        return InputError(f"{self.source}: not a readable {self.file_format.title} file ({engine_message(exc)})")

    def raw_sql(self, engine: Engine) -> str:
        return self._scan_sql(engine, types=self._types)

    def raw_types(self) -> dict[str, str]:
        return dict(self._types)

    # -- errors --------------------------------------------------------------------------------

    def locate(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        import duckdb

        if self.file_format.line_checked and not self.paths:
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
        label = f"{self.file_format.row_word} {row + self.file_format.row_offset}"
        return InputError(f"{self.source}: {prefix}{label}: {message}")

    def _first_bad_row(self, checks: Sequence[Check]) -> tuple[str, int, str] | None:
        order = {f: i for i, f in enumerate(self.layout.files)}
        best: tuple[int, int, str, str] | None = None
        with self.open_engine(preserve_order=True) as engine:
            raw = self._scan_sql(engine, types=self._types, locate=True)
            rel, _ = self.shaped(engine, f"({self.file_format.rows_sql.format(raw=raw)})", self._types)
            rel = f"SELECT * FROM {rel}"
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
    admit_name(text)  # a config's entry reads no URL and no standard input (ctwm_cli.runtime.confine)
    if text == "-":
        if input_format != "auto":
            raise UsageError(f"input_format {input_format} needs a file, not standard input", params=("input_format",))
        holder = _StdinHolder()
        reader = FileReader(spool_stdin(holder), columns, keep, optional, where=where, engine=engine)
        reader._stdin = holder  # type: ignore[attr-defined]  # the spooled file lives as long as the reader
        return reader
    if input_format in ("auto", "mem0") and Path(text).is_file() and is_sqlite(admit_file(text)):
        # Mem0's history.db (a foreign SQLite database gets one line saying so)
        return format_module("telemetry").TelemetryReader(text, "mem0", keep, optional, where=where, engine=engine)
    layout = resolve(text)
    # OTLP spans and Mem0 exports are JSON: a single line-checked file may be one of them
    single_json = (len(layout.files) == 1 and layout.root is None and not layout.parts
                   and FORMATS[layout.format].line_checked)
    if input_format == "auto" and single_json and layout.fs is None and text.lower().endswith(JSONL_SUFFIXES):
        input_format = format_module("telemetry").sniff_format(layout.files[0], columns) or "auto"
    if input_format != "auto":
        if Path(text).is_dir():
            raise InputError(f"{text}: input_format {input_format} reads a file, not a directory",
                             params=("input_format",))
        return format_module("telemetry").TelemetryReader(text, input_format, keep, optional, where=where,
                                                          engine=engine)
    if layout.parts:
        return UnionReader([FileReader(p, columns, keep, optional, where=where, engine=engine) for p in layout.parts],
                           layout)
    return FileReader(layout, columns, keep, optional, where=where, engine=engine)


class _StdinHolder:
    """Owner of the spooled standard input; the temporary file is removed when it is collected."""
