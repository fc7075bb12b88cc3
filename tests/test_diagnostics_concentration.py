"""Concentration statistics: closed forms, independent formulas, invariants."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.diagnostics import concentration, concentration_of_traces, gini, sigma_top10, skewness, top_decile_size
from ctwm_cli.traces import ColumnMap, item_counts, open_trace, scan_trace

counts_st = st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=60).filter(lambda v: sum(v) > 0)


def gini_mad(x) -> float:
    """Independent O(n^2) definition: mean absolute difference over twice the mean."""
    x = np.asarray(x, dtype=float)
    n = x.size
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * n * n * x.mean()))


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_gini_uniform_is_zero(n):
    assert gini(np.full(n, 5)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 10, 1000])
def test_gini_one_hot_is_n_minus_1_over_n(n):
    x = np.zeros(n)
    x[n // 2] = 7
    assert gini(x) == pytest.approx((n - 1) / n, abs=1e-12)


@given(counts_st)
@settings(max_examples=150, deadline=None)
def test_gini_matches_mean_absolute_difference(x):
    assert gini(x) == pytest.approx(gini_mad(x), abs=1e-9)


def test_max_over_median_and_skew_hand_checked():
    # mean 4; deviations -3,-2,-1,0,6; m2 = 10, m3 = 36; g1 = 36 / 10**1.5; G1 = g1 * sqrt(20) / 3
    c = concentration([1, 2, 3, 4, 10])
    assert c.max_over_median == pytest.approx(10 / 3)
    g1 = 36 / 10**1.5
    assert c.skewness == pytest.approx(g1 * math.sqrt(20) / 3, rel=1e-12)
    assert c.skewness == pytest.approx(1.6970562748477138, rel=1e-12)
    assert concentration([2, 4, 6, 100]).max_over_median == pytest.approx(100 / 5)


def test_skew_symmetric_is_zero_and_constant_is_nan():
    assert skewness([1, 2, 3, 4, 5]) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(skewness([3, 3, 3, 3]))
    assert math.isnan(skewness([1, 2]))


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=3, max_size=50).filter(lambda v: len(set(v)) > 1))
@settings(max_examples=150, deadline=None)
def test_skew_matches_scipy_bias_corrected(x):
    ref = float(scipy.stats.skew(np.asarray(x, dtype=float), bias=False))
    assert skewness(x) == pytest.approx(ref, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("n", "k"), [(1, 1), (9, 1), (10, 1), (11, 2), (19, 2), (20, 2), (21, 3), (100, 10), (101, 11)]
)
def test_top_decile_is_ceil_of_tenth(n, k):
    assert top_decile_size(n) == k == math.ceil(n / 10)


def test_sigma_top10_hand_checked():
    # n = 20 -> top decile = 2 items, counts 8 and 2: sd(ddof=1) of ln = |ln 8 - ln 2| / sqrt 2
    x = [8, 2] + [1] * 18
    assert sigma_top10(x) == pytest.approx(math.log(4) / math.sqrt(2))
    # ties at the boundary: the value multiset is the same whichever tied item is taken
    assert sigma_top10([5, 3, 3, 3] + [1] * 16) == pytest.approx(np.std(np.log([5, 3]), ddof=1))
    assert math.isnan(sigma_top10([10, 1, 1]))  # top decile of 3 items is one item


@given(counts_st.filter(lambda v: len(v) >= 11 and min(v) > 0), st.floats(min_value=1e-3, max_value=1e6))
@settings(max_examples=100, deadline=None)
def test_sigma_top10_is_scale_free(x, c):
    assert sigma_top10(np.asarray(x, dtype=float) * c) == pytest.approx(sigma_top10(x), abs=1e-9)


@given(counts_st, st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_statistics_do_not_depend_on_order(x, rnd):
    y = list(x)
    rnd.shuffle(y)
    a, b = concentration(x).to_dict(), concentration(y).to_dict()
    for key, va in a.items():
        vb = b[key]
        if isinstance(va, float):
            assert vb == pytest.approx(va, rel=1e-9, abs=1e-12)
        else:
            assert va == vb


def test_shares_and_singletons_hand_checked():
    x = [50, 20, 10] + [1] * 17  # n = 20 -> top decile = 2 items
    c = concentration(x)
    assert c.n_items == 20
    assert c.n_events == 97
    assert c.top_decile_items == 2
    assert c.top10_share == pytest.approx(70 / 97)
    assert c.singleton_fraction == pytest.approx(17 / 20)


def test_input_not_mutated():
    x = np.array([3, 1, 2, 9])
    concentration(x)
    assert x.tolist() == [3, 1, 2, 9]


def test_bad_inputs():
    with pytest.raises(InputError, match="empty"):
        concentration([])
    with pytest.raises(InputError, match="negative"):
        concentration([1, -1])
    with pytest.raises(InputError, match="NaN"):
        concentration([1, float("nan")])
    with pytest.raises(UsageError, match="one-dimensional"):
        concentration([[1, 2], [3, 4]])


def test_zero_median_gives_infinite_ratio_and_null_json():
    c = concentration([0, 0, 5])
    assert c.max_over_median == math.inf
    assert c.to_dict()["max_over_median"] is None
    json.dumps(c.to_dict())


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_trace_concentration_matches_counter(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for step in range(400):
        run = "a" if step % 2 else "b"
        rows.append({"item": f"m{int(rng.zipf(1.8)) % 97}", "step": step, "run": run, "event": "retrieve"})
        rows.append({"item": "w", "step": step, "run": run, "event": "write"})
    path = tmp_path / "t.jsonl"
    _write_jsonl(path, rows)
    rep = concentration_of_traces([str(path)], group_by="run")
    assert [r.group for r in rep.rows] == ["a", "b"]
    for r, counts in zip(rep.rows, rep.counts, strict=True):
        ref = Counter(x["item"] for x in rows if x["run"] == r.group and x["event"] == "retrieve")
        vals = np.array(sorted(ref.values(), reverse=True))
        assert counts.tolist() == vals.tolist()
        assert r.gini == pytest.approx(gini_mad(vals))
        assert r.n_events == vals.sum()
    assert rep.events == ("retrieve",)


def test_accepts_item_counts(tmp_path):
    path = tmp_path / "t.jsonl"
    _write_jsonl(path, [{"item": i} for i in ["a", "a", "b", "c", "a"]])
    (ic,) = item_counts(scan_trace(open_trace(path, ColumnMap())))
    c = concentration(ic)
    assert c.source == str(path)
    assert c.n_items == 3 and c.n_events == 5
    assert c.max_over_median == 3.0


def test_paper_raw_sigma_beside_ours():
    from ctwm_cli.diagnostics.measures import sigma_top10_raw

    x = [8, 2] + [1] * 18  # top decile {8, 2}: raw sd (ddof=1) = 6 / sqrt 2
    c = concentration(x)
    assert c.sigma_top10_raw == pytest.approx(6 / math.sqrt(2)) == sigma_top10_raw(x)
    assert c.sigma_top10 == pytest.approx(math.log(4) / math.sqrt(2))
    # the paper's statistic doubles with the trace, ours does not
    d = concentration(np.asarray(x) * 2)
    assert d.sigma_top10_raw == pytest.approx(2 * c.sigma_top10_raw) and d.sigma_top10 == pytest.approx(c.sigma_top10)
    assert math.isnan(concentration([10, 1, 1]).sigma_top10_raw)
