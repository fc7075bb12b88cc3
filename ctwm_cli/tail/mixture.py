"""A two-component power-law mixture on the tail, fitted by EM with exact normalisers (issue 26).

p(x) = w·x^-α1/ζ(α1, x_min) + (1 - w)·x^-α2/ζ(α2, x_min), x = x_min, x_min + 1, ... (discrete, Hurwitz ζ
exact), or the same mixture of Pareto densities (continuous); α1 <= α2, so component 1 is the heavier.

Why: production traces pool agents, users and runs with different exponents. On the log-log plot a
mixture of power laws is *convex* (the heavier component takes over far out) where a log-normal or a
truncated power law is concave, so this family is the one that can say "a mixture of two power laws
fits better than either" when the log-normal wins Λ against the TPL only by bending at the bottom.

EM: responsibilities r_i = w p1(x_i)/p(x_i); then w = Σ c_i r_i / n and each α_k is the power law's own
MLE with the points weighted by r_i (or 1 - r_i) — the same root of ζ'/ζ(α, x_min) = -mean(ln x) the
x_min scan solves (:func:`~.powerlaw.power_law_mle`). Each step cannot lower the likelihood, but with
overlapping components EM crawls (measured: 500 iterations, 0.2–1 s, not converged, on the issue's
mixtures), so EM_STEPS steps find the basin and L-BFGS-B with the analytic gradient (ζ'/ζ from
:func:`~.zeta.hurwitz_zeta_d`) over (α1, α2, logit w) finishes it. Starts: a split around the power law's
α̂ and, when given, a warm start; the best end point by likelihood is kept.
The power law is the boundary (w -> 0 or 1, or α1 -> α2): reported as ``limit = "power_law"``.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.results import result
from .powerlaw import power_law_logpmf, power_law_mle
from .zeta import hurwitz_zeta_d

MAX_ITER = 500
EM_STEPS = 25
TOL = 1e-9  # relative change of the log-likelihood that ends EM
W_EDGE = 1e-6  # a weight this close to 0 or 1 is the power-law boundary
ALPHA_MIN = 1.0 + 1e-6


@result
class MixtureOptimum:
    alpha1: float
    alpha2: float
    weight: float
    loglik: float
    iterations: int
    converged: bool


def mixture_logpmf(x: np.ndarray, alpha1: float, alpha2: float, weight: float, xmin: float,
                   discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        a = math.log(weight) + power_law_logpmf(x, alpha1, xmin, discrete) if weight > 0 else np.full(x.size, -np.inf)
        b = math.log1p(-weight) + power_law_logpmf(x, alpha2, xmin, discrete) if weight < 1 else np.full(x.size,
                                                                                                      -np.inf)
    return np.logaddexp(a, b)


def em(values: np.ndarray, counts: np.ndarray, xmin: float, discrete: bool, a1: float, a2: float,
        w: float, steps: int = MAX_ITER) -> MixtureOptimum:
    logs = np.log(values)
    n = float(counts.sum())
    ll_old = -math.inf
    it = 0
    for it in range(1, steps + 1):
        la = math.log(w) + power_law_logpmf(values, a1, xmin, discrete)
        lb = math.log1p(-w) + power_law_logpmf(values, a2, xmin, discrete)
        lp = np.logaddexp(la, lb)
        ll = float(np.dot(counts, lp))
        r = np.exp(la - lp) * counts  # weighted responsibilities of component 1
        n1 = float(r.sum())
        n2 = n - n1
        w = n1 / n
        if not (W_EDGE < w < 1 - W_EDGE):
            return MixtureOptimum(alpha1=a1, alpha2=a2, weight=min(max(w, 0.0), 1.0), loglik=ll, iterations=it,
                                  converged=False)
        a1 = power_law_mle(xmin, n1, float(np.dot(r, logs)), discrete)
        a2 = power_law_mle(xmin, n2, float(np.dot(counts - r, logs)), discrete)
        if not (math.isfinite(a1) and math.isfinite(a2)):
            return MixtureOptimum(alpha1=a1, alpha2=a2, weight=w, loglik=-math.inf, iterations=it, converged=False)
        a1, a2 = max(a1, ALPHA_MIN), max(a2, ALPHA_MIN)
        if abs(ll - ll_old) <= TOL * max(1.0, abs(ll)):
            break
        ll_old = ll
    if a1 > a2:
        a1, a2, w = a2, a1, 1.0 - w
    ll = float(np.dot(counts, mixture_logpmf(values, a1, a2, w, xmin, discrete)))
    return MixtureOptimum(alpha1=a1, alpha2=a2, weight=w, loglik=ll, iterations=it, converged=it < steps)


def dlogz(alpha: float, xmin: float, discrete: bool) -> float:
    """d ln Z/dα of one component's normaliser (Z = ζ(α, x_min), or x_min^(1-α)/(α-1))."""
    if discrete:
        z0, z1, _ = hurwitz_zeta_d(alpha, xmin)
        return z1 / z0
    return -math.log(xmin) - 1.0 / (alpha - 1.0)


def mixture_nll_grad(theta: np.ndarray, values: np.ndarray, counts: np.ndarray, xmin: float,
                     discrete: bool) -> tuple[float, np.ndarray]:
    """Negative log-likelihood and its gradient in (α1, α2, u = logit w), for the optimiser's polish."""
    a1, a2, u = theta
    w = 1.0 / (1.0 + math.exp(-u))
    logs = np.log(values)
    la = math.log(w) + power_law_logpmf(values, a1, xmin, discrete)
    lb = math.log1p(-w) + power_law_logpmf(values, a2, xmin, discrete)
    lp = np.logaddexp(la, lb)
    r = np.exp(la - lp)
    g1 = -float(np.dot(counts * r, logs)) - float(np.dot(counts, r)) * dlogz(a1, xmin, discrete)
    g2 = -float(np.dot(counts * (1 - r), logs)) - float(np.dot(counts, 1 - r)) * dlogz(a2, xmin, discrete)
    gu = float(np.dot(counts, r - w))
    return -float(np.dot(counts, lp)), -np.array([g1, g2, gu])


def em_start(values: np.ndarray, counts: np.ndarray, xmin: float, discrete: bool, alpha: float,
             start: dict[str, float] | None = None) -> list[MixtureOptimum]:
    """EM_STEPS of EM from a warm ``start`` (when given, the only one) or from two splits around the power
    law's ``alpha``: the end points the optimiser polishes."""
    starts = [(max(alpha - 0.4, 1.05), alpha + 0.8, 0.5), (max(alpha - 0.2, 1.02), alpha + 2.0, 0.2)]
    if start is not None:  # a start at the power-law limit (w = 1, α1 = α2) is moved inside the family
        w = min(max(start["weight"], 0.05), 0.95)
        starts = [(start["alpha1"], max(start["alpha2"], start["alpha1"] + 0.2), w)]
    return [em(values, counts, xmin, discrete, a1, a2, w, EM_STEPS) for a1, a2, w in starts]
