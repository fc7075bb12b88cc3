"""Growth classification on synthetic linear, saturating and accelerating store-size series."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.health import classify_growth

T = 2000


def bernoulli_store(p, seed):
    """Store size after each step when step t writes one item with probability p[t]."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.random(p.size) < p)


def steps(n=T):
    return np.arange(n, dtype=float)


def test_linear_growth_is_linear():
    t = steps()
    fits = [classify_growth(t, bernoulli_store(np.full(T, 0.3), seed)) for seed in range(40)]
    # about 5% of linear series have a significant rate trend; the effect-size floor removes most
    assert sum(g.classification == "linear" for g in fits) >= 36
    assert np.median([g.slope for g in fits]) == pytest.approx(0.3, abs=0.01)


def test_saturating_growth_is_converging():
    t = steps()
    fits = [classify_growth(t, bernoulli_store(0.8 * np.exp(-t / 500), seed)) for seed in range(40)]
    assert all(g.classification == "converging" for g in fits), [
        g.reason for g in fits if g.classification != "converging"
    ]
    assert all(g.rate_trend_ci[1] < 0 and g.final_rate < g.initial_rate for g in fits)


def test_accelerating_growth_is_accelerating():
    t = steps()
    fits = [classify_growth(t, bernoulli_store(0.05 + 0.9 * t / T, seed)) for seed in range(40)]
    assert all(g.classification == "accelerating" for g in fits), [
        g.reason for g in fits if g.classification != "accelerating"
    ]
    assert all(g.rate_trend_ci[0] > 0 and g.rate_change > 1 for g in fits)


def test_deterministic_shapes():
    t = steps(300)
    assert classify_growth(t, 3 * t).classification == "linear"
    assert classify_growth(t, np.round(100 * (1 - np.exp(-t / 60)))).classification == "converging"
    assert classify_growth(t, np.round(t**2 / 50)).classification == "accelerating"
    assert classify_growth(t, 500 - t).classification == "converging"  # a shrinking store
    assert classify_growth(t, np.full(t.size, 7)).classification == "converging"  # no growth at all


def test_irregular_times_and_the_slope():
    rng = np.random.default_rng(7)
    t = np.sort(rng.uniform(0, 1000, 400))
    g = classify_growth(t, np.round(2.0 * t), time_unit="second")
    assert g.classification == "linear" and g.slope == pytest.approx(2.0, rel=1e-3) and g.time_unit == "second"


def test_linear_growth_false_alarm_rate_is_small():
    """Under constant-rate growth the 95% interval excludes 0 about 5% of the time; with the 25%
    effect-size floor the misclassification rate must stay at or below that."""
    wrong = sum(
        classify_growth(steps(1000), bernoulli_store(np.full(1000, 0.3), s)).classification != "linear"
        for s in range(300)
    )
    assert wrong / 300 <= 0.05


def test_too_short_and_bad_arguments():
    assert classify_growth([0, 1], [0, 1]).classification == "insufficient data"
    assert classify_growth(np.arange(10.0), np.arange(10.0)).classification == "insufficient data"  # < 15 points
    with pytest.raises(UsageError, match="same length"):
        classify_growth([0, 1, 2], [0, 1])
    with pytest.raises(UsageError, match="level must be in"):
        classify_growth(steps(), steps(), level=1.5)
    with pytest.raises(UsageError, match="bins must be >= 5"):
        classify_growth(steps(), steps(), bins=3)
