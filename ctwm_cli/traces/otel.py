"""OpenTelemetry GenAI spans (OTLP JSON) as trace rows; the mapping is documented in
:mod:`ctwm_cli.traces.telemetry`. One small function per concern: collect spans, number steps,
and one row builder per operation kind."""

from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import json
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from .guard import load_json_documents

INFERENCE_OPS = frozenset({"chat", "text_completion", "generate_content"})
SEARCH_OPS = {"search_memory": "gen_ai.memory.records", "retrieval": "gen_ai.retrieval.documents"}
WRITE_OPS = {"create_memory": "write", "update_memory": "update", "upsert_memory": "upsert", "delete_memory": "archive"}
ROOT_OPS = ("invoke_agent", "invoke_workflow")


@dataclasses.dataclass(slots=True)
class Span:
    where: str
    trace: str
    span: str
    parent: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    status: str | None
    order: int

    @property
    def op(self) -> Any:
        return self.attrs.get("gen_ai.operation.name")

    @property
    def run(self) -> str:
        return str(self.attrs.get("gen_ai.conversation.id") or self.trace or "otel")

    @property
    def task(self) -> str | None:
        return str(self.attrs.get("ctwm.task.id") or self.trace or "") or None


def any_value(v: Any) -> Any:
    """Decode an OTLP JSON ``AnyValue`` (``intValue`` is int64 as text) into Python."""
    if not isinstance(v, dict):
        return v
    for key, conv in (("stringValue", None), ("intValue", int), ("doubleValue", float), ("boolValue", bool)):
        if key in v:
            return v[key] if conv is None else conv(v[key])
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return v.get("bytesValue")


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
        except (TypeError, ValueError, AttributeError):
            raise InputError(f"{source}: {where}: attribute {kv['key']!r} has a malformed value") from None
    return out


def _records(value: Any) -> list[dict]:
    """``gen_ai.memory.records`` / ``gen_ai.retrieval.documents``: structured, or a JSON string."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return []
    if isinstance(value, dict):
        value = [value]
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _nanos(value: Any) -> int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _iso(nanos: int) -> str:
    try:
        t = _dt.datetime.fromtimestamp(nanos // 1_000_000_000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(nanos)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{(nanos % 1_000_000_000) // 1000:06d}Z"


def _status(span: dict) -> str | None:
    status = span.get("status")
    code = status.get("code") if isinstance(status, dict) else None
    if code in (2, "2", "STATUS_CODE_ERROR"):
        return "failure"
    if code in (1, "1", "STATUS_CODE_OK"):
        return "success"
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _span_dicts(doc: Any, d: int, source: str):
    """``(where, span)`` for every span of one OTLP document."""
    if not isinstance(doc, dict):
        return
    for r, rs in enumerate(_list(doc.get("resourceSpans"))):
        scopes = _list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")) if isinstance(rs, dict) else []
        for s, ss in enumerate(scopes):
            for k, sp in enumerate(_list(ss.get("spans")) if isinstance(ss, dict) else []):
                where = f"document {d + 1}, resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                if not isinstance(sp, dict):
                    raise InputError(f"{source}: {where}: a span must be a JSON object")
                yield where, sp


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def collect_spans(path: str | Path) -> list[Span]:
    """Every span of an OTLP JSON file (one document or JSON lines), sorted by start time."""
    source = str(path)
    spans: list[Span] = []
    for d, (_, doc) in enumerate(load_json_documents(path, source)):
        for where, sp in _span_dicts(doc, d, source):
            start = _nanos(sp.get("startTimeUnixNano"))
            if start is None:
                raise InputError(f"{source}: {where}: missing or malformed startTimeUnixNano")
            spans.append(Span(
                where=where, trace=_text(sp.get("traceId")), span=_text(sp.get("spanId")) or f"span-{len(spans)}",
                parent=_text(sp.get("parentSpanId")) or None, name=_text(sp.get("name")), start=start,
                end=_nanos(sp.get("endTimeUnixNano")) or start, attrs=_attributes(sp.get("attributes"), where, source),
                status=_status(sp), order=len(spans),
            ))
    if not spans:
        raise InputError(f"{source}: no spans found (expected OTLP JSON with resourceSpans[].scopeSpans[].spans[])")
    spans.sort(key=lambda x: (x.start, x.order))
    return spans


class Steps:
    """A span's step: ``ctwm.step`` if set, else the inference spans of its run started before ``t``
    (runs without inference spans: the order of start times)."""

    def __init__(self, spans: list[Span]):
        self._inference: dict[str, list[int]] = {}
        starts: dict[str, set[int]] = {}
        for sp in spans:
            if sp.op in INFERENCE_OPS:
                self._inference.setdefault(sp.run, []).append(sp.start)
            starts.setdefault(sp.run, set()).add(sp.start)
        self._starts = {run: sorted(s) for run, s in starts.items()}

    def at(self, sp: Span, t: int) -> int:
        explicit = sp.attrs.get("ctwm.step")
        if isinstance(explicit, int) and not isinstance(explicit, bool):
            return explicit
        return bisect.bisect_left(self._inference.get(sp.run) or self._starts[sp.run], t)


def _record_ids(sp: Span, attr: str) -> list[tuple[Any, Any]]:
    ids = [(r.get("id"), r.get("score")) for r in _records(sp.attrs.get(attr)) if r.get("id") not in (None, "")]
    if not ids and sp.attrs.get("gen_ai.memory.record.id"):
        ids = [(sp.attrs["gen_ai.memory.record.id"], None)]
    return ids


def _search_rows(sp: Span, base: dict, seen: set[str]) -> list[dict]:
    rows = [{**base, "item": f"query:{sp.span}", "event": "search"}]
    for rank, (rid, score) in enumerate(_record_ids(sp, SEARCH_OPS[sp.op]), 1):
        score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
        rows.append({**base, "item": str(rid), "event": "retrieve", "rank": rank, "score": score})
        seen.add(str(rid))
    return rows


def _write_rows(sp: Span, base: dict, seen: set[str]) -> list[dict]:
    rows = []
    for rid, _ in _record_ids(sp, "gen_ai.memory.records"):
        rid = str(rid)
        kind = WRITE_OPS[sp.op]
        if kind == "upsert":
            kind = "update" if rid in seen else "write"
        rows.append({**base, "item": rid, "event": kind})
        seen.add(rid)
    return rows


def _context_rows(sp: Span, base: dict) -> list[dict]:
    tokens = sp.attrs.get("gen_ai.usage.input_tokens")
    if not isinstance(tokens, (int, float)) or isinstance(tokens, bool) or tokens != tokens or abs(tokens) > 2**62:
        return []
    a = sp.attrs
    model = a.get("gen_ai.request.model") or a.get("gen_ai.response.model") or sp.name or sp.op
    return [{**base, "item": f"model:{model}", "event": "context", "tokens": int(tokens)}]


def _span_rows(sp: Span, base: dict, seen: set[str]) -> list[dict]:
    op = sp.op
    if not isinstance(op, str):
        return []
    if op in SEARCH_OPS:
        return _search_rows(sp, base, seen)
    if op in WRITE_OPS:
        return _write_rows(sp, base, seen)
    if op in INFERENCE_OPS:
        return _context_rows(sp, base)
    return []


def _outcome_spans(spans: list[Span]) -> dict[str, Span]:
    """Per task, the span whose status is the task's outcome: the root, else an agent invocation."""
    chosen: dict[str, Span] = {}
    for sp in spans:
        if sp.task is None or not (sp.parent is None or sp.op in ROOT_OPS):
            continue
        cur = chosen.get(sp.task)
        if cur is None or (cur.parent is not None and sp.parent is None):
            chosen[sp.task] = sp
    return chosen


def _outcome_rows(spans: list[Span], steps: Steps) -> list[dict]:
    rows = []
    for task, sp in sorted(_outcome_spans(spans).items(), key=lambda kv: (kv[1].end, kv[1].order)):
        outcome = sp.attrs.get("ctwm.task.outcome")
        outcome = str(outcome) if outcome is not None else sp.status
        if outcome is not None:
            rows.append({"item": f"task:{task}", "event": "task_outcome", "run": sp.run, "task": task,
                         "outcome": outcome, "ts": _iso(sp.end), "step": steps.at(sp, sp.end)})
    return rows


def otel_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """Trace rows from an OTLP JSON file; also the number of spans read and of spans mapped."""
    spans = collect_spans(path)
    steps = Steps(spans)
    rows: list[dict] = []
    seen: set[str] = set()
    mapped = 0
    for sp in spans:
        base = {"run": sp.run, "task": sp.task, "ts": _iso(sp.start), "step": steps.at(sp, sp.start)}
        got = _span_rows(sp, base, seen)
        rows += got
        mapped += bool(got)
    outcomes = _outcome_rows(spans, steps)
    return rows + outcomes, len(spans), mapped + len(outcomes)
