"""The one paired bootstrap (ctwm_cli.paired): closed forms, calibration, and intervals it refuses to form."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.memory.bm25 import BM25, bm25_scores
from ctwm_cli.paired import BlockResample, IndexResample, paired_delta, ratio_interval


def test_values_are_the_closed_forms():
    rng = np.random.default_rng(0)
    t, b = rng.random(50), rng.random(50) + 1
    one = np.ones(50)
    d = paired_delta((t, one), (b, one), IndexResample(50, 200, rng), level=0.9, treatment="t", baseline="b",
                     metric="m")
    assert d.delta == pytest.approx(t.mean() - b.mean())
    assert d.relative == pytest.approx(t.sum() / b.sum() - 1)
    ci, rci = d.confidence_interval, d.relative_confidence_interval
    assert ci.low < d.delta < ci.high and rci.low < d.relative < rci.high
    assert ci.level == rci.level == 0.9  # the vocabulary's {low, high, level}, level a confidence level
    assert d.to_dict()["confidence_interval"] == {"low": ci.low, "high": ci.high, "level": 0.9}
    assert d.interval == "formed" and d.units == 50


def test_index_bootstrap_interval_covers_near_its_level():
    """iid Bernoulli(0.5) vs Bernoulli(0.4) units: the 90% interval of the difference covers 0.1 in
    about 90% of repetitions."""
    rng = np.random.default_rng(7)
    hits, reps, n = 0, 300, 400
    one = np.ones(n)
    for _ in range(reps):
        a = (rng.random(n) < 0.5).astype(float)
        b = (rng.random(n) < 0.4).astype(float)
        d = paired_delta((a, one), (b, one), IndexResample(n, 300, rng), level=0.9, treatment="a", baseline="b",
                         metric="m")
        hits += d.confidence_interval.low <= 0.1 <= d.confidence_interval.high
    assert 0.84 <= hits / reps <= 0.96


def test_one_arm_interval_and_refusals():
    rng = np.random.default_rng(1)
    x = rng.random(200)
    value, lo, hi = ratio_interval(x, np.ones(200), BlockResample([200], 10, 300, rng), 0.95)
    assert value == pytest.approx(x.mean()) and lo < value < hi
    assert BlockResample([200], 101, 100, rng).status.startswith("not formable")  # fewer than two blocks
    assert BlockResample([200], 100, 100, rng).status == "formed"
    assert BlockResample([200], 10, 0, rng).status.startswith("not requested")
    assert ratio_interval(x, np.ones(200), BlockResample([200], 150, 100, rng), 0.95)[1:] == (None, None)


def test_bm25_closed_form_and_one_implementation():
    docs = [["cat", "sat"], ["cat", "cat", "dog"], ["bird"]]
    got = bm25_scores({"cat"}, docs)
    n, df, avgdl = 3, 2, 2.0
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    want = [idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * len(d) / avgdl)) if f else 0.0
            for d, f in ((d, d.count("cat")) for d in docs)]
    assert got == pytest.approx(want)
    index = BM25()
    for i, d in enumerate(docs):
        index.add(i, d)
    assert [index.scores({"cat"}).get(i, 0.0) for i in range(3)] == pytest.approx(got)


def test_block_starts_drawn_again_in_chunks_keep_the_arms_paired(monkeypatch):
    """Past MAX_STORED block starts the resample keeps a seed and draws the same starts at every call:
    two arms' sums come from the same blocks, so identical series give identical replicates."""
    monkeypatch.setattr(BlockResample, "MAX_STORED", 500)
    monkeypatch.setattr(BlockResample, "CHUNK", 300)
    rng = np.random.default_rng(3)
    x = rng.random(400)
    r = BlockResample([200, 200], 4, 50, rng)
    assert r.starts is None and r.status == "formed"
    a, b = r.sums(x), r.sums(x.copy())
    assert a.shape == (50,) and np.array_equal(a, b)
    assert np.allclose(r.sums(np.ones(400)), 400) and np.allclose(r.sums(2 * x), 2 * a)
    assert abs(a.mean() / 400 - x.mean()) < 0.02  # an unbiased resample of the mean
