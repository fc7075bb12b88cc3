"""Alternative tail families fitted by maximum likelihood on the same tail (x >= x_min).

Discrete forms (counts are integers; x = x_min, x_min + 1, ...):

- ``truncated_power_law``: p(x) = x^-α e^{-λx} / Z,  Z = Σ_{x>=x_min} x^-α e^{-λx}, λ >= 0.
  Z is exact: 2048 terms summed directly, the rest by Euler–Maclaurin with the integral
  λ^{α-1} Γ(1-α, λa) in closed form. λ = 0 is the power law itself (the nested case).
- ``lognormal``: the law of ceil(Y), Y ~ LogNormal(μ, σ), conditioned on X >= x_min:
  p(x) = [Φ(z(x)) - Φ(z(x-1))] / [1 - Φ(z(x_min-1))], z(t) = (ln t - μ)/σ. Sampling it is exact.
- ``exponential``: geometric, p(x) = (1 - e^{-λ}) e^{-λ(x - x_min)}; closed-form MLE.
- ``stretched_exponential``: P(X >= x) = exp(-λ(x^β - x_min^β)), p(x) = P(X>=x) - P(X>=x+1).

Continuous forms are the usual densities truncated to x >= x_min. Every family is a proper
distribution on the same support, so log-likelihood ratios between them are meaningful.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from ..results import ToDict, result
from .powerlaw import PowerLawFit, power_law_logpmf

_DIRECT_TERMS = 2048
_TPL_ALPHA_BOUNDS = (-10.0, 30.0)
_LOG_LAMBDA_BOUNDS = (-40.0, 10.0)


@result
class TailFit(ToDict):
    """One family fitted on the tail. ``params`` are named; ``loglik`` is summed over the tail."""

    family: str
    discrete: bool
    xmin: float
    n_tail: int
    params: dict[str, float]
    loglik: float
    converged: bool


# ---------------------------------------------------------------------------------------------
# Upper incomplete gamma for any real s (closed-form TPL integrals)


def _upper_gamma(s: float, z: float) -> float:
    """Γ(s, z) for z > 0 and any real s (downward recurrence from s + m in (0, 1])."""
    if s > 0:
        return float(special.gammaincc(s, z) * special.gamma(s))
    m = math.ceil(-s)
    s0 = s + m
    if s0 == 0.0:
        g = float(special.exp1(z))
    else:
        g = float(special.gammaincc(s0, z) * special.gamma(s0))
    cur = s0
    for _ in range(m if s0 != 0.0 else m):
        # Γ(cur - 1, z) = (Γ(cur, z) - z^{cur-1} e^{-z}) / (cur - 1)
        if cur == s:
            break
        g = (g - math.exp((cur - 1.0) * math.log(z) - z)) / (cur - 1.0)
        cur -= 1.0
    return g


# ---------------------------------------------------------------------------------------------
# log-pmf / log-pdf of each family


def _tpl_logz(alpha: float, lam: float, xmin: float, discrete: bool) -> float:
    if not discrete:
        # ∫_{xmin}^∞ x^-α e^{-λx} dx = λ^{α-1} Γ(1-α, λ x_min)
        if lam <= 0:
            return math.log(xmin ** (1 - alpha) / (alpha - 1)) if alpha > 1 else math.inf
        g = _upper_gamma(1.0 - alpha, lam * xmin)
        return (alpha - 1.0) * math.log(lam) + math.log(g) if g > 0 else math.inf
    x = xmin + np.arange(_DIRECT_TERMS, dtype=np.float64)
    logf = -alpha * np.log(x) - lam * x
    shift = float(logf[0])
    total = float(np.exp(logf - shift).sum())
    a = xmin + _DIRECT_TERMS
    za = lam * a
    if za < 60.0:
        # Euler–Maclaurin remainder: ∫_a^∞ f + f(a)/2 - f'(a)/12
        loga = -alpha * math.log(a) - lam * a
        fa = math.exp(loga - shift)
        dfa = fa * (-alpha / a - lam)
        if lam > 0:
            g = _upper_gamma(1.0 - alpha, za)
            integral = math.exp((alpha - 1.0) * math.log(lam) - shift) * g if g > 0 else 0.0
        else:
            integral = math.exp((1.0 - alpha) * math.log(a) - shift) / (alpha - 1.0) if alpha > 1 else math.inf
        total += integral + 0.5 * fa - dfa / 12.0
    return shift + math.log(total) if total > 0 and math.isfinite(total) else math.inf


def tpl_logpmf(x: np.ndarray, alpha: float, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    return -alpha * np.log(x) - lam * x - _tpl_logz(alpha, lam, xmin, discrete)


def _log_diff_sf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln(Φ(b) - Φ(a)) for a < b, accurate in both tails."""
    la = special.log_ndtr(-a)  # ln sf(a)
    lb = special.log_ndtr(-b)
    with np.errstate(divide="ignore"):
        return la + np.log(-np.expm1(lb - la))


def lognormal_logpmf(x: np.ndarray, mu: float, sigma: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        with np.errstate(divide="ignore"):
            lo = (np.log(x - 1.0) - mu) / sigma  # z(x - 1); -inf at x = 1
            hi = (np.log(x) - mu) / sigma
            norm = special.log_ndtr(-(math.log(xmin - 1.0) - mu) / sigma) if xmin > 1 else 0.0
        return _log_diff_sf(lo, hi) - norm
    z = (np.log(x) - mu) / sigma
    norm = special.log_ndtr(-(math.log(xmin) - mu) / sigma)
    return -np.log(x) - math.log(sigma) - 0.5 * math.log(2 * math.pi) - 0.5 * z * z - norm


def exponential_logpmf(x: np.ndarray, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        return -lam * (x - xmin) + math.log(-math.expm1(-lam))
    return math.log(lam) - lam * (x - xmin)


def stretched_exp_logpmf(x: np.ndarray, lam: float, beta: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    base = -lam * (x**beta - xmin**beta)
    if discrete:
        with np.errstate(divide="ignore"):
            return base + np.log(-np.expm1(-lam * ((x + 1.0) ** beta - x**beta)))
    return math.log(beta * lam) + (beta - 1.0) * np.log(x) + base


def logpmf(fit: TailFit | PowerLawFit, x: np.ndarray) -> np.ndarray:
    """Pointwise log-probability of tail values under any fitted family."""
    x = np.asarray(x, dtype=np.float64)
    if isinstance(fit, PowerLawFit):
        return power_law_logpmf(x, fit.alpha, fit.xmin, fit.discrete)
    p = fit.params
    if fit.family == "truncated_power_law":
        if p["lambda"] == 0.0:
            return power_law_logpmf(x, p["alpha"], fit.xmin, fit.discrete)
        return tpl_logpmf(x, p["alpha"], p["lambda"], fit.xmin, fit.discrete)
    if fit.family == "lognormal":
        return lognormal_logpmf(x, p["mu"], p["sigma"], fit.xmin, fit.discrete)
    if fit.family == "exponential":
        return exponential_logpmf(x, p["lambda"], fit.xmin, fit.discrete)
    if fit.family == "stretched_exponential":
        return stretched_exp_logpmf(x, p["lambda"], p["beta"], fit.xmin, fit.discrete)
    raise ValueError(f"unknown family {fit.family!r}")


# ---------------------------------------------------------------------------------------------
# fitting


def _minimise(nll: Callable[[np.ndarray], float], starts: list[list[float]], bounds) -> tuple[np.ndarray, float, bool]:
    best_x, best_f, ok = None, math.inf, False
    for x0 in starts:
        with np.errstate(all="ignore"):
            res = optimize.minimize(nll, np.asarray(x0, dtype=float), method="L-BFGS-B", bounds=bounds)
        if np.isfinite(res.fun) and res.fun < best_f:
            best_x, best_f, ok = res.x, float(res.fun), bool(res.success)
    if best_x is None:
        return np.asarray(starts[0], dtype=float), math.inf, False
    return best_x, best_f, ok


def _safe(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
    def g(theta: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            v = f(theta)
        return v if np.isfinite(v) else 1e300

    return g


def fit_truncated_power_law(values, counts, xmin: float, discrete: bool, pl: PowerLawFit) -> TailFit:
    n = float(counts.sum())
    slog = float(np.dot(counts, np.log(values)))
    sx = float(np.dot(counts, values))

    def nll(theta):
        alpha, loglam = theta
        lam = math.exp(loglam)
        return alpha * slog + lam * sx + n * _tpl_logz(alpha, lam, xmin, discrete)

    mean = sx / n
    starts = [[pl.alpha, math.log(1.0 / values[-1])], [max(pl.alpha - 0.5, 0.5), math.log(1.0 / mean)]]
    theta, f, ok = _minimise(_safe(nll), starts, [_TPL_ALPHA_BOUNDS, _LOG_LAMBDA_BOUNDS])
    ll = -f
    params = {"alpha": float(theta[0]), "lambda": float(math.exp(theta[1]))}
    if not ll >= pl.loglik:  # nested: the power law (λ = 0) is in the family
        params, ll, ok = {"alpha": pl.alpha, "lambda": 0.0}, pl.loglik, True
    return TailFit(family="truncated_power_law", discrete=discrete, xmin=xmin, n_tail=int(n), params=params, loglik=float(ll), converged=ok)


def fit_lognormal(values, counts, xmin: float, discrete: bool) -> TailFit:
    n = float(counts.sum())
    logs = np.log(values - 0.5 if discrete else values)
    m = float(np.dot(counts, logs) / n)
    s = float(math.sqrt(max(np.dot(counts, (logs - m) ** 2) / n, 1e-4)))

    def nll(theta):
        mu, logsig = theta
        return -float(np.dot(counts, lognormal_logpmf(values, mu, math.exp(logsig), xmin, discrete)))

    lx = math.log(xmin)
    bounds = [(lx - 200.0, math.log(values[-1]) + 10.0), (math.log(0.01), math.log(100.0))]
    starts = [[m, math.log(s)], [lx - 2 * s * s, math.log(2 * s)]]
    theta, f, ok = _minimise(_safe(nll), starts, bounds)
    return TailFit(
        family="lognormal", discrete=discrete, xmin=xmin, n_tail=int(n),
        params={"mu": float(theta[0]), "sigma": float(math.exp(theta[1]))}, loglik=float(-f), converged=ok,
    )


def fit_exponential(values, counts, xmin: float, discrete: bool) -> TailFit:
    n = float(counts.sum())
    excess = float(np.dot(counts, values - xmin) / n)
    if excess <= 0:
        lam, ok = math.inf, False
    else:
        lam, ok = (math.log1p(1.0 / excess) if discrete else 1.0 / excess), True
    ll = float(np.dot(counts, exponential_logpmf(values, lam, xmin, discrete))) if ok else -math.inf
    return TailFit(family="exponential", discrete=discrete, xmin=xmin, n_tail=int(n), params={"lambda": lam}, loglik=ll, converged=ok)


def fit_stretched_exponential(values, counts, xmin: float, discrete: bool) -> TailFit:
    n = float(counts.sum())

    def nll(theta):
        loglam, logbeta = theta
        return -float(np.dot(counts, stretched_exp_logpmf(values, math.exp(loglam), math.exp(logbeta), xmin, discrete)))

    starts = []
    for beta in (0.3, 0.7):
        d = float(np.dot(counts, values**beta - xmin**beta) / n)
        starts.append([math.log(1.0 / d) if d > 0 else 0.0, math.log(beta)])
    theta, f, ok = _minimise(_safe(nll), starts, [(-60.0, 10.0), (math.log(1e-3), math.log(5.0))])
    return TailFit(
        family="stretched_exponential", discrete=discrete, xmin=xmin, n_tail=int(n),
        params={"lambda": float(math.exp(theta[0])), "beta": float(math.exp(theta[1]))}, loglik=float(-f), converged=ok,
    )
