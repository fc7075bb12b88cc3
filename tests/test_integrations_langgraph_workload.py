"""Scripted multi-tenant workloads on real LangGraph stores (issue 42): every per-tenant figure of
``ctwm health --group-by user`` equals the one computed from the store's own table and return values.

``InMemoryStore`` (no TTL) and ``SqliteStore`` with a default TTL, per-put TTLs, ``ttl=None``, reads that
refresh, a sweep, deletes and keys put again; ``PostgresStore`` in :mod:`test_integrations_postgres_store`.
"""

from __future__ import annotations

import json

import pytest
from lifecycle_workload import as_seconds, differing, per_tenant_figures, run_workload

pytest.importorskip("langgraph.store.memory")

USERS = ("alice", "bob", "carol", "dave")


def _health(run_cli, trace):
    res = run_cli(["health", trace, "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    return json.loads(res.out)


def test_inmemory_store_workload_matches_the_stores_own_state(tmp_path, run_cli):
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    inner = InMemoryStore()
    store = TracedStore(inner, tmp_path / "t.jsonl", scope_keys=("kind", "user"))

    def snapshot():
        return {(ns[1], key): None for ns, items in inner._data.items() for key in items}

    truth = run_workload(store, snapshot, users=USERS, total_ops=600, ttl=None, gap=0, seed=3, phase_seconds=1e9)
    want = truth.figures()
    assert sum(f["queries"] for f in want.values()) > 100 and sum(f["hits"] for f in want.values()) > 200
    got = per_tenant_figures(_health(run_cli, tmp_path / "t.jsonl"))
    assert differing(got, want) == []


def test_sqlite_store_ttl_workload_matches_the_stores_own_table(tmp_path, run_cli):
    sqlite = pytest.importorskip("langgraph.store.sqlite")

    from ctwm_cli.integrations.langgraph import TracedStore

    # TTLs of 2.5 s (default) and 3 s (per put): a refresh (from SQLite's whole second) sets >= 1.5 s, more
    # than a phase lasts; phases 3.6 s apart, more than any TTL. In memory: no fsync per batch.
    ttl = {"default_ttl": 2.5 / 60, "refresh_on_read": True}
    with sqlite.SqliteStore.from_conn_string(":memory:", ttl=ttl) as inner:
        inner.setup()
        store = TracedStore(inner, tmp_path / "t.jsonl", scope_keys=("kind", "user"))

        def snapshot():  # the store's own table, through its own connection
            rows = inner.conn.execute("SELECT prefix, key, expires_at FROM store").fetchall()
            return {(p.split(".")[1], k): as_seconds(e) for p, k, e in rows}

        truth = run_workload(store, snapshot, users=USERS, total_ops=520, ttl=3 / 60, gap=3.6, seed=11,
                             phase_seconds=0.6, phase_ops=90, sweep=inner.sweep_ttl)
    assert truth.ops == 520 and truth.phases >= 4  # the sweep ran between phases
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    kinds = {r["event"] for r in rows}
    assert {"write", "update", "archive", "invalidate", "restore", "read", "search", "retrieve"} <= kinds
    want = truth.figures()
    assert sum(f["stale_hits"] for f in want.values()) > 0 and sum(f["revoked_items"] for f in want.values()) > 0
    got = per_tenant_figures(_health(run_cli, tmp_path / "t.jsonl"))
    assert differing(got, want) == []
