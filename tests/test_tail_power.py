"""``--power``: how much more data would decide an inconclusive audit."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.tail import INCONCLUSIVE, LOGNORMAL, Histogram, Verdict, audit, sample_power_law
from ctwm_cli.tail.power import _falls, _needed, power_analysis


def _lognormal(n=5000, seed=3):
    return np.ceil(np.random.default_rng(seed).lognormal(2.0, 1.2, n))


def test_power_is_reproducible_bounded_and_rises_with_n():
    x = _lognormal()
    # without the fit check: the simulation's own power, which the check can only lower (tested below)
    a = audit(x, bootstrap=30, seed=2, jobs=1, power=12, calibrate=20, fit_check=False)
    b = audit(x, bootstrap=30, seed=2, jobs=2, power=12, calibrate=20, fit_check=False)
    assert a.verdict.verdict == INCONCLUSIVE
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    pw = a.power
    assert pw.multiples == (1, 2, 4, 8, 16) and {c.rule for c in pw.curves} == {"paper", "calibrated"}
    for c in pw.curves:
        assert all(0.0 <= p <= 1.0 for p in c.power.values())
    for c in pw.curves:
        for m in pw.multiples:
            lo, hi = c.interval[m]
            assert 0.0 <= lo <= hi <= 1.0
            if c.rule == "paper":  # a binomial share: Wilson's interval of its count
                assert (lo, hi) == wilson_interval(round(c.power[m] * 12), 12)
    assert any(hi > lo for c in pw.curves if c.rule == "calibrated" for lo, hi in c.interval.values())
    cal = {c.generator: c.power for c in pw.curves if c.rule == "calibrated"}
    # sixteen times the data separates the families far better than the observed size
    assert cal["lognormal"][16] + cal["truncated_power_law"][16] > cal["lognormal"][1] + cal["truncated_power_law"][1]


def test_no_power_analysis_for_a_decisive_verdict_or_without_a_tail():
    x = sample_power_law(2.2, 1.0, 20, np.random.default_rng(1), True)
    r = audit(x, bootstrap=0, seed=1, power=5)
    assert r.power is None  # no tail of 100 points to simulate from
    r = audit(_lognormal(), bootstrap=20, seed=1, jobs=1)
    decisive = dataclasses.replace(r, verdict=Verdict(verdict=LOGNORMAL, reason="given", rule="paper",
                                                      assumption_3_3=True))
    assert power_analysis(Histogram.from_sample(_lognormal()), decisive, replicates=5) is None


def test_needed_is_the_multiple_from_which_power_stays_above_target():
    assert _needed({1: 0.1, 2: 0.85, 4: 0.7, 8: 0.9, 16: 0.95}, 0.8) == 8
    assert _needed({1: 0.1, 2: 0.5, 4: 0.7, 8: 0.75, 16: 0.79}, 0.8) is None
    assert _needed({1: 0.9, 2: 0.95}, 0.8) == 1


def test_a_curve_falls_only_where_the_difference_is_beyond_monte_carlo_error():
    power = {1: 0.1, 2: 0.45, 4: 0.22, 8: 0.02, 16: 0.7}
    iv = {1: (0.0, 0.2), 2: (0.3, 0.6), 4: (0.1, 0.35), 8: (0.0, 0.05), 16: (0.5, 0.9)}
    # 2x -> 4x: 0.23 down, MOVER half-width hypot(0.15, 0.13) = 0.198: a fall; 4x -> 8x: 0.20 > hypot(0.12, 0.03)
    assert _falls(power, iv, (1, 2, 4, 8, 16)) == (4, 8)
    # the drop: 0.90 [0.70, 0.97] at 8x -> 0.50 [0.35, 0.70] at 16x; the intervals touch, yet the
    # difference 0.40 is beyond hypot(0.20, 0.20) = 0.28 (non-overlap, the rule before, did not name it)
    assert _falls({8: 0.9, 16: 0.5}, {8: (0.70, 0.97), 16: (0.35, 0.70)}, (8, 16)) == (16,)
    assert _falls({8: 0.9, 16: 0.75}, {8: (0.70, 0.97), 16: (0.55, 0.88)}, (8, 16)) == ()


def test_power_is_that_of_the_verdict_the_user_gets():
    """With the fit check (the default) a replicate's right call counts only when it survives the check; with
    no bootstrap the audit can never give a decisive verdict, so its power is 0 at every size (before issue
    44 the power ignored the check and said otherwise: checked, fails on the old code)."""
    x = _lognormal(n=3000, seed=5)
    unchecked = audit(x, bootstrap=0, seed=3, jobs=1, power=8, calibrate=19, fit_check=False).power
    checked = audit(x, bootstrap=0, seed=3, jobs=1, power=8, calibrate=19).power
    assert any(p > 0 for c in unchecked.curves for p in c.power.values())
    assert all(p == 0 for c in checked.curves for p in c.power.values())
    with_b = audit(x, bootstrap=20, seed=3, jobs=1, power=8, calibrate=19).power
    without = audit(x, bootstrap=20, seed=3, jobs=1, power=8, calibrate=19, fit_check=False).power
    for c, u in zip(with_b.curves, without.curves, strict=True):  # same replicates: the check only removes calls
        assert all(c.power[m] <= u.power[m] for m in c.power)


def _cell(z_tpl_rows: np.ndarray, z2: np.ndarray | None, seed: int = 4) -> dict:
    """A one-multiple cell of replicate rows (z, Λ, verdict, checks x2, second-level z): log-normal z ~ N(0, 1),
    TPL z as given, the log-normal rows' second-level z as given (None: not drawn)."""
    rng = np.random.default_rng(seed)
    z_ln = rng.normal(0.0, 1.0, 400)

    def rows(z, second=None):
        out = np.full((z.size, 6), np.nan)
        out[:, 0] = z
        if second is not None:
            out[:, 5] = second
        return out

    return {("lognormal", 1): rows(z_ln, z2), ("truncated_power_law", 1): rows(z_tpl_rows)}


def test_the_calibrated_power_needs_the_double_bootstraps_p_as_the_audit_does():
    """--power counts a calibrated TPL call only where the fast double bootstrap's p <= a too. Closed-form case:
    TPL replicates at z = 2.2 beat the log-normal's 95% point (1.64), so the raw rule calls them all; when the
    second level sits one unit lower (refits shrink z), the adjusted p is P(Z >= 2.2 - 1) = 0.115 > 0.05 and none
    is called; when the second level is distributed as the first (an exact bootstrap), nothing changes."""
    from ctwm_cli.tail.calibrate import fast_double_bootstrap
    from ctwm_cli.tail.power import _adjusted_p, _calibrated_power

    rng = np.random.default_rng(9)
    z_tpl = np.full(200, 2.2)
    raw = _calibrated_power(_cell(z_tpl, None), "truncated_power_law", 1, 0.05)
    exact = _calibrated_power(_cell(z_tpl, rng.normal(0.0, 1.0, 400)), "truncated_power_law", 1, 0.05)
    shifted = _calibrated_power(_cell(z_tpl, rng.normal(-1.0, 1.0, 400)), "truncated_power_law", 1, 0.05)
    assert raw == 1.0 and exact == 1.0 and shifted == 0.0
    z1, z2, z = rng.normal(0, 1, 300), rng.normal(-0.5, 1.2, 300), np.array([0.3, 1.7, 2.9, np.nan])
    got = _adjusted_p(z1, z2, z)
    assert np.allclose(got[:3], [fast_double_bootstrap(z1, z2, float(v)) for v in z[:3]]) and np.isnan(got[3])
