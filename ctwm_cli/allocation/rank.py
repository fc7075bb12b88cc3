"""The ranked CTWM allocation b(r; τ) = r^-τ / Z(τ) (paper Definition A.1), in log space.

Everything is computed from the log weights ``-τ·log r`` and the log normaliser
``log Z(τ) = logsumexp(-τ·log r)``, so nothing overflows or divides 0 by 0 for M = 1e6 and τ
anywhere in 0.01–10 (or far beyond): shares that underflow are exact zeros of a vector that still
sums to one.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError

# --------------------------------------------------------------------------------------------
# Argument checks (kept apart from the computation)


def check_tau(tau: float, name: str = "tau") -> float:
    """τ must be a finite number > 0."""
    try:
        t = float(tau)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number > 0, got {tau!r}", params=(name,)) from None
    if not math.isfinite(t) or t <= 0:
        raise UsageError(f"{name} must be a finite number > 0, got {tau!r}", params=(name,))
    return t


#: Largest number of ranked items: an allocation holds about six float64 vectors of length M
#: (4.8 GB at 1e8); beyond that it would end in a MemoryError instead of an answer.
MAX_ITEMS = 100_000_000
#: Largest budget: slots are int64 (budgets above 2^53 are apportioned in exact integer arithmetic).
MAX_BUDGET = 2**63 - 1
#: Largest M x (number of τ) of a sweep, which keeps every τ's share vector (8 bytes each: 1.6 GB).
MAX_SWEEP_CELLS = 200_000_000


def check_int(value: int, name: str, *, minimum: int, maximum: int | None = None, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    check_range(name, value, lo=minimum)
    if maximum is not None and value > maximum:
        raise UsageError(f"{name} = {value:,} is above the limit of {maximum:,}" + (f": {why}" if why else ""),
                         params=(name,))
    return int(value)


def check_items(n_items: int, name: str = "n_items") -> int:
    return check_int(n_items, name, minimum=2, maximum=MAX_ITEMS,
                     why="the allocation holds about six float64 vectors of that length (4.8 GB at the limit)")


def check_budget(budget: int, name: str = "budget") -> int:
    return check_int(budget, name, minimum=1, maximum=MAX_BUDGET, why="slots are 64-bit integers")


def check_core(core: int, n_items: int, name: str = "core") -> int:
    """1 <= K < M (Theorem A.4 needs a non-empty tail)."""
    k = check_int(core, name, minimum=1)
    if k >= n_items:
        raise UsageError(f"{name} must be smaller than the number of items ({n_items}), got {k}", params=(name,))
    return k


# --------------------------------------------------------------------------------------------
# Log-space primitives


def log_weights(n_items: int, tau: float) -> np.ndarray:
    """``-τ·log r`` for r = 1..M (non-increasing in r)."""
    return -tau * np.log(np.arange(1, n_items + 1, dtype=np.float64))


def logsumexp(x: np.ndarray) -> float:
    """``log Σ exp(x)`` without overflow; ``-inf`` for an empty vector."""
    if x.size == 0:
        return -math.inf
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


def shares_from_log(logw: np.ndarray, log_z: float) -> np.ndarray:
    """b(r; τ) = exp(log w_r - log Z). Sums to one up to rounding; tiny shares underflow to 0."""
    return np.exp(logw - log_z)


def rank_shares(n_items: int, tau: float) -> np.ndarray:
    """The allocation vector b(·; τ) of Definition A.1 (validated)."""
    m = check_int(n_items, "n_items", minimum=1)
    t = check_tau(tau)
    logw = log_weights(m, t)
    return shares_from_log(logw, logsumexp(logw))


def core_tail_log_mass(logw: np.ndarray, log_z: float, core: int) -> tuple[float, float]:
    """(log C(K, τ), log of the tail share 1 - C(K, τ)), each summed in log space.

    The tail share is summed directly rather than taken as ``1 - C``, so it stays accurate (and
    strictly positive) when C is within rounding of one, e.g. τ = 10.
    """
    return logsumexp(logw[:core]) - log_z, logsumexp(logw[core:]) - log_z


# --------------------------------------------------------------------------------------------
# Concentration of the allocation vector


def concentration(logw: np.ndarray, log_z: float) -> dict[str, float]:
    """Gini, skewness and max/median of the allocation vector, in O(M).

    With ``u_r = M·b_r - 1 = expm1(log w_r - log mean(w))`` (computed without cancellation even
    for τ near 0) and the vector already sorted by rank (descending shares):

    * Gini ``G = Σ_r (M + 1 - 2r)·b_r / M = Σ_r (M + 1 - 2r)·u_r / M²`` — the sorted-vector form
      of the mean absolute difference, equal to ``(2·Σ_{k<M} C(k, τ) - (M - 1)) / M``;
    * skewness: the Fisher–Pearson (population) skewness ``m3 / m2^1.5`` of the M shares (it is
      scale-free, so computed on u); 0 when all shares are equal;
    * max/median ``b(1) / median(b)``, with the median of an even M the mean of the two middle
      shares. ``log_max_over_median`` keeps the value when it overflows (τ·log M > ~700).
    """
    m = logw.size
    log_mean = log_z - math.log(m)
    u = np.expm1(logw - log_mean)
    coef = (m + 1) - 2.0 * np.arange(1, m + 1, dtype=np.float64)
    gini = float(np.dot(coef, u)) / (float(m) * float(m))
    d = u - float(np.mean(u))
    m2 = float(np.mean(d * d))
    skewness = float(np.mean(d * d * d)) / m2**1.5 if m2 > 0 else 0.0
    if m % 2:
        log_med = float(logw[(m - 1) // 2])
    else:
        log_med = float(np.logaddexp(logw[m // 2 - 1], logw[m // 2])) - math.log(2.0)
    log_mm = float(logw[0]) - log_med
    return {
        "gini": gini,
        "skewness": skewness,
        "max_over_median": math.exp(log_mm) if log_mm < 709.0 else math.inf,
        "log_max_over_median": log_mm,
    }
