"""The Politis–White block length against its AR(1) closed form; the intervals built on it and on the
cluster bootstrap against their levels (A/A tests, a persistent planted difference)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.stats.blocklength import politis_white_block
from ctwm_cli.stats.paired import BlockResample, EpisodeResample, IndexResample, paired_delta


def _ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi * phi)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("phi", [0.3, 0.5, 0.8])
def test_ar1_block_is_near_its_closed_form(phi):
    """AR(1): R(k) ∝ φ^|k|, so G/g = 2φ/(1−φ²) and b = (6φ²/(1−φ²)²)^{1/3} n^{1/3} (circular/moving block)."""
    n = 100_000
    rng = np.random.default_rng(int(10 * phi))
    got = [politis_white_block(_ar1(phi, n, rng)) for _ in range(6)]  # the rule's own noise averaged down
    want = (6 * phi**2 / (1 - phi**2) ** 2) ** (1 / 3) * n ** (1 / 3)
    # 7%: tighter than the 14% between the circular (4/3) and the stationary (2) bootstrap's constant
    assert np.mean([g.block for g in got]) == pytest.approx(want, rel=0.07)
    assert got[0].lag1_autocorrelation == pytest.approx(phi, abs=0.02)


def test_white_noise_gets_a_short_block_and_a_constant_series_block_one():
    got = politis_white_block(np.random.default_rng(0).standard_normal(5000))
    assert got.block <= 5 and abs(got.lag1_autocorrelation) < 0.05
    flat = politis_white_block(np.zeros(300))
    assert flat.block == 1 and flat.lag1_autocorrelation is None


def test_episodes_are_pooled_without_crossing_their_boundaries():
    """Two AR(1) episodes pooled give about the block of one long one (same n per episode); the cap
    leaves three blocks in the shortest episode."""
    rng = np.random.default_rng(3)
    pieces = [_ar1(0.6, 20_000, rng), _ar1(0.6, 20_000, rng)]
    one = politis_white_block(_ar1(0.6, 20_000, rng))
    assert politis_white_block(pieces).block == pytest.approx(one.block, rel=0.25)
    short = politis_white_block([_ar1(0.99, 60, rng), _ar1(0.99, 3000, rng)])
    assert short.n == 60 and short.block <= 20


def test_no_unit_differs_is_not_an_interval():
    rng = np.random.default_rng(0)
    x = (rng.random(400) < 0.3).astype(float)
    one = np.ones(400)
    d = paired_delta((x, one), (x.copy(), one), BlockResample([400], 10, 100, rng), level=0.95, treatment="a",
                     baseline="b", metric="m", unit="step")
    assert d.delta == 0 and d.confidence_interval is None and d.mde is None
    assert d.interval_status == "not formed: no step differs"


def test_cluster_interval_is_the_student_t_interval_over_episodes():
    """Equal episodes, a mean metric: the cluster bootstrap's Student-t interval is the paired t interval
    over the episodes' mean differences, up to bootstrap noise in the SE."""
    rng = np.random.default_rng(5)
    e, n = 8, 300
    a = rng.normal(0.2, 1.0, e * n) + np.repeat(rng.normal(0, 0.5, e), n)
    b = rng.normal(0.0, 1.0, e * n)
    one = np.ones(e * n)
    d = paired_delta((a, one), (b, one), EpisodeResample([n] * e, 4000, rng), level=0.9, treatment="a",
                     baseline="b", metric="m", unit="episode")
    diffs = (a - b).reshape(e, n).mean(axis=1)
    lo, hi = stats.t.interval(0.9, e - 1, loc=diffs.mean(), scale=diffs.std(ddof=1) / np.sqrt(e))
    assert (d.confidence_interval.low, d.confidence_interval.high) == pytest.approx((lo, hi), rel=0.05)
    want_mde = (stats.t.ppf(0.95, e - 1) + stats.t.ppf(0.8, e - 1)) * diffs.std(ddof=1) / np.sqrt(e)
    assert d.mde == pytest.approx(want_mde, rel=0.05)


@pytest.mark.slow
def test_aa_false_positive_rate_is_within_monte_carlo_error_of_its_level():
    """A/A: both arms' losses drawn from one process (AR-persistent, φ = 0.5, thresholded); the 95%
    interval with the Politis–White block excludes 0 in 5% ± 3 binomial SEs of 400 repetitions."""
    rng = np.random.default_rng(11)
    reps, n, hits = 400, 3000, 0
    one = np.ones(2 * n)
    for _ in range(reps):
        a = np.concatenate([_ar1(0.5, n, rng) > 0.5 for _ in range(2)]).astype(float)
        b = np.concatenate([_ar1(0.5, n, rng) > 0.5 for _ in range(2)]).astype(float)
        block = politis_white_block([a[:n] - b[:n], a[n:] - b[n:]]).block
        d = paired_delta((a, one), (b, one), BlockResample([n, n], block, 300, rng), level=0.95, treatment="a",
                         baseline="b", metric="m")
        hits += d.confidence_interval.low > 0 or d.confidence_interval.high < 0
    se = np.sqrt(0.05 * 0.95 / reps)
    assert abs(hits / reps - 0.05) <= 3 * se, hits / reps


@pytest.mark.slow
def test_a_difference_persisting_200_steps_keeps_false_positives_at_most_10_percent():
    """Mean-zero loss difference whose sign holds for 200 steps (drawn afresh each run of 200), 12
    episodes of 2,000 steps: the cluster bootstrap's interval rejects at most 10% of 150 repetitions
    (a fixed 50-step block rejected 30-34%)."""
    rng = np.random.default_rng(2)
    reps, e, n, hits = 150, 12, 2000, 0
    one = np.ones(e * n)
    for _ in range(reps):
        reg = (np.arange(e * n) + rng.integers(200)) // 200
        sign = rng.choice([-1, 1], size=int(reg.max()) + 1)[reg]
        a = (rng.random(e * n) < 0.3 + 0.1 * sign).astype(float)
        b = (rng.random(e * n) < 0.3 - 0.1 * sign).astype(float)
        d = paired_delta((a, one), (b, one), EpisodeResample([n] * e, 300, rng), level=0.95, treatment="a",
                         baseline="b", metric="m")
        hits += d.confidence_interval.low > 0 or d.confidence_interval.high < 0
    assert hits / reps <= 0.10, hits / reps


def test_index_resample_still_forms_where_units_differ():
    rng = np.random.default_rng(1)
    one = np.ones(50)
    d = paired_delta((rng.random(50), one), (rng.random(50), one), IndexResample(50, 200, rng), level=0.9,
                     treatment="t", baseline="b", metric="m")
    assert d.interval_status == "formed" and d.mde > 0 and d.block is None


def test_dependence_longer_than_the_rule_can_see_is_flagged():
    rng = np.random.default_rng(4)
    reg = (np.arange(2000) + 37) // 200
    persistent = rng.choice([-1.0, 1.0], size=int(reg.max()) + 1)[reg] + 0.5 * rng.standard_normal(2000)
    assert politis_white_block(persistent).capped
    assert not politis_white_block(_ar1(0.3, 2000, rng)).capped


def test_all_zero_numerators_are_not_an_interval():
    one = np.ones(300)
    zero = np.zeros(300)
    d = paired_delta((zero, one), (zero, one.copy() * (np.arange(300) % 2)), BlockResample([300], 10, 100,
                     np.random.default_rng(0)), level=0.95, treatment="a", baseline="b", metric="m", unit="step")
    assert d.delta == 0 and d.confidence_interval is None
    assert d.interval_status == "not formed: the numerator is 0 at every step under both arms"


def test_variance_ratio_is_near_one_without_long_dependence_and_warns_on_a_sparse_persistent_difference():
    """A difference at ~2% of the steps whose sign persists 200 steps has a lag-1 autocorrelation near 0 and a
    short automatic block, which cannot hold it; the long-horizon variance ratio sees it and the block is
    flagged (``capped``). White noise: the ratio is near 1 and no flag."""
    from ctwm_cli.stats.blocklength import VR_LIMIT, variance_ratio

    rng = np.random.default_rng(4)
    flags, ratios = [], []
    for _ in range(20):
        pieces = []
        for _ in range(5):
            sign = np.repeat(rng.choice([-1.0, 1.0], size=10), 200)
            pieces.append(np.where(rng.random(2000) < 0.02, sign, 0.0))
        got = politis_white_block(pieces)
        assert abs(got.lag1_autocorrelation) < 0.1 and got.block < 20
        flags.append(got.capped)
        ratios.append(got.variance_ratio)
    assert np.mean(flags) >= 0.8 and np.median(ratios) > VR_LIMIT
    noise = [variance_ratio([rng.standard_normal(2000) for _ in range(5)], 3) for _ in range(50)]
    assert 0.7 < np.median(noise) < 1.3
    assert np.mean([politis_white_block([rng.standard_normal(2000) for _ in range(5)]).capped for _ in range(50)]) < 0.1
