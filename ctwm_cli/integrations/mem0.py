"""A traced Mem0 ``Memory``: every search, add, update and delete also becomes trace rows (needs ``mem0ai``).

    from mem0 import Memory
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = TracedMemory(Memory.from_config(config), "mem0_trace.jsonl")
    memory.add("likes tennis", user_id="alice", infer=False)
    memory.search("sport?", filters={"user_id": "alice"})
    memory.close()

``AsyncTracedMemory`` does the same for a ``mem0.AsyncMemory`` (``await memory.search(...)``).

Mem0 records no searches and no owner in its history (see :mod:`ctwm_cli.traces.mem0`); this wrapper
writes them, through :class:`~ctwm_cli.traces.writer.TraceWriter`, and returns exactly what Mem0
returns (an exception from Mem0 propagates and writes nothing). Rows:

=========================  ==================================================================
call                       rows
=========================  ==================================================================
``search``                 one ``search`` row (item ``search:N``), then one ``retrieve`` row per
                           result: rank = position (1 = top), score = Mem0's score
``add``                    per result: ADD -> ``write``, UPDATE -> ``update``, DELETE -> ``archive``
                           (``infer=True`` lets Mem0's LLM decide; its decision is in the result)
``update``                 ``update`` when the text changes; an expiry-only or metadata-only update
                           is not an edit and writes no ``update``
``delete`` / ``delete_all``  ``archive`` per memory deleted
expiry (``expiration_date`` on add or update)
                           ``invalidate`` at the moment Mem0 starts hiding the memory (00:00 UTC
                           of the day after the date, or now if that is past), written once that
                           moment has passed — at the next call or at :meth:`close` — so a trace
                           never holds an expiry that had not happened by its end; clearing or
                           moving the expiry before then replaces it
=========================  ==================================================================

``run`` is the owner as Mem0's own session-scope key (``agent_id=a1&user_id=alice``, keys sorted):
``ctwm health --group-by user`` reports per user. ``tokens`` (on write, update and retrieve rows) is
the memory text's length in tokens when ``count_tokens`` is given (e.g.
:func:`ctwm_cli.memory.tokens.count_tokens`). Each wrapped call is one agent step unless
``advance=False`` (then the caller moves ``writer.advance()``).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ..traces.mem0 import MEM0_EVENTS, expiry_instant, session_scope
from ..traces.writer import TraceWriter

_UNSET = object()
#: how many memories delete_all lists first, to know what it deletes (Mem0 refuses it without a filter)
DELETE_ALL_LIST = 1_000_000


def _delete_filters(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict:
    return {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TracedMemory:
    """``memory`` (a ``mem0.Memory``) with every memory operation logged into ``writer`` (a
    :class:`TraceWriter` or a path). Other attributes pass through unchanged."""

    def __init__(self, memory: Any, writer: TraceWriter | str | os.PathLike, *,
                 count_tokens: Callable[[str], int] | None = None, advance: bool = True):
        self._memory = memory
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.count_tokens = count_tokens
        self.advance = advance
        self._searches = itertools.count(1)
        self._lock = threading.Lock()
        self._expiries: dict[str, tuple[float, str | None]] = {}  # memory id -> (when it takes effect, owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    # ----------------------------------------------------------------------------------------

    def _tokens(self, text: Any) -> int | None:
        return self.count_tokens(text) if self.count_tokens is not None and isinstance(text, str) else None

    def _done(self) -> None:
        self._flush_expiries(time.time())
        if self.advance:
            self.writer.advance()

    def _flush_expiries(self, now: float) -> None:
        with self._lock:
            due = sorted((t, mid, owner) for mid, (t, owner) in self._expiries.items() if t <= now)
            for _, mid, _ in due:
                del self._expiries[mid]
        for t, mid, owner in due:
            self.writer.event("invalidate", mid, run=owner, ts=_iso(t))

    def _set_expiry(self, memory_id: str, expiration_date: Any, owner: str | None) -> None:
        when = expiry_instant(expiration_date)
        with self._lock:
            if when is None:
                self._expiries.pop(memory_id, None)
            else:
                self._expiries[memory_id] = (max(when, time.time()), owner)

    # ----------------------------------------------------------------------------------------
    # what each call writes (shared by the sync and async wrappers)

    def _log_search(self, out: Any, kwargs: dict) -> None:
        results = out.get("results", []) if isinstance(out, dict) else []
        scope = session_scope(kwargs.get("filters") or {})
        self.writer.event("search", f"search:{next(self._searches)}", run=scope)
        for rank, r in enumerate(results, 1):
            score = r.get("score")
            self.writer.retrieve(r["id"], rank=rank, score=score if isinstance(score, (int, float)) else None,
                                 run=session_scope(r) or scope, tokens=self._tokens(r.get("memory")))
        self._done()

    def _log_add(self, out: Any, kwargs: dict) -> None:
        owner = session_scope(kwargs)
        results = out.get("results", []) if isinstance(out, dict) else []
        for r in results:
            kind = MEM0_EVENTS.get(str(r.get("event") or "").upper())
            if kind is None or not r.get("id"):
                continue
            tokens = self._tokens(r.get("memory")) if kind != "archive" else None
            self.writer.event(kind, r["id"], run=owner, tokens=tokens)
            if kind == "write" and kwargs.get("expiration_date") is not None:
                self._set_expiry(r["id"], kwargs["expiration_date"], owner)
        self._done()

    def _log_update(self, memory_id: str, before: Any, new_text: str | None, expiration_date: Any) -> None:
        owner = session_scope(before or {})
        if new_text is not None and new_text != (before or {}).get("memory"):
            self.writer.update(memory_id, run=owner, tokens=self._tokens(new_text))
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
        out = self._memory.search(query, *args, **kwargs)
        self._log_search(out, kwargs)
        return out

    def add(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        out = self._memory.add(messages, *args, **kwargs)
        self._log_add(out, kwargs)
        return out

    def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None,
               expiration_date: Any = _UNSET, **kwargs: Any) -> Any:
        before = self._memory.get(memory_id)
        out = self._memory.update(memory_id, **self._update_call(text, metadata, expiration_date, kwargs))
        self._log_update(memory_id, before, text if text is not None else kwargs.get("data"), expiration_date)
        return out

    def delete(self, memory_id: str) -> Any:
        before = self._memory.get(memory_id)
        out = self._memory.delete(memory_id)
        self._archive(memory_id, session_scope(before or {}))
        self._done()
        return out

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> Any:
        filters = _delete_filters(user_id, agent_id, run_id)
        listed = self._memory.get_all(filters=filters, top_k=DELETE_ALL_LIST, show_expired=True) if filters else {}
        out = self._memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        self._log_delete_all(listed)
        return out

    def _log_delete_all(self, listed: Any) -> None:
        for m in (listed or {}).get("results", []):
            self._archive(m["id"], session_scope(m))
        self._done()

    def _archive(self, memory_id: str, owner: str | None) -> None:
        with self._lock:
            self._expiries.pop(memory_id, None)  # a deleted memory never expires
        self.writer.archive(memory_id, run=owner)

    def close(self) -> None:
        """Write the expiries that have taken effect, and close the writer if this wrapper opened it
        (the Mem0 ``Memory`` stays open: it is the caller's)."""
        self._flush_expiries(time.time())
        if self._owns:
            self.writer.close()

    def __enter__(self) -> TracedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTracedMemory(TracedMemory):
    """The same for a ``mem0.AsyncMemory``: its coroutines are awaited, then logged as above."""

    async def search(self, query: str, *args: Any, **kwargs: Any) -> Any:
        out = await self._memory.search(query, *args, **kwargs)
        self._log_search(out, kwargs)
        return out

    async def add(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        out = await self._memory.add(messages, *args, **kwargs)
        self._log_add(out, kwargs)
        return out

    async def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None,
                     expiration_date: Any = _UNSET, **kwargs: Any) -> Any:
        before = await self._memory.get(memory_id)
        out = await self._memory.update(memory_id, **self._update_call(text, metadata, expiration_date, kwargs))
        self._log_update(memory_id, before, text if text is not None else kwargs.get("data"), expiration_date)
        return out

    async def delete(self, memory_id: str) -> Any:
        before = await self._memory.get(memory_id)
        out = await self._memory.delete(memory_id)
        self._archive(memory_id, session_scope(before or {}))
        self._done()
        return out

    async def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                         run_id: str | None = None) -> Any:
        filters = _delete_filters(user_id, agent_id, run_id)
        listed = {}
        if filters:
            listed = await self._memory.get_all(filters=filters, top_k=DELETE_ALL_LIST, show_expired=True)
        out = await self._memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        self._log_delete_all(listed)
        return out
