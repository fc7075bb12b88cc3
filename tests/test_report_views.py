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


def _all(block):
    """The block's tables: those drawn as figures (each figure's numbers table) and the others."""
    return (*(f.table for f in block.figures), *block.tables)


def _table(tables, start: str):
    return next(t for t in tables if t.caption.startswith(start))


def test_injection_rate_by_rank(block):
    # pooled: rank 1 retrieved 8 times, injected 8; rank 2: 8, injected at step 0 of each tenant (2); rank 3: 0
    t = _table(_all(block), "Injection rate by rank")
    assert t.rows == ((1, 8, 8, 1.0), (2, 8, 2, 0.25), (3, 8, 0, 0.0))
    alice = next(p for p in block.parts if p.title == "user=alice")
    assert _table(alice.tables, "Injection rate").rows == ((1, 4, 4, 1.0), (2, 4, 1, 0.25), (3, 4, 0, 0.0))


def test_score_distribution(block):
    t = _table(_all(block), "Retriever scores of 24 retrieve rows")
    # scores 0.25, 0.5, 0.75, 8 rows each, over 10 bins of 0.05 from 0.25 to 0.75
    rows = [r[2] for r in t.rows]
    assert sum(rows) == 24 and rows[0] == 8 and rows[5] == 8 and rows[9] == 8 and rows.count(0) == 7
    assert t.rows[0][0] == pytest.approx(0.25) and t.rows[-1][1] == pytest.approx(0.75)


def test_tokens_per_step_over_time(block):
    # inject rows only: step 0 holds 10 + 20 per tenant, steps 1-3 hold 10; two tenants (runs) per step
    t = _table(_all(block), "Prompt tokens per step")
    assert t.rows == (("step 0", 2, 30.0), ("step 1", 2, 10.0), ("step 2", 2, 10.0), ("step 3", 2, 10.0))
    bob = next(p for p in block.parts if p.title == "user=bob")
    assert [r[2] for r in _table(bob.tables, "Prompt tokens").rows] == [30.0, 10.0, 10.0, 10.0]


def test_concentration_per_step_window(block):
    # every step: 6 distinct items retrieved once (a, b, c<step> per tenant): Gini 0, top 10% = 1 of 6 items
    t = _table(_all(block), "Concentration per window of steps")
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


def test_every_pooled_view_is_a_figure_with_its_numbers(block):
    # the four views of the fixture are drawn; each figure's alt states its numbers, its table is the view's table
    assert [f.title for f in block.figures] == ["Concentration over time", "Injection rate by rank",
                                                "Score distribution", "Tokens per step over time"]
    for f in block.figures:
        assert f.svg.startswith("<svg") and 'role="img"' in f.svg and f.alt and f.table.rows
    rank = next(f for f in block.figures if f.title == "Injection rate by rank")
    assert "rank 1: 100%, rank 2: 25%, rank 3: 0%" in rank.alt
    tokens = next(f for f in block.figures if f.title.startswith("Tokens"))
    assert "from 10 (step 1) to 30 (step 0)" in tokens.alt
    assert block.tables == ()  # per-tenant views stay tables, in the parts
    assert all(p.tables and not p.figures for p in block.parts)


def test_log_axes_only_where_the_range_spans_orders_of_magnitude():
    from ctwm_cli.plots.over_time import LOG_SPAN, plot_bars, plot_periods, wants_log

    assert wants_log([1.0, LOG_SPAN * 1.01]) and not wants_log([1.0, LOG_SPAN]) and not wants_log([0.0, 1e6])
    wide = plot_periods(["a", "b", "c"], {"tokens": [110.0, 317.0, 13_350.0]}, ylabel="t", title="t")
    narrow = plot_periods(["a", "b", "c"], {"tokens": [110.0, 317.0, 900.0]}, ylabel="t", title="t")
    shares = plot_periods(["a", "b"], {"s": [0.001, 0.9]}, ylabel="s", title="s", share=True)
    assert [f.axes[0].get_yscale() for f in (wide, narrow, shares)] == ["log", "linear", "linear"]
    bars = plot_bars([0.0, 1.0], [1.0, 1.0], [3.0, 3000.0], xlabel="x", ylabel="y", title="t")
    assert bars.axes[0].get_yscale() == "log"


def _lifecycle_trace(path, *, ts: bool = False) -> None:
    """Steps 0-3 (or, with ``ts``, steps 0-1 on 2026-03-01 and 2-3 on 2026-03-02). alice writes a (10 tokens) and
    b (20) at step 0 and retrieves a at steps 0 and 1, b at step 2, and supersedes a at step 2; bob writes c (30)
    at step 1 and d (40) at step 3 and never retrieves anything."""
    rows = [("a", 0, "write", 10, "alice"), ("b", 0, "write", 20, "alice"), ("a", 0, "retrieve", None, "alice"),
            ("c", 1, "write", 30, "bob"), ("a", 1, "retrieve", None, "alice"), ("b", 2, "retrieve", None, "alice"),
            ("a", 2, "supersede", None, "alice"), ("d", 3, "write", 40, "bob")]
    with open(path, "w", encoding="utf-8") as fh:
        for item, step, event, tokens, user in rows:
            row = {"item": item, "step": step, "event": event, "user": user, "run": "r"}
            if tokens is not None:
                row["tokens"] = tokens
            if ts:
                row["ts"] = f"2026-03-0{1 + step // 2}T1{step}:00:00Z"
            fh.write(json.dumps(row) + "\n")


def _dead_block(path):
    rep = ctwm_cli.report(str(path), seed=1, bootstrap=10, sweep=None, group_by="user")
    return next(b for s in rep.sections for b in s.blocks if b.title == "Over time and retrieval")


def test_dead_weight_at_the_end_of_each_window_of_steps(tmp_path):
    path = tmp_path / "store.jsonl"
    _lifecycle_trace(path)
    b = _dead_block(path)
    t = _table(_all(b), "Dead weight at the end of each window of steps")
    # live at the end of step 0: a, b (b never read); step 1: a, b, c (b, c); step 2: b, c (a superseded; c);
    # step 3: b, c, d (c, d). Tokens never retrieved / live tokens: 20/30, 50/60, 30/50, 70/90
    assert [r[:3] for r in t.rows] == [("step 0", 2, 1), ("step 1", 3, 2), ("step 2", 2, 1), ("step 3", 3, 2)]
    assert [r[3] for r in t.rows] == pytest.approx([1 / 2, 2 / 3, 1 / 2, 2 / 3])
    assert [r[4] for r in t.rows] == pytest.approx([20 / 30, 50 / 60, 30 / 50, 70 / 90])
    fig = next(f for f in b.figures if f.title == "Dead weight over time")
    assert fig.table is t and "at the end of step 3, 2 of 3 live memories (66.7%)" in fig.alt
    # alice alone: a, b live at steps 0-1 (b never read), b alone after a is superseded (read at step 2)
    alice = next(p for p in b.parts if p.title == "user=alice")
    assert [r[1:4] for r in _table(alice.tables, "Dead weight").rows] == [
        (2, 1, 0.5), (2, 1, 0.5), (1, 0, 0.0), (1, 0, 0.0)]
    # bob's rows record no read: ctwm health leaves his dead weight undefined, so he has no table
    bob = next(p for p in b.parts if p.title == "user=bob")
    assert not any(x.caption.startswith("Dead weight") for x in bob.tables)
    assert "ctwm health says of the trace cut" in b.text


def test_dead_weight_per_day_is_ctwm_health_of_the_trace_cut_there(tmp_path):
    from ctwm_cli.health import health_of_trace

    path = tmp_path / "store.jsonl"
    _lifecycle_trace(path, ts=True)
    t = _table(_all(_dead_block(path)), "Dead weight at the end of each day")
    assert [r[:3] for r in t.rows] == [("2026-03-01", 3, 2), ("2026-03-02", 3, 2)]
    # independently: ctwm health of a file holding only day 1's rows, and of the whole trace
    day1 = tmp_path / "day1.jsonl"
    day1.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if "03-01" in line))
    for row, source in zip(t.rows, (day1, path), strict=True):
        d = health_of_trace(str(source)).dead_weight
        assert (row[1], row[2], row[3], row[4]) == (d.live, d.never_retrieved, d.dead_weight_share,
                                                     d.dead_token_share)
