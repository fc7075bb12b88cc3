"""A traced LangGraph store: any ``BaseStore`` whose searches, reads, puts, deletes and TTL expiries become
trace rows (needs ``langgraph``).

    from langgraph.store.memory import InMemoryStore
    from ctwm_cli.integrations.langgraph import TracedStore

    store = TracedStore(InMemoryStore(index={"embed": embeddings, "dims": 384}), "store_trace.jsonl",
                        scope_keys=("kind", "user"))
    graph = builder.compile(store=store)        # or LangMem's tools, or store.put / store.search directly

Every operation goes through ``batch`` / ``abatch`` (``put``, ``search``, ``get``... are built on them),
so wrapping those two sees everything; the inner store's results are returned unchanged. Rows, through
:class:`~ctwm_cli.traces.writer.TraceWriter` (what each does to an item: :mod:`ctwm_cli.health.lifecycle`):

* ``search`` -> one ``search`` row (item ``search:N``, run = the namespace prefix's scope), then one
  ``retrieve`` row per result (rank = position, score = ``SearchItem.score``, run = its own namespace);
* ``get`` -> a ``read`` row when the key was found (a key read: use, not a hit);
* ``put`` -> ``write`` for a key that is not live in the store (absent, deleted, or expired — put again
  before or after a sweep), else ``update``; ``delete`` (a put of ``None``) -> ``archive`` when the key
  was in the store;
* TTL (stores with ``supports_ttl``) -> ``invalidate`` when the item expires, written once that moment
  has passed (at the next operation or :meth:`close`). The TTL is the put's own (``put(..., ttl=None)``
  never expires, whatever ``default_ttl`` says: ``BaseStore.put`` has already applied the default); a
  read refreshes it only as the store itself does (:func:`ttl_rules`: ``SqliteStore`` only with
  ``refresh_on_read`` set in its ``ttl`` config, ``PostgresStore`` whenever the read asks); a refresh
  of a key that had expired but was not swept yet makes it live again (``restore``).

An item is ``namespace/key`` (segments joined by ``/``, a ``/`` or ``%`` inside a segment escaped as
``%2F`` / ``%25``). ``run`` is its namespace: a path (``memories/alice``), or with ``scope_keys`` naming
the segments a scope text (``kind=memories&user=alice``) that ``ctwm health|audit|concentration
--group-by user`` read. Whether a put creates or updates is asked of the inner store (a ``get`` that
does not refresh the TTL) for any key not known to be live. Each batch is one step unless
``advance=False``; ``task`` and :meth:`task` tag rows as in :mod:`.tasks`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Op, PutOp, Result, SearchOp

from ..common.errors import UsageError
from ..health.lifecycle import ExpiryClock
from ..traces.scopekeys import scope_text
from ..traces.writer import TraceWriter
from .tasks import TaskRun, TaskTagger, iso

Key = tuple[tuple[str, ...], str]


def namespace_path(namespace: tuple[str, ...]) -> str:
    return "/".join(s.replace("%", "%25").replace("/", "%2F") for s in namespace)


def item_path(namespace: tuple[str, ...], key: str) -> str:
    return namespace_path((*namespace, key))


@dataclasses.dataclass(frozen=True, slots=True)
class TTLRules:
    """How a store applies TTLs, read from its class and its own ``ttl_config``.

    ``refresh_on_read``: a read that asks (``refresh_ttl``) refreshes the TTL; ``whole_seconds``: a
    refresh counts from the store clock's whole second (SQLite's ``CURRENT_TIMESTAMP``);
    ``whole_minutes``: a refresh uses the TTL rounded to whole minutes (Postgres keeps ``ttl_minutes``
    as INT); ``hides_expired``: expired, unswept items are not returned (``omit_expired``)."""

    refresh_on_read: bool
    whole_seconds: bool = False
    whole_minutes: bool = False
    hides_expired: bool = False

    def refreshed(self, ttl_minutes: float, now: float) -> float:
        """The deadline a refresh at ``now`` sets."""
        minutes = float(round(ttl_minutes)) if self.whole_minutes else ttl_minutes
        return (math.floor(now) if self.whole_seconds else now) + minutes * 60.0


def ttl_rules(store: BaseStore) -> TTLRules:
    """The TTL behaviour of ``store`` (langgraph-checkpoint-sqlite 3.x, -postgres 3.x; any other store:
    ``BaseStore``'s documented one, a read refreshing when it asks)."""
    config = store.ttl_config or {}
    names = {c.__name__ for c in type(store).__mro__}
    if names & {"SqliteStore", "AsyncSqliteStore"}:
        return TTLRules(refresh_on_read=bool(store.ttl_config) and bool(config.get("refresh_on_read", False)),
                        whole_seconds=True)
    if names & {"PostgresStore", "AsyncPostgresStore"}:
        return TTLRules(refresh_on_read=True, whole_minutes=True, hides_expired=bool(config.get("omit_expired")))
    return TTLRules(refresh_on_read=True)


class TracedStore(BaseStore):
    """``store`` with every search, read, put, delete and TTL expiry logged into ``writer`` (a
    :class:`TraceWriter` or a path). ``count_tokens`` (text -> tokens) sets ``tokens`` of write, update
    and retrieve rows from the item's value as JSON; ``scope_keys`` names the namespace's segments
    (``("kind", "user")``) so that ``run`` is a scope text."""

    def __init__(self, store: BaseStore, writer: TraceWriter | str | os.PathLike, *,
                 count_tokens: Callable[[str], int] | None = None, advance: bool = True, task: str | None = None,
                 scope_keys: Sequence[str] | None = None):
        if scope_keys is not None and (isinstance(scope_keys, str) or not all(isinstance(k, str) and k
                                                                               for k in scope_keys)):
            raise UsageError(f"scope_keys must be a sequence of names, got {scope_keys!r}", params=("scope_keys",))
        self.store = store
        self._owns = not isinstance(writer, TraceWriter)
        self.writer = TraceWriter(writer) if self._owns else writer
        self.count_tokens = count_tokens
        self.advance = advance
        self.scope_keys = tuple(scope_keys) if scope_keys is not None else None
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config
        self.rules = ttl_rules(store)
        self._tags = TaskTagger(self.writer, task)
        self._searches = itertools.count(1)
        self._present: set[Key] = set()  # keys in the inner store (live or expired and not swept), as far as seen
        self._ttl: dict[Key, float] = {}  # key -> its TTL in minutes, as put
        self._expiry = ExpiryClock()
        self._lock = threading.Lock()

    def task(self, name: str) -> TaskRun:
        """``with store.task("T-2291") as t: ...; t.outcome("success")``: every row inside is the task's."""
        return self._tags.task(name)

    # ----------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self._flush_expiries(time.time())
        unknown = self._unknown_puts(ops)
        found = self.store.batch([GetOp(ns, key, refresh_ttl=False) for ns, key in unknown]) if unknown else []
        self._learn(unknown, found)
        results = self.store.batch(ops)
        self._log(ops, results)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self._flush_expiries(time.time())
        unknown = self._unknown_puts(ops)
        found = await self.store.abatch([GetOp(ns, key, refresh_ttl=False) for ns, key in unknown]) if unknown else []
        self._learn(unknown, found)
        results = await self.store.abatch(ops)
        self._log(ops, results)
        return results

    def close(self) -> None:
        """Write the TTL expiries that have passed, and close the writer if this wrapper opened it."""
        self._flush_expiries(time.time())
        self._tags.closed = True  # later calls reach the store untraced
        if self._owns:
            self.writer.close()

    # ----------------------------------------------------------------------------------------

    def _scope(self, namespace: tuple[str, ...]) -> str | None:
        if self.scope_keys is None:
            return namespace_path(namespace) or None
        return scope_text(dict(zip(self.scope_keys, namespace, strict=False)))

    def _unknown_puts(self, ops: list[Op]) -> list[Key]:
        """Keys put or deleted whose presence is not known (never seen, or expired: maybe swept since)."""
        with self._lock:
            keys = {(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
            return sorted(k for k in keys if k not in self._present or self._expiry.expired(k))

    def _learn(self, keys: list[Key], found: list[Result]) -> None:
        with self._lock:
            for k, item in zip(keys, found, strict=True):
                if item is None:
                    self._present.discard(k)
                else:
                    self._present.add(k)

    def _tokens(self, value: Any) -> int | None:
        if self.count_tokens is None or value is None:
            return None
        return self.count_tokens(json.dumps(value, sort_keys=True, default=str))

    def _log(self, ops: list[Op], results: list[Result]) -> None:
        now = time.time()
        for op, res in zip(ops, results, strict=True):
            if isinstance(op, SearchOp):
                self._tags.emit("search", f"search:{next(self._searches)}", run=self._scope(op.namespace_prefix))
                for rank, it in enumerate(res or (), 1):
                    score = getattr(it, "score", None)
                    self._tags.emit("retrieve", item_path(it.namespace, it.key), rank=rank,
                                    run=self._scope(it.namespace), tokens=self._tokens(it.value),
                                    score=score if isinstance(score, (int, float)) else None)
                    self._read((tuple(it.namespace), it.key), op.refresh_ttl, now)
            elif isinstance(op, GetOp):
                key = (op.namespace, op.key)
                if res is None:
                    with self._lock:
                        if not self.rules.hides_expired or not self._expiry.expired(key):
                            self._present.discard(key)
                    continue
                self._tags.emit("read", item_path(*key), run=self._scope(op.namespace))
                self._read(key, op.refresh_ttl, now)
            elif isinstance(op, PutOp):
                self._put(op, now)
        self._flush_expiries(time.time())
        if self.advance:
            self.writer.advance()

    def _put(self, op: PutOp, now: float) -> None:
        key = (op.namespace, op.key)
        item, run = item_path(*key), self._scope(op.namespace)
        with self._lock:
            present, expired = key in self._present, self._expiry.expired(key)
            if op.value is None or expired:
                self._expiry.forget(key)  # deleted, or put again as a new item
            if op.value is None:
                self._present.discard(key)
                self._ttl.pop(key, None)
            else:
                self._present.add(key)
                ttl = op.ttl if self.supports_ttl else None
                if ttl is None:
                    self._ttl.pop(key, None)
                else:
                    self._ttl[key] = float(ttl)
                self._expiry.set(key, None if ttl is None else now + float(ttl) * 60.0, now)
        if op.value is None:
            if present:
                self._tags.emit("archive", item, run=run)
            return
        self._tags.emit("update" if present and not expired else "write", item, run=run,
                        tokens=self._tokens(op.value))

    def _read(self, key: Key, refresh: bool, now: float) -> None:
        """A read returned ``key``: refresh its TTL if the store does; an expired key refreshed is live again."""
        with self._lock:
            self._present.add(key)
            ttl = self._ttl.get(key)
            if ttl is None or not (refresh and self.rules.refresh_on_read):
                return
            revived = self._expiry.set(key, self.rules.refreshed(ttl, now), now)
        if revived:
            self._tags.emit("restore", item_path(*key), run=self._scope(key[0]))

    def _flush_expiries(self, now: float) -> None:
        with self._lock:
            due = self._expiry.due(now)
        for deadline, key in due:
            self._tags.emit("invalidate", item_path(*key), run=self._scope(key[0]), ts=iso(deadline))
