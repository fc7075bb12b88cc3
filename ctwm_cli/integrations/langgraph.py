"""A traced LangGraph store: any ``BaseStore`` whose searches, puts, deletes and TTL expiries become trace
rows (needs ``langgraph``).

    from langgraph.store.memory import InMemoryStore
    from ctwm_cli.integrations.langgraph import TracedStore

    store = TracedStore(InMemoryStore(index={"embed": embeddings, "dims": 384}), "store_trace.jsonl")
    graph = builder.compile(store=store)        # or LangMem's tools, or store.put / store.search directly

Every operation goes through ``batch`` / ``abatch`` (``put``, ``search``, ``get``... are built on them),
so wrapping those two sees everything; the inner store's results are returned unchanged. Rows, through
:class:`~ctwm_cli.traces.writer.TraceWriter`:

* ``search`` -> one ``search`` row (item ``search:N``, run = the namespace prefix), then one
  ``retrieve`` row per result (rank = position, score = ``SearchItem.score``);
* ``put`` -> ``write`` for a key not in the store before, else ``update``; ``delete`` (a put of
  ``None``) -> ``archive`` when the key existed;
* TTL (stores with ``supports_ttl``) -> ``invalidate`` at the moment the item expires: ``ttl`` minutes
  after its last put (or read, when reads refresh it), written once that moment has passed (at the
  next operation or :meth:`close`).

An item is ``namespace/key`` (segments joined by ``/``, a ``/`` or ``%`` inside a segment escaped as
``%2F`` / ``%25``) and ``run`` is its namespace: ``ctwm health --group-by run`` and ``ctwm audit
--group-by run`` report per namespace. ``get`` and ``list_namespaces`` write nothing. Whether a put
creates or updates is asked of the inner store (a ``get`` that does not refresh the TTL) the first time
a key is seen. Each batch is one step unless ``advance=False``.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Op, PutOp, Result, SearchOp

from ..traces.writer import TraceWriter


def namespace_path(namespace: tuple[str, ...]) -> str:
    return "/".join(s.replace("%", "%25").replace("/", "%2F") for s in namespace)


def item_path(namespace: tuple[str, ...], key: str) -> str:
    return namespace_path((*namespace, key))


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TracedStore(BaseStore):
    """``store`` with every search, put, delete and TTL expiry logged into ``writer`` (a
    :class:`TraceWriter` or a path). ``count_tokens`` (text -> tokens) sets ``tokens`` of write, update
    and retrieve rows from the item's value as JSON."""

    def __init__(self, store: BaseStore, writer: TraceWriter | str | os.PathLike, *,
                 count_tokens: Callable[[str], int] | None = None, advance: bool = True):
        self.store = store
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.count_tokens = count_tokens
        self.advance = advance
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config
        self._searches = itertools.count(1)
        self._known: set[tuple[tuple[str, ...], str]] = set()  # keys that exist in the inner store
        self._ttl: dict[tuple[tuple[str, ...], str], tuple[float, float]] = {}  # key -> (ttl seconds, deadline)
        self._lock = threading.Lock()

    # ----------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        before = self._existing(ops, self.store.batch)
        results = self.store.batch(ops)
        self._log(ops, results, before)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        unknown = self._unknown_puts(ops)
        found = await self.store.abatch([GetOp(ns, key, refresh_ttl=False) for ns, key in unknown]) if unknown else []
        before = self._merge_existing(unknown, found)
        results = await self.store.abatch(ops)
        self._log(ops, results, before)
        return results

    def close(self) -> None:
        """Write the TTL expiries that have passed, and close the writer if this wrapper opened it."""
        self._flush_expiries(time.time())
        if self._owns:
            self.writer.close()

    # ----------------------------------------------------------------------------------------

    def _unknown_puts(self, ops: list[Op]) -> list[tuple[tuple[str, ...], str]]:
        with self._lock:
            keys = {(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
            return sorted(k for k in keys if k not in self._known)

    def _merge_existing(self, unknown, found) -> set:
        with self._lock:
            self._known.update(k for k, item in zip(unknown, found, strict=True) if item is not None)
            return set(self._known)

    def _existing(self, ops: list[Op], run_batch) -> set:
        unknown = self._unknown_puts(ops)
        found = run_batch([GetOp(ns, key, refresh_ttl=False) for ns, key in unknown]) if unknown else []
        return self._merge_existing(unknown, found)

    def _tokens(self, value: Any) -> int | None:
        if self.count_tokens is None or value is None:
            return None
        return self.count_tokens(json.dumps(value, sort_keys=True, default=str))

    def _log(self, ops: list[Op], results: list[Result], existed: set) -> None:
        now = time.time()
        self._flush_expiries(now)
        for op, res in zip(ops, results, strict=True):
            if isinstance(op, SearchOp):
                scope = namespace_path(op.namespace_prefix)
                self.writer.event("search", f"search:{next(self._searches)}", run=scope or None)
                for rank, it in enumerate(res or (), 1):
                    score = getattr(it, "score", None)
                    self.writer.retrieve(item_path(it.namespace, it.key), rank=rank, run=namespace_path(it.namespace),
                                         score=score if isinstance(score, (int, float)) else None,
                                         tokens=self._tokens(it.value))
                    if op.refresh_ttl:
                        self._touch((tuple(it.namespace), it.key), now)
            elif isinstance(op, GetOp):
                if res is not None and op.refresh_ttl:
                    self._touch((op.namespace, op.key), now)
            elif isinstance(op, PutOp):
                self._put(op, existed, now)
        if self.advance:
            self.writer.advance()

    def _put(self, op: PutOp, existed: set, now: float) -> None:
        key = (op.namespace, op.key)
        item, run = item_path(*key), namespace_path(op.namespace)
        with self._lock:
            was = key in existed and key in self._known
            if op.value is None:
                self._known.discard(key)
                self._ttl.pop(key, None)
            else:
                self._known.add(key)
                existed.add(key)  # a second put of the key in this batch is an update
        if op.value is None:
            if was:
                self.writer.archive(item, run=run)
            return
        self.writer.event("update" if was else "write", item, run=run, tokens=self._tokens(op.value))
        ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
        with self._lock:
            if self.supports_ttl and ttl is not None:
                self._ttl[key] = (float(ttl) * 60.0, now + float(ttl) * 60.0)
            else:
                self._ttl.pop(key, None)

    def _touch(self, key, now: float) -> None:
        if not (self.ttl_config or {}).get("refresh_on_read", True):
            return
        with self._lock:
            if key in self._ttl:
                seconds, _ = self._ttl[key]
                self._ttl[key] = (seconds, now + seconds)

    def _flush_expiries(self, now: float) -> None:
        with self._lock:
            due = sorted((deadline, key) for key, (_, deadline) in self._ttl.items() if deadline <= now)
            for _, key in due:
                del self._ttl[key]
                self._known.discard(key)
        for deadline, key in due:
            self.writer.event("invalidate", item_path(*key), run=namespace_path(key[0]), ts=_iso(deadline))
