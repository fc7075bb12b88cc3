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

A Mem0 history export is the list of rows of ``Memory.history()`` / the ``history`` table
(``memory_id``, ``event`` ADD/UPDATE/DELETE, ``old_memory``, ``new_memory``, ``created_at``,
``updated_at``, ...), as a JSON array, ``{"results": [...]}`` or JSON lines. ADD -> ``write``,
UPDATE -> ``update``, DELETE -> ``archive`` (NONE rows are skipped); ts = ``updated_at`` for
UPDATE/DELETE when present, else ``created_at``; step = dense rank of ts (file order if a row has
no time); run = ``run_id`` / ``user_id`` / ``agent_id`` if present; task = ``task_id`` / ``task``
(top level or in ``metadata``) if present.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import gzip
import json
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import InputError, UsageError
from ..results import ToDict, result
from .readers import TraceReader, _normalise
from .schema import ColumnMap

TELEMETRY_FORMATS = ("otel", "mem0")
ROW_COLUMNS = ("item", "step", "run", "event", "rank", "score", "tokens", "ts", "task", "outcome", "by")
_ARROW_TYPES = {
    "item": pa.string(), "step": pa.int64(), "run": pa.string(), "event": pa.string(), "rank": pa.int64(),
    "score": pa.float64(), "tokens": pa.int64(), "ts": pa.string(), "task": pa.string(), "outcome": pa.string(),
    "by": pa.string(),
}
INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})
SEARCH_OPS = {"search_memory": "gen_ai.memory.records", "retrieval": "gen_ai.retrieval.documents"}
WRITE_OPS = {"create_memory": "write", "update_memory": "update", "upsert_memory": "upsert", "delete_memory": "archive"}
MEM0_EVENTS = {"ADD": "write", "UPDATE": "update", "DELETE": "archive"}
_SNIFF_BYTES = 1 << 16


@result
class ImportResult(ToDict):
    """What ``ctwm import`` read and wrote."""

    source: str
    format: str
    output: str | None
    records: int  # spans (otel) or history rows (mem0) read
    mapped: int  # of which produced at least one trace row
    rows: int
    events: dict[str, int]
    runs: int
    tasks: int


# --------------------------------------------------------------------------------------------
# Format detection


def sniff_format(path: str | Path, columns: ColumnMap | None = None) -> str | None:
    """``otel`` or ``mem0`` if the head of a JSON file looks like one, else ``None``."""
    columns = columns or ColumnMap()
    try:
        head = _read_bytes(Path(path), limit=_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):  # unreadable: let the JSONL reader report it
        return None
    if b'"resourceSpans"' in head:
        return "otel"
    has_item = re.search(b'"' + re.escape(columns.item.encode()) + rb'"\s*:', head) is not None
    if b'"memory_id"' in head and b'"event"' in head and not has_item:
        return "mem0"
    return None


def _read_bytes(p: Path, limit: int | None = None) -> bytes:
    gz = p.name.lower().endswith(".gz")
    with (gzip.open(p, "rb") if gz else p.open("rb")) as fh:
        return fh.read(limit) if limit is not None else fh.read()


def _load_documents(path: Path) -> list[Any]:
    """One JSON document, or JSON lines of documents."""
    try:
        raw = _read_bytes(path)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    text = raw.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    docs = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                docs.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {i}: malformed JSON ({exc.msg})") from None
    return docs


# --------------------------------------------------------------------------------------------
# OTLP JSON


def any_value(v: Any) -> Any:
    """Decode an OTLP JSON ``AnyValue`` (``intValue`` is int64 as text) into Python."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _attributes(items: Any, where: str, source: str) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise InputError(f"{source}: {where}: attributes must be a list of {{key, value}}")
    out = {}
    for kv in items:
        if not isinstance(kv, dict) or "key" not in kv:
            raise InputError(f"{source}: {where}: attribute without a key")
        try:
            out[kv["key"]] = any_value(kv.get("value"))
        except (TypeError, ValueError):
            raise InputError(f"{source}: {where}: attribute {kv['key']!r} has a malformed value") from None
    return out


def _records(value: Any) -> list[dict]:
    """``gen_ai.memory.records`` / ``gen_ai.retrieval.documents``: structured, or a JSON string."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if isinstance(value, dict):
        value = [value]
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _nanos(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _iso(nanos: int) -> str:
    t = _dt.datetime.fromtimestamp(nanos // 1_000_000_000, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{(nanos % 1_000_000_000) // 1000:06d}Z"


def _status(span: dict) -> str | None:
    code = (span.get("status") or {}).get("code")
    if code in (2, "2", "STATUS_CODE_ERROR"):
        return "failure"
    if code in (1, "1", "STATUS_CODE_OK"):
        return "success"
    return None


def otel_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """Trace rows from an OTLP JSON file; also the number of spans read and of spans mapped."""
    p = Path(path)
    source = str(path)
    spans = []
    for d, doc in enumerate(_load_documents(p)):
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            continue
        for r, rs in enumerate(doc.get("resourceSpans") or []):
            scopes = rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []
            for s, ss in enumerate(scopes):
                for k, sp in enumerate(ss.get("spans") or []):
                    where = f"document {d + 1}, resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                    if not isinstance(sp, dict):
                        raise InputError(f"{source}: {where}: a span must be a JSON object")
                    start = _nanos(sp.get("startTimeUnixNano"))
                    if start is None:
                        raise InputError(f"{source}: {where}: missing or malformed startTimeUnixNano")
                    spans.append({
                        "where": where,
                        "trace": sp.get("traceId") or "",
                        "span": sp.get("spanId") or f"span-{len(spans)}",
                        "parent": sp.get("parentSpanId") or None,
                        "name": sp.get("name") or "",
                        "start": start,
                        "end": _nanos(sp.get("endTimeUnixNano")) or start,
                        "attrs": _attributes(sp.get("attributes"), where, source),
                        "status": _status(sp),
                        "order": len(spans),
                    })
    if not spans:
        raise InputError(f"{source}: no spans found (expected OTLP JSON with resourceSpans[].scopeSpans[].spans[])")
    spans.sort(key=lambda x: (x["start"], x["order"]))
    for sp in spans:
        a = sp["attrs"]
        sp["op"] = a.get("gen_ai.operation.name")
        sp["run"] = str(a.get("gen_ai.conversation.id") or sp["trace"] or "otel")
        sp["task"] = str(a.get("ctwm.task.id") or sp["trace"] or "") or None
    # Steps: inference spans of the run that started before the span.
    inference: dict[str, list[int]] = {}
    for sp in spans:
        if sp["op"] in INFERENCE_OPS:
            inference.setdefault(sp["run"], []).append(sp["start"])
    order_in_run: dict[str, list[int]] = {}
    for sp in spans:
        order_in_run.setdefault(sp["run"], []).append(sp["start"])

    def step_at(sp: dict, t: int) -> int:
        explicit = sp["attrs"].get("ctwm.step")
        if isinstance(explicit, int) and not isinstance(explicit, bool):
            return explicit
        starts = inference.get(sp["run"])
        if starts:
            return bisect.bisect_left(starts, t)
        return bisect.bisect_left(sorted(set(order_in_run[sp["run"]])), t)

    rows: list[dict] = []
    seen: set[str] = set()
    mapped = 0
    outcome_span: dict[str, dict] = {}
    for sp in spans:
        a, op = sp["attrs"], sp["op"]
        base = {"run": sp["run"], "task": sp["task"], "ts": _iso(sp["start"]), "step": step_at(sp, sp["start"])}
        before = len(rows)
        if op in SEARCH_OPS:
            rows.append({**base, "item": f"query:{sp['span']}", "event": "search"})
            recs = _records(a.get(SEARCH_OPS[op]))
            ids = [(r.get("id"), r.get("score")) for r in recs if r.get("id") not in (None, "")]
            if not ids and a.get("gen_ai.memory.record.id"):
                ids = [(a["gen_ai.memory.record.id"], None)]
            for rank, (rid, score) in enumerate(ids, 1):
                score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
                rows.append({**base, "item": str(rid), "event": "retrieve", "rank": rank, "score": score})
                seen.add(str(rid))
        elif op in WRITE_OPS:
            ids = [str(r["id"]) for r in _records(a.get("gen_ai.memory.records")) if r.get("id") not in (None, "")]
            if not ids and a.get("gen_ai.memory.record.id"):
                ids = [str(a["gen_ai.memory.record.id"])]
            for rid in ids:
                kind = WRITE_OPS[op]
                if kind == "upsert":
                    kind = "update" if rid in seen else "write"
                rows.append({**base, "item": rid, "event": kind})
                seen.add(rid)
        elif op in INFERENCE_OPS and a.get("gen_ai.usage.input_tokens") is not None:
            tokens = a["gen_ai.usage.input_tokens"]
            if isinstance(tokens, (int, float)) and not isinstance(tokens, bool):
                model = a.get("gen_ai.request.model") or a.get("gen_ai.response.model") or sp["name"] or op
                rows.append({**base, "item": f"model:{model}", "event": "context", "tokens": int(tokens)})
        if sp["task"] is not None and (sp["parent"] is None or op in ("invoke_agent", "invoke_workflow")):
            cur = outcome_span.get(sp["task"])
            if cur is None or (cur["parent"] is not None and sp["parent"] is None):
                outcome_span[sp["task"]] = sp
        mapped += len(rows) > before
    for task, sp in sorted(outcome_span.items(), key=lambda kv: (kv[1]["end"], kv[1]["order"])):
        outcome = sp["attrs"].get("ctwm.task.outcome")
        outcome = str(outcome) if outcome is not None else sp["status"]
        if outcome is None:
            continue
        rows.append({
            "item": f"task:{task}", "event": "task_outcome", "run": sp["run"], "task": task, "outcome": outcome,
            "ts": _iso(sp["end"]), "step": step_at(sp, sp["end"]),
        })
        mapped += 1
    return rows, len(spans), mapped


# --------------------------------------------------------------------------------------------
# Mem0 history


def _parse_time(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        t = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.timestamp()


def mem0_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """Trace rows from a Mem0 history export; also the number of history rows and of rows mapped."""
    source = str(path)
    docs = _load_documents(Path(path))
    if len(docs) == 1 and isinstance(docs[0], list):
        hist = docs[0]
    elif len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("results"), list):
        hist = docs[0]["results"]
    else:
        hist = docs
    rows = []
    for i, h in enumerate(hist, 1):
        if not isinstance(h, dict):
            raise InputError(f"{source}: history row {i}: expected a JSON object, got {type(h).__name__}")
        mid = h.get("memory_id")
        if mid in (None, ""):
            raise InputError(f"{source}: history row {i}: missing memory_id")
        ev = str(h.get("event") or "").upper()
        if ev == "NONE":
            continue
        if ev not in MEM0_EVENTS:
            raise InputError(f"{source}: history row {i}: event must be ADD, UPDATE, DELETE or NONE, got {h.get('event')!r}")
        when = h.get("created_at") if ev == "ADD" else (h.get("updated_at") or h.get("created_at"))
        meta = h.get("metadata") if isinstance(h.get("metadata"), dict) else {}
        task = h.get("task_id") or h.get("task") or meta.get("task_id") or meta.get("task")
        run = h.get("run_id") or h.get("user_id") or h.get("agent_id")
        rows.append({
            "item": str(mid), "event": MEM0_EVENTS[ev], "ts": None if when is None else str(when),
            "run": None if run is None else str(run), "task": None if task is None else str(task),
            "_t": _parse_time(when), "_order": i,
        })
    if not rows:
        raise InputError(f"{source}: no ADD/UPDATE/DELETE rows in the Mem0 history export")
    if all(r["_t"] is not None for r in rows):
        rows.sort(key=lambda r: (r["_t"], r["_order"]))
        step, last = -1, None
        for r in rows:
            if r["_t"] != last:
                step, last = step + 1, r["_t"]
            r["step"] = step
    else:
        for k, r in enumerate(rows):
            r["step"] = k
    for r in rows:
        del r["_t"], r["_order"]
    return rows, len(hist), len(rows)


# --------------------------------------------------------------------------------------------
# Reader and import


def telemetry_rows(path: str | Path, fmt: str) -> tuple[list[dict], int, int]:
    if fmt == "otel":
        return otel_rows(path)
    if fmt == "mem0":
        return mem0_rows(path)
    raise UsageError(f"telemetry format must be one of {', '.join(TELEMETRY_FORMATS)}, got {fmt!r}")


def rows_table(rows: Sequence[dict]) -> pa.Table:
    """Rows as an Arrow table with the canonical column names and types (all columns present)."""
    return pa.table({c: pa.array([r.get(c) for r in rows], type=_ARROW_TYPES[c]) for c in ROW_COLUMNS})


class TelemetryReader(TraceReader):
    """A trace reader over OTLP JSON spans or a Mem0 history export (rows are already canonical)."""

    def __init__(self, source: str, fmt: str, keep: Sequence[str] = (), optional: Sequence[str] = ()):
        if fmt not in TELEMETRY_FORMATS:
            raise UsageError(f"telemetry format must be one of {', '.join(TELEMETRY_FORMATS)}, got {fmt!r}")
        super().__init__(source, fmt, ColumnMap(), keep, optional)

    def batches(self, *, dictionary_items: bool = False) -> Iterator[pa.Table]:
        rows, _, _ = telemetry_rows(self.source, self.format)
        table = rows_table(rows)
        self._note_columns(table.column_names)
        self._check_required(self.columns_found)
        yield _normalise(table, self, f"{self.format} rows 1-{table.num_rows}")


def import_telemetry(path: str | Path, fmt: str, output: str | Path | None = None) -> ImportResult:
    """Read ``path`` as ``fmt`` (otel or mem0) and, if ``output`` is given, write a Parquet trace."""
    if fmt not in TELEMETRY_FORMATS:
        raise UsageError(f"format must be one of {', '.join(TELEMETRY_FORMATS)}, got {fmt!r}")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if output is not None:
        out = Path(output)
        if not out.name.lower().endswith((".parquet", ".pq")):
            raise UsageError(f"-o/--output must end in .parquet, got {str(output)!r}")
        if not (out.parent if str(out.parent) else Path(".")).is_dir():
            raise UsageError(f"-o/--output: directory {str(out.parent)!r} does not exist")
    rows, records, mapped = telemetry_rows(p, fmt)
    table = rows_table(rows)
    if output is not None:
        import pyarrow.parquet as pq

        pq.write_table(table, str(output))
    events: dict[str, int] = {}
    for r in rows:
        events[r["event"]] = events.get(r["event"], 0) + 1
    return ImportResult(
        source=str(path), format=fmt, output=None if output is None else str(output), records=records,
        mapped=mapped, rows=len(rows), events=dict(sorted(events.items())),
        runs=len({r.get("run") for r in rows if r.get("run") is not None}),
        tasks=len({r.get("task") for r in rows if r.get("task") is not None}),
    )
