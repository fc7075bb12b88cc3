"""Do a trace's groups share one law? The permutation LR test of tail/heterogeneity.py (issue 26, 2b)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import optimize, stats

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import across_groups, audit, heterogeneity_test


def _continuous(alpha, xmin, n, rng):
    return xmin * np.exp(rng.exponential(1 / (alpha - 1), n))


def test_the_statistic_is_the_likelihood_ratio_computed_independently():
    rng = np.random.default_rng(3)
    groups = [_continuous(2.2, 1.0, 400, rng), _continuous(2.6, 1.0, 300, rng), _continuous(2.4, 1.0, 500, rng)]
    h = heterogeneity_test(groups, ["a", "b", "c"], xmin=1.0, discrete=False, permutations=20, seed=1)

    def ll(a, x):  # the continuous power-law density above x_min = 1, maximised numerically
        return np.sum(stats.pareto.logpdf(x, a - 1))

    def best(x):
        return -optimize.minimize_scalar(lambda a: -ll(a, x), bounds=(1.01, 6), method="bounded",
                                         options={"xatol": 1e-10}).fun

    want = 2 * (sum(best(g) for g in groups) - best(np.concatenate(groups)))
    assert h.statistic == pytest.approx(want, rel=1e-6)
    assert h.chi2_pvalue == pytest.approx(stats.chi2.sf(want, 2), rel=1e-5)
    assert h.n_tail == (400, 300, 500) and h.groups == ("a", "b", "c")


def test_discrete_groups_with_different_exponents_are_told_apart_and_equal_ones_are_not():
    rng = np.random.default_rng(4)
    mixed = heterogeneity_test([rng.zipf(2.0, 2000), rng.zipf(3.5, 2000)], ["x", "y"], xmin=1, permutations=199)
    assert mixed.heterogeneous and mixed.pvalue == pytest.approx(1 / 200)
    assert mixed.alpha[0] < 2.2 < 3.3 < mixed.alpha[1]
    same = heterogeneity_test([rng.zipf(2.0, 2000), rng.zipf(2.0, 2000)], ["x", "y"], xmin=1, permutations=199)
    assert same.statistic >= 0.0 and same.pvalue > 0.01


def test_small_groups_are_left_out_by_name_and_one_group_is_no_test():
    rng = np.random.default_rng(5)
    h = heterogeneity_test([rng.zipf(2.0, 500), rng.zipf(2.0, 500), np.array([1, 1, 2])], ["a", "b", "tiny"],
                           xmin=1, permutations=19)
    assert h.groups == ("a", "b") and h.excluded == ("tiny",)
    assert heterogeneity_test([rng.zipf(2.0, 500), np.array([1, 2])], ["a", "b"], xmin=1) is None


def test_the_pooled_audit_carries_the_test_reproducibly_from_its_seed():
    rng = np.random.default_rng(6)
    groups = [rng.zipf(2.0, 4000).astype(float), rng.zipf(3.5, 16000).astype(float)]  # issue 26's mixture
    pooled = audit(np.concatenate(groups), bootstrap=0, seed=11)
    a = across_groups(pooled, groups, labels=["agent-1", "agent-2"], permutations=99)
    b = across_groups(pooled, groups, labels=["agent-1", "agent-2"], permutations=99)
    assert a.heterogeneity.heterogeneous and a.heterogeneity.xmin == pooled.power_law.xmin
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert "mixes laws" in a.heterogeneity.summary()
    assert pooled.heterogeneity is None and a.to_dict()["heterogeneity"]["seed"] == 11


@pytest.mark.slow
def test_the_false_alarm_rate_is_the_level_when_groups_share_a_law():
    """Three groups from one discrete power law (α 2.2) above a log-normal-ish body: the permutation test
    is exact under exchangeability, so its size is at most the level; the χ² p-value is only asymptotic."""
    sets, alarms = 300, 0
    for s in range(sets):
        rng = np.random.default_rng([26, 2, s])
        groups = [np.where(rng.random(600) < 0.5, np.ceil(rng.lognormal(0.5, 0.6, 600)), rng.zipf(2.2, 600))
                  for _ in range(3)]
        h = heterogeneity_test(groups, ["a", "b", "c"], xmin=2, permutations=99, seed=s)
        alarms += h.pvalue < 0.05
    lo, hi = wilson_interval(alarms, sets)
    assert lo <= 0.05 and hi >= 0.02, (alarms, lo, hi)  # near the level, not far below it either
