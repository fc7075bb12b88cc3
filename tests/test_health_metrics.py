"""Each memory-health metric on hand-built traces whose answer is known, plus an independent check."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.health import health_of_trace
from ctwm_cli.stats.intervals import newcombe_difference

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces" / "telemetry"


def write(tmp_path, rows, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def R(step, event, item="x", **kw):
    return {"item": item, "step": step, "event": event, **kw}


def test_context_usage_and_memory_token_share(tmp_path):
    rows = [
        R(0, "inject", "a", tokens=100), R(0, "inject", "b", tokens=50), R(0, "context", "m", tokens=1000),
        R(0, "context", "m", tokens=1200),  # two model calls: the step's prompt is the larger one
        R(1, "inject", "a", tokens=300), R(1, "context", "m", tokens=2500),
        R(2, "retrieve", "a"),  # no injection, no context row
        R(3, "inject", "c", tokens=30),
    ]
    r = health_of_trace(write(tmp_path, rows), budget=2000)
    c = r.context
    assert c.steps == 4
    assert c.memory_event == "inject"
    assert c.memory_tokens_mean == pytest.approx((150 + 300 + 0 + 30) / 4)
    assert c.memory_tokens_max == 300
    assert c.context_steps == 2 and c.context_tokens_mean == pytest.approx((1200 + 2500) / 2)
    assert c.context_usage == pytest.approx((1200 / 2000 + 2500 / 2000) / 2)
    assert c.memory_token_share == pytest.approx(120 / 2000)
    assert c.memory_share_of_context == pytest.approx((150 + 300) / (1200 + 2500))
    # prompt tokens where known (1200, 2500), else injected memory (0, 30): one of four over 2000
    assert c.steps_over_budget == pytest.approx(0.25)
    no_budget = health_of_trace(write(tmp_path, rows))
    assert no_budget.metrics["context_usage"] is None and any("no budget given" in n for n in no_budget.notes)
    assert not any("--" in n for n in no_budget.notes)  # the library names parameters, never flags (issue 24)


def test_retrieve_tokens_count_when_there_is_no_inject(tmp_path):
    rows = [R(0, "retrieve", "a", tokens=10), R(1, "retrieve", "b", tokens=30)]
    c = health_of_trace(write(tmp_path, rows), budget=100).context
    assert c.memory_event == "retrieve" and c.memory_token_share == pytest.approx(0.2)


@pytest.mark.parametrize(("maintain", "warned"), [(3, True), (2, False)])
def test_maintenance_ratio_and_its_warning(tmp_path, maintain, warned):
    rows = [R(s, "retrieve", "a") for s in range(20)]
    rows += [R(s, "maintain", "a") for s in range(maintain)]
    rows += [R(0, "maintain", "b")]  # a second maintain row in the same step counts once
    r = health_of_trace(write(tmp_path, rows))
    assert r.maintenance.maintenance_steps == maintain
    assert r.maintenance.maintenance_ratio == pytest.approx(maintain / 20)
    assert any("maintenance steps" in w for w in r.warnings) is warned


def test_steps_are_run_step_pairs(tmp_path):
    rows = [{"item": "a", "step": 0, "run": run, "event": "retrieve"} for run in ("r1", "r2")]
    rows.append({"item": "a", "step": 0, "run": "r1", "event": "maintain"})
    assert health_of_trace(write(tmp_path, rows)).maintenance.maintenance_ratio == pytest.approx(0.5)


def test_net_new_entries_per_task(tmp_path):
    rows = [
        R(0, "write", "a", task="t1"), R(0, "write", "b", task="t1"), R(1, "write", "a", task="t1"),  # rewrite: +0
        R(2, "write", "c", task="t2"), R(2, "archive", "a", task="t2"), R(3, "supersede", "b", task="t2", by="c"),
        R(4, "evict", "zz", task="t2"),  # first seen here: it was in the store at the start, now removed
        R(5, "retrieve", "c", task="t3"),
    ]
    r = health_of_trace(write(tmp_path, rows))
    assert r.churn.tasks == 3
    assert r.churn.net_new_per_task == pytest.approx((2 + (1 - 1 - 1 - 1) + 0) / 3)
    assert r.churn.initial_size == 1 and r.churn.final_size == 1
    assert r.churn.writes == 4 and r.churn.removals == 3


def test_retrieval_hit_rate_needs_search_rows(tmp_path):
    rows = [R(0, "search", "q0"), R(0, "retrieve", "a"), R(1, "search", "q1"), R(2, "search", "q2"),
            R(2, "retrieve", "a"), R(2, "retrieve", "b"), R(3, "retrieve", "c")]
    r = health_of_trace(write(tmp_path, rows))
    assert (r.retrieval.queries, r.retrieval.queries_with_hits) == (4, 3)
    assert r.retrieval.retrieval_hit_rate == pytest.approx(0.75)
    without = health_of_trace(write(tmp_path, [x for x in rows if x["event"] != "search"]))
    assert without.metrics["retrieval_hit_rate"] is None


def test_stale_hits_on_superseded_archived_and_expired_items(tmp_path):
    objects = tmp_path / "objects.jsonl"
    objects.write_text("\n".join(json.dumps(o) for o in [
        {"id": "e", "type": "episodic", "created_at": 0, "valid_until": 5},
        {"id": "n", "type": "semantic", "created_at": 6, "supersedes": ["o"]},
        {"id": "o", "type": "semantic", "created_at": 0},
    ]) + "\n")
    rows = [
        R(0, "write", "a"), R(0, "retrieve", "a"),  # written then hit at the same step: fresh
        R(1, "retrieve", "s"), R(1, "supersede", "s", by="a"),  # hit before its supersede row: fresh
        R(2, "retrieve", "s"),  # superseded (event)
        R(3, "archive", "k"), R(3, "retrieve", "k"),  # archived
        R(5, "retrieve", "e"), R(6, "retrieve", "e"),  # valid until 5: fresh at 5, expired at 6
        R(5, "retrieve", "o"), R(6, "retrieve", "o"),  # superseded by n (object created at 6) from 6 on
    ]
    r = health_of_trace(write(tmp_path, rows), objects=str(objects))
    assert r.retrieval.hits == 8 and r.retrieval.stale_hits == 4
    assert r.retrieval.stale_hit_share == pytest.approx(0.5)
    assert r.retrieval.stale_by_reason == {"archived": 1, "expired": 1, "superseded": 2}
    assert r.contradictions.superseded_but_retrieved == 2  # s and o
    assert set(r.contradictions.superseded_but_retrieved_items) == {"s", "o"}


def test_failure_attribution_with_outcome_rows_and_columns(tmp_path):
    objects = tmp_path / "o.jsonl"
    objects.write_text(json.dumps({"id": "exp", "valid_until": 2}) + "\n")
    rows = [
        R(0, "write", "good"), R(0, "write", "bad"), R(0, "write", "exp"),
        R(1, "retrieve", "bad", task="f1"), R(1, "task_outcome", "task:f1", task="f1", outcome="failure"),
        # f2 used exp before it expired
        R(1, "inject", "exp", task="f2"), R(1, "task_outcome", "task:f2", task="f2", outcome="FAILED"),
        R(2, "retrieve", "good", task="s1", outcome="success"),  # outcome as a column
        R(2, "retrieve", "bad", task="s2"), R(2, "task_outcome", "s2", task="s2", outcome="1"),
        R(3, "archive", "bad"),  # bad revoked after f1 and s2 used it
        R(4, "retrieve", "exp", task="f3", outcome="fail"),  # expired at the time of use
        R(4, "retrieve", "good", task="f4"), R(4, "task_outcome", "x", task="f4", outcome="false"),
    ]
    r = health_of_trace(write(tmp_path, rows), objects=str(objects))
    f = r.failures
    assert f.tasks_with_outcome == 6 and f.failed_tasks == 4 and f.succeeded_tasks == 2
    # `bad` is archived, which retires it without revoking it: only f3 (expired when used) counts
    assert f.attributed_tasks == ("f3",) and f.failures_attributed == 1
    assert f.failed_revoked_use == pytest.approx(0.25) and f.succeeded_revoked_use == 0.0
    assert f.failure_attribution == pytest.approx(0.25)
    assert f.revoked_items == 0 and f.archived_items == 1 and f.expired_items == 1 and f.memory_items == 3
    assert f.revoked_share == 0.0


def test_failure_attribution_is_a_difference_with_an_interval(tmp_path):
    # the worked example of docs/guide/health.md: a is superseded after t1 (failed) and t3 (succeeded) used it;
    # b is archived and c evicted, which are not revocations
    rows = [
        R(0, "write", "a"), R(0, "write", "b"), R(0, "write", "c"),
        R(1, "retrieve", "a", task="t1"), R(1, "inject", "a", task="t1", outcome="failure"),
        R(2, "retrieve", "b", task="t2", outcome="failure"),
        R(3, "retrieve", "a", task="t3", outcome="success"),
        R(4, "retrieve", "c", task="t4", outcome="success"), R(5, "retrieve", "c", task="t5", outcome="success"),
        R(6, "write", "d"), R(6, "supersede", "a", by="d"), R(6, "archive", "b"), R(6, "evict", "c"),
    ]
    f = health_of_trace(write(tmp_path, rows)).failures
    assert (f.failed_revoked_use, f.succeeded_revoked_use) == (pytest.approx(1 / 2), pytest.approx(1 / 3))
    assert f.failure_attribution == pytest.approx(1 / 6)
    lo, hi = f.failure_attribution_ci
    assert lo < 1 / 6 < hi and (round(lo, 4), round(hi, 4)) == (-0.4458, 0.6548)
    assert (f.revoked_items, f.archived_items, f.evicted_items, f.memory_items) == (1, 1, 1, 4)
    assert f.revoked_share == pytest.approx(0.25) and "cannot show" in f.scope
    invalidated = [r if r["event"] != "supersede" else R(6, "invalidate", "a") for r in rows]
    g = health_of_trace(write(tmp_path, invalidated, "inv.jsonl")).failures
    assert g.failure_attribution == pytest.approx(1 / 6) and g.revoked_items == 1
    only_failures = health_of_trace(write(tmp_path, rows[:6], "f.jsonl")).failures
    assert only_failures.failure_attribution_ci is None and math.isnan(only_failures.failure_attribution)
    assert only_failures.ci_note == "not formed: no successful tasks (a difference needs both)"


@pytest.mark.parametrize(
    ("k1", "n1", "k2", "n2", "lo", "hi"),
    # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10
    [(56, 70, 48, 80, 0.0524, 0.3339), (9, 10, 3, 10, 0.1705, 0.8090), (6, 7, 2, 7, 0.0582, 0.8062),
     (5, 56, 0, 29, -0.0381, 0.1926)],
)
def test_newcombe_interval_matches_the_published_values(k1, n1, k2, n2, lo, hi):
    got = newcombe_difference(k1, n1, k2, n2)
    assert (round(got[0], 4), round(got[1], 4)) == (lo, hi)


def test_hit_rate_on_used_results_and_its_fallback(tmp_path):
    rows = [
        R(0, "search", "q0"), R(0, "retrieve", "a"), R(0, "retrieve", "b"), R(0, "inject", "a"),  # used
        R(1, "search", "q1"), R(1, "retrieve", "c"),  # returned, not used
        R(2, "search", "q2"),  # nothing found
        R(3, "search", "q3"), R(3, "retrieve", "d"), R(3, "inject", "d"),  # used
    ]
    r = health_of_trace(write(tmp_path, rows)).retrieval
    assert r.hit_definition == "used" and (r.queries, r.queries_with_hits) == (4, 2)
    assert r.retrieval_hit_rate == pytest.approx(0.5)
    assert (r.retrieved_results, r.used_results) == (4, 2) and r.used_result_share == pytest.approx(0.5)
    fallback = health_of_trace(write(tmp_path, [x for x in rows if x["event"] != "inject"], "n.jsonl"))
    assert fallback.retrieval.hit_definition == "returned"
    assert fallback.retrieval.retrieval_hit_rate == pytest.approx(0.75)
    assert any("returned" in n for n in fallback.notes)


def test_unknown_outcome_is_an_input_error(tmp_path):
    rows = [R(0, "task_outcome", "t", task="t", outcome="maybe")]
    with pytest.raises(InputError, match=r"outcome must be success/failure.*'maybe'"):
        health_of_trace(write(tmp_path, rows))


def test_timestamp_objects_need_timestamps_in_the_trace(tmp_path):
    objects = tmp_path / "o.jsonl"
    objects.write_text(json.dumps({"id": "a", "valid_until": "2026-01-01T00:00:00Z"}) + "\n")
    with pytest.raises(InputError, match="needs a ts"):
        health_of_trace(write(tmp_path, [R(0, "retrieve", "a")]), objects=str(objects))
    rows = [{"item": "a", "event": "retrieve", "ts": "2025-12-31T23:00:00Z"},
            {"item": "a", "event": "retrieve", "ts": "2026-01-01T01:00:00+00:00"}]
    r = health_of_trace(write(tmp_path, rows), objects=str(objects))
    assert r.time_unit == "second" and r.retrieval.stale_hits == 1


def test_argument_and_data_errors(tmp_path):
    p = write(tmp_path, [R(0, "retrieve", "a")])
    with pytest.raises(UsageError, match="budget must be a positive integer"):
        health_of_trace(p, budget=0)
    with pytest.raises(InputError, match="no rows of run 'zz'"):
        health_of_trace(p, run="zz")
    counts = write(tmp_path, [{"item": "a", "count": 3}], "c.jsonl")
    with pytest.raises(InputError, match="counts table has no events"):
        health_of_trace(counts)
    bad = tmp_path / "o.jsonl"
    bad.write_text('{"id": "a", "valid_until": 3}\n{"id": "b", "valid_until": "2026-01-01T00:00:00Z"}\n')
    with pytest.raises(InputError, match="mix ISO-8601 timestamps and step numbers"):
        health_of_trace(p, objects=str(bad))
    dup = tmp_path / "d.jsonl"
    dup.write_text('{"id": "a"}\n{"id": "a"}\n')
    with pytest.raises(InputError, match="line 2: duplicate object id 'a'"):
        health_of_trace(p, objects=str(dup))


def test_renamed_task_and_outcome_columns(tmp_path):
    rows = [{"item": "a", "step": 0, "event": "write", "task_id": "t1"},
            {"item": "a", "step": 1, "event": "retrieve", "task_id": "t1", "result": "ok"}]
    r = health_of_trace(write(tmp_path, rows), extra_columns={"task": "task_id", "outcome": "result"})
    assert r.churn.tasks == 1 and r.failures.tasks_with_outcome == 1


# ---------------------------------------------------------------------------------------------
# An independent, quadratic-time implementation of the stale-hit and net-new definitions


def _naive(rows):
    """Per hit: look back over all earlier rows (by step, writes first at equal steps)."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["step"], rows[i]["event"] != "write", i))
    seq = [rows[i] for i in order]
    stale = hits = 0
    for j, r in enumerate(seq):
        if r["event"] == "retrieve":
            hits += 1
            # since the item was last written (a write makes it live and new again): its removals
            mine = [q["event"] for q in seq[:j] if q["item"] == r["item"]]
            last_write = max((k for k, ev in enumerate(mine) if ev == "write"), default=-1)
            removals = [ev for ev in mine[last_write + 1:] if ev in ("supersede", "archive", "evict", "invalidate")]
            stale += bool(removals) and (removals[-1] == "archive" or any(ev in ("supersede", "invalidate")
                                                                           for ev in removals))
    # live size at the end: items whose last membership-changing row is a write, plus initial items
    # (first row not a write) that were never removed
    final = 0
    for it in {r["item"] for r in seq}:
        mine = [q["event"] for q in seq if q["item"] == it]
        alive = mine[0] != "write"
        for ev in mine:
            if ev == "write":
                alive = True
            elif ev in ("supersede", "archive", "evict", "invalidate"):
                alive = False
        final += alive
    return stale, hits, final


@pytest.mark.parametrize("seed", range(8))
def test_stale_hits_and_store_size_match_a_naive_implementation(tmp_path, seed):
    rng = np.random.default_rng(seed)
    kinds = ["write", "retrieve", "retrieve", "retrieve", "supersede", "archive", "evict", "update", "invalidate"]
    rows = [{"item": f"i{rng.integers(0, 12)}", "step": int(rng.integers(0, 40)),
             "event": kinds[rng.integers(0, len(kinds))]} for _ in range(300)]
    stale, hits, final = _naive(rows)
    r = health_of_trace(write(tmp_path, rows))
    assert (r.retrieval.stale_hits, r.retrieval.hits, r.churn.final_size) == (stale, hits, final)
    if hits:
        assert math.isclose(r.retrieval.stale_hit_share, stale / hits)


def test_sample_trace_runs_end_to_end():
    r = health_of_trace(str(SAMPLES / "events.jsonl"), objects=str(SAMPLES / "objects.jsonl"), budget=1500)
    assert r.churn.tasks == 80 and r.success_curve is not None and r.success_curve.tasks == 80
    assert r.contradictions.n_cycles == 1  # the generator plants one supersede cycle
    d = r.to_dict()
    assert len(d["growth_series"]) <= 200 and json.dumps(d)


@pytest.mark.parametrize("seed", range(3))
def test_file_order_does_not_matter_when_times_are_distinct(tmp_path, seed):
    rng = np.random.default_rng(seed)
    kinds = ["write", "retrieve", "inject", "supersede", "archive", "maintain", "search", "context"]
    rows = []
    for s in range(200):
        ev = kinds[rng.integers(0, len(kinds))]
        row = {"item": f"i{rng.integers(0, 15)}", "step": s, "event": ev, "task": f"t{s // 20}",
               "tokens": int(rng.integers(1, 50))}
        if ev == "supersede":
            row["by"] = f"i{rng.integers(0, 15)}"
        rows.append(row)
    rows += [{"item": f"t{k}", "step": 20 * k + 19, "event": "task_outcome", "task": f"t{k}",
              "outcome": ["success", "failure"][k % 2]} for k in range(10)]
    a = health_of_trace(write(tmp_path, rows, "a.jsonl"), budget=100).to_dict()
    shuffled = [rows[i] for i in rng.permutation(len(rows))]
    b = health_of_trace(write(tmp_path, shuffled, "b.jsonl"), budget=100).to_dict()
    a.pop("source"), b.pop("source")
    assert a == b
