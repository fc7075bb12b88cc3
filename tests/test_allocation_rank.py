"""Allocation vector b(r; τ) (Definition A.1) and Propositions A.2–A.6, Theorem A.4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ctwm_cli.allocation import allocate, concentration, rank_shares
from ctwm_cli.allocation.rank import log_weights, logsumexp
from ctwm_cli.common.errors import UsageError

taus = st.floats(min_value=0.01, max_value=10.0, allow_nan=False)
sizes = st.integers(min_value=2, max_value=3000)


def direct_shares(m: int, tau: float) -> np.ndarray:
    """Independent, naive implementation of Definition A.1 (fine for small M and moderate τ)."""
    w = np.array([r ** (-tau) for r in range(1, m + 1)], dtype=np.float64)
    return w / math.fsum(w)


def brute_gini(x: np.ndarray) -> float:
    """Mean absolute difference / (2·mean), O(M²)."""
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * x.size**2 * x.mean()))


# --- closed forms --------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [0.01, 0.5, 1.0, 2.0, 10.0])
def test_two_items_closed_form(tau):
    a = allocate(2, tau, core=1, budget=7)
    assert a.shares[0] == pytest.approx(1 / (1 + 2**-tau), rel=1e-14)
    assert a.shares[1] == pytest.approx(2**-tau / (1 + 2**-tau), rel=1e-14)
    assert a.core_mass == pytest.approx(1 / (1 + 2**-tau), rel=1e-14)
    # Gini of two values x1 > x2 with sum 1: |x1 - x2| / 2
    assert a.gini == pytest.approx((a.shares[0] - a.shares[1]) / 2, rel=1e-12)
    assert a.max_over_median == pytest.approx(2 / (1 + 2**-tau), rel=1e-12)
    assert a.skewness == pytest.approx(0.0, abs=1e-9)


def test_three_items_tau_one():
    a = allocate(3, 1.0, core=2, budget=11)
    z = 1 + 1 / 2 + 1 / 3
    np.testing.assert_allclose(a.shares, [1 / z, 0.5 / z, (1 / 3) / z], rtol=1e-14)
    assert a.core_mass == pytest.approx(1.5 / z, rel=1e-14)
    assert a.tail_share == pytest.approx((1 / 3) / z, rel=1e-14)
    assert a.max_over_median == pytest.approx(2.0, rel=1e-14)  # b(1)/b(2) = 2^τ


@given(m=st.integers(2, 200), tau=st.floats(0.05, 5.0))
@settings(max_examples=60, deadline=None)
def test_matches_naive_implementation(m, tau):
    np.testing.assert_allclose(rank_shares(m, tau), direct_shares(m, tau), rtol=1e-12)


@given(m=st.integers(2, 120), tau=st.floats(0.01, 8.0))
@settings(max_examples=60, deadline=None)
def test_concentration_against_independent_formulas(m, tau):
    b = direct_shares(m, tau)
    logw = log_weights(m, tau)
    c = concentration(logw, logsumexp(logw))
    assert c["gini"] == pytest.approx(brute_gini(b), rel=1e-9, abs=1e-12)
    if m > 2:
        assert c["skewness"] == pytest.approx(float(scipy.stats.skew(b)), rel=1e-6, abs=1e-9)
    assert c["max_over_median"] == pytest.approx(b.max() / np.median(b), rel=1e-9)


# --- Proposition A.2: strict monotonicity in rank -----------------------------------------


@given(m=sizes, tau=taus)
@settings(max_examples=80, deadline=None)
def test_prop_a2_strictly_decreasing_in_rank(m, tau):
    logw = log_weights(m, tau)
    assert np.all(np.diff(logw) < 0)  # exact in log space
    b = rank_shares(m, tau)
    d = np.diff(b)
    assert np.all(d <= 0)
    # strict wherever the shares are representable (not underflowed to 0)
    pos = b[1:] > 0
    assert np.all(d[pos] < 0)


@given(m=st.integers(2, 60), tau=st.floats(0.05, 5.0))
@settings(max_examples=60, deadline=None)
def test_prop_a2_strict_on_shares_moderate(m, tau):
    b = rank_shares(m, tau)
    assert np.all(np.diff(b) < 0)


# --- Proposition A.3: ratio identity and its monotonicity in τ -----------------------------


@given(m=st.integers(2, 500), tau=st.floats(0.01, 5.0), data=st.data())
@settings(max_examples=80, deadline=None)
def test_prop_a3_ratio_identity(m, tau, data):
    r = data.draw(st.integers(1, m - 1))
    s = data.draw(st.integers(r + 1, m))
    b = rank_shares(m, tau)
    assert b[r - 1] / b[s - 1] == pytest.approx((s / r) ** tau, rel=1e-11)


@given(m=st.integers(2, 500), t1=st.floats(0.01, 5.0), dt=st.floats(1e-3, 5.0), data=st.data())
@settings(max_examples=80, deadline=None)
def test_prop_a3_ratio_increasing_in_tau(m, t1, dt, data):
    r = data.draw(st.integers(1, m - 1))
    s = data.draw(st.integers(r + 1, m))
    t2 = t1 + dt
    lo = math.log(rank_shares(m, t1)[r - 1]) - math.log(rank_shares(m, t1)[s - 1])
    hi = math.log(rank_shares(m, t2)[r - 1]) - math.log(rank_shares(m, t2)[s - 1])
    assert hi > lo


# --- Theorem A.4: core mass strictly increasing in τ for every 1 <= K < M ----------------


@given(m=st.integers(2, 2000), t1=st.floats(0.01, 9.0), dt=st.floats(1e-3, 3.0), data=st.data())
@settings(max_examples=100, deadline=None)
def test_thm_a4_core_mass_increasing(m, t1, dt, data):
    k = data.draw(st.integers(1, m - 1))
    a1 = allocate(m, t1, core=k, budget=10)
    a2 = allocate(m, t1 + dt, core=k, budget=10)
    assert a2.core_mass >= a1.core_mass
    assert a2.log_tail_share < a1.log_tail_share  # strict, resolvable in log space


@pytest.mark.parametrize("m", [2, 3, 7, 50])
def test_thm_a4_every_k_on_a_grid(m):
    grid = np.linspace(0.01, 6.0, 60)
    for k in range(1, m):
        tails = [allocate(m, t, core=k, budget=5).log_tail_share for t in grid]
        assert np.all(np.diff(tails) < 0), k


def test_core_plus_tail_is_one():
    for m, k, t in [(10, 3, 0.3), (1000, 10, 1.0), (10**5, 100, 2.5)]:
        a = allocate(m, t, core=k, budget=64)
        assert a.core_mass + a.tail_share == pytest.approx(1.0, abs=1e-12)
        assert a.core_mass == pytest.approx(float(a.shares[:k].sum()), rel=1e-12)


# --- Propositions A.5, A.6: uniform and zero-Gini limits ----------------------------------


@given(m=st.integers(2, 10**5), tau=st.floats(1e-9, 1.0))
@settings(max_examples=60, deadline=None)
def test_prop_a5_uniform_bound(m, tau):
    # |log(M b_r)| <= τ log M for every r, so b -> 1/M as τ -> 0
    b = rank_shares(m, tau)
    assert np.max(np.abs(np.log(m * b))) <= tau * math.log(m) * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("m", [2, 10, 1000])
def test_prop_a5_limit(m):
    errs = [np.max(np.abs(rank_shares(m, t) * m - 1)) for t in (1e-1, 1e-3, 1e-5, 1e-8)]
    assert all(b < a for a, b in itertools.pairwise(errs))
    assert errs[-1] < 1e-6


@given(m=st.integers(2, 5000), tau=st.floats(1e-9, 0.5))
@settings(max_examples=60, deadline=None)
def test_prop_a6_gini_bound(m, tau):
    # G = Σ (M+1-2r) u_r / M² with |u_r| <= M^τ - 1, so G <= (M^τ - 1) / 2 -> 0
    g = allocate(m, tau, core=1, budget=1).gini
    assert 0 <= g <= math.expm1(tau * math.log(m)) / 2 + 1e-15


@pytest.mark.parametrize("m", [2, 100, 10**5])
def test_prop_a6_limit(m):
    gs = [allocate(m, t, core=1, budget=1).gini for t in (1.0, 0.1, 1e-3, 1e-6)]
    assert all(b < a for a, b in itertools.pairwise(gs))
    assert gs[-1] < 1e-5


# --- numerical soundness at the extremes --------------------------------------------------


@pytest.mark.parametrize("tau", [0.01, 10.0])
def test_large_m_extreme_tau(tau):
    a = allocate(10**6, tau, core=100, budget=4096)
    assert a.shares.shape == (10**6,)
    assert np.all(np.isfinite(a.shares)) and np.all(a.shares >= 0)
    assert math.fsum(a.shares) == pytest.approx(1.0, abs=1e-12)
    for v in (a.core_mass, a.tail_share, a.log_tail_share, a.gini, a.skewness, a.max_over_median, a.log_z):
        assert math.isfinite(v)
    assert 0 < a.tail_share < 1 and 0 < a.core_mass <= 1  # C rounds to 1.0 at τ = 10
    assert 0 < a.gini < 1
    assert int(a.core_slots.sum()) + a.tail_slots == 4096
    if tau == 10.0:
        # ζ(10) ≈ 1.000994575; tail share ≈ Σ_{r>100} r^-10 / ζ(10) ≈ 100^-9 / 9 (integral bound)
        assert a.shares[0] == pytest.approx(1 / 1.000994575127818, rel=1e-12)
        assert 1e-19 < a.tail_share < 2e-19
        assert a.max_over_median == pytest.approx(math.exp(-math.log(0.5 * (500000.0**-10 + 500001.0**-10))), rel=1e-9)
    else:
        assert a.gini < 0.01


def test_huge_tau_does_not_overflow():
    a = allocate(1000, 500.0, core=5, budget=10)
    assert a.shares[0] == 1.0 and a.core_mass == 1.0
    assert a.tail_share > 0 or a.log_tail_share < -700
    assert a.max_over_median == math.inf and math.isfinite(a.log_max_over_median)
    assert a.to_dict()["max_over_median"] is None  # JSON-safe


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n_items=10, tau=0.0, core=2, budget=5), "tau"),
        (dict(n_items=10, tau=-1.0, core=2, budget=5), "tau"),
        (dict(n_items=10, tau=float("nan"), core=2, budget=5), "tau"),
        (dict(n_items=10, tau=float("inf"), core=2, budget=5), "tau"),
        (dict(n_items=10, tau=1.0, core=0, budget=5), "core"),
        (dict(n_items=10, tau=1.0, core=10, budget=5), "core"),
        (dict(n_items=10, tau=1.0, core=2, budget=0), "budget"),
        (dict(n_items=1, tau=1.0, core=1, budget=5), "n_items"),
        (dict(n_items=10, tau=1.0, core=2.5, budget=5), "core"),
    ],
)
def test_validation(kwargs, match):
    n = kwargs.pop("n_items")
    t = kwargs.pop("tau")
    with pytest.raises(UsageError, match=match):
        allocate(n, t, **kwargs)


def test_to_dict_is_small_and_json_safe():
    import json

    a = allocate(10**6, 1.0, core=50, budget=512)
    d = a.to_dict()
    assert len(d["ranks"]) == 20 and d["ranks"][0]["rank"] == 1
    assert d["tail"]["items"] == 10**6 - 50
    assert len(json.dumps(d)) < 10_000
    assert len(a.to_dict(head=1000)["ranks"]) == 50


def test_deprecated_concentration_spellings_warn_and_agree():
    a = allocate(tau=1.0, n_items=50, core=5, budget=64)
    with pytest.warns(DeprecationWarning, match=r"Allocation\.skew is deprecated; use \.skewness"):
        assert a.skew == a.skewness
    with pytest.warns(DeprecationWarning, match="max_median is deprecated"):
        assert a.max_median == a.max_over_median and a.log_max_median == a.log_max_over_median
    assert "skew" not in a.to_dict() and "max_median" not in a.to_dict()
