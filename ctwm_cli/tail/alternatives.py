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

import numba
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


@numba.njit(cache=True, nogil=True)
def _log_gamma_cf(s: float, z: float) -> float:
    """ln Γ(s, z) by Legendre's continued fraction (modified Lentz); for z > max(1, s + 1)."""
    tiny = 1e-300
    b = z + 1.0 - s
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - s)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return -z + s * math.log(z) + math.log(h)


def _log_upper_gamma(s: float, z: float) -> float:
    """ln Γ(s, z) for 0 < z and any real s, without overflow.

    z > max(1, s + 1), or s < -50: Legendre's continued fraction
    Γ(s, z) = e^{-z} z^s / (z + 1 - s - 1(1 - s)/(z + 3 - s - 2(2 - s)/(...))) by modified Lentz,
    which converges fast there. Otherwise, s > 0: ln(Q(s, z) Γ(s)) from scipy; s <= 0 (so z <= 1):
    the downward recurrence on the scaled
    h(c) = Γ(c, z) z^{-c} e^{z}, h(c - 1) = (z·h(c) - 1)/(c - 1), from c = s + m in (0, 1]
    (Γ(0, z) = E1(z)) — stable for small z, where z·h(c) is small. Checked against mpmath.
    """
    if z > max(1.0, s + 1.0) or s < -50.0:
        return _log_gamma_cf(s, z)
    if s > 0:
        q = float(special.gammaincc(s, z))
        return math.log(q) + float(special.gammaln(s)) if q > 0 else -math.inf
    m = math.ceil(-s)
    c = s + m
    g0 = float(special.exp1(z)) if c == 0.0 else float(special.gammaincc(c, z) * special.gamma(c))
    h = g0 * math.exp(z - c * math.log(z))
    for _ in range(m):
        h = (z * h - 1.0) / (c - 1.0)
        c -= 1.0
    return math.log(h) + s * math.log(z) - z if h > 0 else -math.inf


def _tpl_log_remainder(alpha: float, lam: float, a: float) -> float:
    """ln of the Euler–Maclaurin remainder Σ_{x>=a} x^-α e^{-λx} ≈ ∫_a^∞ f + f(a)/2 - f'(a)/12."""
    loga = -alpha * math.log(a) - lam * a
    if lam > 0:
        log_int = (alpha - 1.0) * math.log(lam) + _log_upper_gamma(1.0 - alpha, lam * a)
    elif alpha > 1:
        log_int = (1.0 - alpha) * math.log(a) - math.log(alpha - 1.0)
    else:
        return math.inf
    corr = 0.5 + (alpha / a + lam) / 12.0  # f(a)/2 - f'(a)/12, relative to f(a)
    return float(np.logaddexp(log_int, loga + math.log(corr)))


def _tpl_logz_grad(alpha: float, lam: float, xmin: float, discrete: bool) -> tuple[float, float, float]:
    """(ln Z, ∂ln Z/∂α, ∂ln Z/∂λ). The directly summed part is differentiated exactly, the
    closed-form remainder (a smooth scalar) by central differences."""
    h = 1e-6

    def fd(f):
        v = f(alpha, lam)
        da = (f(alpha + h, lam) - f(alpha - h, lam)) / (2 * h)
        dl = (f(alpha, lam * (1 + h)) - f(alpha, lam * (1 - h))) / (2 * h * lam) if lam > 0 else 0.0
        return v, da, dl

    if not discrete:
        if lam <= 0:
            return fd(lambda a_, l_: (1 - a_) * math.log(xmin) - math.log(a_ - 1) if a_ > 1 else math.inf)
        return fd(lambda a_, l_: (a_ - 1.0) * math.log(l_) + _log_upper_gamma(1.0 - a_, l_ * xmin))
    x = xmin + np.arange(_DIRECT_TERMS, dtype=np.float64)
    lx = np.log(x)
    logf = -alpha * lx - lam * x
    shift = float(logf[0])
    w = np.exp(logf - shift)
    sw = float(w.sum())
    log_d = shift + math.log(sw)
    g_da = -float(np.dot(w, lx)) / sw
    g_dl = -float(np.dot(w, x)) / sw
    a = xmin + _DIRECT_TERMS
    if lam * a >= 60.0:  # the remainder is below e^-60 of the sum
        return log_d, g_da, g_dl
    log_r, r_da, r_dl = fd(lambda a_, l_: _tpl_log_remainder(a_, l_, a))
    if not math.isfinite(log_r):
        return math.inf, math.nan, math.nan
    log_z = float(np.logaddexp(log_d, log_r))
    wd, wr = math.exp(log_d - log_z), math.exp(log_r - log_z)
    return log_z, wd * g_da + wr * r_da, wd * g_dl + wr * r_dl


def _tpl_logz(alpha: float, lam: float, xmin: float, discrete: bool) -> float:
    return _tpl_logz_grad(alpha, lam, xmin, discrete)[0]


def tpl_logpmf(x: np.ndarray, alpha: float, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    return -alpha * np.log(x) - lam * x - _tpl_logz(alpha, lam, xmin, discrete)


def _log_diff_sf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln(Φ(b) - Φ(a)) for a < b, accurate in both tails."""
    la = special.log_ndtr(-a)  # ln sf(a)
    lb = special.log_ndtr(-b)
    with np.errstate(divide="ignore"):
        return la + np.log(-np.expm1(lb - la))


_NARROW = 1e-4  # interval width in z below which Φ(b) - Φ(a) is taken from the midpoint density


def _log_interval(x: np.ndarray, mu: float, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """z(x-1), z(x), the exact width w = ln(x/(x-1))/σ, and ln(Φ(z(x)) - Φ(z(x-1))); narrow
    intervals (large counts) use ln φ(mid) + ln w + ln(1 + w²(mid² - 1)/24) — subtracting two
    nearly equal tail probabilities would lose every digit."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (np.log(x - 1.0) - mu) / sigma  # -inf at x = 1
        b = (np.log(x) - mu) / sigma
        w = -np.log1p(-1.0 / x) / sigma
        narrow = w < _NARROW
        mid = b - 0.5 * w
        approx = _log_phi(mid) + np.log(w) + np.log1p(w * w * (mid * mid - 1.0) / 24.0)
        exact = _log_diff_sf(np.where(narrow, -1.0, a), np.where(narrow, 0.0, b))
    return a, b, w, np.where(narrow, approx, exact)


def lognormal_logpmf(x: np.ndarray, mu: float, sigma: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        norm = special.log_ndtr(-(math.log(xmin - 1.0) - mu) / sigma) if xmin > 1 else 0.0
        return _log_interval(x, mu, sigma)[3] - norm
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


def fit_truncated_power_law(values, counts, xmin: float, discrete: bool, pl: PowerLawFit,
                            start: dict[str, float] | None = None) -> TailFit:
    """MLE of (α, λ) over (α, ln λ) with the gradient. Starts: the power law's α with λ near
    1/max and 1/mean, plus ``start`` when given (e.g. the observed fit, in a calibration replicate)."""
    n = float(counts.sum())
    slog = float(np.dot(counts, np.log(values)))
    sx = float(np.dot(counts, values))

    def nll(theta):
        alpha, loglam = theta
        lam = math.exp(loglam)
        try:
            lz, ga, gl = _tpl_logz_grad(alpha, lam, xmin, discrete)
        except (OverflowError, ValueError, ZeroDivisionError):
            return 1e300, np.zeros(2)
        f = alpha * slog + lam * sx + n * lz
        if not math.isfinite(f):
            return 1e300, np.zeros(2)
        return f, np.array([slog + n * ga, lam * (sx + n * gl)])

    mean = sx / n
    # α's box grows with the power law's own (uncapped) α so the nested family always contains it
    alpha_bounds = (_TPL_ALPHA_BOUNDS[0], max(_TPL_ALPHA_BOUNDS[1], 2.0 * pl.alpha))
    starts = [[pl.alpha, math.log(1.0 / values[-1])], [max(pl.alpha - 0.5, 0.5), math.log(1.0 / mean)]]
    if start is not None and start.get("lambda", 0) > 0:
        starts.insert(0, [start["alpha"], math.log(start["lambda"])])
    best_x, best_f, ok = None, math.inf, False
    for i, x0 in enumerate(starts):
        if i == 1 and start is not None and ok:
            break  # a converged warm start (calibration replicates) is enough
        with np.errstate(all="ignore"):
            res = optimize.minimize(nll, np.asarray(x0, float), jac=True, method="L-BFGS-B",
                                    bounds=[alpha_bounds, _LOG_LAMBDA_BOUNDS])
        if np.isfinite(res.fun) and res.fun < best_f:
            best_x, best_f, ok = res.x, float(res.fun), bool(res.success)
    ll = -best_f if best_x is not None else -math.inf
    params = {"alpha": float(best_x[0]), "lambda": float(math.exp(best_x[1]))} if best_x is not None else {}
    if not ll >= pl.loglik:  # nested: the power law (λ = 0) is in the family
        params, ll, ok = {"alpha": pl.alpha, "lambda": 0.0}, pl.loglik, True
    return TailFit(family="truncated_power_law", discrete=discrete, xmin=xmin, n_tail=int(n), params=params, loglik=float(ll), converged=ok)


def _lognormal_nll_grad(theta, values, counts, xmin, discrete):
    """Negative log-likelihood of the (discrete or continuous) truncated log-normal and its gradient
    in (μ, ln σ)."""
    mu, logsig = theta
    sigma = math.exp(logsig)
    lo_edge = xmin - 1.0 if discrete else xmin
    c = (math.log(lo_edge) - mu) / sigma if lo_edge > 0 else -math.inf
    log_sc = float(special.log_ndtr(-c))
    # d/dμ and d/dσ of ln S_c, S_c = 1 - Φ(c)
    h_c = math.exp(_log_phi(c) - log_sc) if math.isfinite(c) else 0.0
    dsc_mu = h_c / sigma
    dsc_sig = c * h_c / sigma if math.isfinite(c) else 0.0
    if discrete:
        a, b, w, logd = _log_interval(values, mu, sigma)
        with np.errstate(divide="ignore", invalid="ignore"):
            ra = np.where(np.isfinite(a), np.exp(_log_phi(a) - logd), 0.0)
            rb = np.exp(_log_phi(b) - logd)
            aa = np.where(np.isfinite(a), a * ra, 0.0)
            gm = (ra - rb) / sigma
            gs = (aa - b * rb) / sigma
            # narrow intervals: d/dμ and d/dσ of ln φ(mid) + ln w, mid = z at the log-midpoint
            narrow = w < _NARROW
            mid = b - 0.5 * w
            gm = np.where(narrow, mid / sigma, gm)
            gs = np.where(narrow, (mid * mid - 1.0) / sigma, gs)
        ll = float(np.dot(counts, logd)) - counts.sum() * log_sc
        g_mu = float(np.dot(counts, gm)) - counts.sum() * dsc_mu
        g_sig = float(np.dot(counts, gs)) - counts.sum() * dsc_sig
    else:
        z = (np.log(values) - mu) / sigma
        n = counts.sum()
        ll = float(np.dot(counts, -np.log(values) - 0.5 * z * z)) - n * (logsig + 0.5 * math.log(2 * math.pi) + log_sc)
        g_mu = float(np.dot(counts, z / sigma)) - n * dsc_mu
        g_sig = float(np.dot(counts, z * z / sigma)) - n / sigma - n * dsc_sig
    return -ll, np.array([-g_mu, -g_sig * sigma])


def _log_phi(z):
    return -0.5 * np.square(z) - 0.5 * math.log(2 * math.pi)


def fit_lognormal(values, counts, xmin: float, discrete: bool, start: dict[str, float] | None = None) -> TailFit:
    """MLE of (μ, σ) with the analytic gradient; ``start`` is tried first when given."""
    n = float(counts.sum())
    logs = np.log(values - 0.5 if discrete else values)
    m = float(np.dot(counts, logs) / n)
    s = float(math.sqrt(max(np.dot(counts, (logs - m) ** 2) / n, 1e-4)))
    lx = math.log(xmin)
    bounds = [(lx - 200.0, math.log(values[-1]) + 10.0), (math.log(0.01), math.log(100.0))]
    starts = [[m, math.log(s)], [lx - 2 * s * s, math.log(2 * s)]]
    if start is not None:
        starts.insert(0, [start["mu"], math.log(start["sigma"])])
    best_x, best_f, ok = None, math.inf, False
    for i, x0 in enumerate(starts):
        if i == 1 and start is not None and ok:
            break  # a converged warm start (calibration replicates) is enough
        with np.errstate(all="ignore"):
            res = optimize.minimize(_lognormal_nll_grad, np.asarray(x0, float), args=(values, counts, xmin, discrete),
                                    jac=True, method="L-BFGS-B", bounds=bounds)
        if np.isfinite(res.fun) and res.fun < best_f:
            best_x, best_f, ok = res.x, float(res.fun), bool(res.success)
    if best_x is None:
        best_x = np.asarray(starts[0], float)
    return TailFit(
        family="lognormal", discrete=discrete, xmin=xmin, n_tail=int(n),
        params={"mu": float(best_x[0]), "sigma": float(math.exp(best_x[1]))}, loglik=float(-best_f), converged=ok,
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
