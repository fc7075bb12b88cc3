"""LlamaIndex instrumentation handler against the real llama-index-core (mock LLM and embeddings, no network)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

from ctwm_cli.integrations.llamaindex import CtwmEventHandler


@pytest.fixture
def handler(tmp_path):
    h = CtwmEventHandler.to_file(tmp_path / "li.jsonl", run="session-1")
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(h)
    saved = Settings._llm, Settings._embed_model, Settings._tokenizer
    Settings.llm, Settings.embed_model = MockLLM(), MockEmbedding(embed_dim=8)
    Settings.tokenizer = str.split  # the default tokenizer would download a BPE table
    yield h
    dispatcher.event_handlers.remove(h)
    Settings._llm, Settings._embed_model, Settings._tokenizer = saved
    h.close()


def test_query_engine_retrievals_become_ranked_scored_events(handler, tmp_path, run_cli):
    nodes = [TextNode(text=f"fact {i} about things", id_=f"mem-{i}") for i in range(12)]
    engine = VectorStoreIndex(nodes).as_query_engine(similarity_top_k=3)
    seen = []
    for q in ("what about things?", "fact 3", "fact 7"):
        response = engine.query(q)
        seen.append([(n.node.node_id, n.score) for n in response.source_nodes])
    handler.writer.flush()
    ev = [json.loads(line) for line in (tmp_path / "li.jsonl").read_text().splitlines()]
    assert [(e["item"], e["rank"], e["step"]) for e in ev] == [
        (item, rank, step) for step, hits in enumerate(seen) for rank, (item, _) in enumerate(hits, 1)
    ]
    assert [e["score"] for e in ev] == pytest.approx([s for hits in seen for _, s in hits])
    assert {e["run"] for e in ev} == {"session-1"} and {e["event"] for e in ev} == {"retrieve"}
    audit = run_cli(["audit", tmp_path / "li.jsonl", "--seed", 1, "-B", 20, "--json"])
    assert audit.code == 0, audit.err
    assert json.loads(audit.out)["results"][0]["n_items"] == len({e["item"] for e in ev})
    assert run_cli(["health", tmp_path / "li.jsonl", "--json"]).code == 0
