"""Trace readers: JSONL (plain, gzip, stdin), a Parquet file, a Parquet dataset directory, or
telemetry (OTLP JSON spans, a Mem0 history export; see :mod:`ctwm_cli.traces.telemetry`).

Every reader yields Arrow tables in *canonical* form: the mapped columns renamed to the schema's
names and cast to the schema's types, validated (no missing item, counts integral and >= 1).
Errors are :class:`~ctwm_cli.errors.InputError` with one line naming the file and the line (JSONL)
or row (Parquet) at fault.

JSONL is parsed in blocks by Arrow's JSON reader; a block Arrow cannot type consistently (an
``item`` that is a number on one line and a string on the next) or that fails validation is parsed
again line by line in Python, which either normalises it or reports the exact line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import gzip
import io
import json
import math
import os
import re
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, UsageError
from .schema import COLUMN_TYPES, INTEGER_COLUMNS, TEXT_COLUMNS, ColumnMap

BLOCK_BYTES = 8 << 20
PARQUET_BATCH_ROWS = 1 << 18
PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".json")


class TraceReader(ABC):
    """An open trace. Iterate :meth:`batches` once; ``columns_found`` fills in as it is read."""

    def __init__(self, source: str, fmt: str, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = ()):
        self.source = source
        self.format = fmt
        self.columns = columns
        self.keep = tuple(dict.fromkeys([*keep, *optional]))
        self._required_keep = tuple(keep)
        self.columns_found: list[str] = []

    # Which canonical fields exist, as {canonical: source}; known after the first batch.
    @property
    def mapping(self) -> dict[str, str]:
        found = set(self.columns_found)
        return {c: s for c, s in self.columns.canonical().items() if s in found}

    @abstractmethod
    def batches(self, *, dictionary_items: bool = False) -> Iterator[pa.Table]:
        """Canonical tables, one per batch. With ``dictionary_items`` the ``item`` column may come
        back dictionary-encoded (Parquet string columns; each batch has its own dictionary), which
        makes grouping by item about twice as fast; by default it is always plain text."""
        ...

    def _note_columns(self, names: Sequence[str]) -> None:
        for n in names:
            if n not in self.columns_found:
                self.columns_found.append(n)

    def _check_required(self, names: Sequence[str]) -> None:
        missing = [c for c in (self.columns.item, *self._required_keep) if c not in names]
        if missing:
            found = ", ".join(names) if names else "none"
            raise InputError(
                f"{self.source}: missing column {missing[0]!r} (columns found: {found}); "
                f"remap with --item-col or the matching --*-col option"
            )


INPUT_FORMATS = ("auto", "otel", "mem0")


def open_trace(
    path: str | Path,
    columns: ColumnMap | None = None,
    *,
    keep: Sequence[str] = (),
    optional: Sequence[str] = (),
    input_format: str = "auto",
) -> TraceReader:
    """Open a trace by path (``-`` reads JSONL from standard input).

    ``keep`` names extra source columns (e.g. a ``--group-by`` column) carried along as text;
    ``optional`` names extra columns carried along when present (null where absent).
    ``input_format``: ``auto`` recognises OTLP JSON spans and Mem0 history exports by content
    (JSON files only), ``otel`` / ``mem0`` force those readers (their rows are already canonical,
    so column remapping does not apply to them).
    """
    columns = columns or ColumnMap()
    if input_format not in INPUT_FORMATS:
        raise UsageError(f"--input-format must be one of {', '.join(INPUT_FORMATS)}, got {input_format!r}")
    text = str(path)
    if text == "-":
        if input_format != "auto":
            raise UsageError(f"--input-format {input_format} needs a file, not standard input")
        return _JsonlReader("<stdin>", columns, keep, optional, opener=lambda: sys.stdin.buffer)
    p = Path(text)
    if not p.exists():
        raise InputError(f"{text}: no such file or directory")
    name = p.name.lower()
    if input_format == "auto" and p.is_file() and name.endswith(JSONL_SUFFIXES):
        from .telemetry import sniff_format

        input_format = sniff_format(p, columns) or "auto"
    if input_format != "auto":
        if p.is_dir():
            raise InputError(f"{text}: --input-format {input_format} reads a file, not a directory")
        from .telemetry import TelemetryReader

        return TelemetryReader(text, input_format, keep, optional)
    if p.is_dir():
        return _ParquetReader(text, columns, keep, optional, dataset=True)
    if name.endswith(PARQUET_SUFFIXES):
        return _ParquetReader(text, columns, keep, optional, dataset=False)
    if name.endswith(JSONL_SUFFIXES):
        gz = name.endswith(".gz")
        return _JsonlReader(text, columns, keep, optional, opener=lambda: _open_binary(p, gz))
    with p.open("rb") as fh:
        head = fh.read(4)
    if head == b"PAR1":
        return _ParquetReader(text, columns, keep, optional, dataset=False)
    if head[:2] == b"\x1f\x8b":
        return _JsonlReader(text, columns, keep, optional, opener=lambda: _open_binary(p, True))
    raise InputError(
        f"{text}: unknown trace format (expected .jsonl, .jsonl.gz, .ndjson, .parquet, "
        f"a Parquet directory, or - for JSONL on stdin)"
    )


def _open_binary(p: Path, gz: bool) -> BinaryIO:
    return gzip.open(p, "rb") if gz else p.open("rb")  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Normalisation shared by both formats


def _normalise(table: pa.Table, reader: TraceReader, where: str, *, dictionary_item: bool = False) -> pa.Table:
    """Rename mapped columns to canonical names, cast, and validate. ``where`` locates errors.

    ``dictionary_item`` leaves a dictionary-encoded text ``item`` column encoded.
    """
    cmap = reader.columns.canonical()
    out: dict[str, pa.ChunkedArray] = {}
    names = table.column_names
    for canon, src in cmap.items():
        if src not in names:
            continue
        col = table.column(src)
        if dictionary_item and canon == "item" and pa.types.is_dictionary(col.type) and pa.types.is_string(
            col.type.value_type
        ):
            out[canon] = col
            continue
        target = COLUMN_TYPES.get(canon, pa.string())
        out[canon] = _cast(col, target, canon, src, reader.source, where)
    for extra in reader.keep:
        if extra in cmap.values():
            continue
        if extra not in names:  # JSONL: a field absent from this block (Parquet checks up front)
            out[extra] = pa.nulls(table.num_rows, pa.string())
            continue
        out[extra] = _cast(table.column(extra), pa.string(), extra, extra, reader.source, where)
    result = pa.table(out)
    if result.column("item").null_count:
        raise InputError(f"{reader.source}: {where}: missing value in column {reader.columns.item!r}")
    if "count" in result.column_names:
        cnt = result.column("count")
        if cnt.null_count:
            raise InputError(f"{reader.source}: {where}: missing value in column {reader.columns.count!r}")
        if len(cnt) and pc.min(cnt).as_py() < 1:
            raise InputError(
                f"{reader.source}: {where}: count must be a positive integer (column {reader.columns.count!r})"
            )
    return result


def _cast(col: pa.ChunkedArray, target: pa.DataType, canon: str, src: str, source: str, where: str):
    if col.type == target:
        return col
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), target)
    if pa.types.is_boolean(col.type) and target != pa.string():
        # Arrow would cast true -> 1; a boolean is never a valid count, step, rank or score.
        raise InputError(f"{source}: {where}: column {src!r} must hold {_kind(target)}, found true/false")
    if canon in INTEGER_COLUMNS and pa.types.is_floating(col.type):
        valid = pc.drop_null(col)
        if len(valid) and not pc.all(pc.equal(pc.floor(valid), valid)).as_py():
            raise InputError(f"{source}: {where}: column {src!r} must hold integers, found a fraction")
    if target == pa.string() and not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_boolean(col.type):
            return pc.cast(col, target)
        if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type) or canon in TEXT_COLUMNS:
            return pc.cast(col, target)
    try:
        return pc.cast(col, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError(
            f"{source}: {where}: column {src!r} has type {col.type}, expected {_kind(target)}"
        ) from None


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "integers"
    if pa.types.is_floating(t):
        return "numbers"
    return "text"


# --------------------------------------------------------------------------------------------
# Parquet


class _ParquetReader(TraceReader):
    def __init__(self, source: str, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = (), *, dataset: bool):
        super().__init__(source, "parquet-dataset" if dataset else "parquet", columns, keep, optional)
        import pyarrow.dataset as ds

        try:
            if dataset:
                # Only *.parquet / *.pq files count: a manifest.json or README beside them is fine.
                files = sorted(
                    str(f) for f in Path(source).rglob("*")
                    if f.is_file() and f.name.lower().endswith(PARQUET_SUFFIXES)
                    and not any(part.startswith((".", "_")) for part in f.relative_to(source).parts)
                )
                if not files:
                    raise InputError(f"{source}: directory holds no Parquet files")
                self._ds = ds.dataset(files, format="parquet", partitioning="hive", partition_base_dir=source)
            else:
                self._ds = ds.dataset(source, format="parquet")
        except InputError:
            raise
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{source}: not a readable Parquet file ({_first_line(exc)})") from None
        self._note_columns(self._ds.schema.names)
        self._check_required(self._ds.schema.names)

    def batches(self, *, dictionary_items: bool = False) -> Iterator[pa.Table]:
        # One file at a time through ParquetFile.iter_batches: the dataset scanner keeps several row
        # groups in flight (3-4x the Arrow memory on the 10M-event trace of benchmarks/bench_aggregate.py).
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        wanted = [s for s in (*self.columns.canonical().values(), *self.keep) if s in self.columns_found]
        wanted = list(dict.fromkeys(wanted))
        schema = self._ds.schema
        for fragment in self._ds.get_fragments():
            # Within a dataset, errors name the file and the rows of that file.
            prefix = f"{_relative(fragment.path, self.source)}: " if self.format == "parquet-dataset" else ""
            keys = ds.get_partition_keys(fragment.partition_expression) if prefix else {}
            offset = 0
            try:
                with self._ds.filesystem.open_input_file(fragment.path) as fh:
                    file_schema = pq.read_schema(fh)
                    item_src = self.columns.item
                    as_dict = dictionary_items and item_src in file_schema.names and pa.types.is_string(
                        file_schema.field(item_src).type
                    )
                    pf = pq.ParquetFile(fh, read_dictionary=[item_src] if as_dict else None)
                    in_file = [c for c in wanted if c in pf.schema_arrow.names]
                    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=in_file):
                        n = batch.num_rows
                        if n == 0:
                            continue
                        table = pa.Table.from_batches([batch])
                        for name in wanted:  # hive partition keys, or a column this file lacks
                            if name not in in_file:
                                value = pa.scalar(keys.get(name), type=schema.field(name).type)
                                table = table.append_column(name, pa.repeat(value, n))
                        where = f"{prefix}rows {offset + 1}-{offset + n}"
                        yield _normalise(table, self, where, dictionary_item=as_dict)
                        offset += n
            except InputError:
                raise
            except (pa.ArrowInvalid, OSError) as exc:
                raise InputError(
                    f"{self.source}: {prefix}not a readable Parquet file ({_first_line(exc)})"
                ) from None


def _relative(path: str, root: str) -> str:
    """``path`` relative to the dataset directory ``root`` (fragment paths start with ``root``)."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# JSONL


class _JsonlReader(TraceReader):
    def __init__(self, source: str, columns: ColumnMap, keep: Sequence[str], optional: Sequence[str] = (), *, opener):
        super().__init__(source, "jsonl", columns, keep, optional)
        self._opener = opener

    def batches(self, *, dictionary_items: bool = False) -> Iterator[pa.Table]:
        first = True
        try:
            fh = self._opener()
        except OSError as exc:
            raise InputError(f"{self.source}: cannot open ({_first_line(exc)})") from None
        line_no = 1  # line number of the first line of the current block
        rest = b""
        try:
            while True:
                try:
                    data = fh.read(BLOCK_BYTES)
                except (OSError, EOFError, zlib.error) as exc:
                    raise InputError(f"{self.source}: read error ({_first_line(exc)})") from None
                if not data:
                    block, rest = rest, b""
                else:
                    data = rest + data
                    cut = data.rfind(b"\n")
                    if cut < 0:
                        rest = data
                        continue
                    block, rest = data[: cut + 1], data[cut + 1 :]
                if block.strip():
                    table = self._parse_block(block, line_no)
                    if table is not None:
                        if first:
                            self._check_required(self.columns_found)
                            first = False
                        yield table
                line_no += block.count(b"\n")
                if not data:
                    break
        finally:
            if fh is not sys.stdin.buffer:
                fh.close()

    def _text_sources(self) -> list[str]:
        cmap = self.columns.canonical()
        text = [cmap[c] for c in ("item", "run", "event", "ts")]
        return list(dict.fromkeys([*text, *self.keep]))

    def _parse_block(self, block: bytes, line_no: int) -> pa.Table | None:
        import pyarrow.json as pj

        read_options = pj.ReadOptions(block_size=len(block) + 1)
        # Text columns are parsed as strings: left to inference, Arrow turns ISO-date-like ids
        # ("2024-05-01") into timestamps. Only keys present in the block go into the explicit schema
        # (an explicit field absent from the data would come back as a column of nulls).
        present = [
            s for s in self._text_sources() if re.search(b'"' + re.escape(s.encode()) + rb'"\s*:', block)
        ]
        parse_options = pj.ParseOptions(explicit_schema=pa.schema([(s, pa.string()) for s in present]))
        try:
            try:
                table = pj.read_json(io.BytesIO(block), read_options=read_options, parse_options=parse_options)
            except pa.ArrowInvalid:
                # Typically numeric item ids: infer, and accept integer text columns only.
                table = pj.read_json(io.BytesIO(block), read_options=read_options)
                for s in present:
                    if s in table.column_names and not _plain_text_type(table.column(s).type):
                        raise ValueError(f"column {s!r} needs the line-by-line parser")
            self._note_columns(_first_keys(block))  # file order (the explicit schema puts text columns first)
            self._note_columns(table.column_names)
            if self.columns.item not in table.column_names:
                raise ValueError("item column missing in this block")
            return _normalise(table, self, _lines(block, line_no))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, InputError, ValueError, KeyError):
            return self._parse_block_slowly(block, line_no)

    def _parse_block_slowly(self, block: bytes, line_no: int) -> pa.Table | None:
        cmap = self.columns.canonical()
        wanted = {src: canon for canon, src in cmap.items()}
        for extra in self.keep:
            wanted.setdefault(extra, extra)
        cols: dict[str, list] = {src: [] for src in wanted}
        n = 0
        lines: list[int] = []  # line number of each row
        for i, raw in enumerate(block.split(b"\n")):
            if not raw.strip():
                continue
            where = f"line {line_no + i}"
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                raise InputError(f"{self.source}: {where}: malformed JSON ({msg})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{self.source}: {where}: expected a JSON object, got {type(obj).__name__}")
            self._note_columns(list(obj))
            if self.columns.item not in obj or obj[self.columns.item] is None:
                if n == 0 and self.columns.item not in self.columns_found:
                    self._check_required(self.columns_found)
                raise InputError(f"{self.source}: {where}: missing value in column {self.columns.item!r}")
            for src, canon in wanted.items():
                cols[src].append(_coerce(obj.get(src), canon, src, self.source, where))
            lines.append(line_no + i)
            n += 1
        if n == 0:
            return None
        count_src = self.columns.count
        if count_src in self.columns_found and None in cols[count_src]:
            where = f"line {lines[cols[count_src].index(None)]}"
            raise InputError(f"{self.source}: {where}: missing value in column {count_src!r}")
        table = pa.table(
            {
                src: pa.array(cols[src], type=COLUMN_TYPES.get(canon, pa.string()))
                for src, canon in wanted.items()
                if src in self.columns_found
            }
        )
        return _normalise(table, self, _lines(block, line_no))


def _first_keys(block: bytes) -> list[str]:
    """Keys of the block's first JSON object, in order ([] if it does not parse)."""
    for raw in block.split(b"\n", 64)[:64]:
        if raw.strip():
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                return []
            return list(obj) if isinstance(obj, dict) else []
    return []


def _plain_text_type(t: pa.DataType) -> bool:
    """Types whose Arrow string cast matches the line-by-line parser's text (``json.dumps``)."""
    return pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_null(t)


def _lines(block: bytes, line_no: int) -> str:
    return f"lines {line_no}-{line_no + block.count(NEWLINE) - 1}"


NEWLINE = b"\n"


def _coerce(value, canon: str, src: str, source: str, where: str):
    if value is None:
        return None
    if canon in INTEGER_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{source}: {where}: column {src!r} must be an integer, got {value!r}")
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise InputError(f"{source}: {where}: column {src!r} must be an integer, got {value!r}")
            value = int(value)
        if not -(2**63) <= value < 2**63:
            raise InputError(f"{source}: {where}: column {src!r} is outside the 64-bit integer range")
        if canon == "count" and value < 1:
            raise InputError(f"{source}: {where}: count must be a positive integer, got {value!r}")
        return value
    if canon == "score":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{source}: {where}: column {src!r} must be a number, got {value!r}")
        return float(value)
    if isinstance(value, (dict, list)):
        raise InputError(f"{source}: {where}: column {src!r} must be a scalar, got {type(value).__name__}")
    return value if isinstance(value, str) else json.dumps(value)
