"""OpenTelemetry: a span exporter that writes memory and retrieval spans straight into a trace file
(needs ``opentelemetry-sdk``), and ``otlp_json`` to save finished spans as OTLP JSON.

    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter("agent.jsonl")))

Spans understood (as they end): OpenInference retriever spans (``openinference.span.kind =
RETRIEVER``) and GenAI ``retrieval`` / ``search_memory`` spans -> a ``search`` event and one
``retrieve`` event per document or record (ids as in ``ctwm import openinference``); GenAI
``create_memory`` / ``update_memory`` / ``delete_memory`` -> ``write`` / ``update`` / ``archive``.
Model calls (OpenInference ``LLM`` spans, GenAI ``chat``, ``text_completion``, ``generate_content``)
advance the run's ``step``, so memory reads before a model call share its step. ``run`` =
``session.id``, else ``gen_ai.conversation.id``, else the trace id.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..traces.openinference import GENAI_DOCUMENTS, LLM, RETRIEVER, SESSION_ID, SPAN_KIND, retrieved_documents
from ..traces.otel import INFERENCE_OPS
from ..traces.writer import TraceWriter

MEMORY_RECORDS = "gen_ai.memory.records"
_SEARCH = {"retrieval": GENAI_DOCUMENTS, "search_memory": MEMORY_RECORDS}
_WRITES = {"create_memory": "write", "update_memory": "update", "upsert_memory": "update", "delete_memory": "archive"}


class TraceFileExporter(SpanExporter):
    """Write the memory events of finished spans into ``writer`` (a :class:`TraceWriter` or a path)."""

    def __init__(self, writer: TraceWriter | str | os.PathLike, *, id_key: str = "id"):
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.id_key = id_key
        self._steps: dict[str, int] = {}
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            for span in spans:
                self._write(span)
        return SpanExportResult.SUCCESS

    def _write(self, span: ReadableSpan) -> None:
        a = dict(span.attributes or {})
        run = str(a.get(SESSION_ID) or a.get("gen_ai.conversation.id") or f"{span.context.trace_id:032x}")
        step = self._steps.get(run, 0)
        op, kind = a.get("gen_ai.operation.name"), a.get(SPAN_KIND)
        if kind == RETRIEVER or op in _SEARCH:
            self.writer.event("search", f"query:{span.context.span_id:016x}", run=run, step=step)
            docs = retrieved_documents(a, id_key=self.id_key, records_key=_SEARCH.get(op, GENAI_DOCUMENTS))
            for rank, (item, score, _) in enumerate(docs, 1):
                if item is not None:
                    self.writer.retrieve(item, rank=rank, score=score, run=run, step=step)
        elif op in _WRITES:
            for item in _record_ids(a):
                self.writer.event(_WRITES[op], item, run=run, step=step)
        elif kind == LLM or op in INFERENCE_OPS:
            self._steps[run] = step + 1

    def shutdown(self) -> None:
        if self._owns:
            self.writer.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.writer.flush()
        return True


def _record_ids(a: dict[str, Any]) -> list[str]:
    raw = a.get(MEMORY_RECORDS)
    try:
        records = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        records = None
    ids = [str(r["id"]) for r in records or [] if isinstance(r, dict) and r.get("id") not in (None, "")] \
        if isinstance(records, list) else []
    if not ids and a.get("gen_ai.memory.record.id") not in (None, ""):
        ids = [str(a["gen_ai.memory.record.id"])]
    return ids


def _any_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(x) for x in v]}}
    return {"stringValue": str(v)}


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Finished spans as one OTLP JSON ``ExportTraceServiceRequest`` (hex ids, int64 as text), the
    format ``ctwm import otel|openinference`` and the trace readers accept."""
    out = []
    for sp in spans:
        ctx = sp.context
        d: dict[str, Any] = {
            "traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}", "name": sp.name,
            "kind": sp.kind.value + 1, "startTimeUnixNano": str(sp.start_time), "endTimeUnixNano": str(sp.end_time),
            "attributes": [{"key": k, "value": _any_value(v)} for k, v in (sp.attributes or {}).items()],
            "status": {"code": sp.status.status_code.value},
        }
        if sp.parent is not None:
            d["parentSpanId"] = f"{sp.parent.span_id:016x}"
        out.append(d)
    scope = {"scope": {"name": "ctwm"}, "spans": out}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}
