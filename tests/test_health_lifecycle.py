"""The lifecycle model (health/lifecycle.py): one test per transition of docs/lifecycle.md, on the model and
through ``ctwm health`` on hand-built traces whose answers are counted by hand."""

from __future__ import annotations

import json
import math

import pytest

from ctwm_cli.health import health_of_trace
from ctwm_cli.health.lifecycle import DELETED, EXPIRED, LIVE, SUPERSEDED, ExpiryClock, Lifecycle


def _run(rows):
    life = Lifecycle()
    deltas = [life.apply(item, event, float(t)) for t, item, event in rows]
    return life, deltas


# --------------------------------------------------------------------------------------------
# item states: one row kind at a time

@pytest.mark.parametrize(("rows", "state", "reason", "size"), [
    # a write makes an absent item live
    ([(0, "a", "write")], LIVE, None, 1),
    # a first row that is not a write: the item was in the store before the trace began
    ([(0, "a", "retrieve")], LIVE, None, 1),
    # invalidate (an expiry took effect): live -> expired, its uses stale
    ([(0, "a", "write"), (1, "a", "invalidate")], EXPIRED, "invalidated", 0),
    # supersede: live -> superseded
    ([(0, "a", "write"), (1, "a", "supersede")], SUPERSEDED, "superseded", 0),
    # archive (delete): live -> deleted, its uses stale
    ([(0, "a", "write"), (1, "a", "archive")], DELETED, "archived", 0),
    # evict: live -> deleted, its uses not stale (eviction says nothing about the content)
    ([(0, "a", "write"), (1, "a", "evict")], DELETED, None, 0),
    # delete after expiry: deleted, and still invalidated
    ([(0, "a", "write"), (1, "a", "invalidate"), (2, "a", "archive")], DELETED, "invalidated", 0),
    # delete then put again: live, its earlier delete no longer makes uses stale
    ([(0, "a", "write"), (1, "a", "archive"), (2, "a", "write")], LIVE, None, 1),
    # expired then put again (before or after a sweep): live and no longer revoked
    ([(0, "a", "write"), (1, "a", "invalidate"), (2, "a", "write")], LIVE, None, 1),
    # expiry cleared or moved later after it took effect: restore -> live again
    ([(0, "a", "write"), (1, "a", "invalidate"), (2, "a", "restore")], LIVE, None, 1),
    # restore does not bring back a deleted item
    ([(0, "a", "write"), (1, "a", "archive"), (2, "a", "restore")], DELETED, "archived", 0),
    # an update edits: a live item stays live, an expired one stays expired
    ([(0, "a", "write"), (1, "a", "update")], LIVE, None, 1),
    ([(0, "a", "write"), (1, "a", "invalidate"), (2, "a", "update")], EXPIRED, "invalidated", 0),
    # reads change nothing
    ([(0, "a", "write"), (1, "a", "read"), (2, "a", "retrieve"), (3, "a", "inject")], LIVE, None, 1),
    # a second write of a live item changes nothing
    ([(0, "a", "write"), (1, "a", "write")], LIVE, None, 1),
])
def test_each_transition(rows, state, reason, size):
    life, deltas = _run(rows)
    t = len(rows) + 1.0
    assert life.state("a") == state
    assert life.stale_reason("a", t) == reason
    assert life.size + life.initial == size == sum(deltas) + life.initial
    assert ("a" in life.live_items(t)) is (state == LIVE)


def test_revoked_items_keep_their_mark_through_a_delete_and_lose_it_on_a_put():
    life, _ = _run([(0, "a", "write"), (1, "a", "invalidate"), (2, "a", "archive"),
                    (0, "b", "write"), (1, "b", "supersede"), (2, "b", "write"),
                    (0, "c", "write"), (1, "c", "invalidate"), (2, "c", "restore")])
    assert life.revoked_items() == {"a"}
    assert life.retired("archive") == {"a"}


def test_valid_until_and_superseding_objects_make_a_live_item_stale():
    life = Lifecycle({"a": 5.0})
    life.apply("a", "write", 0.0)
    assert life.stale_reason("a", 5.0) is None and life.stale_reason("a", 5.5) == "expired"
    assert life.is_live("a", 4.0) and not life.is_live("a", 6.0)
    assert life.stale_reason("a", 3.0, superseded_from=2.0) == "superseded"
    assert not life.is_live("a", 3.0, superseded_from=2.0) and life.is_live("a", 3.0, superseded_from=math.inf)


# --------------------------------------------------------------------------------------------
# the store side: when expiries take effect, and which rows follow

def test_an_expiry_takes_effect_at_its_deadline():
    c = ExpiryClock()
    assert c.set("a", 10.0, now=0.0) is False
    assert c.due(9.9) == [] and not c.expired("a")
    assert c.due(10.0) == [(10.0, "a")] and c.expired("a")
    assert c.due(99.0) == []  # once


def test_an_expiry_moved_or_cleared_before_it_took_effect_replaces_it():
    c = ExpiryClock()
    c.set("a", 10.0, now=0.0)
    c.set("a", 20.0, now=5.0)  # moved later
    c.set("b", 10.0, now=0.0)
    c.set("b", None, now=5.0)  # cleared
    c.set("c", 30.0, now=0.0)
    c.set("c", 8.0, now=5.0)  # moved earlier
    assert c.due(15.0) == [(8.0, "c")]
    assert c.due(25.0) == [(20.0, "a")]


def test_an_expiry_cleared_or_moved_later_after_it_took_effect_restores():
    c = ExpiryClock()
    for k in "abc":
        c.set(k, 10.0, now=0.0)
    c.due(11.0)
    assert c.set("a", None, now=12.0) is True and not c.expired("a")  # cleared: shown again
    assert c.set("b", 50.0, now=12.0) is True  # moved into the future: shown until 50
    assert c.set("c", 11.5, now=12.0) is False and c.expired("c")  # moved, but still past: stays hidden
    assert c.due(60.0) == [(50.0, "b")]


def test_a_refresh_before_the_deadline_moves_it_and_after_revives():
    c = ExpiryClock()
    c.set("a", 10.0, now=0.0)
    assert c.set("a", 18.0, now=8.0) is False  # a read at 8 refreshed an 10 s TTL
    assert c.due(17.0) == []
    c.due(18.0)
    assert c.set("a", 30.0, now=20.0) is True  # a refreshing read of an expired, unswept key


def test_a_deleted_key_never_expires_and_a_put_again_starts_afresh():
    c = ExpiryClock()
    c.set("a", 10.0, now=0.0)
    c.forget("a")  # deleted
    assert c.due(20.0) == []
    c.set("b", 10.0, now=0.0)
    c.due(11.0)
    c.forget("b")  # put again as a new item
    assert not c.expired("b") and c.set("b", 40.0, now=12.0) is False and c.due(40.0) == [(40.0, "b")]


def test_ttl_rules_count_as_the_stores_do():
    pytest.importorskip("langgraph.store.base")
    from ctwm_cli.integrations.langgraph import TTLRules

    assert TTLRules(refresh_on_read=True).refreshed(0.5, 100.25) == 130.25
    assert TTLRules(refresh_on_read=False, whole_seconds=True).refreshed(0.5, 100.75) == 130.0  # CURRENT_TIMESTAMP
    assert TTLRules(refresh_on_read=True, whole_minutes=True).refreshed(1.4, 100.0) == 160.0  # ttl_minutes INT
    assert TTLRules(refresh_on_read=True, whole_minutes=True).refreshed(0.4, 100.0) == 100.0


# --------------------------------------------------------------------------------------------
# the same through ctwm health: stale, live, revoked, dead weight, growth


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_health_follows_the_model(tmp_path):
    rows = [
        {"item": "a", "step": 0, "event": "write"}, {"item": "b", "step": 0, "event": "write"},
        {"item": "c", "step": 0, "event": "write"},
        {"item": "a", "step": 1, "event": "invalidate"}, {"item": "b", "step": 1, "event": "archive"},
        {"item": "c", "step": 1, "event": "invalidate"},
        {"item": "a", "step": 2, "event": "restore"}, {"item": "b", "step": 2, "event": "write"},
        {"item": "c", "step": 2, "event": "archive"},
        {"item": "q", "step": 3, "event": "search"}, {"item": "a", "step": 3, "event": "retrieve"},
        {"item": "b", "step": 3, "event": "retrieve"}, {"item": "c", "step": 3, "event": "retrieve"},
    ]
    r = health_of_trace(_write(tmp_path / "t.jsonl", rows))
    assert (r.retrieval.hits, r.retrieval.stale_hits, r.retrieval.stale_by_reason) == (3, 1, {"invalidated": 1})
    assert r.churn.final_size == 2 and r.dead_weight.live == 2 and r.dead_weight.never_retrieved == 0
    assert (r.failures.revoked_items, r.failures.archived_items) == (1, 1)  # c: invalidated, then deleted
    assert [s for _, s in r.growth_series] == [3, 0, 2, 2]  # a restored, b put again
