"""OpenInference retriever spans: attribute names from openinference-semantic-conventions, spans from the
real LangChain instrumentation, the shipped sample, and the one-line exit-3 errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ctwm_cli import InputError
from ctwm_cli.api import read_trace
from ctwm_cli.traces.openinference import (
    DOCUMENTS,
    GENAI_DOCUMENTS,
    PROMPT_TOKENS,
    SESSION_ID,
    SPAN_KIND,
    import_openinference,
    item_id,
    retrieved_documents,
)

SAMPLE = Path(__file__).resolve().parents[1] / "sample_traces" / "telemetry" / "openinference_spans.json"
EXPECTED = SAMPLE.with_name("openinference_spans.expected.json")


def test_attribute_names_are_the_semantic_conventions():
    semconv = pytest.importorskip("openinference.semconv.trace")
    s, d, k = semconv.SpanAttributes, semconv.DocumentAttributes, semconv.OpenInferenceSpanKindValues
    assert (SPAN_KIND, DOCUMENTS, SESSION_ID, PROMPT_TOKENS) == (
        s.OPENINFERENCE_SPAN_KIND, s.RETRIEVAL_DOCUMENTS, s.SESSION_ID, s.LLM_TOKEN_COUNT_PROMPT)
    names = {"id": d.DOCUMENT_ID, "score": d.DOCUMENT_SCORE, "content": d.DOCUMENT_CONTENT,
             "metadata": d.DOCUMENT_METADATA}
    attrs = {f"{DOCUMENTS}.1.{names['id']}": "b", f"{DOCUMENTS}.0.{names['id']}": "a",
             f"{DOCUMENTS}.0.{names['score']}": 0.5, f"{DOCUMENTS}.2.{names['metadata']}": '{"key": "c"}',
             f"{DOCUMENTS}.3.{names['content']}": "text", SPAN_KIND: k.RETRIEVER.value}
    docs = retrieved_documents(attrs, id_key="key")
    assert [(i, s_) for i, s_, _ in docs[:3]] == [("a", 0.5), ("b", None), ("c", None)]
    assert [src for *_, src in docs] == ["document.id", "document.id", "metadata", "content-hash"]


def test_id_order_and_genai_documents():
    assert item_id("x", '{"id": "y"}', "z") == ("x", "document.id")
    assert item_id(None, '{"id": "y"}', "z") == ("y", "metadata")
    assert item_id(None, '{"doc": "y"}', "z", id_key="doc") == ("y", "metadata")
    assert item_id(None, "{}", "z", serialised_id="s") == ("s", "output.value")
    h = item_id(None, "not json", "z")
    assert h[1] == "content-hash" and h[0] == item_id(None, None, "z")[0] != item_id(None, None, "z2")[0]
    assert item_id(None, None, "") == (None, None)
    genai = {GENAI_DOCUMENTS: json.dumps([{"id": "g1", "score": 2}, {"id": "g2"}])}
    assert retrieved_documents(genai) == [("g1", 2.0, "document.id"), ("g2", None, "document.id")]


def _retrieved_by_session(path) -> dict[str, list[list[str]]]:
    out = Path(path).with_suffix(".parquet")
    import_openinference(path, out)
    rows = pq.read_table(out).to_pylist()
    by: dict[str, list[list[str]]] = {}
    for r in rows:
        if r["event"] == "search":
            by.setdefault(r["run"], []).append([])
        elif r["event"] == "retrieve":
            assert r["rank"] == len(by[r["run"]][-1]) + 1
            by[r["run"]][-1].append(r["item"])
    return by


def test_real_langchain_instrumentation_round_trip(tmp_path):
    pytest.importorskip("openinference.instrumentation.langchain")
    import sys

    sys.path.insert(0, str(SAMPLE.parent))
    try:
        from generate_openinference import generate
    finally:
        sys.path.remove(str(SAMPLE.parent))
    path = tmp_path / "spans.json"
    expected = generate(path, turns=8, seed=3)
    assert _retrieved_by_session(path) == expected
    res = import_openinference(path)
    assert res.retriever_spans == 24 and res.documents == 96 and res.runs == 3
    assert set(res.id_sources) <= {"metadata", "output.value"} and sum(res.id_sources.values()) == 96


def test_shipped_sample_imports_with_the_right_item_count(tmp_path, run_cli):
    expected = json.loads(EXPECTED.read_text())
    ids = [i for turns in expected.values() for hits in turns for i in hits]
    out = tmp_path / "oi.parquet"
    res = run_cli(["import", "openinference", SAMPLE, "-o", out, "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["documents"] == len(ids) and doc["id_sources"] == {"metadata": 244, "output.value": 116}
    counts = read_trace(out)[0]
    assert counts.n_items == len(set(ids)) == 44 and counts.n_events == len(ids)
    assert read_trace(SAMPLE)[0].n_items == 44  # read directly: the sniffer recognises the spans
    audit = run_cli(["audit", SAMPLE, "--seed", 1, "-B", 20, "--json"])
    assert audit.code == 0, audit.err
    assert json.loads(audit.out)["results"][0]["n_items"] == 44


def _otlp(attrs: dict) -> dict:
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "s", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize(
    ("attrs", "text"),
    [
        ({SPAN_KIND: "LLM"}, "no OpenInference retriever spans"),
        ({SPAN_KIND: "RETRIEVER", f"{DOCUMENTS}.0.document.metadata": "{}"}, "1 retriever spans but no document ids"),
    ],
)
def test_nothing_mapped_exits_3_without_an_output_file(tmp_path, run_cli, attrs, text):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp(attrs)))
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match=text):
        import_openinference(path, out)
    res = run_cli(["import", "openinference", path, "-o", out])
    assert res.code == 3 and text in res.err and len(res.err.strip().splitlines()) == 1
    assert not out.exists()
    audit = run_cli(["audit", path, "--seed", 1])  # read directly: recognised as OpenInference, same message
    assert audit.code == 3 and text in audit.err


def test_id_key_option(tmp_path, run_cli):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp({SPAN_KIND: "RETRIEVER", f"{DOCUMENTS}.0.document.metadata": '{"uid": "u1"}'})))
    res = run_cli(["import", "openinference", path, "-o", tmp_path / "o.parquet", "--id-key", "uid", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["id_sources"] == {"metadata": 1}
    with pytest.raises(InputError, match="no document ids, metadata 'id'"):
        import_openinference(path)  # the default key finds nothing, and there is no content to hash


def test_genai_option_of_the_real_instrumentation(tmp_path):
    """With ``enable_genai_semconv`` the instrumentation adds the JSON string ``gen_ai.retrieval.documents``;
    the ids come out the same from it alone (``retrieval.documents.N`` removed)."""
    pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ctwm_cli.integrations.otel import otlp_json

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=TraceConfig(enable_genai_semconv=True))
    try:
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents([Document(page_content=f"m {i}", metadata={"id": f"mem-{i}"}) for i in range(9)])
        retriever = store.as_retriever(search_kwargs={"k": 3})
        expected = [d.metadata["id"] for q in range(4) for d in retriever.invoke(f"m {q}")]
    finally:
        instrumentor.uninstrument()
    doc = otlp_json(exporter.get_finished_spans())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert all(any(a["key"] == GENAI_DOCUMENTS for a in sp["attributes"]) for sp in spans)
    for strip in (False, True):
        if strip:
            for sp in spans:
                sp["attributes"] = [a for a in sp["attributes"] if not a["key"].startswith(DOCUMENTS + ".")]
        path = tmp_path / f"genai-{strip}.json"
        path.write_text(json.dumps(doc))
        out = tmp_path / f"genai-{strip}.parquet"
        assert import_openinference(path, out).id_sources == {"metadata": 12}
        rows = pq.read_table(out).to_pylist()
        assert [r["item"] for r in rows if r["event"] == "retrieve"] == expected
