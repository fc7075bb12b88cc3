"""Telemetry import: OpenTelemetry GenAI spans (OTLP JSON) and Mem0 history exports as trace rows.

Both are mapped onto the trace schema (``item, step, run, event, rank, score, tokens, ts``) plus
the ``ctwm health`` columns ``task``, ``outcome`` and ``by``. The OTel GenAI semantic conventions
for memory and retrieval are still *Development* status; the attribute names used here are those of
the GenAI registry (``gen_ai.operation.name``, ``gen_ai.memory.record.id``, ``gen_ai.memory.records``,
``gen_ai.retrieval.documents``, ``gen_ai.usage.input_tokens``, ``gen_ai.conversation.id``).

OTLP JSON (an ``ExportTraceServiceRequest``: ``resourceSpans[].scopeSpans[].spans[]``, attributes as
``{"key", "value": {"stringValue" | "intValue" (int64 as text) | "doubleValue" | "boolValue" |
"arrayValue" | "kvlistValue" | "bytesValue"}}``) is read as one document or as JSON lines of
documents (the OTel file exporter). Span -> rows:

========================  ===================================================================
``gen_ai.operation.name``  rows
========================  ===================================================================
``search_memory``          one ``search`` row (item = span id), then one ``retrieve`` row per
                           record of ``gen_ai.memory.records`` with an ``id`` (rank = position,
                           score = record score); else one for ``gen_ai.memory.record.id``
``retrieval``              the same from ``gen_ai.retrieval.documents``
``create_memory``          ``write`` per record id
``update_memory``          ``update`` per record id
``upsert_memory``          ``write`` if the id was not seen before in the file, else ``update``
``delete_memory``          ``archive`` per record id (a delete without ids is skipped)
``chat`` etc.              ``context`` row, tokens = ``gen_ai.usage.input_tokens`` (if present)
root / ``invoke_agent``    ``task_outcome`` row: ``ctwm.task.outcome`` if set, else span status
                           ERROR -> failure, OK -> success (UNSET: no outcome)
========================  ===================================================================

``run`` = ``gen_ai.conversation.id`` if set, else the trace id; ``task`` = ``ctwm.task.id`` if set,
else the trace id; ``ts`` = span start (ISO 8601, UTC; the outcome row uses the span end);
``step`` = ``ctwm.step`` if set, else the number of inference spans (chat, text_completion,
generate_content) of the run that started before the span, so memory operations share the step
of the model call that follows them (runs without inference spans: order of start times).

A Mem0 history is Mem0's SQLite ``history.db`` or the rows of ``Memory.history()`` / the ``history``
table (``memory_id``, ``event`` ADD/UPDATE/DELETE, ``old_memory``, ``new_memory``, ``created_at``,
``updated_at``, ...) as a JSON array, ``{"results": [...]}`` or JSON lines (:mod:`.mem0`). ADD ->
``write``, UPDATE -> ``update`` (an UPDATE whose text is unchanged — an expiry or metadata change — is
skipped: not an edit), DELETE -> ``archive`` (NONE rows are skipped); ts = ``updated_at`` for
UPDATE/DELETE when present, else ``created_at``; step = dense rank of ts (file order if a row has
no time); run = the owner as Mem0's session-scope key (``agent_id=a1&user_id=alice``) from the row's
``user_id`` / ``agent_id`` / ``run_id`` (Mem0 itself writes none) or from ``owners``; task =
``task_id`` / ``task`` (top level or in ``metadata``) if present.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa

from ..common.checks import check_choice
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..runtime.files import atomic_write, check_output_file
from .base import ArrowReader
from .engine import EngineOptions
from .guard import read_document
from .mem0 import (
    MEM0_EVENTS,
    looks_like_history,
    looks_like_memories,
    mem0_history,
    mem0_rows,
    read_owners,
)
from .openinference import looks_like_openinference, openinference_trace_rows
from .otel import INFERENCE_OPS, SEARCH_OPS, WRITE_OPS, any_value, otel_rows
from .schema import MEM0_NOTE, ColumnMap
from .sources import is_sqlite

__all__ = [
    "INFERENCE_OPS", "MEM0_EVENTS", "ROW_COLUMNS", "SEARCH_OPS", "TELEMETRY_FORMATS", "WRITE_OPS", "ImportResult",
    "TelemetryReader", "any_value", "import_telemetry", "mem0_rows", "otel_rows", "rows_table", "sniff_format",
    "telemetry_rows",
]

ROW_COLUMNS = ("item", "step", "run", "event", "rank", "score", "tokens", "ts", "task", "outcome", "by")
_ARROW_TYPES = {
    "item": pa.string(), "step": pa.int64(), "run": pa.string(), "event": pa.string(), "rank": pa.int64(),
    "score": pa.float64(), "tokens": pa.int64(), "ts": pa.string(), "task": pa.string(), "outcome": pa.string(),
    "by": pa.string(),
}
_SNIFF_BYTES = 1 << 16

#: Telemetry formats: name -> function reading a file into ``(rows, records read, records mapped)``.
ROW_READERS: dict[str, Callable[[str | Path], tuple[list[dict], int, int]]] = {
    "otel": otel_rows, "mem0": mem0_rows, "openinference": openinference_trace_rows,
}
TELEMETRY_FORMATS = tuple(ROW_READERS)


@result
class ImportResult(ToDict):
    """What ``ctwm import`` read and wrote."""

    source: str
    format: str
    output: str | None
    records: int  # spans (otel) or history rows (mem0) read
    mapped: int  # of which produced at least one trace row
    n_rows: int
    events: dict[str, int]
    runs: int
    tasks: int
    notes: tuple[str, ...] = ()  # what the export cannot hold (a Mem0 history has no retrievals)


# --------------------------------------------------------------------------------------------
# Format detection


def _is_otel(head: bytes, columns: ColumnMap) -> bool:
    return b'"resourceSpans"' in head


def _is_mem0(head: bytes, columns: ColumnMap) -> bool:
    has_item = re.search(b'"' + re.escape(columns.item.encode()) + rb'"\s*:', head) is not None
    return (looks_like_history(head) or looks_like_memories(head)) and not has_item


#: Content sniffers, tried in order: format name -> test on the first 64 KiB of the file.
SNIFFERS: dict[str, Callable[[bytes, ColumnMap], bool]] = {
    "openinference": looks_like_openinference, "otel": _is_otel, "mem0": _is_mem0,  # OpenInference spans are OTLP too
}


def sniff_format(path: str | Path, columns: ColumnMap | None = None) -> str | None:
    """The telemetry format whose sniffer recognises the head of a JSON file (or an SQLite database:
    Mem0's history.db), else ``None``."""
    columns = columns or ColumnMap()
    if is_sqlite(path):
        return "mem0"
    try:
        head = read_document(path, limit=_SNIFF_BYTES)
    except (OSError, InputError):  # unreadable: let the JSONL reader report it
        return None
    for name, test in SNIFFERS.items():
        if test(head, columns):
            return name
    return None


# --------------------------------------------------------------------------------------------
# Reader and import


def telemetry_rows(path: str | Path, fmt: str) -> tuple[list[dict], int, int]:
    check_choice("format", fmt, ROW_READERS)
    return ROW_READERS[fmt](path)


def rows_table(rows: Sequence[dict]) -> pa.Table:
    """Rows as an Arrow table with the canonical column names and types (all columns present)."""
    return pa.table({c: pa.array([r.get(c) for r in rows], type=_ARROW_TYPES[c]) for c in ROW_COLUMNS})


class TelemetryReader(ArrowReader):
    """A trace reader over OTLP JSON spans or a Mem0 history export (rows are already canonical).

    The rows become an Arrow table that DuckDB scans like any other trace (the same normalisation,
    ``where`` filter and counting)."""

    def __init__(self, source: str, fmt: str, keep: Sequence[str] = (), optional: Sequence[str] = (),
                 *, where: str | None = None, engine: EngineOptions | None = None):
        check_choice("format", fmt, ROW_READERS)
        rows, _, _ = telemetry_rows(source, fmt)
        super().__init__(rows_table(rows), source, fmt, ColumnMap(), keep, optional, where=where, engine=engine)


def import_telemetry(path: str | Path, fmt: str, output: str | Path | None = None, *,
                     owners: str | Path | None = None, overwrite: bool = False) -> ImportResult:
    """Read ``path`` as ``fmt`` (otel or mem0) and, if ``output`` is given, write a Parquet trace
    (an existing ``output`` only with ``overwrite``).

    ``owners`` (mem0 only): a ``get_all()`` dump or a trace of the Mem0 wrapper, whose owners (session
    scopes) fill ``run`` of the history rows, which have none."""
    check_choice("format", fmt, ROW_READERS)
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if owners is not None and fmt != "mem0":
        raise UsageError("owners applies to a Mem0 history only", params=("owners",))
    if output is not None:
        check_output_file(output, param="output", suffixes=(".parquet", ".pq"), overwrite=overwrite)
    extra: list[str] = []
    if fmt == "mem0":
        hist = mem0_history(p, read_owners(owners) if owners is not None else None)
        rows, records, mapped = hist.rows, hist.records, hist.mapped
        extra = mem0_notes(hist)
    else:
        rows, records, mapped = telemetry_rows(p, fmt)
    notes = import_notes(path, fmt, rows, records) + tuple(extra)
    table = rows_table(rows)
    if output is not None:
        import pyarrow.parquet as pq

        with atomic_write(output) as tmp:
            pq.write_table(table, str(tmp))
    events: dict[str, int] = {}
    for r in rows:
        events[r["event"]] = events.get(r["event"], 0) + 1
    return ImportResult(
        source=str(path), format=fmt, output=None if output is None else str(output), records=records,
        mapped=mapped, n_rows=len(rows), events=dict(sorted(events.items())),
        runs=len({r.get("run") for r in rows if r.get("run") is not None}),
        tasks=len({r.get("task") for r in rows if r.get("task") is not None}), notes=notes,
    )


def mem0_notes(hist) -> list[str]:
    """What a Mem0 import dropped or could not join."""
    notes = []
    if hist.unchanged_updates:
        notes.append(f"{hist.unchanged_updates:,} UPDATE rows left the text unchanged (an expiry or metadata change): "
                     "not counted as edits")
    if hist.with_owner < hist.memories:
        notes.append(f"{hist.memories - hist.with_owner:,} of {hist.memories:,} memories have no owner (Mem0's history "
                     "records none): pass owners from the wrapper's trace or a get_all() dump")
    return notes


def import_notes(path: str | Path, fmt: str, rows: Sequence[dict], records: int) -> tuple[str, ...]:
    """Notes on what an import holds; :class:`InputError` (so nothing is written) when it maps no memory
    event, or when its search spans carry no record ids (the rows would count nothing)."""
    kinds = {r["event"] for r in rows}
    unit = "history rows" if fmt == "mem0" else "spans"
    if not kinds - {"context", "task_outcome"}:
        raise InputError(f"{path}: none of the {records:,} {unit} maps to a memory event; nothing written")
    searches = sum(r["event"] == "search" for r in rows)
    if searches and not kinds - {"search", "context", "task_outcome"}:
        raise InputError(
            f"{path}: {searches:,} search spans but no record ids (gen_ai.memory.records[].id, "
            f"gen_ai.retrieval.documents[].id, gen_ai.memory.record.id); nothing written"
        )
    return (MEM0_NOTE,) if fmt == "mem0" else ()
