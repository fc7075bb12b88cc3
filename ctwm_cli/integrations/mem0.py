"""A traced Mem0 ``Memory``: every search, read, add, update and delete also becomes trace rows (needs ``mem0ai``).

    from mem0 import Memory
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = TracedMemory(Memory.from_config(config), "mem0_trace.jsonl")
    memory.add("likes tennis", user_id="alice", infer=False)
    with memory.task("T-2291") as t:
        memory.search("sport?", filters={"user_id": "alice"})
        t.outcome("success")
    memory.close()

``AsyncTracedMemory`` does the same for a ``mem0.AsyncMemory`` (``await memory.search(...)``).

Mem0 records no searches and no owner in its history (see :mod:`ctwm_cli.traces.mem0`); this wrapper
writes them, through :class:`~ctwm_cli.traces.writer.TraceWriter`, and returns exactly what Mem0
returns (an exception from Mem0 propagates and writes nothing). What each row does to a memory's state
is the lifecycle of :mod:`ctwm_cli.health.lifecycle` (``docs/lifecycle.md``). Rows:

=========================  ==================================================================
call                       rows
=========================  ==================================================================
``search``                 one ``search`` row (item ``search:N``, run = the *filter's* scope), then
                           one ``retrieve`` row per result with the memory's *own* scope: rank =
                           position (1 = top), score = Mem0's score
``get`` / ``get_all``      one ``read`` row per memory returned (a key read: use, not a hit)
``add``                    per result: ADD -> ``write``, UPDATE -> ``update``, DELETE -> ``archive``
                           (``infer=True`` lets Mem0's LLM decide; its decision is in the result)
``update``                 ``update`` when the text changes; an expiry-only or metadata-only update
                           is not an edit and writes no ``update``
``delete`` / ``delete_all``  ``archive`` per memory deleted (an expiry that took effect before is
                           written first: the memory was expired, then deleted)
expiry (``expiration_date`` on add or update)
                           ``invalidate`` at the moment Mem0 starts hiding the memory (00:00 UTC
                           of the day after the date, or now if that is past), written once that
                           moment has passed — at the next call or at :meth:`close`; an expiry
                           cleared or moved later *after* it took effect writes ``restore`` (Mem0
                           shows the memory again), before it took effect it just replaces it
=========================  ==================================================================

``run`` is the owner as Mem0's own session-scope key (``agent_id=a1&user_id=alice``, keys sorted):
``ctwm health --group-by user`` reports per user. ``tokens`` (on write, update and retrieve rows) is
the memory text's length in tokens when ``count_tokens`` is given (e.g.
:func:`ctwm_cli.memory.tokens.count_tokens`). ``task`` tags every row (:mod:`.tasks`; ``with
memory.task("T-1") as t: ... t.outcome("success")``). Each wrapped call is one agent step unless
``advance=False`` (then the caller moves ``writer.advance()``).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ..health.lifecycle import ExpiryClock
from ..traces.mem0 import MEM0_EVENTS, expiry_instant, session_scope
from ..traces.writer import TraceWriter
from .tasks import TaskRun, TaskTagger, iso

_UNSET = object()
#: how many memories delete_all lists first, to know what it deletes (Mem0 refuses it without a filter)
DELETE_ALL_LIST = 1_000_000


def _delete_filters(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict:
    return {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}


def _filter_scope(kwargs: dict) -> str | None:
    """The scope a call names: its ``filters`` (and any top-level user_id / agent_id / run_id)."""
    filters = kwargs.get("filters") if isinstance(kwargs.get("filters"), dict) else {}
    named = {k: kwargs[k] for k in ("user_id", "agent_id", "run_id") if isinstance(kwargs.get(k), str)}
    return session_scope({**{k: v for k, v in filters.items() if isinstance(v, str)}, **named})


def _results(out: Any) -> list[dict]:
    res = out.get("results", []) if isinstance(out, dict) else out if isinstance(out, list) else []
    return [r for r in res if isinstance(r, dict) and r.get("id")]


class TracedMemory:
    """``memory`` (a ``mem0.Memory``) with every memory operation logged into ``writer`` (a
    :class:`TraceWriter` or a path); ``task`` tags every row outside a :meth:`task` block; ``clock``
    (seconds since the epoch) stamps every row and judges when an expiry takes effect — Mem0's own
    clock, ``datetime.now``, by default the same time. Other attributes pass through unchanged."""

    def __init__(self, memory: Any, writer: TraceWriter | str | os.PathLike, *,
                 count_tokens: Callable[[str], int] | None = None, advance: bool = True, task: str | None = None,
                 clock: Callable[[], float] = time.time):
        self._memory = memory
        self.clock = clock
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.count_tokens = count_tokens
        self.advance = advance
        self._tags = TaskTagger(self.writer, task, clock)
        self._searches = itertools.count(1)
        self._lock = threading.Lock()
        self._expiry = ExpiryClock()
        self._owner: dict[str, str | None] = {}  # memory id -> session scope (for its expiry rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def task(self, name: str) -> TaskRun:
        """``with memory.task("T-2291") as t: ...; t.outcome("success")``: every row inside is the task's."""
        return self._tags.task(name)

    # ----------------------------------------------------------------------------------------

    def _tokens(self, text: Any) -> int | None:
        return self.count_tokens(text) if self.count_tokens is not None and isinstance(text, str) else None

    def _begin(self) -> None:
        """Before a call: the expiries that took effect before it (a delete after one keeps it)."""
        self._flush_expiries(self.clock())

    def _done(self) -> None:
        self._flush_expiries(self.clock())
        if self.advance:
            self.writer.advance()

    def _flush_expiries(self, now: float) -> None:
        with self._lock:
            due = self._expiry.due(now)
        for t, mid in due:
            self._tags.emit("invalidate", mid, run=self._owner.get(mid), ts=iso(t))

    def _set_expiry(self, memory_id: str, expiration_date: Any, owner: str | None) -> None:
        """The store now hides ``memory_id`` from ``expiration_date`` on (None: never); a memory hidden
        before and shown again by this is restored."""
        now = self.clock()
        when = expiry_instant(expiration_date)
        with self._lock:
            self._owner[memory_id] = owner
            revived = self._expiry.set(memory_id, None if when is None else max(when, now), now)
        if revived:
            self._tags.emit("restore", memory_id, run=owner)

    # ----------------------------------------------------------------------------------------
    # what each call writes (shared by the sync and async wrappers)

    def _log_search(self, out: Any, kwargs: dict) -> None:
        scope = _filter_scope(kwargs)
        self._tags.emit("search", f"search:{next(self._searches)}", run=scope)
        for rank, r in enumerate(_results(out), 1):
            score = r.get("score")
            self._tags.emit("retrieve", r["id"], rank=rank, score=score if isinstance(score, (int, float)) else None,
                            run=session_scope(r) or scope, tokens=self._tokens(r.get("memory")))
        self._done()

    def _log_reads(self, memories: list[dict], scope: str | None) -> None:
        for r in memories:
            self._tags.emit("read", r["id"], run=session_scope(r) or scope)
        self._done()

    def _log_add(self, out: Any, kwargs: dict) -> None:
        owner = session_scope(kwargs)
        for r in _results(out):
            kind = MEM0_EVENTS.get(str(r.get("event") or "").upper())
            if kind is None:
                continue
            tokens = self._tokens(r.get("memory")) if kind != "archive" else None
            if kind == "archive":
                self._forget(r["id"])
            self._tags.emit(kind, r["id"], run=owner, tokens=tokens)
            if kind == "write":
                self._owner[r["id"]] = owner
                if kwargs.get("expiration_date") is not None:
                    self._set_expiry(r["id"], kwargs["expiration_date"], owner)
        self._done()

    def _log_update(self, memory_id: str, before: Any, new_text: str | None, expiration_date: Any) -> None:
        owner = session_scope(before or {})
        if new_text is not None and new_text != (before or {}).get("memory"):
            self._tags.emit("update", memory_id, run=owner, tokens=self._tokens(new_text))
        if expiration_date is not _UNSET:
            self._set_expiry(memory_id, expiration_date, owner)
        self._done()

    @staticmethod
    def _update_call(text, metadata, expiration_date, kwargs) -> dict:
        call = {"text": text, "metadata": metadata, **kwargs}
        if expiration_date is not _UNSET:
            call["expiration_date"] = expiration_date
        return call

    # ----------------------------------------------------------------------------------------
    # wrapped calls

    def search(self, query: str, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = self._memory.search(query, *args, **kwargs)
        self._log_search(out, kwargs)
        return out

    def get(self, memory_id: str, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = self._memory.get(memory_id, *args, **kwargs)
        self._log_reads([out] if isinstance(out, dict) and out.get("id") else [], None)
        return out

    def get_all(self, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = self._memory.get_all(*args, **kwargs)
        self._log_reads(_results(out), _filter_scope(kwargs))
        return out

    def add(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = self._memory.add(messages, *args, **kwargs)
        self._log_add(out, kwargs)
        return out

    def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None,
               expiration_date: Any = _UNSET, **kwargs: Any) -> Any:
        self._begin()
        before = self._memory.get(memory_id)
        out = self._memory.update(memory_id, **self._update_call(text, metadata, expiration_date, kwargs))
        self._log_update(memory_id, before, text if text is not None else kwargs.get("data"), expiration_date)
        return out

    def delete(self, memory_id: str) -> Any:
        self._begin()
        before = self._memory.get(memory_id)
        out = self._memory.delete(memory_id)
        self._archive(memory_id, session_scope(before or {}))
        self._done()
        return out

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> Any:
        self._begin()
        filters = _delete_filters(user_id, agent_id, run_id)
        listed = self._memory.get_all(filters=filters, top_k=DELETE_ALL_LIST, show_expired=True) if filters else {}
        out = self._memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        self._log_delete_all(listed)
        return out

    def _log_delete_all(self, listed: Any) -> None:
        for m in _results(listed):
            self._archive(m["id"], session_scope(m))
        self._done()

    def _forget(self, memory_id: str) -> None:
        with self._lock:
            self._expiry.forget(memory_id)  # a deleted memory never expires (its past expiry is written)

    def _archive(self, memory_id: str, owner: str | None) -> None:
        self._forget(memory_id)
        self._tags.emit("archive", memory_id, run=owner)

    def close(self) -> None:
        """Write the expiries that have taken effect, and close the writer if this wrapper opened it
        (the Mem0 ``Memory`` stays open: it is the caller's; later calls reach it untraced, e.g. a
        ``get_all()`` dump for ``--objects``)."""
        self._flush_expiries(self.clock())
        self._tags.closed = True  # later calls reach the store untraced
        if self._owns:
            self.writer.close()

    def __enter__(self) -> TracedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTracedMemory(TracedMemory):
    """The same for a ``mem0.AsyncMemory``: its coroutines are awaited, then logged as above."""

    async def search(self, query: str, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = await self._memory.search(query, *args, **kwargs)
        self._log_search(out, kwargs)
        return out

    async def get(self, memory_id: str, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = await self._memory.get(memory_id, *args, **kwargs)
        self._log_reads([out] if isinstance(out, dict) and out.get("id") else [], None)
        return out

    async def get_all(self, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = await self._memory.get_all(*args, **kwargs)
        self._log_reads(_results(out), _filter_scope(kwargs))
        return out

    async def add(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self._begin()
        out = await self._memory.add(messages, *args, **kwargs)
        self._log_add(out, kwargs)
        return out

    async def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None,
                     expiration_date: Any = _UNSET, **kwargs: Any) -> Any:
        self._begin()
        before = await self._memory.get(memory_id)
        out = await self._memory.update(memory_id, **self._update_call(text, metadata, expiration_date, kwargs))
        self._log_update(memory_id, before, text if text is not None else kwargs.get("data"), expiration_date)
        return out

    async def delete(self, memory_id: str) -> Any:
        self._begin()
        before = await self._memory.get(memory_id)
        out = await self._memory.delete(memory_id)
        self._archive(memory_id, session_scope(before or {}))
        self._done()
        return out

    async def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None) -> Any:
        self._begin()
        filters = _delete_filters(user_id, agent_id, run_id)
        listed = {}
        if filters:
            listed = await self._memory.get_all(filters=filters, top_k=DELETE_ALL_LIST, show_expired=True)
        out = await self._memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        self._log_delete_all(listed)
        return out
