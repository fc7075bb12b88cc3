"""τ sweeps: rows, monotonicity checks and their honest labels, START:STOP:N parsing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.allocation import allocate, parse_sweep, tau_sweep
from ctwm_cli.common.errors import UsageError


def test_parse_sweep_inclusive_linspace():
    taus = parse_sweep("0.25:2.0:7")
    assert len(taus) == 7 and taus[0] == 0.25 and taus[-1] == 2.0
    np.testing.assert_allclose(np.diff(taus), 0.29166666666666663)


@pytest.mark.parametrize(
    ("spec", "match"),
    [("0.25:2.0", "START:STOP:N"), ("a:2:3", "numbers"), ("0:2:3", "START"), ("-1:2:3", "START"),
     ("2:1:3", "STOP"), ("1:2:1", "N must be >= 2"), ("1:2:2.5", "integer"), ("1:inf:3", "START")],
)
def test_parse_sweep_errors(spec, match):
    with pytest.raises(UsageError, match=match) as exc:
        parse_sweep(spec)
    assert str(exc.value).startswith("sweep") and exc.value.params == ("sweep",)


def test_paper_sweep_all_metrics_increase():
    sw = tau_sweep(1000, parse_sweep("0.25:2.0:7"), core=10, budget=512)
    assert [r.tau for r in sw.rows] == list(sw.taus)
    assert sw.rows[0].check == "–"
    assert all(r.check == "ok" for r in sw.rows[1:])
    assert all(c.increasing for c in sw.checks)
    labels = {c.metric: c.basis for c in sw.checks}
    assert labels["core_mass"].startswith("guaranteed") and "A.4" in labels["core_mass"]
    assert labels["gini"].startswith("guaranteed")
    assert labels["max_over_median"].startswith("guaranteed") and "A.3" in labels["max_over_median"]
    assert labels["skewness"].startswith("observed")
    for r in sw.rows:
        a = allocate(1000, r.tau, core=10, budget=512)
        assert r.core_mass == a.core_mass and r.gini == a.gini and r.tail_slots == a.tail_slots


def test_taus_are_sorted_and_deduplicated():
    sw = tau_sweep(50, [2.0, 0.5, 1.0, 0.5], core=3, budget=20)
    assert sw.taus == (0.5, 1.0, 2.0)


def test_skew_of_two_items_is_flat_and_labelled_observed():
    # M = 2: the skewness of two values is 0 for every τ, so it cannot increase; no theorem is violated
    sw = tau_sweep(2, [0.5, 1.0, 2.0], core=1, budget=4)
    skewness = next(c for c in sw.checks if c.metric == "skewness")
    assert not skewness.increasing and skewness.basis.startswith("observed")
    assert "allowed" in skewness.note or "flat" in skewness.note
    assert sw.all_guaranteed_hold
    assert "skewness" in sw.rows[1].check


@given(m=st.integers(2, 400), data=st.data())
@settings(max_examples=40, deadline=None)
def test_guaranteed_checks_hold(m, data):
    k = data.draw(st.integers(1, m - 1))
    taus = data.draw(st.lists(st.floats(0.05, 6.0), min_size=2, max_size=6, unique=True))
    taus = sorted(taus)
    # keep steps resolvable in float64
    if min(np.diff(taus)) < 1e-3:
        taus = list(np.linspace(taus[0], taus[0] + 1.0, 4))
    sw = tau_sweep(m, taus, core=k, budget=64)
    assert sw.all_guaranteed_hold, [c for c in sw.checks if not c.increasing]


@given(m=st.integers(2, 300), tau=st.floats(0.05, 5.0))
@settings(max_examples=50, deadline=None)
def test_gini_equals_sum_of_core_masses(m, tau):
    # the identity behind the Gini guarantee: G = (2 Σ_{k<M} C(k, τ) - (M - 1)) / M
    b = allocate(m, tau, core=1, budget=1)
    c = np.cumsum(b.shares)[:-1]
    assert b.gini == pytest.approx((2 * c.sum() - (m - 1)) / m, abs=1e-10)


def test_validation_messages_name_parameters():
    with pytest.raises(UsageError, match="core"):
        tau_sweep(10, [1.0, 2.0], core=10, budget=5)
    with pytest.raises(UsageError, match="taus"):
        tau_sweep(10, [], core=2, budget=5)
    with pytest.raises(UsageError, match="taus"):
        tau_sweep(10, [1.0, -2.0], core=2, budget=5)
    with pytest.raises(UsageError, match="budget"):
        tau_sweep(10, [1.0, 2.0], core=2, budget=0)


def test_to_dict_json_safe():
    import json

    d = tau_sweep(100, [0.5, 1.0], core=5, budget=10).to_dict()
    json.dumps(d, allow_nan=False)
    assert len(d["results"]) == 2 and len(d["checks"]) == 4
