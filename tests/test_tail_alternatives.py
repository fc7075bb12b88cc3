"""Alternative families: normalisation, exact discrete forms, MLEs, and the likelihood-ratio tests."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail import Histogram, fit_power_law
from ctwm_cli.tail import densities as D
from ctwm_cli.tail import families as F
from ctwm_cli.tail.compare import nested_power_law, vuong


@pytest.mark.parametrize("alpha,lam", [(1.5, 1e-3), (2.5, 1e-5), (0.5, 0.01), (-1.0, 0.05), (3.0, 1e-8), (1.0, 2e-4)])
@pytest.mark.parametrize("xmin", [1.0, 10.0])
def test_tpl_normaliser_is_exact(alpha, lam, xmin):
    x = np.arange(xmin, 30_000_000, dtype=np.float64)
    brute = float(np.log(np.sum(np.exp(-alpha * np.log(x) - lam * x))))
    assert D.tpl_logz(alpha, lam, xmin, True) == pytest.approx(brute, abs=2e-9)


@pytest.mark.parametrize("alpha,lam", [(1.5, 1e-3), (0.5, 0.02), (2.7, 0.1)])
def test_continuous_tpl_normaliser_matches_quadrature(alpha, lam):
    from scipy import integrate

    ref, _ = integrate.quad(lambda t: t**-alpha * math.exp(-lam * t), 3.0, np.inf, limit=400)
    assert D.tpl_logz(alpha, lam, 3.0, False) == pytest.approx(math.log(ref), rel=1e-7)


def _fits(x, xmin):
    h = Histogram.from_sample(x)
    pl = fit_power_law(h, xmin=xmin)
    i = int(np.searchsorted(h.values, xmin))
    v, c = h.values[i:], h.counts[i:].astype(float)
    return pl, v, c, F.fit_all(F.Tail(values=v, counts=c, xmin=xmin, discrete=True), pl)


def test_every_discrete_family_sums_to_one_over_its_support():
    rng = np.random.default_rng(1)
    x = np.ceil(rng.lognormal(2.0, 1.0, 5000))
    _pl, _v, _c, fits = _fits(x, 5.0)
    grid = np.arange(5.0, 3_000_000.0)
    for f in fits.values():
        # the mass beyond the grid from the family's sf (a mixture with a heavy component keeps ~1e-6 there)
        beyond = F.REGISTRY[f.family].sf(np.array([grid[-1] + 1.0]), f.params, f.xmin, True)[0]
        assert np.exp(F.logpmf(f, grid)).sum() + beyond == pytest.approx(1.0, abs=1e-8), f.family


def test_tpl_contains_the_power_law():
    rng = np.random.default_rng(2)
    from ctwm_cli.tail import sample_power_law

    x = sample_power_law(2.3, 1.0, 4000, rng, True)
    pl, _v, _c, fits = _fits(x, 1.0)
    assert fits["truncated_power_law"].loglik >= pl.loglik - 1e-9


def test_ceil_lognormal_pmf_matches_simulation():
    rng = np.random.default_rng(3)
    mu, sigma, xmin = 1.5, 0.9, 3.0
    y = np.ceil(rng.lognormal(mu, sigma, 400_000))
    y = y[y >= xmin]
    ks = np.arange(3, 40, dtype=float)
    p = np.exp(D.lognormal_logpmf(ks, mu, sigma, xmin, True))
    observed = np.array([(y == k).sum() for k in ks] + [(y >= 40).sum()])
    expected = np.concatenate([p, [1 - p.sum()]]) * y.size
    stat = ((observed - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(stat, len(observed) - 1) > 1e-3


def test_lognormal_mle_recovers_parameters_on_a_truncated_sample():
    rng = np.random.default_rng(4)
    y = np.ceil(rng.lognormal(2.0, 1.1, 300_000))
    y = y[y >= 10]
    h = Histogram.from_sample(y)
    f = F.REGISTRY["lognormal"].fit(F.Tail(values=h.values, counts=h.counts.astype(float), xmin=10.0, discrete=True))
    assert f.params["mu"] == pytest.approx(2.0, abs=0.08)
    assert f.params["sigma"] == pytest.approx(1.1, abs=0.04)


def test_exponential_mle_is_the_geometric_closed_form():
    rng = np.random.default_rng(5)
    x = 4 + rng.geometric(0.2, 5000) - 1.0
    h = Histogram.from_sample(x)
    f = F.REGISTRY["exponential"].fit(F.Tail(values=h.values, counts=h.counts.astype(float), xmin=4.0, discrete=True))
    assert f.params["lambda"] == pytest.approx(-math.log(1 - 0.2), rel=0.05)
    # closed form: λ = ln(1 + 1/mean excess)
    assert f.params["lambda"] == pytest.approx(math.log1p(1 / (x - 4).mean()), rel=1e-12)


def test_tpl_agrees_with_powerlaw_package():
    powerlaw = pytest.importorskip("powerlaw")
    rng = np.random.default_rng(3)
    x = np.ceil(rng.lognormal(2.0, 1.2, 20000))
    _pl, _v, _c, fits = _fits(x, 39.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = powerlaw.Fit(x, discrete=True, xmin=39.0, verbose=False).truncated_power_law
        ref_alpha, ref_lambda = ref.alpha, ref.Lambda
    assert fits["truncated_power_law"].params["alpha"] == pytest.approx(ref_alpha, abs=2e-3)
    assert fits["truncated_power_law"].params["lambda"] == pytest.approx(ref_lambda, rel=2e-3)


def test_vuong_matches_its_definition_on_expanded_points():
    rng = np.random.default_rng(6)
    values = np.arange(1.0, 21.0)
    weights = rng.integers(1, 30, size=20).astype(float)
    d = rng.normal(0.05, 1.0, size=20)
    cmp = vuong("a", "b", d, weights, 1.96)
    full = np.repeat(d, weights.astype(int))
    lam = full.sum()
    sigma = math.sqrt(full.size) * full.std()
    assert cmp.statistic == pytest.approx(lam)
    assert cmp.sigma == pytest.approx(sigma)
    assert cmp.z == pytest.approx(lam / sigma)
    assert cmp.pvalue == pytest.approx(2 * stats.norm.sf(abs(lam / sigma)))
    del values


def test_nested_test_uses_the_boundary_mixture():
    cmp = nested_power_law(-100.0, -98.0, 0.05)  # LR = 4
    assert cmp.pvalue == pytest.approx(0.5 * stats.chi2.sf(4.0, 1))
    assert nested_power_law(-100.0, -100.0, 0.05).pvalue == 1.0
