"""CrewAI memory as a ctwm trace: an event-bus listener plus a traced storage backend (needs ``crewai``).

    from crewai import Memory
    from crewai.memory.storage.lancedb_storage import LanceDBStorage
    from ctwm_cli.integrations.crewai import CrewAITrace

    trace = CrewAITrace("crew_trace.jsonl", scope_keys=("user",))          # registers itself on the bus
    memory = Memory(storage=trace.storage(LanceDBStorage(path="mem")), embedder=embed, llm=llm)
    crew = Crew(agents=[...], tasks=[...], memory=memory)                  # behaviour unchanged
    crew.kickoff()
    trace.close()

What CrewAI publishes and what it does not: ``MemoryQueryCompletedEvent`` carries the query's results
(``MemoryMatch``: record id, scope, composite score, in rank order) but not the scope searched;
``MemorySaveCompletedEvent`` carries the saved text but no record id; ``Memory.forget`` / ``update``
and the encoding flow's consolidation (which may update or delete records) publish nothing. So the
listener takes reads from the bus, and :meth:`CrewAITrace.storage` wraps the memory's storage backend
(any ``StorageBackend``: LanceDB, Qdrant Edge, a user's own) to see every save, update, delete and
search the store itself performs; the wrapper publishes them on the same bus, so every row is ordered by
when CrewAI created its event (then ``emission_sequence``, which CrewAI restarts at each kickoff). CrewAI
runs synchronous handlers in a thread pool, so rows are written in that order when
:meth:`CrewAITrace.flush` or :meth:`CrewAITrace.close` is called. The crew's own save of a task's result
comes after ``TaskCompletedEvent`` and so carries no task.

=================================  ================================================================
what happened                      rows
=================================  ================================================================
``recall`` (query completed)       one ``search`` row (item ``search:N``, run = the scope the store
                                   searched), one ``retrieve`` row per ``MemoryMatch`` (rank =
                                   position, score = CrewAI's composite score, run = record's scope)
store ``save``                     ``write`` per record (``update`` for an id already in the store)
store ``update``                   ``update``
store ``delete`` / ``reset``       ``archive`` per record the store no longer has; ``supersede``
                                   when the delete happens inside a save (``remember``: its
                                   consolidation judged the record outdated or contradicted by the
                                   new memory, so the record is *revoked*, not merely retired)
task started / completed / failed  rows in between carry the task; ``task_outcome`` success / failure
                                   per scope the task touched
=================================  ================================================================

``run`` is a record's scope path (``/alice/notes``), or with ``scope_keys`` naming the path's segments
a scope text (``user=alice``) that ``ctwm health --group-by user`` reads. Outside a crew, ``with
trace.task("T-1") as t: ...; t.outcome("success")`` tags rows the same way. Each store operation and
each query is one step.

Failure attribution (``ctwm health``) needs revoked records: the ``supersede`` rows of consolidation
deletes. A failed task that read a record a later ``remember`` consolidated away is attributed to it.
"Inside a save" is between CrewAI's ``MemorySaveStartedEvent`` and its completion or failure; a
``remember_many`` saves in the background, so a ``forget`` made while one is still running is taken
for a consolidation too. A consolidation *update* keeps the record's id live with new content and
stays an ``update``.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from typing import Any, Literal

from crewai.events.base_event_listener import BaseEventListener
from crewai.events.base_events import BaseEvent
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.memory_events import (
    MemoryQueryCompletedEvent,
    MemoryQueryStartedEvent,
    MemorySaveCompletedEvent,
    MemorySaveFailedEvent,
    MemorySaveStartedEvent,
)
from crewai.events.types.task_events import TaskCompletedEvent, TaskFailedEvent, TaskStartedEvent
from pydantic import Field

from ..common.errors import UsageError
from ..health.accumulators import FAILURE, SUCCESS
from ..traces.scopekeys import scope_text
from ..traces.writer import TraceWriter
from .tasks import iso

#: how many records a delete or reset lists first, to know which ones it removed
LIST_LIMIT = 1_000_000


class MemoryStoreEvent(BaseEvent):
    """What the traced storage backend did: ``op`` is search / write / update / archive; ``records``
    the (id, scope) pairs; ``scope`` the prefix a search looked in."""

    type: Literal["ctwm_memory_store"] = "ctwm_memory_store"
    op: str
    records: list[tuple[str, str]] = Field(default_factory=list)
    scope: str | None = None


class TaskMarkEvent(BaseEvent):
    """A task begun, ended or given an outcome through :meth:`CrewAITrace.task` (outside a crew)."""

    type: Literal["ctwm_task_mark"] = "ctwm_task_mark"
    name: str
    phase: Literal["start", "outcome", "end"]
    outcome: str | None = None


def _task_name(event: BaseEvent) -> str | None:
    task = getattr(event, "task", None)
    for value in (getattr(task, "name", None), event.task_name, event.task_id, getattr(task, "id", None)):
        if value:
            return str(value)
    return None


class TracedStorage:
    """A CrewAI ``StorageBackend`` whose saves, updates, deletes and searches are published for
    :class:`CrewAITrace`; every call returns what ``inner`` returns. Other attributes pass through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _emit(self, op: str, records: list[tuple[str, str]] = (), scope: str | None = None) -> None:
        crewai_event_bus.emit(self, MemoryStoreEvent(op=op, records=list(records), scope=scope))

    def save(self, records: list[Any]) -> None:
        known = {r.id for r in records if self.inner.get_record(r.id) is not None}
        out = self.inner.save(records)
        for r in records:
            self._emit("update" if r.id in known else "write", [(r.id, r.scope)])
        return out

    def update(self, record: Any) -> None:
        out = self.inner.update(record)
        self._emit("update", [(record.id, record.scope)])
        return out

    def search(self, query_embedding: list[float], scope_prefix: str | None = None, **kwargs: Any) -> Any:
        out = self.inner.search(query_embedding, scope_prefix=scope_prefix, **kwargs)
        self._emit("search", scope=scope_prefix)
        return out

    def _listed(self, scope_prefix: str | None, record_ids: Sequence[str] | None) -> list[tuple[str, str]]:
        if record_ids is not None:
            found = [self.inner.get_record(i) for i in record_ids]
            return [(r.id, r.scope) for r in found if r is not None]
        return [(r.id, r.scope) for r in self.inner.list_records(scope_prefix=scope_prefix, limit=LIST_LIMIT)]

    def _gone(self, before: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(i, s) for i, s in before if self.inner.get_record(i) is None]

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, **kwargs: Any) -> int:
        before = self._listed(scope_prefix, record_ids)
        out = self.inner.delete(scope_prefix=scope_prefix, categories=categories, record_ids=record_ids, **kwargs)
        self._emit("archive", self._gone(before))
        return out

    def reset(self, scope_prefix: str | None = None) -> None:
        before = self._listed(scope_prefix, None)
        out = self.inner.reset(scope_prefix=scope_prefix)
        self._emit("archive", self._gone(before))
        return out

    async def asave(self, records: list[Any]) -> None:
        return self.save(records)

    async def asearch(self, query_embedding: list[float], scope_prefix: str | None = None, **kwargs: Any) -> Any:
        return self.search(query_embedding, scope_prefix=scope_prefix, **kwargs)

    async def adelete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
                      record_ids: list[str] | None = None, **kwargs: Any) -> int:
        return self.delete(scope_prefix=scope_prefix, categories=categories, record_ids=record_ids, **kwargs)


class TaskMark:
    """``with trace.task("T-1") as t: ...; t.outcome("success")`` for memory used outside a crew."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise UsageError(f"task must be a non-empty string, got {name!r}", params=("task",))
        self.name = name

    def outcome(self, value: Any) -> None:
        text = str(value).strip().lower() if isinstance(value, (str, bool, int)) else None
        if text not in SUCCESS | FAILURE:
            raise UsageError(f"outcome must be success or failure (or pass/fail, ok/error, true/false, 1/0), got "
                             f"{value!r}", params=("outcome",))
        crewai_event_bus.emit(self, TaskMarkEvent(name=self.name, phase="outcome", outcome=text))

    def __enter__(self) -> TaskMark:
        crewai_event_bus.emit(self, TaskMarkEvent(name=self.name, phase="start"))
        return self

    def __exit__(self, *exc: object) -> None:
        crewai_event_bus.emit(self, TaskMarkEvent(name=self.name, phase="end"))


class CrewAITrace(BaseEventListener):
    """Listens on CrewAI's event bus (registered on construction) and writes memory reads, the traced
    store's writes and the crew's tasks and outcomes into ``writer`` (a :class:`TraceWriter` or a path)."""

    EVENTS = (MemoryQueryStartedEvent, MemoryQueryCompletedEvent, MemoryStoreEvent, TaskStartedEvent,
              TaskCompletedEvent, TaskFailedEvent, TaskMarkEvent, MemorySaveStartedEvent,
              MemorySaveCompletedEvent, MemorySaveFailedEvent)

    def __init__(self, writer: TraceWriter | str | os.PathLike, *, scope_keys: Sequence[str] | None = None) -> None:
        if scope_keys is not None and (isinstance(scope_keys, str) or not all(isinstance(k, str) and k
                                                                               for k in scope_keys)):
            raise UsageError(f"scope_keys must be a sequence of names, got {scope_keys!r}", params=("scope_keys",))
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.scope_keys = tuple(scope_keys) if scope_keys is not None else None
        self._lock = threading.Lock()
        self._pending: list[tuple[int, int, BaseEvent]] = []
        self._arrival = itertools.count()
        self._searches = itertools.count(1)
        self._task: str | None = None
        self._touched: dict[str | None, None] = {}
        self._query_open = False
        self._query_scope: str | None = None
        self._saves_open = 0  # saves started and not yet completed or failed
        self._handlers: list[tuple[type, Any]] = []
        self._ts: str | None = None
        self.closed = False
        super().__init__()

    def setup_listeners(self, crewai_event_bus: Any) -> None:
        for kind in self.EVENTS:
            def handler(source: Any, event: BaseEvent) -> None:
                self._receive(event)
            crewai_event_bus.on(kind)(handler)
            self._handlers.append((kind, handler))

    def storage(self, backend: Any) -> TracedStorage:
        """``backend`` (a CrewAI ``StorageBackend``) traced: pass it as ``Memory(storage=...)``."""
        return TracedStorage(backend)

    def task(self, name: str) -> TaskMark:
        return TaskMark(name)

    # ----------------------------------------------------------------------------------------

    def _receive(self, event: BaseEvent) -> None:
        with self._lock:
            if not self.closed:
                seq = event.emission_sequence if event.emission_sequence is not None else -1
                self._pending.append((seq, next(self._arrival), event))

    def scope(self, path: str | None) -> str | None:
        """A CrewAI scope path as the trace's ``run``."""
        if path is None or path in ("", "/"):
            return None
        if self.scope_keys is None:
            return path
        parts = [p for p in path.split("/") if p]
        return scope_text(dict(zip(self.scope_keys, parts, strict=False)))

    def _emit(self, kind: str, item: str, **fields: Any) -> None:
        if self._task is not None:
            self._touched.setdefault(fields.get("run"))
        self.writer.event(kind, item, task=self._task, ts=self._ts, **fields)

    def _begin(self, name: str | None) -> None:
        self._task, self._touched = name, {}

    def _outcome(self, value: str) -> None:
        if self._task is None:
            return
        for run in list(self._touched) or [None]:
            self.writer.event("task_outcome", self._task, run=run, task=self._task, outcome=value, ts=self._ts)

    def _store_op(self, event: MemoryStoreEvent) -> None:
        if event.op == "search":
            if self._query_open and self._query_scope is None:
                self._query_scope = event.scope or "/"
            return
        op = "supersede" if event.op == "archive" and self._saves_open else event.op
        for rid, scope in event.records:
            self._emit(op, rid, run=self.scope(scope))
        self.writer.advance()

    def _query_done(self, event: MemoryQueryCompletedEvent) -> None:
        self._emit("search", f"search:{next(self._searches)}", run=self.scope(self._query_scope))
        for rank, match in enumerate(event.results or (), 1):
            record = getattr(match, "record", None)
            if record is None:
                continue
            score = getattr(match, "score", None)
            self._emit("retrieve", record.id, rank=rank, run=self.scope(record.scope),
                       score=float(score) if isinstance(score, (int, float)) else None)
        self._query_open, self._query_scope = False, None
        self.writer.advance()

    def _write(self, event: BaseEvent) -> None:
        self._ts = iso(event.timestamp.timestamp())  # when CrewAI emitted it, not when the handler ran
        if isinstance(event, MemoryQueryStartedEvent):
            self._query_open, self._query_scope = True, None
        elif isinstance(event, MemorySaveStartedEvent):
            self._saves_open += 1
        elif isinstance(event, (MemorySaveCompletedEvent, MemorySaveFailedEvent)):
            self._saves_open = max(self._saves_open - 1, 0)
        elif isinstance(event, MemoryStoreEvent):
            self._store_op(event)
        elif isinstance(event, MemoryQueryCompletedEvent):
            self._query_done(event)
        elif isinstance(event, TaskStartedEvent):
            self._begin(_task_name(event))
        elif isinstance(event, (TaskCompletedEvent, TaskFailedEvent)):
            self._task = self._task or _task_name(event)
            self._outcome("success" if isinstance(event, TaskCompletedEvent) else "failure")
            self._begin(None)
        elif isinstance(event, TaskMarkEvent):
            if event.phase == "start":
                self._begin(event.name)
            elif event.phase == "outcome" and event.outcome is not None:
                self._outcome(event.outcome)
            else:
                self._begin(None)

    def flush(self) -> None:
        """Wait for the bus's handlers, then write every event received, in emission order."""
        crewai_event_bus.flush()
        with self._lock:
            # by creation time first: CrewAI restarts emission_sequence at every kickoff
            batch, self._pending = sorted(self._pending, key=lambda p: (p[2].timestamp, p[0], p[1])), []
        for _, _, event in batch:
            self._write(event)
        self.writer.flush()

    def close(self) -> None:
        """Write what is pending, stop listening, and close the writer if this listener opened it."""
        if self.closed:
            return
        self.flush()
        with self._lock:
            self.closed = True
        for kind, handler in self._handlers:
            crewai_event_bus.off(kind, handler)
        if self._owns:
            self.writer.close()

    def __enter__(self) -> CrewAITrace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
