"""``--uncertainty``: nonparametric bootstrap of the whole fit, and Hessian SEs of the TPL and log-normal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail import REGISTRY, Histogram, Tail, audit, fit_power_law, sample_power_law
from ctwm_cli.tail.samplers import sample_lognormal_tail, sample_tpl_tail


def _pl_with_body(seed, n_tail=3000, body=1500):
    rng = np.random.default_rng(seed)
    return np.concatenate([sample_power_law(2.5, 5.0, n_tail, rng, True), rng.integers(1, 5, body).astype(float)])


def test_uncertainty_is_reproducible_and_independent_of_jobs():
    x = _pl_with_body(1)
    a = audit(x, bootstrap=0, uncertainty=60, seed=3, jobs=1).to_dict()
    b = audit(x, bootstrap=0, uncertainty=60, seed=3, jobs=2).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    u = a["uncertainty"]
    assert u["replicates"] == 60
    assert u["interval"]["alpha"]["low"] < a["power_law"]["alpha"] < u["interval"]["alpha"]["high"]


def test_agrees_with_brute_force_resampling_of_the_raw_values():
    # the same bootstrap written the slow way: n draws with replacement from the raw sample, full re-fit
    x = _pl_with_body(2)
    r = audit(x, bootstrap=0, uncertainty=300, seed=5, jobs=1)
    rng = np.random.default_rng(99)
    alphas, xmins = [], []
    for _ in range(300):
        f = fit_power_law(Histogram.from_sample(rng.choice(x, x.size)), min_tail=10)
        alphas.append(f.alpha)
        xmins.append(f.xmin)
    u = r.uncertainty
    # the same law: x_min jumps between cutoffs, so compare whole distributions, not one moment
    assert stats.ks_2samp(u.draws["alpha"], alphas).pvalue > 1e-3
    assert stats.ks_2samp(u.draws["xmin"], xmins).pvalue > 1e-3
    assert u.interval["alpha"].low == pytest.approx(np.quantile(alphas, 0.025), abs=u.se["alpha"])
    assert u.interval["alpha"].high == pytest.approx(np.quantile(alphas, 0.975), abs=u.se["alpha"])


def test_a_quantity_that_never_moves_gets_no_zero_width_interval():
    x = sample_power_law(2.5, 1.0, 2000, np.random.default_rng(1), True)
    u = audit(x, bootstrap=0, uncertainty=40, seed=1, jobs=1).uncertainty
    assert "xmin" in u.constant and u.interval["xmin"] is None and u.se["xmin"] == 0.0
    assert u.interval["alpha"] is not None and u.interval["alpha"].high > u.interval["alpha"].low


def test_no_zero_width_interval_when_most_replicates_agree():
    """Small samples: x_min = 1 in most but not all replicates, so the 2.5% and 97.5% quantiles coincide
    (issue 26 saw [1, 1] printed in 70 of 200 sets at n = 100). Such an interval is not formed."""
    seen_partial = False
    for seed in range(6):
        x = sample_power_law(2.2, 1.0, 100, np.random.default_rng([26, seed]), True)
        u = audit(x, bootstrap=0, uncertainty=100, seed=seed, jobs=1, min_tail=10).uncertainty
        for q, iv in u.interval.items():
            assert iv is None or iv.low < iv.high, (seed, q, iv)
            seen_partial |= iv is None and q not in u.constant
    assert seen_partial  # the case the fix is for did occur


@pytest.mark.parametrize("name,params,sampler", [
    ("lognormal", {"mu": 2.0, "sigma": 1.0},
     lambda p, rng: sample_lognormal_tail(p["mu"], p["sigma"], 3.0, 4000, rng, True)),
    ("truncated_power_law", {"alpha": 1.7, "lambda": 0.01},
     lambda p, rng: sample_tpl_tail(p["alpha"], p["lambda"], 3.0, 4000, rng, True)),
])
def test_hessian_standard_errors_match_the_spread_over_seeds(name, params, sampler):
    est, ses = {k: [] for k in params}, {k: [] for k in params}
    for s in range(30):
        v, c = np.unique(sampler(params, np.random.default_rng(700 + s)), return_counts=True)
        tail = Tail(values=v, counts=c.astype(float), xmin=3.0, discrete=True)
        f = REGISTRY[name].fit(tail, reference=REGISTRY["power_law"].fit(tail))
        assert f.converged
        for k in params:
            est[k].append(f.params[k])
            ses[k].append(f.se[k])
    for k in params:
        assert 0.7 < np.std(est[k], ddof=1) / np.mean(ses[k]) < 1.45, k
        assert abs(np.mean(est[k]) - params[k]) < 3 * np.mean(ses[k]) / np.sqrt(30) + 0.02 * abs(params[k]), k


@pytest.mark.slow
def test_percentile_intervals_cover_the_true_alpha():
    # 200 power-law sets (α = 2.5, x_min = 1, n = 1,000), x_min re-selected in every replicate
    hits = 0
    for s in range(200):
        x = sample_power_law(2.5, 1.0, 1000, np.random.default_rng(3000 + s), True)
        u = audit(x, bootstrap=0, uncertainty=100, seed=s, jobs=1).uncertainty
        hits += u.interval["alpha"].low <= 2.5 <= u.interval["alpha"].high
    assert hits / 200 >= 0.90


def _short_tail(seed, n=2000, share=0.085, mu=1.3):
    """A log-normal body below 50 and ~170 points of a power law α = 2.5 above it (docs/method.md, "Short tails")."""
    rng = np.random.default_rng([26, 4, seed])
    n_tail = int(rng.binomial(n, share))
    body = np.ceil(rng.lognormal(mu, 1.0, 4 * n))
    return np.concatenate([body[body < 50][: n - n_tail], sample_power_law(2.5, 50.0, n_tail, rng, True)])


@pytest.mark.parametrize("discrete", [True, False])
def test_the_band_kernel_equals_a_fit_at_every_cutoff(discrete):
    from scipy.special import kolmogi

    from ctwm_cli.tail.powerlaw import accepted_cutoffs

    x = _short_tail(1)
    if not discrete:
        x = x + np.random.default_rng(2).random(x.size)  # real-valued
    h = Histogram.from_sample(x)
    crit = float(kolmogi(0.05))
    xs, alphas, ses = accepted_cutoffs(h.values, h.counts.astype(float), 100.0, discrete, 0, h.values.size, crit)
    want = []
    for v in h.values[:-1]:
        f = fit_power_law(h, xmin=v, discrete=discrete, min_tail=1)
        if f is not None and f.n_tail >= 100 and np.sqrt(f.n_tail) * f.ks < crit:
            want.append((f.xmin, f.alpha, f.alpha_se))
    assert len(want) > 5 and len(want) < (h.counts[::-1].cumsum() >= 100).sum()  # some cutoffs are rejected
    np.testing.assert_allclose(np.column_stack([xs, alphas, ses]), np.array(want), rtol=1e-10)


def test_the_band_holds_the_percentile_interval_and_is_absent_for_a_fixed_xmin():
    x = _short_tail(3)
    u = audit(x, bootstrap=0, uncertainty=60, seed=3, jobs=1).uncertainty
    b, iv = u.alpha_band, u.interval["alpha"]
    assert b.low <= iv.low and b.high >= iv.high and b.cutoffs > 0
    assert b.xmin_low <= np.nanmin(u.draws["xmin"]) and b.xmin_high >= np.nanmax(u.draws["xmin"])
    fixed = audit(x, bootstrap=0, uncertainty=30, seed=3, jobs=1, xmin=50).uncertainty
    assert fixed.alpha_band is None and json.loads(json.dumps(fixed.to_dict()))["alpha_band"] is None


@pytest.mark.slow
def test_the_band_covers_alpha_when_a_short_tail_pulls_xmin_low():
    """The regime of issue 26: x_min lands in the body in about half the sets, the percentile interval
    covers α ≈ 77% of the time (benchmarks/short_tail_study.py), the band at least 90%."""
    band = pct = 0
    sets = 60
    for s in range(sets):
        u = audit(_short_tail(s), bootstrap=0, uncertainty=80, seed=s, jobs=1).uncertainty
        band += u.alpha_band.low <= 2.5 <= u.alpha_band.high
        pct += u.interval["alpha"].low <= 2.5 <= u.interval["alpha"].high
    assert band / sets >= 0.90
    assert pct / sets < 0.90  # the regime is the one where the percentile interval alone misses
