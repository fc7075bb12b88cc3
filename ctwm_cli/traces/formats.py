"""The trace file formats, one :class:`TraceFormat` each, registered once in :data:`FORMATS` (issue 41).

An entry carries everything the readers, the sniffer, the errors and ``--help`` need to know about a format:
its suffixes and magic bytes (:mod:`.sources`), the DuckDB relation over its files (:mod:`.readers`), how an
error names a row (``row 3`` of a Parquet file, ``line 4`` of a CSV file with its header), whether Dask reads
it, and its help text. Adding a format is one entry (ORC, read through pyarrow's dataset, is the example: it
took this entry and nothing else). Like pyarrow's ``FileFormat`` objects for ``ds.dataset(format=...)``.

This module imports nothing heavy (``--help`` reads :func:`traces_help`); a relation imports what it needs
when a trace is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

#: ``relation(reader, engine, types, locate)``: the FROM-clause expression over the files of ``reader.layout``
#: (``types``: the raw column types once known; ``locate``: add what the row locator needs, e.g. file names).
Relation = Callable[[Any, Any, "dict[str, str] | None", bool], str]

_WHOLE = "SELECT *, '' AS __file, row_number() OVER () AS __row FROM {raw}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TraceFormat:
    """One trace file format.

    ``label``: the format in results (``ctwm inspect``); ``dataset_label`` for a directory of them.
    ``rows_sql``: a SELECT over ``{raw}`` adding ``__file`` and ``__row`` (1-based), to find the first bad row;
    ``row_word``/``row_offset``: how a message names it (a CSV's header is line 1). ``lenient_text``: numbers
    may arrive as text (checked per row). ``typed_after_names``: the relation needs the column names first
    (CSV's text columns). ``line_checked``: read line by line first (JSONL's hardening and its locator;
    unmapped columns are not typed). ``column_statistics``: DuckDB answers min/max from the files' own
    statistics. ``gzip_by_content``: a file of this format may be gzip'd whatever its name.
    ``per_file_schema``: SQL over ``{files}`` giving ``(file_name, name)`` of every column of every file, from
    metadata alone. ``dask``: the ``dask.dataframe`` reader name, if Dask reads it.
    """

    name: str
    title: str
    label: str
    suffixes: tuple[str, ...]
    relation: Relation
    magic: tuple[bytes, ...] = ()
    dataset_label: str | None = None
    rows_sql: str = _WHOLE
    row_word: str = "row"
    row_offset: int = 0
    lenient_text: bool = False
    typed_after_names: bool = False
    line_checked: bool = False
    gzip_by_content: bool = False
    column_statistics: bool = False
    per_file_schema: str | None = None
    dask: str | None = None
    help: str = ""

    def label_for(self, layout: Any) -> str:
        return self.dataset_label if self.dataset_label and layout.root is not None else self.label


# -- relations ------------------------------------------------------------------------------------


def _parquet(reader: Any, engine: Any, types: dict[str, str] | None, locate: bool) -> str:
    layout = reader.layout
    # A directory is a hive dataset; a glob's key=value folders are detected; one file has none.
    hive = "true" if layout.root is not None else "false" if len(layout.files) == 1 else "auto"
    hive = "" if hive == "auto" else f", hive_partitioning = {hive}"
    extra = ", filename = true, file_row_number = true" if locate else ""
    return f"read_parquet({reader.files_sql()}, union_by_name = true{hive}{extra})"


def _csv(reader: Any, engine: Any, types: dict[str, str] | None, locate: bool) -> str:
    from .engine import quote_literal

    text = reader.text_columns(types or {})
    spec = ", types = {" + ", ".join(f"{quote_literal(c)}: 'VARCHAR'" for c in text) + "}" if text else ""
    comp = ", compression = 'gzip'" if reader.layout.gzip else ""
    return (f"read_csv({reader.files_sql()}, header = true, union_by_name = true, filename = {str(locate).lower()}"
            f"{comp}{spec})")


#: Rows DuckDB samples to type a JSONL file's columns.
JSON_SAMPLE_ROWS = 20480


def _jsonl(reader: Any, engine: Any, types: dict[str, str] | None, locate: bool) -> str:
    from .engine import quote_literal
    from .guard import MAX_LINE_BYTES

    cols = ""
    if types is not None:
        pairs = ", ".join(f"{quote_literal(c)}: {quote_literal(t)}" for c, t in types.items())
        cols = f", columns = {{{pairs}}}"
    comp = ", compression = 'gzip'" if reader.layout.gzip else ""
    return (f"read_json({reader.files_sql()}, format = 'newline_delimited', records = true, "
            f"maximum_object_size = {MAX_LINE_BYTES}, sample_size = {JSON_SAMPLE_ROWS}{comp}{cols})")


def arrow_dataset(fmt: str) -> Relation:
    """A relation over a pyarrow dataset of ``fmt`` (``ipc``, ``orc``) registered on the engine."""

    def relation(reader: Any, engine: Any, types: dict[str, str] | None, locate: bool) -> str:
        import pyarrow.dataset as ds

        from ..common.errors import InputError
        from .base import engine_message
        from .engine import quote_ident

        layout = reader.layout
        name = f"ctwm_{fmt}_{id(reader)}"
        try:
            data = ds.dataset(list(layout.files), format=fmt, filesystem=reader.arrow_fs(),
                              partitioning="hive" if layout.root else None, partition_base_dir=layout.root)
        except (OSError, ValueError) as exc:
            title = FORMATS[fmt].title
            raise InputError(f"{reader.source}: not a readable {title} file ({engine_message(exc)})") from None
        engine.con.register(name, data)
        return quote_ident(name)

    return relation


# -- the registry ---------------------------------------------------------------------------------

FORMATS: dict[str, TraceFormat] = {f.name: f for f in (
    TraceFormat(
        name="parquet", title="Parquet", label="parquet", dataset_label="parquet-dataset",
        suffixes=(".parquet", ".pq"), magic=(b"PAR1",), relation=_parquet,
        rows_sql="SELECT *, filename AS __file, file_row_number + 1 AS __row FROM {raw}",
        column_statistics=True, dask="read_parquet",
        per_file_schema="SELECT DISTINCT file_name, name FROM parquet_schema({files})", help=".parquet"),
    TraceFormat(
        name="jsonl", title="JSONL", label="jsonl",
        suffixes=(".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz"), magic=(b"\x1f\x8b",),
        relation=_jsonl, line_checked=True, gzip_by_content=True, help=".jsonl, .jsonl.gz, .ndjson"),
    TraceFormat(
        name="csv", title="CSV", label="csv", suffixes=(".csv", ".tsv", ".csv.gz", ".tsv.gz"), relation=_csv,
        rows_sql="SELECT *, filename AS __file, row_number() OVER (PARTITION BY filename) AS __row FROM {raw}",
        row_word="line", row_offset=1, lenient_text=True, typed_after_names=True, dask="read_csv", help=".csv"),
    TraceFormat(
        name="ipc", title="Arrow IPC/Feather", label="arrow", suffixes=(".arrow", ".feather", ".ipc", ".arrows"),
        magic=(b"ARROW1",), relation=arrow_dataset("ipc"), help=".arrow/.feather"),
    TraceFormat(
        name="orc", title="ORC", label="orc", suffixes=(".orc",), magic=(b"ORC",), relation=arrow_dataset("orc"),
        help=".orc"),
)}


def format_of_name(name: str) -> TraceFormat | None:
    """The format whose suffix ``name`` ends with, else None."""
    n = name.lower()
    return next((f for f in FORMATS.values() if n.endswith(f.suffixes)), None)


def format_of_head(head: bytes) -> TraceFormat | None:
    """The format whose magic bytes ``head`` starts with (gzip is read as JSONL), else None."""
    return next((f for f in FORMATS.values() if f.magic and head.startswith(f.magic)), None)


def traces_help() -> str:
    """The help text of a TRACE argument, from the registry."""
    kinds = ", ".join(f.help for f in FORMATS.values() if f.help)
    return (f"Traces: {kinds}, a directory (hive partitions become columns), a quoted glob ('logs/*.parquet'), "
            "an s3:// URL (s3 extra), or - for JSONL on stdin.")


def unknown_format() -> str:
    """The message for a file of no known format."""
    kinds = ", ".join(f.help for f in FORMATS.values() if f.help)
    return f"unknown trace format (expected {kinds}, a directory or glob of them, or - for JSONL on stdin)"
