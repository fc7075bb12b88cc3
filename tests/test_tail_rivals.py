"""A decisive verdict beats every rival family of as many or fewer parameters (issue 44)."""

from __future__ import annotations

import math

import numpy as np

from ctwm_cli.tail import audit
from ctwm_cli.tail import families as F
from ctwm_cli.tail.verdict import INCONCLUSIVE, LOGNORMAL, TPL, Verdict, fit_checked


def _v(word):
    return Verdict(verdict=word, reason="r", rule="paper", assumption_3_3=True)


def test_rivals_are_the_families_of_no_more_parameters_not_contained():
    assert F.rivals("truncated_power_law") == ("lognormal", "stretched_exponential")
    assert F.rivals("lognormal") == ("truncated_power_law", "exponential", "stretched_exponential")
    pairs = F.vuong_pairs()
    for name in F.RULE_PAIR:  # every pair a verdict reads is compared, one way round
        for r in F.rivals(name):
            assert ((name, r) in pairs) != ((r, name) in pairs)


def test_fit_checked_needs_every_rival_beaten_by_z_star():
    ok = {"truncated_power_law": 0.5}
    beaten = fit_checked(_v(TPL), ok, 0.05, 2.5, rival_z={"truncated_power_law": {"stretched_exponential": 2.2}})
    assert beaten.verdict == TPL and "stretched_exponential" in beaten.reason
    short = fit_checked(_v(TPL), ok, 0.05, 2.5, rival_z={"truncated_power_law": {"stretched_exponential": 1.3}})
    assert short.verdict == INCONCLUSIVE
    assert "does not exclude the stretched_exponential (z = 1.30 < 1.96)" in short.reason
    worse = fit_checked(_v(LOGNORMAL), {"lognormal": 0.5}, 0.05, -2.5,
                        rival_z={"lognormal": {"exponential": 5.0, "stretched_exponential": -0.4}})
    assert worse.verdict == INCONCLUSIVE and worse.reason.endswith(
        "does not exclude the stretched_exponential (z = -0.40 < 1.96)")
    failed = fit_checked(_v(TPL), ok, 0.05, 2.5, rival_z={"truncated_power_law": {"stretched_exponential": math.nan}})
    assert failed.verdict == INCONCLUSIVE and "not compared" in failed.reason


def test_a_stretched_exponential_sample_the_tpl_fits_is_not_tpl_compatible():
    """ceil(50·Weibull(0.7)), n = 5,000: the TPL beats the log-normal (z = 2.00), passes p_gof and its own
    fit check, so main's rule said tpl-compatible (checked: fails on the code before issue 44); the
    stretched exponential, the family the data come from, is not excluded (z_TPL,SE = 1.31)."""
    x = np.ceil(50 * np.random.default_rng(0).weibull(0.7, 5000))
    r = audit(x, bootstrap=50, seed=0, jobs=1)
    assert r.z >= 1.96 and r.fit_checks["truncated_power_law"].pvalue >= 0.05 and r.p_gof >= 0.1
    assert r.verdict.verdict == INCONCLUSIVE
    assert "does not exclude the stretched_exponential" in r.verdict.reason
    pair = next(c for c in r.to_dict()["comparisons"]
                if (c["first"], c["second"]) == ("truncated_power_law", "stretched_exponential"))
    assert {"statistic", "sigma", "z", "pvalue", "log_pvalue"} <= set(pair) and 0 < pair["z"] < 1.96
    # the same audit without the fit check is Definition 3.4 as published: no rival is asked for
    assert audit(x, bootstrap=50, seed=0, jobs=1, fit_check=False).verdict.verdict == TPL


def test_a_stretched_exponential_at_its_power_law_limit_is_no_rival():
    """At β = 0 the stretched exponential is a power law, which the TPL and the log-normal contain."""
    from ctwm_cli.tail.matrix import rival_z

    x = np.random.default_rng(2).zipf(2.2, 4000)
    r = audit(x, bootstrap=0, seed=1)
    fits = dict(r.alternatives)
    se = fits["stretched_exponential"]
    assert "stretched_exponential" in rival_z(fits, r.comparisons)["truncated_power_law"] or se.limit is not None
    import dataclasses

    fits["stretched_exponential"] = dataclasses.replace(se, limit="power_law", at_bound={"beta": 0.0})
    zs = rival_z(fits, r.comparisons)
    assert "stretched_exponential" not in zs["truncated_power_law"] and "stretched_exponential" not in zs["lognormal"]
    assert "exponential" in zs["lognormal"]  # the exponential is no power law: still a rival of the log-normal
    # the rule decides between its own pair (the calibrated rule by its simulated thresholds, not by z*)
    assert "lognormal" not in zs["truncated_power_law"] and "truncated_power_law" not in zs["lognormal"]
