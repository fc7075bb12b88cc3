"""Each family's own bootstrap goodness of fit (tail/fitcheck.py) and the rule that uses it (issue 26)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail import audit
from ctwm_cli.tail import families as fam
from ctwm_cli.tail.fitcheck import check_result, check_tasks, replicate_family_ks
from ctwm_cli.tail.powerlaw import Histogram, fit_power_law
from ctwm_cli.tail.verdict import INCONCLUSIVE, LOGNORMAL, TPL, Verdict, fit_checked


def _mixture(seed: int, n: int = 20_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.2, rng.zipf(2.0, n), rng.zipf(3.5, n)).astype(float)


@pytest.mark.parametrize("discrete", [True, False])
def test_ks_distance_of_the_power_law_is_the_scans_own(discrete):
    """The generic KS (numpy, from each family's sf) against the numba scan's KS at its cutoff."""
    rng = np.random.default_rng(3)
    x = np.ceil(rng.pareto(1.2, 5000) + 1) if discrete else rng.pareto(1.2, 5000) + 1
    h = Histogram.from_sample(x)
    pl = fit_power_law(h, discrete=discrete, min_tail=50)
    tail = fam.Tail.of(h, pl.xmin, discrete)
    assert fam.ks_distance(pl, tail) == pytest.approx(pl.ks, rel=1e-9, abs=1e-13)


def test_continuous_lognormal_ks_matches_scipy_kstest():
    rng = np.random.default_rng(5)
    x = rng.lognormal(1.0, 0.9, 3000)
    xmin = 2.5
    tail_x = x[x >= xmin]
    h = Histogram.from_sample(x)
    tail = fam.Tail.of(h, xmin, False)
    params = {"mu": 1.1, "sigma": 0.8}
    fit = fam.TailFit(family="lognormal", discrete=False, xmin=xmin, n_tail=tail_x.size, params=params,
                      loglik=0.0, converged=True, at_bound={})
    ln = stats.lognorm(s=0.8, scale=math.exp(1.1))
    ref = stats.kstest(tail_x, lambda t: (ln.cdf(t) - ln.cdf(xmin)) / ln.sf(xmin)).statistic
    assert fam.ks_distance(fit, tail) == pytest.approx(ref, rel=1e-9)


PARAMS = {
    "power_law": {"alpha": 2.3},
    "truncated_power_law": {"alpha": 1.6, "lambda": 0.002},
    "lognormal": {"mu": 1.5, "sigma": 1.3},
    "exponential": {"lambda": 0.05},
    "stretched_exponential": {"kappa": 0.8, "beta": 0.4, "lambda": 2.0},
    "power_law_mixture": {"alpha1": 1.9, "alpha2": 3.2, "weight": 0.3},
}


@pytest.mark.parametrize("name", list(PARAMS))
def test_discrete_sf_is_one_minus_the_summed_masses(name):
    """Each family's sf agrees with its own logpmf summed on the integers (two separate code paths);
    x up to 5,000 also crosses the TPL's switch from direct sums to its Euler–Maclaurin remainder."""
    f, xmin = fam.REGISTRY[name], 3.0
    grid = np.arange(xmin, 200_000.0)
    pmf = np.exp(f.logpmf(grid, PARAMS[name], xmin, True))
    at = np.array([3.0, 4.0, 10.0, 77.0, 2050.0, 2051.0, 2052.0, 5000.0])
    expected = 1.0 - np.concatenate([[0.0], np.cumsum(pmf)])[(at - xmin).astype(int)]
    assert f.sf(at, PARAMS[name], xmin, True) == pytest.approx(expected, abs=2e-6 if name == "power_law" else 1e-9)


def test_replicates_do_not_depend_on_chunking_and_draw_from_the_fit():
    h = Histogram.from_sample(np.ceil(np.random.default_rng(1).lognormal(2.0, 1.0, 3000)))
    pl = fit_power_law(h, min_tail=10)
    tail = fam.Tail.of(h, pl.xmin, True)
    ln = fam.REGISTRY["lognormal"].fit(tail, reference=pl)
    tasks = check_tasks(tail, ln, replicates=60, seed=9)
    rows = [replicate_family_ks(t) for t in tasks]
    again = replicate_family_ks(check_tasks(tail, ln, replicates=60, seed=9)[1])
    np.testing.assert_array_equal(rows[1], again)
    g = check_result(ln, tail, rows, 60)
    assert g.failed == 0 and g.replicates == 60 and 1 / 61 <= g.pvalue <= 1
    assert g.statistic == fam.ks_distance(ln, tail)


def test_the_mixture_of_two_zipfs_is_not_called_lognormal():
    """The issue's case: the log-normal wins Λ against the TPL but fails its own fit."""
    x = _mixture(1)
    unchecked = audit(x, seed=3, bootstrap=99, jobs=1, fit_check=False)
    checked = audit(x, seed=3, bootstrap=99, jobs=1)
    assert unchecked.verdict.verdict == LOGNORMAL and unchecked.verdict.rule == "paper"
    assert checked.verdict.verdict == INCONCLUSIVE and checked.verdict.rule == "paper+fit-check"
    assert "log-normal preferred over TPL" in checked.verdict.reason and "rejected itself" in checked.verdict.reason
    assert checked.fit_checks["lognormal"].pvalue == pytest.approx(1 / 100)
    # the check has a stream of its own: p_gof and everything else seeded stay as they were
    assert checked.gof.pvalue == unchecked.gof.pvalue
    # --no-fit-check skips the checks' bootstraps (no decision reads them, issue 48) and says so in the JSON
    assert unchecked.fit_checks is None and unchecked.to_dict()["settings"]["fit_check"] is False
    assert unchecked.to_dict()["fit_checks"] is None
    # --check-all-families still asks for them: the same p-values, from the same streams
    every = audit(x, seed=3, bootstrap=99, jobs=1, fit_check=False, check_all_families=True)
    assert every.fit_checks["lognormal"].pvalue == checked.fit_checks["lognormal"].pvalue
    assert every.verdict == unchecked.verdict


def test_fit_checks_are_the_same_for_any_number_of_jobs():
    x = np.ceil(np.random.default_rng(4).lognormal(2.0, 1.2, 4000))
    a = audit(x, seed=11, bootstrap=60, jobs=1)
    b = audit(x, seed=11, bootstrap=60, jobs=2)
    assert a.to_dict() == b.to_dict()
    assert set(a.fit_checks) == set(fam.RULE_PAIR)
    every = audit(x, seed=11, bootstrap=20, jobs=1, check_all_families=True)
    assert set(every.fit_checks) == set(fam.ALTERNATIVES)
    # a family's check does not depend on which others are checked (streams by family)
    assert every.fit_checks["lognormal"].pvalue == audit(x, seed=11, bootstrap=20,
                                                         jobs=1).fit_checks["lognormal"].pvalue


def test_no_bootstrap_leaves_no_decisive_verdict():
    x = np.ceil(np.random.default_rng(2).lognormal(2.0, 1.2, 20_000))
    r = audit(x, seed=1, bootstrap=0)
    assert r.fit_checks is None and r.verdict.verdict == INCONCLUSIVE
    assert audit(x, seed=1, bootstrap=0, fit_check=False).verdict.rule == "paper"


def _v(verdict):
    return Verdict(verdict=verdict, reason="x", rule="paper", assumption_3_3=True)


def test_fit_checked_rule():
    ok = fit_checked(_v(LOGNORMAL), {"lognormal": 0.2}, 0.05, -3.3)
    assert ok.verdict == LOGNORMAL and ok.rule == "paper+fit-check" and "p_gof_lognormal = 0.200" in ok.reason
    bad = fit_checked(_v(LOGNORMAL), {"lognormal": 0.01, "truncated_power_law": 0.9}, 0.05, -3.3)
    assert bad.verdict == INCONCLUSIVE
    assert bad.reason == "log-normal preferred over TPL (z = -3.30) but rejected itself: p_gof_lognormal = 0.010 < 0.05"
    tpl = fit_checked(_v(TPL), {"truncated_power_law": 0.04}, 0.05, 2.5)
    assert tpl.verdict == INCONCLUSIVE and tpl.reason.startswith("TPL preferred over log-normal (z = 2.50)")
    assert fit_checked(_v(TPL), {"truncated_power_law": 0.05}, 0.05, 2.5).verdict == TPL  # p >= level passes
    assert fit_checked(_v(INCONCLUSIVE), {}, 0.05, 0.1).verdict == INCONCLUSIVE


@pytest.mark.slow
def test_check_is_uniform_when_the_family_is_right():
    """Size: log-normal tails at a fixed cutoff, the log-normal checked with B = 39; its p-values must be
    roughly uniform (a KS test of uniformity on 120 p-values, discretised at 1/40)."""
    ps = []
    ln = fam.REGISTRY["lognormal"]
    for s in range(120):
        rng = np.random.default_rng([26, s])
        x = ln.sample({"mu": 2.0, "sigma": 1.2}, 5.0, 800, rng, True)
        h = Histogram.from_sample(x)
        pl = fit_power_law(h, xmin=5.0)
        tail = fam.Tail.of(h, 5.0, True)
        f = ln.fit(tail, reference=pl)
        ps.append(check_result(f, tail, [replicate_family_ks(t) for t in check_tasks(tail, f, replicates=39, seed=s)],
                               39).pvalue)
    ps = np.array(ps)
    assert np.mean(ps <= 0.05) < 0.13  # nominal 0.05 (1/40 + ... at B = 39: 2/40); Wilson upper bound at 120
    assert stats.kstest(ps, "uniform").pvalue > 0.001


def test_a_tail_too_short_for_any_verdict_skips_the_checks_and_says_why():
    """Assumption 3.3 fails (n_tail < min_tail): the verdict is inconclusive whatever a check says, so the checks
    are not run (issue 48) and the JSON says why; with check_all_families they run, the verdict the same."""
    x = np.random.default_rng(8).zipf(2.0, 150).astype(float)
    short = audit(x, seed=1, bootstrap=20, jobs=1, xmin=3)
    assert short.n_tail < 100 and short.fit_checks is None
    assert "Assumption 3.3 fails" in short.to_dict()["fit_checks_skipped"]
    every = audit(x, seed=1, bootstrap=20, jobs=1, xmin=3, check_all_families=True)
    assert every.fit_checks and every.fit_checks_skipped is None
    assert every.verdict == short.verdict and every.gof.pvalue == short.gof.pvalue
    long_enough = audit(np.random.default_rng(8).zipf(2.0, 3000).astype(float), seed=1, bootstrap=20, jobs=1)
    assert long_enough.n_tail >= 100 and set(long_enough.fit_checks) == {"truncated_power_law", "lognormal"}
