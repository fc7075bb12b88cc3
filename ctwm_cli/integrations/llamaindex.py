"""LlamaIndex instrumentation event handler: retrieval events become ``retrieve`` events (needs
``llama-index-core``).

    from llama_index.core.instrumentation import get_dispatcher
    handler = CtwmEventHandler.to_file("agent.jsonl", run="session-1")
    get_dispatcher().add_event_handler(handler)

Every ``RetrievalEndEvent`` writes one event per ``NodeWithScore`` (rank = position, score = the
node's score, item = the node id); every finished LLM call (``LLMChatEndEvent``,
``LLMCompletionEndEvent``) advances ``step``.
"""

from __future__ import annotations

import os
from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from pydantic import ConfigDict, Field

from ..traces.openinference import item_id
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
