"""The one paired bootstrap (ctwm_cli.stats.paired): closed forms, calibration, and intervals it refuses to form."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.memory.bm25 import BM25, bm25_scores
from ctwm_cli.stats.paired import BlockResample, IndexResample, paired_delta, ratio_interval


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
    assert d.interval_status == "formed" and d.units == 50


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


def _saturating(n: int, episodes: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Per-step values that rise from 0 and level off within every episode (prompt tokens as the memory
    fills), treatment above baseline by a saturating amount, with a little noise."""
    t = np.tile(np.arange(n), episodes)
    base = 40 * (1 - np.exp(-t / 80)) + rng.normal(0, 0.5, t.size)
    return base + 60 * (1 - np.exp(-t / 120)), base


def test_block_interval_holds_its_estimate_where_the_series_trends_within_episodes():
    """The moving-block scheme drew starts in [0, n - L]: an episode's first steps were under-sampled
    and on a series that rises then levels off every 95% interval sat above the estimate (as CTWM −
    Graph tokens did on ``--preset artifact --walk uniform-neighbour --episodes 30 --seed 1``: +56.192
    with [+56.243, +56.285]). The circular scheme draws every step equally often."""
    rng = np.random.default_rng(11)
    n, episodes = 2000, 30  # the old scheme's intervals here: block 60 [+56.57, +57.57], 200 [+57.42, +58.54]
    treat, base = _saturating(n, episodes, rng)
    one = np.ones(treat.size)
    for block in (26, 60, 200):
        res = BlockResample([n] * episodes, block, 400, rng)
        d = paired_delta((treat, one), (base, one), res, level=0.95, treatment="t", baseline="b", metric="tokens")
        ci = d.confidence_interval
        assert d.interval_status == "formed" and ci.low <= d.delta <= ci.high, (block, d.delta, ci)
        # every step is drawn equally often: the replicates' mean is the estimate up to Monte Carlo error
        reps = res.sums(treat - base) / treat.size
        assert abs(reps.mean() - d.delta) < 4 * reps.std() / np.sqrt(reps.size)


def test_circular_blocks_draw_every_step_equally_often():
    """Closed form: each step of an episode is drawn once per replicate in expectation (the moving-block
    scheme drew an episode's first and last steps 1/L as often as its middle)."""
    rng = np.random.default_rng(5)
    n, block = 50, 7  # 7 full blocks and a remainder block of 1
    res = BlockResample([n, n], block, 20_000, rng)
    counts = np.zeros(2 * n)
    for i in range(2 * n):
        e = np.zeros(2 * n)
        e[i] = 1.0
        counts[i] = res.sums(e).mean()
    assert np.allclose(counts, 1.0, atol=0.05)
    assert np.allclose(res.sums(np.ones(2 * n)), 2 * n)


def test_one_differing_unit_forms_no_interval():
    rng = np.random.default_rng(2)
    x = rng.random(300)
    y = x.copy()
    y[17] += 1.0
    one = np.ones(300)
    for res, unit in ((BlockResample([300], 10, 200, rng), "step"), (IndexResample(300, 200, rng), "unit")):
        d = paired_delta((y, one), (x, one), res, level=0.95, treatment="t", baseline="b", metric="m", unit=unit)
        assert d.interval_status == f"not formed: only one {unit} differs" and d.confidence_interval is None
    y[200] += 1.0  # two: formed
    d = paired_delta((y, one), (x, one), IndexResample(300, 200, rng), level=0.95, treatment="t", baseline="b",
                     metric="m")
    assert d.interval_status == "formed"


def test_an_interval_that_excludes_its_estimate_is_refused():
    from ctwm_cli.stats.intervals import confidence_interval

    assert confidence_interval(1.0, 2.0, 0.95, estimate=1.0).low == 1.0
    with pytest.raises(ValueError, match="excludes its estimate"):
        confidence_interval(1.0, 2.0, 0.95, estimate=2.5)


def test_simulated_mde_is_the_normal_closed_form_on_normal_replicates():
    """Shift model on normal replicates with the percentile interval: (z_.975 + z_.8) σ = 2.80 σ."""
    from ctwm_cli.stats.paired import simulated_mde

    reps = np.random.default_rng(0).normal(0.0, 2.0, 20_000)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    mde, err = simulated_mde(0.0, (lo, hi), reps, level=0.95)
    assert mde == pytest.approx(2.8016 * 2.0, rel=0.02) and 0 < err < 0.05


@pytest.mark.slow
def test_a_difference_of_the_printed_mde_is_detected_about_80_percent_of_the_time():
    """Sparse units (2% events): the printed MDE, median over pilot runs at no difference, is detected in
    0.68-0.88 of 200 runs (measured 0.77; a little under 0.8 because the variance grows with the effect),
    half of it far less often and 1.5 times it nearly always."""
    rng = np.random.default_rng(3)
    n, base = 2000, 0.02
    one = np.ones(n)

    def run(delta):
        a, b = (rng.random(n) < base + delta).astype(float), (rng.random(n) < base).astype(float)
        return paired_delta((a, one), (b, one), IndexResample(n, 400, rng), level=0.95, treatment="a",
                            baseline="b", metric="m")

    mde = float(np.median([run(0.0).mde for _ in range(40)]))
    rates = []
    for delta in (0.5 * mde, mde, 1.5 * mde):
        got = [run(delta) for _ in range(200)]
        rates.append(np.mean([d.confidence_interval is not None and d.confidence_interval.low > 0 for d in got]))
    assert rates[0] < 0.4 and 0.68 <= rates[1] <= 0.88 and rates[2] > 0.9, rates
