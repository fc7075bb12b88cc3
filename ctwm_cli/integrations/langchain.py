"""LangChain callback handler: retriever results become ``retrieve`` events (needs ``langchain-core``).

    handler = CtwmCallbackHandler("agent.jsonl")
    chain.invoke(question, config={"callbacks": [handler]})
    handler.close()

Each retrieved ``Document`` is one event, rank = its position (1 = top), score from the first of
``score_keys`` found in its metadata. The item id is ``Document.id``, else the metadata key
``id_key``, else a hash of the content (as in the OpenInference import). ``run`` is the id of the
outermost LangChain run (the agent or chain invocation), unless ``run=`` fixes it; each finished LLM
or tool call advances that run's ``step``, so retrievals before a model call share its step.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from ..traces.openinference import item_id
from ..traces.writer import TraceWriter


class CtwmCallbackHandler(BaseCallbackHandler):
    """Write a trace from LangChain callbacks into ``writer`` (a :class:`TraceWriter` or a path).

    ``raise_error`` is on: an event that cannot be written (closed writer, full disk) stops the agent
    rather than leaving a trace that silently misses retrievals."""

    raise_error = True

    def __init__(self, writer: TraceWriter | str | os.PathLike, *, run: str | None = None, id_key: str = "id",
                 score_keys: Sequence[str] = ("score", "relevance_score", "similarity")):
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.run = run
        self.id_key = id_key
        self.score_keys = tuple(score_keys)
        self._root: dict[UUID, UUID] = {}
        self._steps: dict[UUID, int] = {}
        self._lock = threading.Lock()

    @property
    def open_runs(self) -> int:
        """LangChain runs started and not yet ended (0 between agent invocations)."""
        return len(self._root)

    def _enter(self, run_id: UUID, parent_run_id: UUID | None) -> UUID:
        with self._lock:
            root = self._root.get(parent_run_id, parent_run_id) if parent_run_id is not None else run_id
            self._root[run_id] = root
            self._steps.setdefault(root, 0)
            return root

    def _leave(self, run_id: UUID, *, advance: bool) -> UUID:
        with self._lock:
            root = self._root.pop(run_id, run_id)
            if advance:
                self._steps[root] = self._steps.get(root, 0) + 1
            return root

    # run starts: remember which outermost run each callback run belongs to
    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._enter(run_id, parent_run_id)

    def on_llm_start(self, serialized, prompts, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._enter(run_id, parent_run_id)

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._enter(run_id, parent_run_id)

    def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._enter(run_id, parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._enter(run_id, parent_run_id)

    # run ends
    def on_retriever_end(self, documents, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        root = self._root.get(run_id) or self._enter(run_id, parent_run_id)
        step = self._steps.get(root, 0)
        run = self.run or str(root)
        for rank, doc in enumerate(documents, 1):
            meta = getattr(doc, "metadata", None) or {}
            item, _ = item_id(getattr(doc, "id", None), meta, getattr(doc, "page_content", None), id_key=self.id_key)
            if item is None:
                continue
            score = next((meta[k] for k in self.score_keys if isinstance(meta.get(k), (int, float))), None)
            self.writer.retrieve(item, rank=rank, score=score, step=step, run=run)
        self._leave(run_id, advance=False)

    def on_llm_end(self, response, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=True)

    def on_tool_end(self, output, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=True)

    def on_chain_end(self, outputs, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=False)

    # failed runs end too (no step: the call did not complete)
    def on_llm_error(self, error, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=False)

    def on_tool_error(self, error, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=False)

    def on_retriever_error(self, error, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=False)

    def on_chain_error(self, error, *, run_id, parent_run_id=None, **kwargs: Any) -> None:
        self._leave(run_id, advance=False)

    def close(self) -> None:
        """Close the writer if this handler opened it."""
        if self._owns:
            self.writer.close()
