"""Integer apportionment of a budget by the largest-remainder (Hamilton) method.

Given quotas q_1, ..., q_n >= 0 with Σ q ≈ B, every group first gets ⌊q_i⌋; the R = B - Σ⌊q_i⌋
slots left go one each to the R groups with the largest remainders q_i - ⌊q_i⌋, ties going to the
lower index (the better rank). The result sums to B exactly and every group gets ⌊q_i⌋ or ⌈q_i⌉.

Monotonicity (what the allocation needs). If the quotas are non-increasing in the index
(q_r >= q_s for r < s — Proposition A.2 gives this for the core ranks) then the slots are too:

* if ⌊q_r⌋ > ⌊q_s⌋, then slots_r >= ⌊q_r⌋ >= ⌊q_s⌋ + 1 >= slots_s;
* if ⌊q_r⌋ = ⌊q_s⌋, then the remainder of r is >= that of s, so r comes before s in the order
  (larger remainder, or an equal one and the lower index): whenever s gets an extra slot, so does r.

Floating-point rounding could in principle break ``q_r >= q_s`` for nearly equal quotas (τ near
0), so callers pass quotas through ``np.minimum.accumulate`` first, which restores it exactly.

Budgets above 2^53 (:data:`EXACT_ABOVE`): a float64 quota B·b cannot hold every integer any more
(``float(2**63 - 1)`` is 2^63) and int64 sums of floors can overflow, so
:func:`largest_remainder_of_shares` then forms each quota as the exact rational ``B·b`` of the float
share ``b`` and apportions in Python integers; the slots sum to B exactly for every B < 2^63.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError


def largest_remainder(quotas: np.ndarray, total: int) -> np.ndarray:
    """Hamilton apportionment of ``total`` slots by ``quotas`` (ties toward the lower index).

    ``quotas`` must be finite, >= 0 and sum to ``total`` up to rounding; the result is an int64
    vector summing to ``total`` exactly. If rounding made ``Σ⌊q⌋`` exceed ``total`` (it cannot in
    exact arithmetic), the surplus is taken back from the smallest remainders, worst index first.
    """
    q = np.asarray(quotas, dtype=np.float64)
    if q.ndim != 1 or q.size == 0:
        raise UsageError("quotas must be a non-empty vector", params=("quotas",))
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise UsageError("quotas must be finite and >= 0", params=("quotas",))
    check_range("total", total, lo=0)
    floors = np.floor(q)
    rem = q - floors
    slots = floors.astype(np.int64)
    left = int(total) - int(slots.sum())
    if left > 0:
        order = np.argsort(-rem, kind="stable")  # largest remainder first, ties: lower index
        give = order[: min(left, q.size)]
        slots[give] += 1
        left -= give.size
        if left > 0:  # only if the quotas did not sum to total: spread the rest the same way
            slots += left // q.size
            slots[order[: left % q.size]] += 1
    elif left < 0:
        idx = np.arange(q.size)
        order = np.lexsort((-idx, rem))  # smallest remainder first, ties: higher index
        order = order[slots[order] > 0]
        slots[order[: -left]] -= 1
    return slots


EXACT_ABOVE = 2**53
MAX_TOTAL = 2**63 - 1  # slots are int64


def largest_remainder_of_shares(shares: np.ndarray, total: int) -> np.ndarray:
    """Hamilton apportionment of ``total`` slots by ``shares`` (quotas ``total·share``, ties toward the
    lower index): float quotas for ``total`` <= 2^53, exact rationals above (see the module doc)."""
    total = int(total)
    if total > MAX_TOTAL:
        raise UsageError(f"budget must be at most 2^63 - 1 = {MAX_TOTAL}, got {total}", params=("budget",))
    w = np.asarray(shares, dtype=np.float64)
    if total <= EXACT_ABOVE:
        return largest_remainder(total * w, total)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise UsageError("shares must be a non-empty vector of finite values >= 0", params=("shares",))
    exact = [Fraction(float(x)) for x in w]
    norm = sum(exact)
    if norm <= 0:
        raise UsageError("shares must not all be 0", params=("shares",))
    # normalised, so the quotas sum to total exactly (float shares sum to 1 only up to ~1e-16, which
    # at B ~ 1e18 would be hundreds of slots)
    quotas = [x * total / norm for x in exact]
    slots = [q.numerator // q.denominator for q in quotas]
    rem = [q - s for q, s in zip(quotas, slots, strict=True)]
    left = total - sum(slots)  # 0 <= left < number of groups
    for i in sorted(range(len(slots)), key=lambda i: (-rem[i], i))[:left]:
        slots[i] += 1
    return np.array(slots, dtype=np.int64)
