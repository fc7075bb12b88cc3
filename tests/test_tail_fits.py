"""Power-law fits: the Hurwitz zeta, exact sampling, α recovery, and agreement with plfit and powerlaw."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from ctwm_cli.tail import Histogram, fit_power_law, sample_power_law
from ctwm_cli.tail.powerlaw import power_law_mle
from ctwm_cli.tail.zeta import hurwitz_zeta_d, log_hurwitz_zeta


@pytest.mark.parametrize("s", [1.05, 1.5, 2.2, 3.5, 7.0, 15.0])
@pytest.mark.parametrize("q", [1.0, 2.0, 7.0, 37.5, 1000.0, 1e6])
def test_log_hurwitz_zeta_matches_scipy(s, q):
    ref = special.zeta(s, q)
    assert log_hurwitz_zeta(s, q) == pytest.approx(math.log(ref), rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("s,q", [(1.3, 1.0), (2.5, 4.0), (4.0, 120.0), (9.0, 3.0)])
def test_zeta_derivatives_match_finite_differences(s, q):
    z0, z1, z2 = hurwitz_zeta_d(s, q)
    h = 1e-4
    f = lambda t: log_hurwitz_zeta(t, q)  # noqa: E731
    d1 = (f(s + h) - f(s - h)) / (2 * h)
    d2 = (f(s + h) - 2 * f(s) + f(s - h)) / h**2
    assert z1 / z0 == pytest.approx(d1, rel=1e-7)
    assert z2 / z0 - (z1 / z0) ** 2 == pytest.approx(d2, rel=1e-4)


def test_discrete_mle_is_the_root_to_rounding():
    """α̂ at every kind of cutoff solves ζ'/ζ(α, x_min) = -mean ln x to rounding, against a 40-digit root.
    The Newton iteration once took a converged step that rounding left on its bracket's edge for a step
    out of it and restarted by bisection, stopping up to 1e-13·α from the root."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.zipf(1.7, 6000), np.floor(np.exp(rng.uniform(0, np.log(5e6), 3000)))])
    h = Histogram.from_sample(x)
    v, c = h.values, h.counts.astype(float)
    ntail = np.cumsum(c[::-1])[::-1]
    logsum = np.cumsum((c * np.log(v))[::-1])[::-1]
    picks = [i for i in np.unique(np.geomspace(1, v.size - 2, 60).astype(int)) if ntail[i] >= 10]
    mpmath.mp.dps = 40
    worst = 0.0
    for i in picks:
        a = power_law_mle(v[i], ntail[i], logsum[i], discrete=True)
        target = -mpmath.mpf(logsum[i]) / mpmath.mpf(ntail[i])
        root = mpmath.findroot(lambda s, q=v[i], t=target: mpmath.zeta(s, q, 1) / mpmath.zeta(s, q) - t, a)
        worst = max(worst, float(abs(a - root) / root))
    assert len(picks) > 40
    assert worst < 1e-14


def test_log_zeta_does_not_underflow_for_large_exponents():
    # ζ(40, 1e6) ~ 1e-234 is representable; ζ(80, 1e6) ~ 1e-474 is not, its log is.
    assert log_hurwitz_zeta(80.0, 1e6) == pytest.approx(-80 * math.log(1e6) + math.log(1e6 / 79 + 0.5), rel=1e-9)


@pytest.mark.parametrize("alpha,xmin", [(1.7, 1.0), (2.5, 3.0), (3.5, 10.0)])
def test_discrete_sampler_matches_exact_pmf(alpha, xmin):
    rng = np.random.default_rng(11)
    x = sample_power_law(alpha, xmin, 200_000, rng, discrete=True)
    assert x.min() >= xmin and np.all(x == np.floor(x))
    ks = np.arange(xmin, xmin + 30)
    logz = log_hurwitz_zeta(alpha, xmin)
    p = np.exp(-alpha * np.log(ks) - logz)
    observed = np.array([(x == k).sum() for k in ks] + [(x >= ks[-1] + 1).sum()])
    expected = np.concatenate([p, [1 - p.sum()]]) * x.size
    stat = ((observed - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(stat, len(observed) - 1) > 1e-3


def _sample(alpha, xmin, n_tail, seed, body=0):
    rng = np.random.default_rng(seed)
    parts = [sample_power_law(alpha, float(xmin), n_tail, rng, True)]
    if body:
        parts.append(rng.integers(1, xmin, size=body).astype(float))
    return np.concatenate(parts)


@pytest.mark.parametrize("alpha", [1.7, 2.5, 3.5])
def test_alpha_recovery_at_known_xmin(alpha):
    # mean over 20 seeds within 3 standard errors of the mean; no cap on α (3.5 > powerlaw's 3)
    est, ses = [], []
    for seed in range(20):
        fit = fit_power_law(Histogram.from_sample(_sample(alpha, 5, 3000, seed)), xmin=5.0)
        est.append(fit.alpha)
        ses.append(fit.alpha_se)
    assert abs(np.mean(est) - alpha) < 3 * np.mean(ses) / math.sqrt(len(est))
    # the reported se matches the spread across seeds
    assert 0.6 < np.std(est, ddof=1) / np.mean(ses) < 1.6


@pytest.mark.parametrize("alpha", [1.8, 2.5, 3.5])
def test_xmin_scan_finds_the_true_cutoff_region(alpha):
    fit = fit_power_law(Histogram.from_sample(_sample(alpha, 8, 20000, 3, body=5000)), min_tail=100)
    assert 8 <= fit.xmin <= 30  # never inside the uniform body below 8
    assert abs(fit.alpha - alpha) < 4 * fit.alpha_se


igraph = pytest.importorskip("igraph")


@pytest.mark.parametrize("alpha,seed", [(1.7, 0), (2.2, 1), (2.5, 2), (3.5, 3), (4.5, 4)])
def test_agrees_with_igraph_plfit(alpha, seed):
    x = _sample(alpha, 5, 5000, seed, body=1000)
    ours = fit_power_law(Histogram.from_sample(x), min_tail=1)
    ref = igraph.statistics.power_law_fit(x.tolist(), method="discrete", p_precision=0.5)
    assert ours.xmin == ref.xmin
    assert ours.alpha == pytest.approx(ref.alpha, abs=1e-6)
    # at the reference's own cutoff too
    fixed = fit_power_law(Histogram.from_sample(x), xmin=ref.xmin)
    assert fixed.alpha == pytest.approx(ref.alpha, abs=1e-6)


def test_agrees_with_powerlaw_package_beyond_its_alpha_cap():
    powerlaw = pytest.importorskip("powerlaw")
    x = _sample(3.5, 4, 5000, 7)
    ours = fit_power_law(Histogram.from_sample(x), xmin=4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = powerlaw.Fit(x, discrete=True, xmin=4.0, verbose=False,
                           parameter_ranges={"alpha": [1.0001, 20.0]}).power_law
        ref_alpha = ref.alpha
    assert ours.alpha == pytest.approx(ref_alpha, abs=1e-3)


def test_continuous_fit_is_the_hill_estimator():
    rng = np.random.default_rng(5)
    x = 2.0 * np.exp(rng.exponential(1 / 1.5, size=5000))  # Pareto α = 2.5 above 2
    fit = fit_power_law(Histogram.from_sample(x), discrete=False, xmin=2.0)
    assert fit.alpha == pytest.approx(1 + x.size / np.log(x / 2.0).sum(), rel=1e-12)
    assert fit.alpha_se == pytest.approx((fit.alpha - 1) / math.sqrt(x.size))
    ref = igraph.statistics.power_law_fit(x.tolist(), xmin=2.0, method="continuous", p_precision=0.5)
    assert fit.alpha == pytest.approx(ref.alpha, abs=1e-9)


def test_degenerate_histograms_give_no_fit():
    assert fit_power_law(Histogram.from_sample(np.full(500, 7.0))) is None
    assert fit_power_law(Histogram.from_sample(np.arange(1, 50, dtype=float))) is None  # < 100 points


@pytest.mark.parametrize("alpha,xmin", [(1.7, 3.0), (3.5, 1.0)])
def test_histogram_sampler_matches_exact_pmf(alpha, xmin):
    from ctwm_cli.tail.powerlaw import power_law_table, sample_power_law_hist

    rng = np.random.default_rng(4)
    table = power_law_table(alpha, xmin)
    ks = np.arange(xmin, xmin + 40)
    counts, rest, total = np.zeros(ks.size), 0, 0
    for _ in range(20):
        v, c = sample_power_law_hist(alpha, xmin, 20_000, rng, table)
        assert np.all(np.diff(v) > 0) and v[0] >= xmin
        inside = v < ks[-1] + 1
        counts += np.bincount((v[inside] - xmin).astype(int), weights=c[inside], minlength=ks.size)
        rest += int(c[~inside].sum())
        total += int(c.sum())
    assert total == 400_000
    p = np.exp(-alpha * np.log(ks) - log_hurwitz_zeta(alpha, xmin))
    observed = np.concatenate([counts, [rest]])
    expected = np.concatenate([p, [1 - p.sum()]]) * total
    keep = expected > 5
    stat = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(stat, keep.sum() - 1) > 1e-3
