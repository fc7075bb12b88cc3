"""Score intervals: closed forms at the edges, where a Wald interval would have zero width."""

from __future__ import annotations

import math

import pytest

from ctwm_cli.stats.intervals import wilson_interval

Z = 1.96


def test_wilson_at_zero_and_all_successes_has_width():
    lo, hi = wilson_interval(0, 10, Z)
    assert lo == 0.0 and hi == pytest.approx(Z * Z / (10 + Z * Z))  # closed form at k = 0
    lo, hi = wilson_interval(10, 10, Z)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + Z * Z))


def test_wilson_is_symmetric_and_contains_the_estimate():
    lo, hi = wilson_interval(3, 20, Z)
    lo2, hi2 = wilson_interval(17, 20, Z)
    assert (lo, hi) == pytest.approx((1 - hi2, 1 - lo2))
    assert lo < 3 / 20 < hi


def test_wilson_without_observations_is_not_an_interval():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
