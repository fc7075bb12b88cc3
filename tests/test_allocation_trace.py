"""``simulate_trace``: the allocation applied to a trace's own ranking, against an independent
pure-Python reference in exact rational arithmetic."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctwm_cli.allocation import simulate_trace
from ctwm_cli.common.errors import InputError, UsageError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def exact_slots(n: int, tau: int, k: int, budget: int) -> tuple[list[int], int, bool]:
    """Reference Hamilton slots for an n-item list (core min(k, n), tail pooled), exact rationals.

    Also says whether the decision rested on a remainder gap below 1e-9 (then floats may differ)."""
    k = min(k, n)
    w = [Fraction(1, r**tau) for r in range(1, n + 1)]
    groups = [*w[:k], sum(w[k:], Fraction(0))]
    s = sum(groups)
    q = [g * budget / s for g in groups]
    fl = [math.floor(x) for x in q]
    left = budget - sum(fl)
    order = sorted(range(len(q)), key=lambda i: (-(q[i] - fl[i]), i))
    rems = [q[i] - fl[i] for i in order]
    fragile = 0 < left < len(q) and rems[left - 1] - rems[left] < Fraction(1, 10**9)
    for i in order[:left]:
        fl[i] += 1
    return fl[:k], fl[k], fragile


def test_counts_ranking_against_reference(tmp_path):
    counts = {"a": 50, "b": 30, "c": 10, "d": 5, "e": 3, "f": 2}
    path = write_jsonl(tmp_path / "c.jsonl", [{"item": i, "count": c} for i, c in counts.items()])
    res = simulate_trace(path, [1.0, 2.0, 3.0], core=2, budget=10)
    assert res.ranking == "counts" and res.n_items == 6 and res.n_accesses == 100
    assert res.core_items == ("a", "b") and res.core_item_counts == (50, 30)
    for row in res.rows:
        core, tail, fragile = exact_slots(6, int(row.tau), 2, 10)
        assert not fragile
        assert row.core_slots == sum(core) and row.tail_slots == tail
        assert row.items_in_prompt == sum(1 for s in core if s >= 1)
        served = sum(c for c, s in zip([50, 30], core, strict=True) if s >= 1)
        assert row.access_share_prompt == pytest.approx(served / 100)
        assert row.access_share_core == pytest.approx(0.8)
        assert row.access_share_summarised == pytest.approx(0.2 if tail >= 1 else 0.0)
        assert row.tail_items_summarised == (4 if tail >= 1 else 0)
        assert row.access_share_prompt + row.access_share_summarised + row.access_share_dropped == pytest.approx(1.0)
        # TV distance between b (core ranks + pooled tail) and the access shares (.5, .3, .2)
        h = sum(Fraction(1, r ** int(row.tau)) for r in range(1, 7))
        b = [1 / h, Fraction(1, 2 ** int(row.tau)) / h]
        tv = (abs(b[0] - Fraction(1, 2)) + abs(b[1] - Fraction(3, 10)) + abs((1 - b[0] - b[1]) - Fraction(1, 5))) / 2
        assert row.tv_distance == pytest.approx(float(tv), abs=1e-12)
    assert res.allocation is not None and res.allocation.all_guaranteed_hold


def test_counts_from_events_and_event_filter(tmp_path):
    rows = [{"item": "x", "event": "retrieve"}] * 5 + [{"item": "y", "event": "retrieve"}] * 3
    rows += [{"item": "z", "event": "retrieve"}] + [{"item": "w", "event": "write"}] * 9
    path = write_jsonl(tmp_path / "e.jsonl", rows)
    res = simulate_trace(path, [1.0], core=1, budget=4)
    assert res.n_items == 3 and res.n_accesses == 9 and res.core_items == ("x",)
    res_w = simulate_trace(path, [1.0], core=1, budget=4, events=["write", "retrieve"])
    assert res_w.core_items == ("w",) and res_w.n_accesses == 18


def test_step_ranking_hand_example(tmp_path):
    # step 0: a b c; step 1: b d; step 2: e a f g (rank column gives the order)
    lists = {0: ["a", "b", "c"], 1: ["b", "d"], 2: ["e", "a", "f", "g"]}
    rows = [{"item": it, "step": s, "rank": r + 1} for s, its in lists.items() for r, it in enumerate(its)]
    rows.append({"item": "zz", "step": 1, "rank": 1, "event": "write"})  # not counted
    path = write_jsonl(tmp_path / "s.jsonl", rows[::-1])  # order in the file does not matter
    res = simulate_trace(path, [1.0, 3.0], core=1, budget=2)
    assert res.ranking == "step" and res.steps == 3 and res.n_accesses == 9
    assert res.mean_list_length == pytest.approx(3.0)
    assert res.items_ever_core == 3  # a, b, e
    r1, r3 = res.rows
    # τ = 1: every list gives its top item 1 slot and its tail summary 1 slot (worked by hand)
    assert r1.items_reach_prompt == 3 and r1.items_only_summarised == 4  # c, d, f, g
    assert r1.access_share_prompt == pytest.approx(3 / 9) and r1.access_share_summarised == pytest.approx(6 / 9)
    assert r1.mean_tail_slots == pytest.approx(1.0) and r1.steps_with_summary == pytest.approx(1.0)
    # τ = 3: every list gives both slots to its top item (quotas 2·8/9, 2·216/251, 2·1728/2035), so
    # every tail is dropped: b, c (step 0), d (step 1), a, f, g (step 2)
    for n in (2, 3, 4):
        assert exact_slots(n, 3, 1, 2)[:2] == ([2], 0)
    assert r3.items_reach_prompt == 3 and r3.items_only_summarised == 0
    assert r3.access_share_dropped == pytest.approx(6 / 9) and r3.mean_tail_slots == 0.0
    assert r3.steps_with_summary == 0.0


def test_step_ranking_by_score_runs_and_duplicates(tmp_path):
    rows = [
        {"item": "p", "step": 1, "run": "r1", "score": 0.1},
        {"item": "q", "step": 1, "run": "r1", "score": 0.9},
        {"item": "q", "step": 1, "run": "r1", "score": 0.5},  # duplicate: keeps best score
        {"item": "p", "step": 1, "run": "r2", "score": 0.7},  # same step, other run: its own list
        {"item": "s", "step": 1, "run": "r2", "score": 0.2},
    ]
    res = simulate_trace(write_jsonl(tmp_path / "sc.jsonl", rows), [1.0], core=1, budget=1)
    assert res.ranking == "step" and res.steps == 2 and res.n_accesses == 4
    # core positions: q (run r1) and p (run r2)
    assert res.items_ever_core == 2
    # L = 2, B = 1: quotas 2/3 vs 1/3 -> the top item gets the slot
    assert res.rows[0].items_reach_prompt == 2 and res.rows[0].access_share_prompt == pytest.approx(0.5)


@given(
    lists=st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=7, unique=True), min_size=1, max_size=8),
    tau=st.sampled_from([1, 2]),
    k=st.integers(1, 4),
    budget=st.integers(1, 12),
)
@settings(max_examples=40, deadline=None)
def test_step_ranking_against_reference(tmp_path_factory, lists, tau, k, budget):
    reach, summarised_items, n_prompt, n_summ, n = set(), set(), 0, 0, 0
    for its in lists:
        core, tail, fragile = exact_slots(len(its), tau, k, budget)
        assume(not fragile)
        for pos, it in enumerate(its):
            n += 1
            if pos < len(core) and core[pos] >= 1:
                reach.add(it)
                n_prompt += 1
            elif pos >= len(core) and tail >= 1:
                summarised_items.add(it)
                n_summ += 1
    rows = [{"item": f"i{it}", "step": s, "rank": r + 1} for s, its in enumerate(lists) for r, it in enumerate(its)]
    path = write_jsonl(tmp_path_factory.mktemp("t") / "t.jsonl", rows)
    res = simulate_trace(path, [float(tau)], core=k, budget=budget, ranking="step")
    row = res.rows[0]
    assert row.items_reach_prompt == len(reach)
    assert row.items_only_summarised == len(summarised_items - reach)
    assert row.access_share_prompt == pytest.approx(n_prompt / n)
    assert row.access_share_summarised == pytest.approx(n_summ / n)


def test_ranking_modes_and_errors(tmp_path):
    counts_only = write_jsonl(tmp_path / "c.jsonl", [{"item": "a", "count": 3}, {"item": "b", "count": 1}])
    assert simulate_trace(counts_only, [1.0], core=1, budget=3).ranking == "counts"
    with pytest.raises(InputError, match="per-step ranking needs a step column"):
        simulate_trace(counts_only, [1.0], core=1, budget=3, ranking="step")
    with pytest.raises(InputError, match="the trace has 2 distinct items, so core=2 leaves no tail"):
        simulate_trace(counts_only, [1.0], core=2, budget=3)
    with pytest.raises(UsageError, match="ranking"):
        simulate_trace(counts_only, [1.0], core=1, budget=3, ranking="bogus")
    stepped = write_jsonl(tmp_path / "s.jsonl",
                          [{"item": "a", "step": 1, "rank": 1}, {"item": "b", "step": 1, "rank": 2}])
    assert simulate_trace(stepped, [1.0], core=1, budget=3, ranking="counts").ranking == "counts"
    # per-step mode accepts K larger than a list (the whole list is core)
    res = simulate_trace(stepped, [1.0], core=5, budget=3)
    assert res.ranking == "step" and res.rows[0].items_reach_prompt == 2


def test_to_dict_json_safe(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"item": str(i), "count": 10 - i} for i in range(8)])
    d = simulate_trace(path, [0.5, 1.5], core=3, budget=5).to_dict()
    json.dumps(d, allow_nan=False)
    assert d["core_items"] == ["0", "1", "2"] and len(d["results"]) == 2
