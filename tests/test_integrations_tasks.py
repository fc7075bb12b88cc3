"""Tasks and outcomes from the wrappers (issue 42): every row of ``with store.task(...)`` carries the task,
and ``ctwm health`` computes the article's section-8 metrics from the wrapper's trace alone — checked
against the real store's own counts (LangGraph ``InMemoryStore``) and the outcomes the script recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("langgraph.store.memory")

USERS = ("alice", "bob")


def _count(inner, user):
    return len(inner.search(("memories", user), limit=10_000))


def test_section_8_metrics_from_a_wrapper_trace(tmp_path, run_cli):
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.integrations.langgraph import TracedStore

    inner = InMemoryStore()
    store = TracedStore(inner, tmp_path / "t.jsonl", scope_keys=("kind", "user"))
    rng = np.random.default_rng(5)
    net_new, start_size, outcome = {}, {}, {}
    for k in range(24):
        user = USERS[k % 2]
        name = f"T-{k:04d}"
        before = _count(inner, user)
        with store.task(name) as t:
            store.search(("memories", user), limit=3)
            for j in range(int(rng.integers(0, 4))):
                store.put(("memories", user), f"k{k}-{j}", {"text": f"note {k}.{j}"})
            if k % 5 == 4 and before:
                victim = inner.search(("memories", user), limit=1)[0].key
                store.delete(("memories", user), victim)
            ok = bool(rng.random() < 0.6)
            t.outcome("success" if ok else "failure")
        net_new[name], start_size[name], outcome[name] = _count(inner, user) - before, before, ok
    store.put(("memories", "alice"), "untasked", {"text": "outside any task"})
    store.close()
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert all(r.get("task") for r in rows if r["item"] != "memories/alice/untasked")
    res = run_cli(["health", tmp_path / "t.jsonl", "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    d = json.loads(res.out)
    assert d["churn"]["tasks"] == 24
    assert d["churn"]["net_new_per_task"] == pytest.approx(np.mean(list(net_new.values())))
    assert d["failures"]["tasks_with_outcome"] == 24
    assert d["failures"]["succeeded_tasks"] == sum(outcome.values())
    assert d["success_curve"]["success_rate"] == pytest.approx(np.mean(list(outcome.values())))
    for g in d["groups"]:
        mine = [n for i, n in enumerate(sorted(net_new)) if USERS[i % 2] == g["group"]]
        r = g["report"]
        assert r["churn"]["tasks"] == len(mine) == 12
        assert r["churn"]["net_new_per_task"] == pytest.approx(np.mean([net_new[n] for n in mine]))
        assert r["failures"]["tasks_with_outcome"] == 12
        # the store size each of the user's tasks started at, as the store counted it
        bins = r["success_curve"]["bins"]
        assert sum(b["tasks"] for b in bins) == 12
        assert sum(b["volume_mean"] * b["tasks"] for b in bins) == pytest.approx(sum(start_size[n] for n in mine))
        assert sum(b["success_rate"] * b["tasks"] for b in bins) == pytest.approx(sum(outcome[n] for n in mine))


def test_an_outcome_must_be_one_ctwm_reads(tmp_path):
    from langgraph.store.memory import InMemoryStore

    from ctwm_cli.common.errors import UsageError
    from ctwm_cli.integrations.langgraph import TracedStore

    store = TracedStore(InMemoryStore(), tmp_path / "t.jsonl", task="T-1")
    store.put(("n",), "a", {"x": 1})
    with store.task("T-2") as t, pytest.raises(UsageError, match="outcome must be success or failure"):
        t.outcome("maybe")
    with pytest.raises(UsageError, match="task must be a non-empty string"):
        store.task("")
    store.close()
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["task"] for r in rows] == ["T-1"]
