"""Dead weight and per-scope health on hand-built traces whose answers are counted by hand."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.health import health_of_trace


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# Ten memories, steps 0..9. At the end (step 9):
#   m1 written 0, retrieved at 1           -> live, read
#   m2 written 0, never retrieved          -> live, dead (oldest)
#   m3 written 1, archived at 5            -> not live
#   m4 written 1, superseded at 6          -> not live
#   m5 written 2, invalidated at 7         -> not live
#   m6 written 2, valid_until 4 (objects)  -> not live (expired at the end)
#   m7 written 3, valid_until 20           -> live, dead
#   m8 never written, retrieved at 3       -> in the store before the trace began: live, read
#                                             (outside a window of 3)
#   m9 written 4, evicted at 8, written 9  -> live again (written 9), dead
#   m10 written 9, retrieved at 9          -> live, read
ROWS = [
    {"item": "m1", "step": 0, "event": "write", "tokens": 10},
    {"item": "m2", "step": 0, "event": "write", "tokens": 20},
    {"item": "m1", "step": 1, "event": "retrieve"}, {"item": "m3", "step": 1, "event": "write", "tokens": 5},
    {"item": "m4", "step": 1, "event": "write", "tokens": 5}, {"item": "m5", "step": 2, "event": "write", "tokens": 5},
    {"item": "m6", "step": 2, "event": "write", "tokens": 5}, {"item": "m7", "step": 3, "event": "write", "tokens": 30},
    {"item": "m8", "step": 3, "event": "retrieve", "tokens": 40}, {"item": "m9", "step": 4, "event": "write"},
    {"item": "m3", "step": 5, "event": "archive"}, {"item": "m4", "step": 6, "event": "supersede", "by": "m1"},
    {"item": "m5", "step": 7, "event": "invalidate"}, {"item": "m9", "step": 8, "event": "evict"},
    {"item": "m9", "step": 9, "event": "write", "tokens": 50}, {"item": "m10", "step": 9, "event": "write",
                                                                 "tokens": 60},
    {"item": "m10", "step": 9, "event": "retrieve"},
]
OBJECTS = [{"id": "m6", "valid_until": 4}, {"id": "m7", "valid_until": 20}]


@pytest.fixture
def trace(tmp_path):
    return _write(tmp_path / "t.jsonl", ROWS), _write(tmp_path / "o.jsonl", OBJECTS)


def test_live_and_never_retrieved_are_counted_as_defined(trace):
    path, objects = trace
    d = health_of_trace(path, objects=objects).dead_weight
    assert (d.live, d.never_retrieved) == (6, 3)  # live: m1 m2 m7 m8 m9 m10; dead: m2 m7 m9
    assert d.dead_weight_share == pytest.approx(3 / 6)
    assert (d.live_tokens, d.never_retrieved_tokens) == (10 + 20 + 30 + 40 + 50 + 60, 20 + 30 + 50)
    assert d.dead_token_share == pytest.approx(100 / 210)
    assert [e.item for e in d.oldest] == ["m2", "m7", "m9"]  # by write time: m9's age counts from its rewrite
    assert [e.age for e in d.oldest] == [9.0, 6.0, 0.0]


def test_without_the_objects_table_m6_is_still_live(trace):
    d = health_of_trace(trace[0]).dead_weight
    assert (d.live, d.never_retrieved) == (7, 4)


def test_a_window_counts_only_reads_inside_it(trace):
    path, objects = trace
    report = health_of_trace(path, objects=objects, window="3steps")  # steps 6..9: only m10 is read
    d = report.dead_weight
    assert (d.window_start, d.window_end) == (6.0, 9.0)
    assert (d.live, d.never_retrieved) == (6, 5)
    assert report.metrics["dead_weight_share"] == pytest.approx(5 / 6)


def test_token_share_needs_every_live_size(tmp_path):
    path = _write(tmp_path / "t.jsonl", [{"item": "a", "step": 0, "event": "write", "tokens": 3},
                                         {"item": "b", "step": 0, "event": "write"},
                                         {"item": "q", "step": 1, "event": "search"}])  # a search found nothing
    report = health_of_trace(path)
    assert report.dead_weight.dead_token_share is None and report.dead_weight.dead_weight_share == 1.0
    assert any("token share is not computed" in n for n in report.notes)


def test_without_any_logged_read_dead_weight_is_not_available(tmp_path, run_cli):
    """A Mem0 history holds no reads: "never retrieved" would be every memory, and says nothing."""
    path = _write(tmp_path / "t.jsonl", [{"item": "a", "step": 0, "event": "write", "tokens": 3},
                                         {"item": "b", "step": 1, "event": "write", "tokens": 4}])
    report = health_of_trace(path)
    d = report.dead_weight
    assert d.live == 2 and report.metrics["dead_weight_share"] is None and d.dead_token_share is None
    assert d.oldest == () and any("records no reads" in n for n in report.notes)
    res = run_cli(["health", path, "--fail-on", "dead_weight_share>0.5"])
    assert res.code == 1 and "dead_weight_share not available" in res.out + res.err


@pytest.mark.parametrize(("window", "match"), [(0, "positive"), ("-2", "positive"), ("7d", "is a duration"),
                                                ("x", "positive")])
def test_window_errors_name_the_parameter(trace, window, match):
    with pytest.raises(UsageError, match=match) as err:
        health_of_trace(trace[0], window=window)
    assert err.value.params == ("window",)


def test_dead_weight_is_a_fail_on_metric(trace, run_cli):
    path, objects = trace
    res = run_cli(["health", path, "--objects", objects, "--fail-on", "dead_weight_share>0.4"])
    assert res.code == 1
    res = run_cli(["health", path, "--objects", objects, "--fail-on", "dead_weight_share>0.6", "--json"])
    assert res.code == 0 and json.loads(res.out)["metrics"]["dead_weight_share"] == 0.5


# --------------------------------------------------------------------------------------------
# per scope


def _scoped(tmp_path):
    u = {"a": "user_id=alice", "b": "agent_id=planner&user_id=bob"}
    rows = [
        {"item": "a1", "step": 0, "event": "write", "run": u["a"]}, {"item": "a2", "step": 0, "event": "write",
                                                                    "run": u["a"]},
        {"item": "b1", "step": 1, "event": "write", "run": u["b"]},
        {"item": "q1", "step": 2, "event": "search", "run": u["a"]}, {"item": "a1", "step": 2, "event": "retrieve",
                                                                     "run": u["a"]},
        {"item": "q2", "step": 3, "event": "search", "run": u["b"]}, {"item": "b1", "step": 3, "event": "retrieve",
                                                                     "run": u["b"]},
        {"item": "a2", "step": 4, "event": "archive", "run": u["a"]},
        {"item": "x", "step": 5, "event": "write"},  # no owner: in no scope
    ]
    objects = [{"id": "a1", "valid_until": 3, "scope": u["a"]}, {"id": "b1", "valid_until": 1, "scope": u["b"]},
               {"id": "zz", "valid_until": 1, "scope": "user_id=carol"}]
    return _write(tmp_path / "s.jsonl", rows), _write(tmp_path / "o.jsonl", objects)


def test_group_by_user_reads_mem0_session_scopes_and_splits_the_objects(tmp_path):
    path, objects = _scoped(tmp_path)
    report = health_of_trace(path, objects=objects, group_by="user")
    by = {g.group: g for g in report.groups}
    assert list(by) == ["alice", "bob"]
    assert by["alice"].summary.objects == 1 and by["bob"].summary.objects == 1  # carol's object is in neither
    # a1 was hit at 2 (before its valid_until 3): not stale; b1 was hit at 3, past its valid_until 1: stale
    assert by["alice"].report.retrieval.stale_hits == 0 and by["bob"].report.retrieval.stale_hits == 1
    assert by["alice"].summary.expired_items == 1 and by["bob"].summary.expired_items == 1
    assert by["alice"].summary.store_size == 1 and by["alice"].summary.n_rows == 5
    assert by["bob"].report.dead_weight.live == 0  # b1 expired
    assert any("1 rows have no 'user'" in n for n in report.notes)
    # the pooled report holds every object: three expired
    assert report.failures.expired_items == 3


def test_group_by_agent_and_run_and_unknown_column(tmp_path, run_cli):
    path, objects = _scoped(tmp_path)
    assert [g.group for g in health_of_trace(path, group_by="agent").groups] == ["planner"]
    assert len(health_of_trace(path, group_by="run").groups) == 2
    res = run_cli(["health", path, "--group-by", "tenant"])
    assert res.code == 3 and "no column 'tenant' to group by" in res.err
    res = run_cli(["health", path, "--objects", objects, "--group-by", "user", "--fail-on", "stale_hit_share>0.5"])
    assert res.code == 1 and "[user=bob]" in res.out and "Per user" in res.out


def test_run_filters_the_objects_by_scope_too(tmp_path):
    path, objects = _scoped(tmp_path)
    alice = health_of_trace(path, objects=objects, run="user_id=alice")
    assert alice.objects["objects"] == 1 and alice.failures.expired_items == 1
    assert health_of_trace(path, objects=objects).failures.expired_items == 3


def test_object_scopes_as_mappings_split_by_their_entry(tmp_path):
    rows = [{"item": "a", "step": 0, "event": "write", "user": "alice"},
            {"item": "b", "step": 1, "event": "write", "user": "bob"},
            {"item": "b", "step": 2, "event": "retrieve", "user": "bob"}]
    objects = [{"id": "a", "valid_until": 1, "scope": {"user": "alice", "project": "p"}},
               {"id": "old", "valid_until": 1, "scope": {"user": "alice"}},
               {"id": "b", "valid_until": 5, "scope": {"project": "p"}}]  # no user entry: bob's rows mention it
    report = health_of_trace(_write(tmp_path / "t.jsonl", rows), objects=_write(tmp_path / "o.jsonl", objects),
                             group_by="user")
    by = {g.group: g.summary for g in report.groups}
    assert (by["alice"].objects, by["bob"].objects) == (2, 1)
    assert (by["alice"].expired_items, by["bob"].expired_items) == (2, 0)


# --------------------------------------------------------------------------------------------
# --window: a unit is required (issue 42: a bare number meant seconds on every TraceWriter trace)


def _timed(tmp_path):
    """Steps 0..9, one an hour from 2026-03-01 00:00 UTC; m<k> written at step k, m2 and m8 read at 8."""
    rows = []
    for k in range(10):
        ts = f"2026-03-01T{k:02d}:00:00Z"
        rows.append({"item": f"m{k}", "step": k, "event": "write", "ts": ts})
        if k == 8:
            rows += [{"item": "m2", "step": 8, "event": "read", "ts": ts},
                     {"item": "m8", "step": 8, "event": "retrieve", "ts": ts}]
    return _write(tmp_path / "timed.jsonl", rows)


def test_a_bare_window_is_refused_naming_both_readings(tmp_path, run_cli):
    path = _timed(tmp_path)
    with pytest.raises(UsageError, match=r"needs a unit: 500steps \(the last 500 agent steps\) or 500s"):
        health_of_trace(path, window="500")
    res = run_cli(["health", path, "--window", "500"])
    assert res.code == 2 and "--window" in res.err and "500steps" in res.err and "500s" in res.err
    assert len(res.err.strip().splitlines()) == 1


def test_a_steps_window_on_a_timed_trace_counts_steps_and_a_duration_counts_time(tmp_path):
    path = _timed(tmp_path)
    by_steps = health_of_trace(path, window="1steps").dead_weight  # steps 8..9: m2 read, m8 retrieved
    assert (by_steps.window, by_steps.window_unit, by_steps.live, by_steps.never_retrieved) == (1.0, "step", 10, 8)
    assert by_steps.window_start == health_of_trace(path).dead_weight.window_end - 3600  # step 8's ts
    by_time = health_of_trace(path, window="36h").dead_weight  # the whole trace
    assert (by_time.window, by_time.window_unit, by_time.never_retrieved) == (36 * 3600.0, "second", 8)
    assert health_of_trace(path, window="30m").dead_weight.never_retrieved == 10  # 08:30..09:00: no read
