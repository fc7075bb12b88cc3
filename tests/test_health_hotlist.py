"""The hot list, the cold list and "stale ranked above current" on hand-built traces counted by hand."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.health import health_of_trace


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def R(step, event, item, **kw):
    return {"item": item, "step": step, "event": event, **kw}


# old1 is superseded by new1 at step 1 (one subject); x is an unrelated memory; y is never read.
ROWS = [
    R(0, "write", "old1"), R(0, "write", "x"), R(0, "write", "y"), R(0, "write", "z"),
    R(1, "write", "new1"), R(1, "supersede", "old1", by="new1"),
    # q1: the stale old1 above the current new1 -> counted
    R(2, "search", "q1"), R(2, "retrieve", "old1", rank=1), R(2, "retrieve", "new1", rank=2),
    # q2: current above stale -> not counted
    R(3, "search", "q2"), R(3, "retrieve", "new1", rank=1), R(3, "retrieve", "old1", rank=2),
    # q3: stale alone (no current on its subject in the list) -> not counted
    R(4, "search", "q3"), R(4, "retrieve", "old1", rank=1), R(4, "retrieve", "x", rank=2),
    # q4: nothing returned
    R(5, "search", "q4"),
    R(6, "read", "z"), R(7, "read", "z"),
]


def test_stale_ranked_above_current(tmp_path):
    r = health_of_trace(_write(tmp_path / "t.jsonl", ROWS))
    s = r.stale_above_current
    assert (s.queries_with_results, s.queries_with_both, s.queries_stale_above) == (3, 2, 1)
    assert s.stale_above_current_share == pytest.approx(1 / 3)
    assert s.examples == ({"query": "q1", "stale": "old1", "stale_rank": 1, "current": "new1", "current_rank": 2,
                           "reason": "superseded"},)
    assert r.metrics["stale_above_current_share"] == pytest.approx(1 / 3)


def test_subjects_from_the_object_table(tmp_path):
    """Two memories on one subject, the old one past valid_until: an expired memory above the current one."""
    rows = [R(0, "write", "a"), R(0, "write", "b"), R(5, "search", "q"), R(5, "retrieve", "a", rank=1),
            R(5, "retrieve", "b", rank=2)]
    objects = [{"id": "a", "subject": "alice/drink", "valid_until": 3, "content": "drinks coffee"},
               {"id": "b", "subject": "alice/drink", "content": "drinks tea"}]
    r = health_of_trace(_write(tmp_path / "t.jsonl", rows), objects=_write(tmp_path / "o.jsonl", objects))
    assert r.stale_above_current.queries_stale_above == 1 and r.stale_above_current.examples[0]["reason"] == "expired"


def test_hot_and_cold_lists(tmp_path):
    r = health_of_trace(_write(tmp_path / "t.jsonl", ROWS))
    assert [(e.item, e.hits, e.reads, e.state) for e in r.hot.hot] == [
        ("old1", 3, 0, "superseded"), ("new1", 2, 0, "live"), ("x", 1, 0, "live")]
    assert [e.item for e in r.hot.cold] == ["y"]  # z is read by key: used


def test_hot_list_carries_the_objects_text_and_the_table_makes_it_inert(tmp_path, run_cli):
    rows = [R(0, "write", "m1"), R(1, "search", "q"), R(1, "retrieve", "m1", rank=1)]
    objects = [{"id": "m1", "content": "likes tea\x1b[2J\x1b]8;;http://x\x07click\u202e"}]
    path, objs = _write(tmp_path / "t.jsonl", rows), _write(tmp_path / "o.jsonl", objects)
    res = run_cli(["health", path, "--objects", objs, "--json"])
    assert res.code == 0, res.err
    hot = json.loads(res.out)["hot"]["hot"]
    assert hot == [{"item": "m1", "hits": 1, "reads": 0, "state": "live", "text": objects[0]["content"]}]
    res = run_cli(["health", path, "--objects", objs])
    assert res.code == 0 and "Hot memories" in res.out and "likes tea" in res.out
    assert "\x1b" not in res.out and "\x07" not in res.out and "\u202e" not in res.out


def test_stale_above_current_is_a_fail_on_metric_per_scope(tmp_path, run_cli):
    rows = [{**r, "run": "user_id=alice"} for r in ROWS]
    path = _write(tmp_path / "t.jsonl", rows)
    res = run_cli(["health", path, "--group-by", "user", "--fail-on", "stale_above_current_share>0.2", "--json"])
    assert res.code == 1
    d = json.loads(res.out)
    assert d["groups"][0]["summary"]["stale_above_current_share"] == pytest.approx(1 / 3)
    assert run_cli(["health", path, "--fail-on", "stale_above_current_share>0.5"]).code == 0
