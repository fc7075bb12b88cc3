"""``--xmax``: the doubly truncated power law on [x_min, x_max]."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctwm_cli.tail import INCONCLUSIVE, Histogram, audit, fit_power_law, sample_power_law
from ctwm_cli.tail.truncated import _log_norm, fit_doubly_truncated


@pytest.mark.parametrize("alpha", [-1.0, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("xmin,xmax", [(1.0, 50.0), (7.0, 30_000.0)])
def test_discrete_normaliser_is_the_finite_sum(alpha, xmin, xmax):
    x = np.arange(xmin, xmax + 1.0)
    assert _log_norm(alpha, xmin, xmax, True) == pytest.approx(math.log(np.sum(x**-alpha)), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("discrete", [True, False])
def test_a_far_upper_cutoff_gives_the_open_ended_fit(discrete):
    y = sample_power_law(2.5, 3.0, 5000, np.random.default_rng(1), True)
    h = Histogram.from_sample(y)
    a = fit_doubly_truncated(h, xmax=1e12, xmin=3.0, discrete=discrete)
    b = fit_power_law(h, xmin=3.0, discrete=discrete)
    assert a.alpha == pytest.approx(b.alpha, abs=1e-6) and a.ks == pytest.approx(b.ks, abs=1e-6)
    assert a.loglik == pytest.approx(b.loglik, rel=1e-9) and a.alpha_se == pytest.approx(b.alpha_se, rel=1e-3)
    scanned = fit_doubly_truncated(h, xmax=1e12, min_tail=100)
    assert scanned.xmin == fit_power_law(h, min_tail=100).xmin


def test_truncated_data_need_the_truncated_fit():
    rng = np.random.default_rng(2)
    x = sample_power_law(1.7, 5.0, 40_000, rng, True)
    x = x[x <= 300]
    h = Histogram.from_sample(x)
    trunc = fit_doubly_truncated(h, xmax=300.0, xmin=5.0)
    open_ended = fit_power_law(h, xmin=5.0)
    assert abs(trunc.alpha - 1.7) < 3 * trunc.alpha_se
    assert open_ended.alpha - 1.7 > 10 * trunc.alpha_se  # ignoring the cutoff steepens α
    assert trunc.xmax == 300.0


def test_audit_with_xmax_says_what_it_supports():
    x = np.concatenate([sample_power_law(2.0, 1.0, 3000, np.random.default_rng(3), True), [1e6, 2e6]])
    r = audit(x, xmax=1000.0, seed=1)
    assert r.power_law.xmax == 1000.0 and r.gof is None and not r.alternatives
    assert r.verdict.verdict == INCONCLUSIVE and "doubly truncated" in r.verdict.reason
    assert f"{int((x > 1000).sum())} observations above x_max" in r.verdict.reason
    with pytest.raises(ValueError, match="xmax supports only"):
        audit(x, xmax=1000.0, uncertainty=10)
    with pytest.raises(ValueError, match="xmax must be"):
        audit(x, xmax=5.0, xmin=10.0)
