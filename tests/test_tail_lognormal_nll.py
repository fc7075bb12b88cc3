"""The discrete log-normal's likelihood (tail/densities.py), with and without narrow intervals: against scipy's
normal CDF differences and its own gradient against central differences. Issue 48 gave tails with no narrow interval
(every fit-check refit on terrorism) a path without the narrow branch's array calls: it must give the same values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail import densities as dens


def _independent_nll(mu: float, sigma: float, v: np.ndarray, c: np.ndarray, xmin: float) -> float:
    """-Σ c ln P(X = x | X >= x_min), P(X = x) = Φ(z(x)) - Φ(z(x - 1)), by scipy's CDF (moderate z only)."""
    z = stats.norm(mu, sigma)
    p = z.cdf(np.log(v)) - z.cdf(np.log(v - 1.0))
    return -float(np.dot(c, np.log(p))) + c.sum() * math.log(z.sf(math.log(xmin - 1.0)))


@pytest.mark.parametrize("top,sigma", [(300.0, 1.5), (3e5, 0.4)])  # no narrow interval / some (w < 1e-4)
def test_discrete_lognormal_nll_against_scipy_and_differences(top, sigma):
    rng = np.random.default_rng(3)
    v = np.unique(np.floor(np.exp(rng.uniform(math.log(5.0), math.log(top), 120))))
    v = np.concatenate([[5.0], v[v > 5.0]])
    c = rng.integers(1, 30, v.size).astype(np.float64)
    mu = 3.0
    narrow = -np.log1p(-1.0 / v) / sigma < dens.NARROW
    assert narrow.any() == (top > 1e4)  # the two paths are both exercised
    f, g = dens.lognormal_nll_grad(np.array([mu, math.log(sigma)]), v, c, 5.0, True)
    if not narrow.any():  # scipy's CDF difference loses digits on narrow intervals: compare where it is exact
        assert f == pytest.approx(_independent_nll(mu, sigma, v, c, 5.0), rel=1e-10)
    h = 1e-6
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        th = np.array([mu, math.log(sigma)])
        fd = (dens.lognormal_nll_grad(th + e, v, c, 5.0, True)[0] - dens.lognormal_nll_grad(th - e, v, c, 5.0, True)[0])
        assert g[k] == pytest.approx(fd / (2 * h), rel=1e-5, abs=1e-6)
    # log_interval's last array is the pmf before normalising: the same on either path, element by element
    logd = dens.log_interval(v, mu, sigma)[3]
    assert np.all(np.isfinite(logd)) and np.all(logd < 0)
    z = stats.norm(mu, sigma)
    lo, hi = np.log(v - 1.0), np.log(v)
    # the difference on the side of the median where it does not cancel
    p = np.where(lo > mu, z.sf(lo) - z.sf(hi), z.cdf(hi) - z.cdf(lo))
    ok = ~narrow & (p > 1e-280)
    assert ok.sum() > 50
    assert np.allclose(logd[ok], np.log(p[ok]), rtol=1e-10, atol=0)
