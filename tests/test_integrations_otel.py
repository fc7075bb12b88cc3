"""OpenTelemetry span exporter against the real opentelemetry-sdk: GenAI memory spans and OpenInference
retriever spans from the real LangChain instrumentation, written straight to a trace file."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ctwm_cli.api import read_trace
from ctwm_cli.integrations.otel import TraceFileExporter


def _events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_genai_memory_spans_to_trace(tmp_path, run_cli):
    path = tmp_path / "otel.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(path)))
    tracer = provider.get_tracer("test")
    conv = {"gen_ai.conversation.id": "conv-1"}
    with tracer.start_as_current_span("invoke_agent", attributes={**conv, "gen_ai.operation.name": "invoke_agent"}):
        for i in range(3):
            with tracer.start_as_current_span("create", attributes={**conv, "gen_ai.operation.name": "create_memory",
                                                                    "gen_ai.memory.record.id": f"m{i}"}):
                pass
        records = json.dumps([{"id": "m2", "score": 0.9}, {"id": "m0", "score": 0.4}])
        with tracer.start_as_current_span("search", attributes={**conv, "gen_ai.operation.name": "search_memory",
                                                                "gen_ai.memory.records": records}):
            pass
        with tracer.start_as_current_span("chat", attributes={**conv, "gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("update", attributes={**conv, "gen_ai.operation.name": "update_memory",
                                                                "gen_ai.memory.record.id": "m0"}):
            pass
        with tracer.start_as_current_span("delete", attributes={**conv, "gen_ai.operation.name": "delete_memory",
                                                                "gen_ai.memory.records": [json.dumps({"id": "m1"})]}):
            pass
    provider.shutdown()
    ev = [(e["event"], e["item"], e["step"], e.get("rank"), e.get("score")) for e in _events(path)]
    search = [e for e in ev if e[0] == "search"]
    assert len(search) == 1 and search[0][1].startswith("query:")
    assert [e for e in ev if e[0] != "search"] == [
        ("write", "m0", 0, None, None), ("write", "m1", 0, None, None), ("write", "m2", 0, None, None),
        ("retrieve", "m2", 0, 1, 0.9), ("retrieve", "m0", 0, 2, 0.4),
        ("update", "m0", 1, None, None),  # after the chat span: step 1
    ]  # the delete's records are not a list of objects, so it maps nothing
    assert {e["run"] for e in _events(path)} == {"conv-1"}
    health = run_cli(["health", path, "--json"])
    assert health.code == 0, health.err
    assert run_cli(["audit", path, "--seed", 1, "-B", 10, "--json"]).code == 0


def test_openinference_langchain_spans_to_trace(tmp_path, run_cli):
    pytest.importorskip("openinference.instrumentation.langchain")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor

    path = tmp_path / "oi.parquet"
    provider = TracerProvider()
    exporter = TraceFileExporter(path)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents([Document(page_content=f"memory {i}", metadata={"id": f"mem-{i}"}) for i in range(20)])
        retriever = store.as_retriever(search_kwargs={"k": 3})
        expected = []
        with using_session("s-1"):
            for q in range(25):
                expected += [d.metadata["id"] for d in retriever.invoke(f"memory {q % 6}")]
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert read_trace(path).scan.events == {"retrieve": 75, "search": 25}
    audit = run_cli(["audit", path, "--seed", 1, "-B", 20, "--json"])
    assert audit.code == 0, audit.err
    assert json.loads(audit.out)["results"][0]["n_items"] == len(set(expected))
    assert run_cli(["health", path, "--json"]).code == 0
