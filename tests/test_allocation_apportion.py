"""Largest-remainder apportionment of the slot budget between the core ranks and the tail summary."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctwm_cli.allocation import allocate, largest_remainder
from ctwm_cli.common.errors import UsageError


def hamilton_exact(weights: list[Fraction], total: int) -> list[int]:
    """Independent Hamilton in exact rational arithmetic; ties toward the lower index."""
    s = sum(weights)
    quotas = [w * total / s for w in weights]
    floors = [math.floor(q) for q in quotas]
    left = total - sum(floors)
    order = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return floors


@given(m=st.integers(2, 3000), tau=st.floats(0.01, 10.0), budget=st.integers(1, 10**6), data=st.data())
@settings(max_examples=150, deadline=None)
def test_sums_to_budget_and_monotone_in_rank(m, tau, budget, data):
    k = data.draw(st.integers(1, m - 1))
    a = allocate(m, tau, core=k, budget=budget)
    assert a.core_slots.dtype == np.int64
    assert int(a.core_slots.sum()) + a.tail_slots == budget
    assert np.all(a.core_slots >= 0) and a.tail_slots >= 0
    assert np.all(np.diff(a.core_slots) <= 0)  # a worse core rank never gets more slots
    # quota property: every group gets floor or ceil of its quota
    q = np.append(a.core_quotas, a.tail_quota)
    s = np.append(a.core_slots, a.tail_slots)
    assert np.all(s >= np.floor(q) - 1e-9) and np.all(s <= np.ceil(q) + 1e-9)


@given(m=st.integers(2, 40), tau=st.sampled_from([1, 2, 3]), budget=st.integers(1, 500), data=st.data())
@settings(max_examples=150, deadline=None)
def test_matches_exact_rational_hamilton(m, tau, budget, data):
    # for integer τ the weights r^-τ are rational: compare with Hamilton in exact arithmetic
    k = data.draw(st.integers(1, m - 1))
    w = [Fraction(1, r**tau) for r in range(1, m + 1)]
    groups = [*w[:k], sum(w[k:])]
    s = sum(groups)
    quotas = [g * budget / s for g in groups]
    rems = sorted((q - math.floor(q) for q in quotas), reverse=True)
    left = budget - sum(math.floor(q) for q in quotas)
    # skip cases decided by a remainder gap below float resolution (exact ties are still tested below)
    assume(left == 0 or left == len(rems) or rems[left - 1] - rems[left] > Fraction(1, 10**9))
    a = allocate(m, float(tau), core=k, budget=budget)
    assert [*a.core_slots.tolist(), a.tail_slots] == hamilton_exact(groups, budget)


def test_tie_breaking_toward_better_rank():
    # three equal quotas of 1/3 each and one slot: it goes to index 0
    assert largest_remainder(np.array([1 / 3, 1 / 3, 1 / 3]), 1).tolist() == [1, 0, 0]
    assert largest_remainder(np.array([1 / 3, 1 / 3, 1 / 3]), 2).tolist() == [1, 1, 0]
    # equal quotas 2.5, 2.5 and total 5: no leftover
    assert largest_remainder(np.array([2.5, 2.5]), 5).tolist() == [3, 2]


def test_classic_hamilton_example():
    # quotas 4.4, 3.3, 2.3 (total 10): floors 4, 3, 2 -> 1 left, largest remainder 0.4
    assert largest_remainder(np.array([4.4, 3.3, 2.3]), 10).tolist() == [5, 3, 2]


def test_float_overshoot_is_taken_back_monotonically():
    # quotas summing slightly above the total (rounding): the surplus leaves the smallest remainder
    q = np.array([3.0000000001, 3.0000000001, 3.0])
    out = largest_remainder(q, 8)
    assert out.sum() == 8 and np.all(np.diff(out) <= 0)


def test_tail_gets_pooled_budget():
    a = allocate(1000, 0.5, core=5, budget=100)
    assert a.tail_quota == pytest.approx(100 * a.tail_share)
    assert a.tail_slots in (math.floor(a.tail_quota), math.ceil(a.tail_quota))
    # the tail group may hold more slots than any core rank: it pools 995 ranks
    assert a.tail_slots > a.core_slots[0]


def test_small_tau_gives_everything_to_tail_summary():
    a = allocate(10**6, 0.01, core=10, budget=512)
    assert a.items_in_prompt == 0 and a.tail_slots == 512


def test_large_tau_gives_everything_to_top_rank():
    a = allocate(1000, 10.0, core=10, budget=512)
    assert a.core_slots[0] >= 511 and a.tail_slots == 0


@pytest.mark.parametrize(
    ("quotas", "total", "match"),
    [([], 3, "non-empty"), ([1.0, float("nan")], 1, "finite"), ([1.0, -0.5], 1, ">= 0"), ([1.0], -1, "total")],
)
def test_validation(quotas, total, match):
    with pytest.raises(UsageError, match=match):
        largest_remainder(np.array(quotas, dtype=float), total)
