"""OpenInference retriever spans (what Phoenix's LangChain / LlamaIndex instrumentations emit) as trace rows.

Attribute names are those of ``openinference-semantic-conventions`` (``SpanAttributes``,
``DocumentAttributes``): a span with ``openinference.span.kind = RETRIEVER`` lists its documents as
``retrieval.documents.N.document.{id,score,content,metadata}`` (flattened, N from 0 = top). Real
instrumentations differ: ``openinference-instrumentation-langchain`` sets no ``document.id`` nor
``.score``; the id sits in the JSON string ``document.metadata`` when the application put it there,
or only in the serialised ``Document.id`` inside ``output.value``. So a document's item id is, in
this order (the first one present; the import reports how many ids came from each):

1. ``document.id``;
2. the ``id_key`` (default ``id``) of the JSON object ``document.metadata``;
3. ``documents[N].id`` of the JSON string ``output.value`` (LangChain's serialised ``Document.id``);
4. ``content:`` + the first 16 hex digits of the SHA-256 of ``document.content`` (stable across runs).

With the instrumentation's GenAI option the same documents appear as the JSON string
``gen_ai.retrieval.documents`` (``[{"id", "score", ...}]``), used when no ``retrieval.documents.N``
attribute is present. Rows: per retriever span a ``search`` row (item ``query:<span id>``) and one
``retrieve`` row per document (rank = N + 1, score = ``document.score``); per LLM span with
``llm.token_count.prompt`` a ``context`` row. ``run`` = ``session.id``, else the trace id;
``step`` = LLM spans of the run started before the span; ``ts`` = span start (UTC).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..runtime.files import atomic_write, check_output_file
from .event_rows import WRITER_SCHEMA
from .otel import collect_spans
from .schema import ColumnMap

SPAN_KIND = "openinference.span.kind"
RETRIEVER = "RETRIEVER"
LLM = "LLM"
DOCUMENTS = "retrieval.documents"
SESSION_ID = "session.id"
PROMPT_TOKENS = "llm.token_count.prompt"
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
ID_SOURCES = ("document.id", "metadata", "output.value", "content-hash")
_DOC_ATTR = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content|metadata)$")


@result
class OpenInferenceImport(ToDict):
    """What ``ctwm import openinference`` read and wrote; ``id_sources`` counts where item ids came from."""

    source: str
    output: str | None
    spans: int
    retriever_spans: int
    documents: int
    n_rows: int
    events: dict[str, int]
    runs: int
    id_key: str
    id_sources: dict[str, int]


def item_id(doc_id: Any, metadata: Any, content: Any, *, id_key: str = "id", serialised_id: Any = None
            ) -> tuple[str | None, str | None]:
    """A retrieved document's item id and where it came from (one of :data:`ID_SOURCES`), or (None, None)."""
    if doc_id not in (None, ""):
        return str(doc_id), "document.id"
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            metadata = None
    if isinstance(metadata, Mapping) and metadata.get(id_key) not in (None, ""):
        return str(metadata[id_key]), "metadata"
    if serialised_id not in (None, ""):
        return str(serialised_id), "output.value"
    if isinstance(content, str) and content:
        return "content:" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:16], "content-hash"
    return None, None


Document = tuple[str | None, float | None, str | None]


def retrieved_documents(attrs: Mapping[str, Any], *, id_key: str = "id", records_key: str = GENAI_DOCUMENTS
                        ) -> list[Document]:
    """``(item id, score, id source)`` per document of a retriever span's attributes, top first;
    ``records_key`` names the GenAI attribute read when there is no ``retrieval.documents.N`` (the
    JSON list of ``gen_ai.retrieval.documents``, or ``gen_ai.memory.records`` for memory search)."""
    docs: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _DOC_ATTR.match(key)
        if m:
            docs.setdefault(int(m.group(1)), {})[m.group(2)] = value
    if not docs and attrs.get(records_key) is not None:
        raw = attrs[records_key]
        try:
            records = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            records = []
        for i, r in enumerate(records if isinstance(records, list) else []):
            if isinstance(r, Mapping):
                docs[i] = {"id": r.get("id"), "score": r.get("score"), "content": r.get("content"),
                           "metadata": r.get("metadata")}
    serialised = _serialised_ids(attrs.get("output.value"))
    out = []
    for n in sorted(docs):
        d = docs[n]
        item, source = item_id(d.get("id"), d.get("metadata"), d.get("content"), id_key=id_key,
                               serialised_id=serialised[n] if n < len(serialised) else None)
        score = d.get("score")
        score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
        out.append((item, score, source))
    return out


def _serialised_ids(output: Any) -> list[Any]:
    if not isinstance(output, str) or '"documents"' not in output:
        return []
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return []
    docs = value.get("documents") if isinstance(value, Mapping) else None
    return [d.get("id") if isinstance(d, Mapping) else None for d in docs] if isinstance(docs, list) else []


def looks_like_openinference(head: bytes, columns: ColumnMap | None = None) -> bool:
    """Whether the head of an OTLP JSON file holds OpenInference spans (a telemetry sniffer). Any span kind
    counts: a file whose first spans are LLM or chain spans is still read (and told apart) here."""
    return b'"resourceSpans"' in head and b'"openinference.span.kind"' in head


def openinference_rows(path: str | Path, *, id_key: str = "id") -> tuple[list[dict], int, int, dict[str, int]]:
    """Trace rows from OTLP JSON with OpenInference spans; also spans read, retriever spans, id sources."""
    spans = collect_spans(path)
    runs = [str(sp.attrs.get(SESSION_ID) or sp.trace or "openinference") for sp in spans]
    llm_starts: dict[str, list[int]] = {}
    for sp, run in zip(spans, runs, strict=True):
        if sp.attrs.get(SPAN_KIND) == LLM:
            llm_starts.setdefault(run, []).append(sp.start)
    rows: list[dict] = []
    sources = dict.fromkeys(ID_SOURCES, 0)
    retrievers = 0
    for sp, run in zip(spans, runs, strict=True):
        a, kind = sp.attrs, sp.attrs.get(SPAN_KIND)
        base = {"run": run, "ts": _iso(sp.start), "step": bisect.bisect_left(llm_starts.get(run, []), sp.start)}
        if kind == RETRIEVER:
            retrievers += 1
            rows.append({**base, "item": f"query:{sp.span}", "event": "search"})
            for rank, (item, score, source) in enumerate(retrieved_documents(a, id_key=id_key), 1):
                if item is not None:
                    rows.append({**base, "item": item, "event": "retrieve", "rank": rank, "score": score})
                    sources[source] += 1
        elif kind == LLM and isinstance(a.get(PROMPT_TOKENS), int):
            rows.append({**base, "item": f"model:{a.get('llm.model_name') or 'llm'}", "event": "context",
                         "tokens": a[PROMPT_TOKENS]})
    return rows, len(spans), retrievers, sources


def _iso(nanos: int) -> str:
    t = _dt.datetime.fromtimestamp(nanos // 1_000_000_000, tz=_dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{(nanos % 1_000_000_000) // 1000:06d}Z"


def _checked_rows(path: str | Path, id_key: str = "id") -> tuple[list[dict], int, int, dict[str, int]]:
    rows, spans, retrievers, sources = openinference_rows(path, id_key=id_key)
    if retrievers == 0:
        raise InputError(f"{path}: no OpenInference retriever spans (openinference.span.kind = RETRIEVER) "
                         f"among {spans} spans; nothing to import")
    if not any(r["event"] == "retrieve" for r in rows):
        raise InputError(f"{path}: {retrievers} retriever spans but no document ids, metadata {id_key!r} or "
                         f"content to identify the retrieved records; nothing to import")
    return rows, spans, retrievers, sources


def import_openinference(path: str | Path, output: str | Path | None = None, *, id_key: str = "id",
                         overwrite: bool = False) -> OpenInferenceImport:
    """Read OpenInference spans (OTLP JSON) and, if ``output`` is given, write a Parquet trace.
    Raises :class:`InputError` (nothing written) when no retrieved record can be identified."""
    if not id_key:
        raise UsageError("id_key must be a non-empty metadata key", params=("id_key",))
    if output is not None:
        check_output_file(output, param="output", suffixes=(".parquet", ".pq"), overwrite=overwrite)
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file")
    rows, spans, retrievers, sources = _checked_rows(path, id_key)
    if output is not None:
        import pyarrow.parquet as pq

        with atomic_write(output) as tmp:
            pq.write_table(pa.Table.from_pylist(rows, schema=WRITER_SCHEMA), str(tmp))
    events: dict[str, int] = {}
    for r in rows:
        events[r["event"]] = events.get(r["event"], 0) + 1
    return OpenInferenceImport(
        source=str(path), output=None if output is None else str(output), spans=spans, retriever_spans=retrievers,
        documents=events.get("retrieve", 0), n_rows=len(rows), events=dict(sorted(events.items())),
        runs=len({r["run"] for r in rows}), id_key=id_key, id_sources={k: v for k, v in sources.items() if v},
    )


def openinference_trace_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """The telemetry row reader: rows, spans read, retriever spans (errors when nothing maps)."""
    return _checked_rows(path)[:3]
