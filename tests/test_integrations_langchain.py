"""LangChain callback handler against the real langchain-core: retrievers, a chat model, a tool, a chain."""

from __future__ import annotations

import json
import uuid

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore

from ctwm_cli.integrations.langchain import CtwmCallbackHandler
from ctwm_cli.traces.openinference import item_id


class ScoredRetriever(BaseRetriever):
    """A retriever that reports a relevance score in each document's metadata."""

    k: int = 3

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=f"{query} fact {i}", id=f"fact-{i}", metadata={"score": 1.0 / (i + 1)})
                for i in range(self.k)]


@tool
def lookup(name: str) -> str:
    """Look a name up."""
    return name.upper()


def _events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_retriever_chain_llm_and_tool_steps(tmp_path):
    path = tmp_path / "lc.jsonl"
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=f"memory {i}", metadata={"id": f"mem-{i}"}) for i in range(10)])
    vector, scored = store.as_retriever(search_kwargs={"k": 2}), ScoredRetriever()
    model = FakeListChatModel(responses=["ok"])

    def agent(question: str) -> str:
        docs = vector.invoke(question)            # step 0
        model.invoke(question)                    # ends step 0
        scored.invoke(question)                   # step 1
        lookup.invoke({"name": docs[0].page_content})  # ends step 1
        scored.invoke(question)                   # step 2
        return "done"

    handler = CtwmCallbackHandler(path)
    run_id = uuid.uuid4()
    RunnableLambda(agent).invoke("memory 3", config={"callbacks": [handler], "run_id": run_id})
    expected_vector = [d.id for d in vector.invoke("memory 3")]  # the store sets Document.id
    handler.close()
    ev = _events(path)
    assert {e["run"] for e in ev} == {str(run_id)}  # the outermost run, not each retriever's own run id
    assert [(e["item"], e["step"], e["rank"]) for e in ev] == [
        (expected_vector[0], 0, 1), (expected_vector[1], 0, 2),
        ("fact-0", 1, 1), ("fact-1", 1, 2), ("fact-2", 1, 3),
        ("fact-0", 2, 1), ("fact-1", 2, 2), ("fact-2", 2, 3),
    ]
    assert [e.get("score") for e in ev[2:5]] == pytest.approx([1.0, 0.5, 1 / 3])
    assert "score" not in ev[0]  # the vector store's retriever reports no score
    assert all(e["event"] == "retrieve" for e in ev)


def test_failed_calls_are_forgotten_and_do_not_advance_the_step(tmp_path):
    def boom(_):
        raise RuntimeError("tool failed")

    handler = CtwmCallbackHandler(tmp_path / "lc.jsonl", run="r")
    with pytest.raises(RuntimeError, match="tool failed"):
        RunnableLambda(boom).invoke("x", config={"callbacks": [handler]})
    ScoredRetriever(k=1).invoke("q", config={"callbacks": [handler]})
    handler.close()
    assert handler.open_runs == 0  # the failed run was forgotten
    assert [(e["item"], e["step"]) for e in _events(tmp_path / "lc.jsonl")] == [("fact-0", 0)]


def test_fixed_run_and_id_fallbacks(tmp_path):
    path = tmp_path / "lc.jsonl"
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=f"memory {i}") for i in range(4)], ids=[f"d{i}" for i in range(4)])
    with CtwmCallbackHandler(path, run="episode-9").writer as w:
        handler = CtwmCallbackHandler(w, run="episode-9")
        docs = store.as_retriever(search_kwargs={"k": 4}).invoke("memory 1", config={"callbacks": [handler]})
    ev = _events(path)
    assert [e["item"] for e in ev] == [d.id for d in docs] and {e["run"] for e in ev} == {"episode-9"}
    # no Document.id and no metadata id: a stable hash of the content
    assert item_id(None, {}, "memory 1")[0] == item_id(None, {"other": 1}, "memory 1")[0]
    assert item_id(None, {}, "memory 1")[1] == "content-hash"


def test_trace_reads_in_audit_and_health(tmp_path, run_cli):
    path = tmp_path / "lc.jsonl"
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=f"memory {i}", metadata={"id": f"mem-{i}"}) for i in range(30)])
    retriever = store.as_retriever(search_kwargs={"k": 3})
    handler = CtwmCallbackHandler(path, run="r1")
    for q in range(40):
        retriever.invoke(f"memory {q % 7}", config={"callbacks": [handler]})
    handler.close()
    audit = run_cli(["audit", path, "--seed", 1, "-B", 20, "--json"])
    assert audit.code == 0, audit.err
    assert json.loads(audit.out)["results"][0]["n_items"] == len({e["item"] for e in _events(path)})
    health = run_cli(["health", path, "--json"])
    assert health.code == 0, health.err


def test_langgraph_agent_loop(tmp_path):
    """LangGraph runs LangChain callbacks: a retrieve -> model loop of three turns is one run, three steps."""
    pytest.importorskip("langgraph")
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        question: str
        turn: int

    retriever, model = ScoredRetriever(k=2), FakeListChatModel(responses=["ok"])

    def recall(state: State) -> dict:
        retriever.invoke(f"{state['question']} {state['turn']}")
        return {}

    def think(state: State) -> dict:
        model.invoke(state["question"])
        return {"turn": state["turn"] + 1}

    graph = StateGraph(State)
    graph.add_node("recall", recall)
    graph.add_node("think", think)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "think")
    graph.add_conditional_edges("think", lambda s: END if s["turn"] >= 3 else "recall")
    handler = CtwmCallbackHandler(tmp_path / "lg.jsonl")
    run_id = uuid.uuid4()
    graph.compile().invoke({"question": "q", "turn": 0}, config={"callbacks": [handler], "run_id": run_id})
    handler.close()
    ev = _events(tmp_path / "lg.jsonl")
    assert {e["run"] for e in ev} == {str(run_id)} and handler.open_runs == 0
    assert [(e["item"], e["rank"], e["step"]) for e in ev] == [
        (f"fact-{k}", k + 1, step) for step in range(3) for k in range(2)
    ]
