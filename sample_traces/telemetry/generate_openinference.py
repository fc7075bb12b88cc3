"""Write ``openinference_spans.json``: OpenInference spans from the real LangChain instrumentation.

    pip install 'ctwm[openinference]'   # langchain-core, opentelemetry-sdk, openinference-instrumentation-langchain
    python sample_traces/telemetry/generate_openinference.py

Three sessions (``session.id`` = ``s1``..``s3``) of an agent that, per turn, asks one of two
in-memory LangChain retrievers (``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``, no
network) for the top 4 memories and then calls a chat model (``FakeListChatModel``). The two stores
keep ids the two ways LangChain applications do, which the instrumentation exports differently:

* ``notes`` (40 memories): the id is in the document metadata, ``{"id": "note-0007"}`` -> it appears
  in the JSON string ``retrieval.documents.N.document.metadata``;
* ``episodes`` (12 memories): the id is ``Document.id`` (``ids=`` of ``add_documents``) -> the
  instrumentation drops it from ``retrieval.documents.N`` and keeps it only in ``output.value``.

Queries are drawn from a Zipf law over the memories' texts (seeded), so a few memories come back
often. The spans are exported as one OTLP JSON ``ExportTraceServiceRequest``; span ids and times
come from the OpenTelemetry SDK, so a rerun changes those, not the memories retrieved.
Also writes ``openinference_spans.expected.json``: the retrieved ids per span, recorded from the
retrievers' own return values, which tests compare the import against.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261130
TURNS_PER_SESSION = 30
K = 4


def generate(out: Path, *, turns: int = TURNS_PER_SESSION, seed: int = SEED) -> dict:
    """Run the instrumented agent and write the OTLP JSON to ``out``; returns the expected retrievals."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.vectorstores import InMemoryVectorStore
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ctwm_cli.integrations.otel import otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        embed = DeterministicFakeEmbedding(size=32)
        notes = InMemoryVectorStore(embed)
        note_texts = [f"note {i}: the user prefers option {i % 7} for task family {i % 5}" for i in range(40)]
        notes.add_documents([Document(page_content=t, metadata={"id": f"note-{i:04d}"})
                             for i, t in enumerate(note_texts)])
        episodes = InMemoryVectorStore(embed)
        episode_texts = [f"episode {i}: the agent solved puzzle {i} in {3 + i % 4} moves" for i in range(12)]
        episodes.add_documents([Document(page_content=t) for t in episode_texts],
                               ids=[f"episode-{i:02d}" for i in range(12)])
        model = FakeListChatModel(responses=["ok"])
        rng = np.random.default_rng(seed)
        expected: dict[str, list[list[str]]] = {}
        for session in ("s1", "s2", "s3"):
            with using_session(session):
                for _ in range(turns):
                    use_notes = rng.random() < 0.7
                    texts = note_texts if use_notes else episode_texts
                    query = texts[min(int(rng.zipf(1.6)) - 1, len(texts) - 1)]
                    store = notes if use_notes else episodes
                    docs = store.as_retriever(search_kwargs={"k": K}).invoke(query)
                    ids = [d.metadata["id"] if use_notes else d.id for d in docs]
                    expected.setdefault(session, []).append(ids)
                    model.invoke(f"answer using {', '.join(ids)}")
        provider.force_flush()
        out.write_text(json.dumps(otlp_json(exporter.get_finished_spans())) + "\n")
        return expected
    finally:
        instrumentor.uninstrument()


if __name__ == "__main__":
    target = HERE / "openinference_spans.json"
    exp = generate(target)
    (HERE / "openinference_spans.expected.json").write_text(json.dumps(exp, indent=1) + "\n")
    n = sum(len(ids) for turns in exp.values() for ids in turns)
    distinct = len({i for turns in exp.values() for ids in turns for i in ids})
    print(f"wrote {target} ({n} retrievals of {distinct} distinct memories)")
