"""The calibrated rule's fast double bootstrap (issue 44): its p-value against a closed form, the rule that
reads it, the first level left untouched by the second, and its level and power on simulated data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail import INCONCLUSIVE, TPL, audit
from ctwm_cli.tail.calibrate import calibrated_rule, fast_double_bootstrap, replicate_rows, simulation_tasks
from ctwm_cli.tail.powerlaw import Histogram
from ctwm_cli.tail.samplers import sample_tpl_tail
from ctwm_cli.tail.verdict import Verdict


@pytest.mark.parametrize("shift,scale", [(0.0, 1.0), (-0.5, 1.0), (0.0, 0.7), (0.4, 1.3)])
@pytest.mark.parametrize("p", [0.01, 0.05, 0.2])
def test_fast_double_bootstrap_matches_its_closed_form(shift, scale, p):
    # z1 ~ N(0, 1); z2 ~ N(shift, scale): Q = shift + scale * Φ^-1(1 - p), adjusted p = P(N(0, 1) >= Q)
    seed = 44
    rng = np.random.default_rng(seed)
    z1, z2 = rng.standard_normal(400_000), shift + scale * rng.standard_normal(400_000)
    want = stats.norm.sf(shift + scale * stats.norm.isf(p))
    got = fast_double_bootstrap(z1, z2, stats.norm.isf(p))  # the observed z whose raw p is p
    assert got == pytest.approx(want, abs=0.004), (seed, shift, scale, p, got, want)
    if shift == 0.0 and scale == 1.0:  # an exact bootstrap: the correction leaves p as it is
        assert got == pytest.approx(p, abs=0.004)


def test_fast_double_bootstrap_skips_failed_replicates_and_has_no_p_without_any():
    z1 = np.array([0.1, np.nan, 1.0, 2.0, 3.0])
    z2 = np.array([np.nan, 0.5, 0.5, 0.5, 0.5])
    # Q = 0.5 at any observed z; #{z1 >= 0.5} = 3 of the 4 finite
    assert fast_double_bootstrap(z1, z2, 2.5) == pytest.approx(0.75)
    # z2 = z1 (an exact bootstrap): the adjusted p is the raw one, #{z1 >= z}/R
    z = np.arange(1.0, 11.0)
    assert fast_double_bootstrap(z, z, 8.5) == pytest.approx(0.2)
    assert math.isnan(fast_double_bootstrap(z1, np.full(5, np.nan), 2.5))
    assert math.isnan(fast_double_bootstrap(z1, z2, math.nan))


def test_the_tpl_call_needs_the_adjusted_p_too():
    ok = Verdict(verdict=INCONCLUSIVE, reason="", rule="paper", assumption_3_3=True)
    kw = dict(p_ln=0.02, p_tpl=0.9, replicates=100)
    withheld = calibrated_rule(ok, 2.6, 2.3, 0.2, 0.05, p_ln_adjusted=0.08, **kw)
    assert withheld.verdict == INCONCLUSIVE and "adjusted p = 0.080 > 0.05" in withheld.reason
    called = calibrated_rule(ok, 2.6, 2.3, 0.2, 0.05, p_ln_adjusted=0.03, **kw)
    assert called.verdict == TPL and "adjusted p = 0.030" in called.reason
    # the raw test must pass as well: a smaller adjusted p does not make a call the raw one refuses
    assert calibrated_rule(ok, 2.0, 2.3, 0.2, 0.05, p_ln=0.09, p_tpl=0.9, replicates=100,
                           p_ln_adjusted=0.01).verdict == INCONCLUSIVE


def test_the_second_level_leaves_the_first_unchanged():
    seed = 7
    x = np.ceil(np.random.default_rng(seed).lognormal(2.0, 1.0, 3000))
    r = audit(x, bootstrap=10, seed=seed, jobs=1)
    hist = Histogram.from_sample(x)
    seeds = np.random.SeedSequence(seed).spawn(6)
    one = np.concatenate([replicate_rows(t) for t in simulation_tasks(hist, r, "lognormal", seeds)])
    two = np.concatenate([replicate_rows(t) for t in simulation_tasks(hist, r, "lognormal", seeds,
                                                                       second_level=True)])
    np.testing.assert_array_equal(one[:, :3], two[:, :3])
    assert np.all(np.isnan(one[:, 5])) and np.isfinite(two[:, 5]).sum() >= 5, (seed, two[:, 5])
    assert not np.array_equal(two[:, 0], two[:, 5])  # a fresh draw from each replicate's own refit


@pytest.mark.slow
def test_calibrated_tpl_calls_on_lognormal_data_hold_the_level():
    # data from one log-normal (the law a calibration would fit): the rule's raw-and-adjusted test at
    # a = 0.2 with R = 24 ((1 + k)/25 <= 0.2: k <= 4). Under the null the rejection count is about
    # Binomial(30, <= 0.2): P(X >= 11) = 0.06 at 0.2, P(X >= 13) = 0.007; the raw test alone rejected
    # 29-35% at n = 5,000 in the first calibration-level study (9-10 of 30).
    seed0, level, rejected = 600, 0.2, 0
    for s in range(30):
        x = np.ceil(np.random.default_rng(seed0 + s).lognormal(1.0, 1.2, 2000))
        c = audit(x, bootstrap=0, seed=s, calibrate=24, level=level, jobs=1, fit_check=False).calibration
        rejected += bool(c.pvalue_lognormal <= level and c.pvalue_lognormal_adjusted <= level)
    assert rejected < 13, (seed0, rejected)


@pytest.mark.slow
def test_strongly_truncated_power_laws_are_still_called_tpl_compatible():
    # the TPL side keeps its power: TPL(1.5, λ = 0.003), n = 1e4, z far beyond the log-normal null's
    # quantile; at R = 80 the adjusted p of such a z is about 1/R, far below 0.05
    calls = []
    for s in range(3):
        x = sample_tpl_tail(1.5, 0.003, 1.0, 10_000, np.random.default_rng(900 + s), True)
        r = audit(x, bootstrap=0, seed=s, calibrate=80, jobs=1, fit_check=False)
        calls.append(r.calibration.verdict)
    assert sum(c.verdict == TPL for c in calls) >= 2, [c.reason for c in calls]
