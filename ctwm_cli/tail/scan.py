"""Choosing x_min among the scan's candidates at a cost that follows the data, not the range.

The scan (``powerlaw.scan_cutoffs``) fits α at every candidate x_min and keeps the first candidate
with the smallest KS distance D. Computing one D exactly is a pass over every distinct value above the
candidate (:func:`ks_discrete`, :func:`ks_continuous`), so a plain scan costs O(distinct × tail) per
fit, and the bootstrap repeats it in every replicate. :func:`select_cutoff` gets the same answer from
far fewer model evaluations, in two phases:

1. Bound every candidate's D by branch and bound over the sorted tail (:func:`ks_bound`). Between two
   evaluated values p < q the empirical CDF and the model CDF both increase, so no gap
   |F_emp - F| inside (p, q) exceeds max(F_emp(q⁻) - F(p), F(q⁻) - F_emp(p)); an interval whose bound
   is below the largest gap found so far is dropped, the others are halved. The first point tried
   is where the previous candidate peaked, and the search stops as soon as a gap exceeds the best
   bound so far (the candidate cannot win). What is left is D up to rounding.
2. Run the exact pass, in candidate order with its early stop, only on the candidates whose
   bounded D lies within a few ``EPS`` of the smallest — the only ones that can be the minimum.

``EPS`` is far above the difference between the two ways of computing one gap (the pass
accumulates ln ζ(α, v) recursively along runs of consecutive integers, the bound evaluates it
directly). Every candidate that can be the first minimiser gets the same exact pass as before, so
the scan returns the same x_min, α and D to the last bit.

Discrete data: between two consecutive distinct values v < w the empirical CDF is flat and the
model's increases, so the supremum over every integer in [v, w) is at its ends, F(v) against the
count up to v and F(w - 1) against the count below w: two closed-form terms per distinct value,
whatever w - v is, so values up to 10^7 cost what their number of distinct values costs.
"""

from __future__ import annotations

import math

import numpy as np

from .kernels import kernel
from .zeta import log_hurwitz_zeta

SEEDS = 32  # candidates bounded first, evenly spaced
EPS = 1e-7  # bound on |bounded D - exact D| (rounding only); candidates within 3·EPS of the best are re-run


@kernel
def ks_discrete(values, counts, start, n_tail, alpha, cap):
    """KS distance at cutoff values[start]; stops early once it reaches ``cap`` (the candidate
    cannot beat the best so far) or once no later point can raise it: for every x >= v - 1,
    |F_emp(x) - F(x)| <= max(P_emp(X >= v), P(X >= v))."""
    xmin = values[start]
    lz0 = log_hurwitz_zeta(alpha, xmin)
    d = 0.0
    below = 0.0  # tail points < current value
    lz = lz0  # ln ζ(α, v): P(X >= v) = exp(lz - lz0)
    prev_next = -1.0
    for j in range(start, values.size):
        v = values[j]
        if v != prev_next:
            lz = log_hurwitz_zeta(alpha, v)
        surv = math.exp(lz - lz0)
        if max(1.0 - below / n_tail, surv) <= d:
            break
        # left: F(v - 1) = P(X < v) against F_emp(v - 1) = below / n
        e = abs(below / n_tail - (1.0 - surv))
        if e > d:
            d = e
        # right: F(v) = P(X <= v) = 1 - ζ(α, v + 1)/ζ0, ln ζ(α, v + 1) = lz + log1p(-v^-α/ζ(α, v))
        lz_next = lz + math.log1p(-math.exp(-alpha * math.log(v) - lz))
        below += counts[j]
        e = abs(below / n_tail + math.expm1(lz_next - lz0))
        if e > d:
            d = e
        if d >= cap:
            break
        lz = lz_next
        prev_next = v + 1.0
    return d


@kernel
def ks_continuous(values, counts, start, n_tail, alpha, cap):
    """KS distance at cutoff values[start], with the same early stops as :func:`ks_discrete`."""
    xmin = values[start]
    d = 0.0
    below = 0.0
    for j in range(start, values.size):
        surv = math.exp((1.0 - alpha) * math.log(values[j] / xmin))
        if max(1.0 - below / n_tail, surv) <= d:
            break
        f = 1.0 - surv
        e = abs(below / n_tail - f)
        if e > d:
            d = e
        below += counts[j]
        e = abs(below / n_tail - f)
        if e > d:
            d = e
        if d >= cap:
            break
    return d


@kernel
def model_cdf(values, start, j, alpha, lz0, discrete):
    """(F just below values[j], F at values[j]) of the power law with cutoff values[start]."""
    if not discrete:
        f = -math.expm1((1.0 - alpha) * math.log(values[j] / values[start]))
        return f, f
    v = values[j]
    lz = log_hurwitz_zeta(alpha, v)
    lz_next = lz + math.log1p(-math.exp(-alpha * math.log(v) - lz))
    return -math.expm1(lz - lz0), -math.expm1(lz_next - lz0)


@kernel
def gap_at(values, ntail, start, j, alpha, discrete):
    """max |F_emp - F| just below and at values[j] for the fit at cutoff values[start]: a lower bound on
    its D. ``ntail[k]`` = points >= values[k] (suffix counts)."""
    lz0 = log_hurwitz_zeta(alpha, values[start]) if discrete else 0.0
    fl, fr = model_cdf(values, start, j, alpha, lz0, discrete)
    n = ntail[start]
    eb = (n - ntail[j]) / n
    ea = (n - (ntail[j + 1] if j + 1 < ntail.size else 0.0)) / n
    return max(abs(eb - fl), abs(ea - fr))


@kernel
def ks_bound(values, ntail, start, alpha, cap, discrete, probe):
    """D at cutoff values[start] up to rounding, by branch and bound; any value > ``cap`` as soon as one
    gap exceeds ``cap`` (the candidate cannot win). ``probe[0]``: the index tried first, updated to
    where this D peaked or where the gap exceeding ``cap`` was found (the next candidate's gap is
    largest near there too)."""
    m = values.size
    n = ntail[start]
    lz0 = log_hurwitz_zeta(alpha, values[start]) if discrete else 0.0
    # per evaluated index: F below, F at, empirical below, empirical at
    best = 0.0
    at = start
    j = probe[0]
    if start < j < m:
        g = gap_at(values, ntail, start, j, alpha, discrete)
        if g > cap:
            return g
        best, at = g, j
    stack_p = np.empty(128, dtype=np.int64)
    stack_q = np.empty(128, dtype=np.int64)
    sf = np.empty((128, 4))  # F(p at), Emp(p at), F(q below), Emp(q below)
    top = 0
    lo_fl, lo_fr = model_cdf(values, start, start, alpha, lz0, discrete)
    hi_fl, hi_fr = model_cdf(values, start, m - 1, alpha, lz0, discrete)
    for k, fl, fr in ((start, lo_fl, lo_fr), (m - 1, hi_fl, hi_fr)):
        eb = (n - ntail[k]) / n
        ea = (n - (ntail[k + 1] if k + 1 < m else 0.0)) / n
        g = max(abs(eb - fl), abs(ea - fr))
        if g > best:
            best, at = g, k
    if best > cap:
        probe[0] = at
        return best
    stack_p[0] = start
    stack_q[0] = m - 1
    sf[0, 0] = lo_fr
    sf[0, 1] = (n - ntail[start + 1]) / n if start + 1 < m else 1.0
    sf[0, 2] = hi_fl
    sf[0, 3] = (n - ntail[m - 1]) / n
    top = 1
    while top > 0:
        top -= 1
        p, q = stack_p[top], stack_q[top]
        f_p, e_p, f_q, e_q = sf[top, 0], sf[top, 1], sf[top, 2], sf[top, 3]
        if q - p < 2 or max(e_q - f_p, f_q - e_p) <= best:
            continue
        mid = (p + q) // 2
        fl, fr = model_cdf(values, start, mid, alpha, lz0, discrete)
        eb = (n - ntail[mid]) / n
        ea = (n - ntail[mid + 1]) / n  # mid < q <= m - 1
        g = max(abs(eb - fl), abs(ea - fr))
        if g > best:
            best, at = g, mid
            if best > cap:
                probe[0] = mid
                return best
        if top + 2 > stack_p.size:  # depth is O(log m) per path, but keep growing safe
            stack_p = np.concatenate((stack_p, np.empty(stack_p.size, dtype=np.int64)))
            stack_q = np.concatenate((stack_q, np.empty(stack_q.size, dtype=np.int64)))
            sf = np.concatenate((sf, np.empty((sf.shape[0], 4))))
        # the half with the larger bound goes on top: the search dives where a large gap can be
        left_first = max(eb - f_p, fl - e_p) > max(e_q - fr, f_q - ea)
        for half in range(2):
            if (half == 0) == left_first:
                stack_p[top], stack_q[top] = mid, q
                sf[top, 0], sf[top, 1], sf[top, 2], sf[top, 3] = fr, ea, f_q, e_q
            else:
                stack_p[top], stack_q[top] = p, mid
                sf[top, 0], sf[top, 1], sf[top, 2], sf[top, 3] = f_p, e_p, fl, eb
            top += 1
    probe[0] = at
    return best


@kernel
def select_cutoff(values, counts, ntail, idx, alphas, k, discrete):
    """(best index, its α, its exact D) among the ``k`` candidates idx[:k] with MLEs alphas[:k]: the
    first candidate with the smallest exact KS distance, as a pass over every candidate would find."""
    bound = np.full(k, math.inf)
    probe = np.zeros(1, dtype=np.int64)
    low = math.inf
    # seeds spread over the candidates first: a low bound early lets the probe reject most of the rest
    seeds = min(k, SEEDS)
    for s in range(seeds):
        c = (s * k) // seeds
        bound[c] = ks_bound(values, ntail, idx[c], alphas[c], low + 3.0 * EPS, discrete, probe)
        low = min(low, bound[c])
    for c in range(k):
        if bound[c] < math.inf:
            continue
        b = ks_bound(values, ntail, idx[c], alphas[c], low + 3.0 * EPS, discrete, probe)
        if b <= low + 3.0 * EPS:
            bound[c] = b
            low = min(low, b)
    best = -1
    best_d = math.inf
    best_a = math.nan
    for c in range(k):
        if bound[c] > low + 3.0 * EPS:
            continue
        i = idx[c]
        if discrete:
            dd = ks_discrete(values, counts, i, ntail[i], alphas[c], best_d)
        else:
            dd = ks_continuous(values, counts, i, ntail[i], alphas[c], best_d)
        if dd < best_d:
            best, best_d, best_a = i, dd, alphas[c]
    return best, best_a, best_d
