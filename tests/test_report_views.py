"""The trace page's over-time and retrieval views against numbers worked out by hand on a small trace with
tenants, ranks, scores, tokens and steps (and a second with timestamps over two days)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import ctwm_cli
from ctwm_cli.reporting.views import concentration_over_time


def _trace(path) -> None:
    """Two tenants, steps 0-3. Each step retrieves {t}-a (rank 1, score 0.75, 10 tokens), {t}-b (rank 2, 0.5, 20)
    and {t}-c<step> (rank 3, 0.25, 30); injects {t}-a (10 tokens) every step and {t}-b (20) at step 0 only."""
    with open(path, "w", encoding="utf-8") as fh:
        for tenant in ("alice", "bob"):
            for step in range(4):
                for rank, item in enumerate([f"{tenant}-a", f"{tenant}-b", f"{tenant}-c{step}"], start=1):
                    fh.write(json.dumps({"item": item, "step": step, "run": tenant, "user": tenant, "rank": rank,
                                         "event": "retrieve", "score": 1.0 - 0.25 * rank, "tokens": 10 * rank}) + "\n")
                fh.write(json.dumps({"item": f"{tenant}-a", "step": step, "run": tenant, "user": tenant,
                                     "event": "inject", "tokens": 10}) + "\n")
                if step == 0:
                    fh.write(json.dumps({"item": f"{tenant}-b", "step": step, "run": tenant, "user": tenant,
                                         "event": "inject", "tokens": 20}) + "\n")


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    path = tmp_path_factory.mktemp("views") / "agent.jsonl"
    _trace(path)
    rep = ctwm_cli.report(str(path), seed=1, bootstrap=10, sweep=None, group_by="user")
    return next(b for s in rep.sections for b in s.blocks if b.title == "Over time and retrieval")


def _table(tables, start: str):
    return next(t for t in tables if t.caption.startswith(start))


def test_injection_rate_by_rank(block):
    # pooled: rank 1 retrieved 8 times, injected 8; rank 2: 8, injected at step 0 of each tenant (2); rank 3: 0
    t = _table(block.tables, "Injection rate by rank")
    assert t.rows == ((1, 8, 8, 1.0), (2, 8, 2, 0.25), (3, 8, 0, 0.0))
    alice = next(p for p in block.parts if p.title == "user=alice")
    assert _table(alice.tables, "Injection rate").rows == ((1, 4, 4, 1.0), (2, 4, 1, 0.25), (3, 4, 0, 0.0))


def test_score_distribution(block):
    t = _table(block.tables, "Retriever scores of 24 retrieve rows")
    # scores 0.25, 0.5, 0.75, 8 rows each, over 10 bins of 0.05 from 0.25 to 0.75
    rows = [r[2] for r in t.rows]
    assert sum(rows) == 24 and rows[0] == 8 and rows[5] == 8 and rows[9] == 8 and rows.count(0) == 7
    assert t.rows[0][0] == pytest.approx(0.25) and t.rows[-1][1] == pytest.approx(0.75)


def test_tokens_per_step_over_time(block):
    # inject rows only: step 0 holds 10 + 20 per tenant, steps 1-3 hold 10; two tenants (runs) per step
    t = _table(block.tables, "Prompt tokens per step")
    assert t.rows == (("step 0", 2, 30.0), ("step 1", 2, 10.0), ("step 2", 2, 10.0), ("step 3", 2, 10.0))
    bob = next(p for p in block.parts if p.title == "user=bob")
    assert [r[2] for r in _table(bob.tables, "Prompt tokens").rows] == [30.0, 10.0, 10.0, 10.0]


def test_concentration_per_step_window(block):
    # every step: 6 distinct items retrieved once (a, b, c<step> per tenant): Gini 0, top 10% = 1 of 6 items
    t = _table(block.tables, "Concentration per window of steps")
    assert [r[1:3] for r in t.rows] == [(6, 6)] * 4
    assert [r[3] for r in t.rows] == [pytest.approx(0.0)] * 4
    assert [r[4] for r in t.rows] == [pytest.approx(1 / 6)] * 4


def test_concentration_per_day_from_timestamps():
    # day 1: a 3 times, b once -> Gini of (1, 3) = (|1-3| * 2) / (2 * 2^2 * mean 2) = 0.25; top 10% = a = 3/4
    # day 2: a, b, c, d once each -> Gini 0, top 10% = 1 of 4 items
    rows = pd.DataFrame({"item": list("aaab") + list("abcd"), "event": ["retrieve"] * 8,
                         "ts": ["2026-03-01T10:00:00Z"] * 4 + ["2026-03-02T09:00:00Z"] * 4})
    t = concentration_over_time(rows)
    assert t.caption.startswith("Concentration per day")
    assert [r[:3] for r in t.rows] == [("2026-03-01", 4, 2), ("2026-03-02", 4, 4)]
    assert [r[3] for r in t.rows] == [pytest.approx(0.25), pytest.approx(0.0)]
    assert [r[4] for r in t.rows] == [pytest.approx(0.75), pytest.approx(0.25)]
    weeks = rows.assign(ts=["2026-03-01T10:00:00Z"] * 4 + ["2026-04-01T09:00:00Z"] * 4)
    assert concentration_over_time(weeks).caption.startswith("Concentration per ISO week")
    assert [r[0] for r in concentration_over_time(weeks).rows] == ["2026-W09", "2026-W14"]
