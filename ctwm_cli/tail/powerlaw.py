"""Power-law tail fits: x_min by KS minimisation, exact discrete MLE of α, no cap on α.

Everything works on the histogram of distinct values (``values`` ascending, ``counts``), so the
scan costs O(distinct values) per candidate x_min, not O(n).

Discrete model: p(x) = x^-α / ζ(α, x_min), x = x_min, x_min + 1, ...; α̂ solves
ζ'(α, x_min)/ζ(α, x_min) = -mean(ln x) (safeguarded Newton, unique root because ln ζ is convex in
α); se(α̂) = 1/sqrt(n_tail · ∂²ln ζ/∂α²).  Continuous model: p(x) = (α-1)/x_min (x/x_min)^-α,
α̂ = 1 + n/Σ ln(x/x_min), se = (α̂-1)/sqrt(n).

KS distance: the exact supremum of |F_emp(x) - F(x)| over every x >= x_min (for discrete data, at
every integer — i.e. at each distinct value and just below it, as Clauset's own code does), not
only at the data points.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.settings import MIN_TAIL
from .kernels import kernel
from .scan import ks_continuous, ks_discrete, select_cutoff
from .zeta import hurwitz_zeta_d, log_hurwitz_zeta


@result
class Histogram(ToDict):
    """Distinct values (ascending, > 0) and their multiplicities."""

    values: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_sample(cls, x: np.ndarray) -> Histogram:
        x = np.asarray(x, dtype=np.float64)
        if x.size and x.min() >= 0 and x.max() <= 8 * x.size and np.all(x == np.floor(x)):
            c = np.bincount(x.astype(np.int64))  # small non-negative integers: no sort needed
            v = np.flatnonzero(c)
            return cls(values=v.astype(np.float64), counts=c[v].astype(np.int64))
        v, c = np.unique(x, return_counts=True)
        return cls(values=v, counts=c.astype(np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def to_dict(self) -> dict:
        return {"n": self.n, "distinct": int(self.values.size)}


@result
class PowerLawFit(ToDict):
    discrete: bool
    xmin: float
    alpha: float
    alpha_se: float
    n_tail: int
    ks: float
    loglik: float
    candidates: int
    xmax: float | None = None  # an upper cutoff: the doubly truncated fit of tail/truncated.py

    @property
    def family(self) -> str:
        return "power_law"

    @property
    def params(self) -> dict[str, float]:
        return {"alpha": self.alpha}


# ---------------------------------------------------------------------------------------------
# compiled kernels


@kernel
def _mle_discrete(xmin: float, n: float, logsum: float) -> float:
    """Root of ψ(α) = ζ'/ζ(α, x_min) = -logsum/n; NaN when all tail values equal x_min."""
    target = -logsum / n
    if target >= -math.log(xmin) - 1e-15:
        return math.nan
    lo = 1.0
    hi = math.nan
    denom = logsum - n * math.log(xmin - 0.5) if xmin > 0.5 else logsum
    a = 1.0 + n / denom if denom > 0 else 2.0
    if not (a > 1.0) or not math.isfinite(a):
        a = 2.0
    for _ in range(200):
        z0, z1, z2 = hurwitz_zeta_d(a, xmin)
        psi = z1 / z0
        h = psi - target
        if h < 0:
            lo = a
        else:
            hi = a
        d = z2 / z0 - psi * psi
        step = h / d if d > 0 else math.nan
        nxt = a - step
        # converged: tested before the bracket, because a step below rounding leaves nxt == a == lo,
        # which the bracket test would take for a step out of it (and restart by bisection from 2a)
        if math.isfinite(nxt) and abs(nxt - a) <= 1e-13 * a:
            return nxt
        if not math.isfinite(nxt) or nxt <= lo or (not math.isnan(hi) and nxt >= hi):
            nxt = 0.5 * (lo + hi) if not math.isnan(hi) else max(2.0 * a, lo + 1.0)
        if abs(nxt - a) <= 1e-13 * a:
            return nxt
        a = nxt
    return a


@kernel
def _suffix_sums(values, counts):
    """n_tail and Σ ln x of the points at or above each distinct value (one pass from the top)."""
    m = values.size
    ntail = np.empty(m)
    logsum = np.empty(m)
    acc_n = 0.0
    acc_l = 0.0
    for j in range(m - 1, -1, -1):
        acc_n += counts[j]
        acc_l += counts[j] * math.log(values[j])
        ntail[j] = acc_n
        logsum[j] = acc_l
    return ntail, logsum


@kernel
def _alpha_at(xmin, n, logsum, discrete):
    """α̂ of the n tail points above ``xmin`` with Σ ln x = logsum: the exact discrete MLE, or the
    continuous closed form; NaN when it has no root."""
    if discrete:
        return _mle_discrete(xmin, n, logsum)
    s = logsum - n * math.log(xmin)
    return 1.0 + n / s if s > 0 else math.nan


@kernel
def scan_cutoffs(values, counts, min_tail, discrete, first, last):
    """Fit every admissible candidate (or only index ``fixed`` when >= 0).

    Returns (best index, alpha, D, number of candidates); best index -1 if none admissible.
    """
    m = values.size
    ntail, logsum = _suffix_sums(values, counts)
    idx = np.empty(m, dtype=np.int64)
    alphas = np.empty(m)
    ncand = 0
    # candidates values[first:last]; the largest value alone never identifies α
    for i in range(max(first, 0), min(last, m)):
        if ntail[i] < min_tail or i == m - 1:
            continue
        xmin = values[i]
        a = _alpha_at(xmin, ntail[i], logsum[i], discrete)
        if not math.isfinite(a):
            continue
        idx[ncand], alphas[ncand] = i, a
        ncand += 1
    if ncand == 0:
        return -1, math.nan, math.inf, 0
    best, best_a, best_d = select_cutoff(values, counts, ntail, idx, alphas, ncand, discrete)  # tail/scan.py
    return best, best_a, best_d, ncand


@kernel
def accepted_cutoffs(values, counts, min_tail, discrete, first, last, crit):
    """Every candidate cutoff values[i] (first <= i < last) that leaves at least ``min_tail`` points and
    whose fitted power law the KS test does not reject: sqrt(n_tail)·D < ``crit``. Returns the arrays
    (x_min, α, se(α)) of those cutoffs. Each KS pass stops as soon as D reaches the critical distance,
    so a rejected cutoff costs only the values up to its first large gap."""
    m = values.size
    ntail, logsum = _suffix_sums(values, counts)
    xs = np.empty(m)
    alphas = np.empty(m)
    ses = np.empty(m)
    k = 0
    for i in range(max(first, 0), min(last, m - 1)):
        if ntail[i] < min_tail:
            break  # n_tail only falls with the cutoff
        xmin = values[i]
        a = _alpha_at(xmin, ntail[i], logsum[i], discrete)
        if not math.isfinite(a):
            continue
        cap = crit / math.sqrt(ntail[i])
        if discrete:
            d = ks_discrete(values, counts, i, ntail[i], a, cap)
            z0, z1, z2 = hurwitz_zeta_d(a, xmin)
            psi1 = z2 / z0 - (z1 / z0) ** 2
            se = 1.0 / math.sqrt(ntail[i] * psi1) if psi1 > 0 else math.nan
        else:
            d = ks_continuous(values, counts, i, ntail[i], a, cap)
            se = (a - 1.0) / math.sqrt(ntail[i])
        if d >= cap or not math.isfinite(se):
            continue
        xs[k], alphas[k], ses[k] = xmin, a, se
        k += 1
    return xs[:k], alphas[:k], ses[:k]


# ---------------------------------------------------------------------------------------------
# public API


def fit_power_law(
    hist: Histogram,
    *,
    discrete: bool = True,
    xmin: float | None = None,
    min_tail: int = MIN_TAIL,
    xmin_range: tuple[float, float] | None = None,
) -> PowerLawFit | None:
    """Fit the power-law tail. ``None`` when no candidate x_min leaves ``min_tail`` points above it
    with at least two distinct values (the audit reports that as inconclusive). ``xmin_range``
    (lo, hi) keeps only the candidates lo <= x_min <= hi."""
    values, counts = hist.values, hist.counts
    if values.size and values[0] <= 0:
        raise UsageError("power-law fits need positive values", params=())
    if discrete and values.size and np.any(values != np.floor(values)):
        raise UsageError("discrete fits need integer values; set discrete=False for real-valued data",
                         params=("discrete",))
    if xmin is not None:
        # a fixed cutoff: the model's support starts at xmin even if no observation equals it
        keep = values >= xmin
        values, counts = values[keep], counts[keep]
        if values.size == 0:
            return None
        if values[0] != xmin:
            values = np.concatenate([[float(xmin)], values])
            counts = np.concatenate([[0], counts])
    c = counts.astype(np.float64)
    if xmin is None:
        first, last = candidate_range(values, xmin_range)
        best, alpha, d, ncand = scan_cutoffs(values, c, float(min_tail), discrete, first, last)
    else:
        best, alpha, d, ncand = scan_cutoffs(values, c, 0.0, discrete, 0, 1)
    if best < 0:
        return None
    return finish_fit(values, counts, best, alpha, d, discrete, ncand)


def candidate_range(values: np.ndarray, xmin_range: tuple[float, float] | None) -> tuple[int, int]:
    """Indices [first, last) of the candidate cutoffs values[i] within ``xmin_range`` (all when None)."""
    if xmin_range is None:
        return 0, values.size
    lo, hi = xmin_range
    return int(np.searchsorted(values, lo, "left")), int(np.searchsorted(values, hi, "right"))


def finish_fit(values, counts, i, alpha, d, discrete, ncand) -> PowerLawFit:
    """The fit at candidate index ``i`` of a scan: n_tail, se(α), log-likelihood."""
    tail_v, tail_c = values[i:], counts[i:]
    n_tail = int(tail_c.sum())
    xmin = float(values[i])
    slog = float(np.dot(tail_c, np.log(tail_v)))
    if discrete:
        z0, z1, z2 = hurwitz_zeta_d(alpha, xmin)
        psi1 = z2 / z0 - (z1 / z0) ** 2
        se = 1.0 / math.sqrt(n_tail * psi1) if psi1 > 0 else math.nan
        ll = -alpha * slog - n_tail * log_hurwitz_zeta(alpha, xmin)
    else:
        se = (alpha - 1.0) / math.sqrt(n_tail)
        ll = n_tail * math.log((alpha - 1.0) / xmin) - alpha * (slog - n_tail * math.log(xmin))
    return PowerLawFit(
        discrete=discrete, xmin=xmin, alpha=float(alpha), alpha_se=float(se), n_tail=n_tail,
        ks=float(d), loglik=float(ll), candidates=int(ncand),
    )


def power_law_logpmf(x: np.ndarray, alpha: float, xmin: float, discrete: bool) -> np.ndarray:
    """Pointwise log-probability (mass or density) of tail values under the fitted power law."""
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        return -alpha * np.log(x) - log_hurwitz_zeta(alpha, xmin)
    return math.log((alpha - 1.0) / xmin) - alpha * np.log(x / xmin)


def power_law_mle(xmin: float, n: float, logsum: float, discrete: bool) -> float:
    """α̂ from a (possibly weighted) tail: n points with Σ ln x = logsum above x_min — the scan's own
    estimator, for callers that weight the points (the mixture's EM). NaN when it has no root."""
    if discrete:
        return float(_mle_discrete(float(xmin), float(n), float(logsum)))
    s = logsum - n * math.log(xmin)
    return 1.0 + n / s if s > 0 else math.nan


def power_law_sf(x: np.ndarray, alpha: float, xmin: float, discrete: bool) -> np.ndarray:
    """P(X >= x) of the fitted power law: ζ(α, x)/ζ(α, x_min), or (x/x_min)^(1-α)."""
    x = np.asarray(x, dtype=np.float64)
    if not discrete:
        return np.exp((1.0 - alpha) * np.log(x / xmin))
    lz0 = log_hurwitz_zeta(alpha, xmin)
    return np.array([math.exp(min(log_hurwitz_zeta(alpha, v) - lz0, 0.0)) for v in x])


def sample_power_law(alpha: float, xmin: float, size: int, rng: np.random.Generator, discrete: bool) -> np.ndarray:
    """Exact draws from the fitted tail. Discrete: rejection from floor(Pareto) with acceptance
    r(k)/r(x_min), r(k) = p(k)/q(k) ∝ 1/(k·(1 - (1+1/k)^(1-α))), decreasing in k."""
    if not discrete:
        u = rng.random(size)
        return xmin * np.exp(-np.log1p(-u) / (alpha - 1.0))
    out = np.empty(size)
    filled = 0

    def r(k):
        return (alpha - 1.0) / (k * -np.expm1((1.0 - alpha) * np.log1p(1.0 / k)))

    r0 = r(np.float64(xmin))
    while filled < size:
        want = size - filled
        m = int(want * 1.3 * min(r0, 50.0)) + 32
        u = rng.random(m)
        k = np.floor(xmin * np.exp(-np.log1p(-u) / (alpha - 1.0)))
        acc = rng.random(m) * r0 <= r(k)
        got = k[acc][:want]
        out[filled : filled + got.size] = got
        filled += got.size
    return out


TABLE_SIZE = 1024


def power_law_table(alpha: float, xmin: float, size: int = TABLE_SIZE) -> np.ndarray:
    """P(X = x_min + k) for k < size, then P(X >= x_min + size), for the discrete power law."""
    lz0 = log_hurwitz_zeta(alpha, xmin)
    k = xmin + np.arange(size, dtype=np.float64)
    p = np.exp(-alpha * np.log(k / xmin) - (lz0 + alpha * math.log(xmin)))  # scaled: no cancellation
    rest = math.exp(log_hurwitz_zeta(alpha, xmin + size) - lz0)
    p = p / max(1.0, p.sum() + rest)  # rounding must never push the cells above 1
    return np.concatenate([p, [max(0.0, 1.0 - p.sum())]])


def sample_power_law_hist(alpha: float, xmin: float, size: int, rng: np.random.Generator,
                          table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A discrete power-law sample as its histogram (values, counts), exactly: multinomial counts over
    the first cells of ``table``, and draws from the same law conditioned on X >= x_min + cells
    (a power law with that cutoff) for the rest. Costs O(cells + rest) instead of O(size)."""
    cells = table.size - 1
    c = rng.multinomial(size, table)
    head = c[:cells]
    keep = head > 0
    values = xmin + np.flatnonzero(keep).astype(np.float64)
    counts = head[keep]
    if c[cells]:
        rv, rc = np.unique(sample_power_law(alpha, xmin + cells, int(c[cells]), rng, True), return_counts=True)
        values, counts = np.concatenate([values, rv]), np.concatenate([counts, rc])
    return values, counts
