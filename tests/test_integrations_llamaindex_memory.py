"""LlamaIndex ``Memory`` / ``VectorMemoryBlock`` through :class:`TracedVectorStore` (issue 47): a scripted
workload of a few hundred memory operations for two sessions on a real ``SimpleVectorStore``; every
per-session figure of ``ctwm health --group-by session`` and the counts of ``ctwm audit`` equal the truth
taken from the store's own table (``data.embedding_dict`` / ``metadata_dict``) and its query results."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from lifecycle_workload import differing, per_tenant_figures

pytest.importorskip("llama_index.core")

from llama_index.core.embeddings import MockEmbedding
from llama_index.core.memory import VectorMemoryBlock
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery

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
    assert a["n"] == len(set().union(*used.values()))  # items retrieved at least once
    rows = [json.loads(line) for line in (tmp_path / "li.jsonl").read_text().splitlines()]
    assert sum(r["event"] == "retrieve" for r in rows) == sum(hits.values())



def test_a_vector_memory_block_takes_the_wrapper_as_its_store(tmp_path):
    """``VectorMemoryBlock`` accepts the wrapper only as its inner store would be accepted: it refuses a
    store that keeps no text (``SimpleVectorStore``), and the wrapper says what the inner store says."""
    store = TracedVectorStore(inner=SimpleVectorStore(), writer=TraceWriter(tmp_path / "v.jsonl"))
    assert store.stores_text is False
    with pytest.raises(ValueError, match="must store text"):
        VectorMemoryBlock(vector_store=store, embed_model=MockEmbedding(embed_dim=8))
