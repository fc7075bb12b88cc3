"""A scripted multi-tenant workload for a LangGraph store, and the per-tenant truth from the store's own table.

The workload runs in phases: the operations of a phase take well under a second, and phases are ``gap``
seconds apart, longer than every TTL plus a second, so whether an item has expired is never decided by
less than the gap (SQLite's ``CURRENT_TIMESTAMP`` has whole seconds). Before every operation the
store's table is read (``snapshot``): each key's presence and ``expires_at``. The truth is computed
from those snapshots and from the operations' return values alone — never from the wrapper's trace.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

Snapshot = dict[tuple[str, str], float | None]  # (user, key) -> expires_at (seconds) or None (never)


def as_seconds(value) -> float | None:
    if value is None:
        return None
    t = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


@dataclasses.dataclass
class Truth:
    users: tuple[str, ...]
    live: dict = dataclasses.field(default_factory=dict)
    queries: dict = dataclasses.field(default_factory=lambda: defaultdict(int))
    hits: dict = dataclasses.field(default_factory=lambda: defaultdict(int))
    stale_hits: dict = dataclasses.field(default_factory=lambda: defaultdict(int))
    used: dict = dataclasses.field(default_factory=lambda: defaultdict(set))
    revoked: dict = dataclasses.field(default_factory=lambda: defaultdict(set))
    items: dict = dataclasses.field(default_factory=lambda: defaultdict(set))
    phases: int = 0
    ops: int = 0

    def figures(self) -> dict[str, dict[str, int]]:
        out = {}
        for u in self.users:
            live = self.live[u]
            out[u] = {"store_size": len(live), "live": len(live), "queries": self.queries[u], "hits": self.hits[u],
                      "stale_hits": self.stale_hits[u], "never_retrieved": len(live - self.used[u]),
                      "revoked_items": len(self.revoked[u]), "memory_items": len(self.items[u])}
        return out


class Tracker:
    """Keys' states between snapshots: live, expired (past expires_at, still in the table) or absent."""

    def __init__(self, users: tuple[str, ...]) -> None:
        self.truth = Truth(users)
        self.state: dict[tuple[str, str], str] = {}

    def observe(self, snap: Snapshot, now: float) -> None:
        keys = set(snap) | set(self.state)
        for k in keys:
            new = "absent" if k not in snap else ("expired" if snap[k] is not None and snap[k] <= now else "live")
            old = self.state.get(k, "absent")
            if new == "live":
                self.truth.revoked[k[0]].discard(k[1])
                self.truth.items[k[0]].add(k[1])
            elif new == "expired" and old in ("live", "absent"):  # absent: put at a phase's end, expired in the gap
                self.truth.revoked[k[0]].add(k[1])
                self.truth.items[k[0]].add(k[1])
            self.state[k] = new

    def stale(self, user: str, key: str) -> bool:
        return self.state.get((user, key)) != "live"

    def finish(self, snap: Snapshot, now: float) -> Truth:
        self.observe(snap, now)
        for u in self.truth.users:
            self.truth.live[u] = {k for (uu, k), s in self.state.items() if uu == u and s == "live"}
        return self.truth


def run_workload(store, snapshot: Callable[[], Snapshot], *, users: tuple[str, ...], total_ops: int, ttl: float | None,
                 gap: float, seed: int, phase_seconds: float = 1.0, phase_ops: int = 10**9,
                 sweep: Callable[[], object] | None = None) -> Truth:
    """``store``: the TracedStore; ``snapshot``: the inner store's table; ``ttl`` in minutes (None: no TTL).
    A phase ends after ``phase_seconds`` (shorter than any TTL less a second) or ``phase_ops``; phases run until
    ``total_ops`` operations are done, and the store is swept once, after the third phase."""
    rng = np.random.default_rng(seed)
    track = Tracker(users)
    written: dict[str, list[str]] = {u: [] for u in users}
    n = 0

    def before() -> float:
        now = time.time()
        track.observe(snapshot(), now)
        return now

    phase = 0
    while n < total_ops:
        ends, last = time.time() + phase_seconds, n + phase_ops
        while n < min(total_ops, last) and time.time() < ends:
            u = users[int(rng.integers(len(users)))]
            ns = ("memories", u)
            r = rng.random()
            keys = written[u]
            before()
            if r < 0.30 or not keys:  # put a new key, or put an old one again (update, or re-put after delete/expiry)
                key = f"k{int(rng.integers(0, 25))}"
                kind = rng.random()
                if ttl is None or kind < 0.4:
                    store.put(ns, key, {"text": f"{u} {key} v{n}"})  # the default TTL, if any
                elif kind < 0.7:
                    store.put(ns, key, {"text": f"{u} {key} v{n}"}, ttl=None)  # never expires
                else:
                    store.put(ns, key, {"text": f"{u} {key} v{n}"}, ttl=ttl)
                keys.append(key)
            elif r < 0.55:
                out = store.search(ns, limit=int(rng.integers(1, 6)))
                track.truth.queries[u] += 1
                for it in out:
                    track.truth.hits[u] += 1
                    track.truth.stale_hits[u] += track.stale(u, it.key)
                    track.truth.used[u].add(it.key)
            elif r < 0.62:  # one search over every tenant: a query of no tenant's, hits in each
                for it in store.search(("memories",), limit=8):
                    owner = it.namespace[1]
                    track.truth.hits[owner] += 1
                    track.truth.stale_hits[owner] += track.stale(owner, it.key)
                    track.truth.used[owner].add(it.key)
            elif r < 0.85:
                key = keys[int(rng.integers(len(keys)))]
                if store.get(ns, key) is not None:
                    track.truth.used[u].add(key)
            else:
                store.delete(ns, keys[int(rng.integers(len(keys)))])
            n += 1
        if sweep is not None and phase == 2:
            before()
            sweep()
        phase += 1
        if n < total_ops:
            time.sleep(gap)
    store.close()
    truth = track.finish(snapshot(), time.time())
    truth.phases, truth.ops = phase, n
    return truth


def per_tenant_figures(report: dict) -> dict[str, dict[str, int]]:
    """The same figures from ``ctwm health --group-by user --json``."""
    out = {}
    for g in report["groups"]:
        s, r = g["summary"], g["report"]
        out[g["group"]] = {"store_size": s["store_size"], "live": s["live"], "queries": s["queries"], "hits": s["hits"],
                           "stale_hits": s["stale_hits"], "never_retrieved": s["never_retrieved"],
                           "revoked_items": s["revoked_items"], "memory_items": r["failures"]["memory_items"]}
    return out


def differing(got: dict, want: dict) -> list[tuple[str, str, int | None, int]]:
    return [(u, k, got.get(u, {}).get(k), v) for u, figs in want.items() for k, v in figs.items()
            if got.get(u, {}).get(k) != v]
