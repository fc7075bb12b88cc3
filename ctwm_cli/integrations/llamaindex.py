"""LlamaIndex instrumentation event handler: retrieval events become ``retrieve`` events (needs
``llama-index-core``).

    from llama_index.core.instrumentation import get_dispatcher
    handler = CtwmEventHandler.to_file("agent.jsonl", run="session-1")
    get_dispatcher().add_event_handler(handler)

Every ``RetrievalEndEvent`` writes one event per ``NodeWithScore`` (rank = position, score = the
node's score, item = the node id); every finished LLM call (``LLMChatEndEvent``,
``LLMCompletionEndEvent``) advances ``step``.

A LlamaIndex ``Memory``'s ``VectorMemoryBlock`` queries its vector store directly, not through a
retriever, so no ``RetrievalEndEvent`` reaches that handler. :class:`TracedVectorStore` wraps the
block's store (any ``BasePydanticVectorStore``) instead:

    store = TracedVectorStore(inner=SimpleVectorStore(), writer=TraceWriter("memory.jsonl"))
    block = VectorMemoryBlock(vector_store=store, embed_model=embed_model)
    memory = Memory.from_defaults(session_id="alice", memory_blocks=[block])

=======================  ==================================================================
call                     rows
=======================  ==================================================================
``query`` / ``aquery``   one ``search`` row (item ``search:N``, run = the scope of the query's
                         ``scope_key`` filter), then one ``retrieve`` row per id returned: rank =
                         position, score = the store's similarity, run = the node's own scope
``add`` / ``async_add``  ``write`` per node id the store returned (``update`` for an id live before)
``delete`` (ref doc)     ``archive`` per node of that document added through the wrapper
``delete_nodes``         ``archive`` per live node id named (with ``filters``: what the store dropped)
``clear``                ``archive`` per live node
=======================  ==================================================================

A node's scope is ``scope_key=value`` of its metadata (``session_id``: the key ``VectorMemoryBlock``
writes), so ``ctwm health --group-by session_id`` reports per session. Each call is one step.
The store's results are returned unchanged; an exception from it propagates and writes nothing.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import ConfigDict, Field, PrivateAttr

from ..traces.openinference import item_id
from ..traces.scopekeys import scope_text
from ..traces.writer import TraceWriter


class CtwmEventHandler(BaseEventHandler):
    """Write retrievals seen by the LlamaIndex dispatcher into a :class:`TraceWriter`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    writer: TraceWriter
    run: str | None = None
    id_key: str = "id"
    step: int = Field(default=0, description="current agent step (advanced by each finished LLM call)")

    @classmethod
    def to_file(cls, path: str | os.PathLike, *, run: str | None = None, **writer_options: Any) -> CtwmEventHandler:
        return cls(writer=TraceWriter(path, **writer_options), run=run)

    @classmethod
    def class_name(cls) -> str:
        return "CtwmEventHandler"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, RetrievalEndEvent):
            for rank, hit in enumerate(event.nodes, 1):
                node = hit.node
                item, _ = item_id(node.node_id, node.metadata, node.get_content(), id_key=self.id_key)
                if item is not None:
                    self.writer.retrieve(item, rank=rank, score=hit.score, step=self.step, run=self.run)
        elif isinstance(event, (LLMChatEndEvent, LLMCompletionEndEvent)):
            self.step += 1

    def close(self) -> None:
        self.writer.close()


def _filter_scope(filters: MetadataFilters | None, key: str) -> str | None:
    """The scope a query names: an equality filter on ``key`` (nested filters included)."""
    if filters is None:
        return None
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            found = _filter_scope(f, key)
            if found is not None:
                return found
        elif isinstance(f, MetadataFilter) and f.key == key and str(f.operator.value) == "==":
            return scope_text({key: f.value})
    return None


class TracedVectorStore(BasePydanticVectorStore):
    """``inner`` (any ``BasePydanticVectorStore``) with every query, insert and delete logged into
    ``writer``; ``scope_key`` is the metadata key that names a node's owner (``session_id``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    inner: BasePydanticVectorStore
    writer: TraceWriter
    scope_key: str = "session_id"
    stores_text: bool = False
    _searches: Any = PrivateAttr(default_factory=lambda: itertools.count(1))
    _owner: dict = PrivateAttr(default_factory=dict)  # live node id -> its scope
    _docs: dict = PrivateAttr(default_factory=dict)  # ref doc id -> its live node ids
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        inner = data.get("inner")
        if isinstance(inner, BasePydanticVectorStore):
            data.setdefault("stores_text", inner.stores_text)
            data.setdefault("is_embedding_query", inner.is_embedding_query)
        super().__init__(**data)

    @classmethod
    def class_name(cls) -> str:
        return "TracedVectorStore"

    @property
    def client(self) -> Any:
        return self.inner.client

    # ----------------------------------------------------------------------------------------

    def _scope(self, node: BaseNode) -> str | None:
        value = (node.metadata or {}).get(self.scope_key)
        return scope_text({self.scope_key: value}) if value is not None else None

    def _log_add(self, nodes: Sequence[BaseNode], ids: list[str]) -> None:
        by_id = {n.node_id: n for n in nodes}
        for nid in ids:
            node = by_id.get(nid)
            run = self._scope(node) if node is not None else None
            with self._lock:
                known = nid in self._owner
                self._owner[nid] = run
                if node is not None and node.ref_doc_id is not None:
                    self._docs.setdefault(node.ref_doc_id, set()).add(nid)
            self.writer.event("update" if known else "write", nid, run=run)
        self.writer.advance()

    def _archive(self, ids: list[str]) -> None:
        for nid in ids:
            with self._lock:
                if nid not in self._owner:
                    continue
                run = self._owner.pop(nid)
                for members in self._docs.values():
                    members.discard(nid)
            self.writer.event("archive", nid, run=run)
        self.writer.advance()

    def _doc_nodes(self, ref_doc_id: str) -> list[str]:
        with self._lock:
            return sorted(self._docs.pop(ref_doc_id, set()))

    def _log_query(self, query: VectorStoreQuery, out: VectorStoreQueryResult) -> None:
        self.writer.event("search", f"search:{next(self._searches)}", run=_filter_scope(query.filters, self.scope_key))
        ids = out.ids if out.ids is not None else [n.node_id for n in out.nodes or []]
        scores = list(out.similarities or [])
        nodes = {n.node_id: n for n in out.nodes or []}
        for rank, nid in enumerate(ids, 1):
            score = scores[rank - 1] if rank <= len(scores) else None
            with self._lock:
                run = self._owner.get(nid)
            if run is None and nid in nodes:
                run = self._scope(nodes[nid])
            self.writer.event("retrieve", nid, rank=rank, run=run,
                              score=float(score) if isinstance(score, (int, float)) else None)
        self.writer.advance()

    def _live_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._owner)

    def _gone(self, before: list[str]) -> list[str]:
        """Of ``before``, the node ids the inner store no longer has."""
        if not before:
            return []
        present = {n.node_id for n in self.inner.get_nodes(node_ids=before)}
        return [nid for nid in before if nid not in present]

    # ----------------------------------------------------------------------------------------
    # wrapped calls

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        ids = self.inner.add(nodes, **kwargs)
        self._log_add(nodes, ids)
        return ids

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        ids = await self.inner.async_add(nodes, **kwargs)
        self._log_add(nodes, ids)
        return ids

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        self.inner.delete(ref_doc_id, **delete_kwargs)
        self._archive(self._doc_nodes(ref_doc_id))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await self.inner.adelete(ref_doc_id, **delete_kwargs)
        self._archive(self._doc_nodes(ref_doc_id))

    def delete_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None,
                     **delete_kwargs: Any) -> None:
        candidates = self._live_ids() if filters is not None or node_ids is None else list(node_ids)
        self.inner.delete_nodes(node_ids, filters=filters, **delete_kwargs)
        self._archive(self._gone(candidates) if filters is not None else candidates)

    async def adelete_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None,
                            **delete_kwargs: Any) -> None:
        candidates = self._live_ids() if filters is not None or node_ids is None else list(node_ids)
        await self.inner.adelete_nodes(node_ids, filters=filters, **delete_kwargs)
        self._archive(self._gone(candidates) if filters is not None else candidates)

    def clear(self) -> None:
        live = self._live_ids()
        self.inner.clear()
        self._archive(live)

    async def aclear(self) -> None:
        live = self._live_ids()
        await self.inner.aclear()
        self._archive(live)

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        return self.inner.get_nodes(node_ids=node_ids, filters=filters)

    async def aget_nodes(self, node_ids: list[str] | None = None,
                         filters: MetadataFilters | None = None) -> list[BaseNode]:
        return await self.inner.aget_nodes(node_ids=node_ids, filters=filters)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        out = self.inner.query(query, **kwargs)
        self._log_query(query, out)
        return out

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        out = await self.inner.aquery(query, **kwargs)
        self._log_query(query, out)
        return out

    def persist(self, *args: Any, **kwargs: Any) -> None:
        self.inner.persist(*args, **kwargs)

    def close(self) -> None:
        self.writer.close()
