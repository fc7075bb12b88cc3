"""Log-probabilities and normalisers of the tail families, on the integers >= x_min or as densities.

- truncated power law: p(x) = x^-α e^{-λx} / Z, Z = Σ_{x>=x_min} x^-α e^{-λx}, λ >= 0. Z is exact:
  2048 terms summed directly, the rest by Euler–Maclaurin with the integral λ^{α-1} Γ(1-α, λa) in
  closed form.
- log-normal: the law of ceil(Y), Y ~ LogNormal(μ, σ), conditioned on X >= x_min:
  p(x) = [Φ(z(x)) - Φ(z(x-1))] / [1 - Φ(z(x_min-1))], z(t) = (ln t - μ)/σ.
- exponential: geometric, p(x) = (1 - e^{-λ}) e^{-λ(x - x_min)}.
- stretched exponential: P(X >= x) = exp(-κ g_β(x)), g_β(x) = (x^β - x_min^β)/β, so that
  κ = λβ and β -> 0 is a model of its own: g_0(x) = ln(x/x_min), P(X >= x) = (x/x_min)^-κ.

Continuous forms are the usual densities truncated to x >= x_min.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import special
from .kernels import kernel

# scalar calls: the same C functions as the ufuncs (the same bits, tests/test_tail_scalar_math.py) at an
# eighth of a ufunc call's overhead, which the fits pay per evaluation (issue 29)
from .special import cython_special as cs

DIRECT_TERMS = 2048


# ---------------------------------------------------------------------------------------------
# Upper incomplete gamma for any real s (closed-form TPL integrals)


@kernel
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
        return _log_upper_gamma_from(s, z, False, cs.gammaincc(s, z), 0, 0.0, cs.gammaln(s))
    m = math.ceil(-s)
    c = s + m
    return _log_upper_gamma_from(s, z, False, cs.exp1(z) if c == 0.0 else cs.gammaincc(c, z) * cs.gamma(c), m, c,
                                 0.0)


def _log_upper_gammas(s: float, z: np.ndarray) -> np.ndarray:
    """:func:`_log_upper_gamma` (s, z) at every z, the same bits: scipy's functions called once on the array
    (a ufunc computes each element as its scalar call does), the rest compiled."""
    cf = (z > max(1.0, s + 1.0)) | (s < -50.0)
    g, m, c, gl = np.zeros(z.size), 0, 0.0, 0.0
    rest = ~cf
    if rest.any():
        if s > 0:
            g[rest], gl = special.gammaincc(s, z[rest]), cs.gammaln(s)
        else:
            m = math.ceil(-s)
            c = s + m
            g[rest] = special.exp1(z[rest]) if c == 0.0 else special.gammaincc(c, z[rest]) * cs.gamma(c)
    return _log_upper_gammas_from(s, z, cf, g, m, c, gl)


@kernel
def _log_upper_gamma_from(s, z, cf, g, m, c, gl):
    """ln Γ(s, z) from what scipy supplies (:func:`_log_upper_gamma`): ``cf``: by the continued fraction;
    else s > 0: g = Q(s, z), gl = ln Γ(s); s <= 0: g = Γ(c, z), c = s + m in (0, 1]."""
    if cf:
        return _log_gamma_cf(s, z)
    if s > 0:
        return math.log(g) + gl if g > 0 else -math.inf
    h = g * math.exp(z - c * math.log(z))
    for _ in range(m):
        h = (z * h - 1.0) / (c - 1.0)
        c -= 1.0
    return math.log(h) + s * math.log(z) - z if h > 0 else -math.inf


@kernel
def _log_upper_gammas_from(s, z, cf, g, m, c, gl):
    out = np.empty(z.size)
    for i in range(z.size):
        out[i] = _log_upper_gamma_from(s, z[i], cf[i], g[i], m, c, gl)
    return out


_LOG2 = math.log(2.0)


@kernel
def logaddexp(x, y):
    """``float(np.logaddexp(x, y))`` for two floats, the same bits (numpy's npy_logaddexp, step for step,
    on the same libm exp and log1p), at a fifth of a ufunc call's cost: the TPL's normaliser and survival
    function call it per value and per evaluation."""
    if x == y:  # equal infinities too
        return x + _LOG2
    t = x - y
    if t > 0:
        return x + math.log1p(math.exp(-t))
    if t <= 0:
        return y + math.log1p(math.exp(t))
    return t  # NaN


def _tpl_log_remainder(alpha: float, lam: float, a: float) -> float:
    """ln of the Euler–Maclaurin remainder Σ_{x>=a} x^-α e^{-λx} ≈ ∫_a^∞ f + f(a)/2 - f'(a)/12."""
    if lam > 0:
        log_int = (alpha - 1.0) * math.log(lam) + _log_upper_gamma(1.0 - alpha, lam * a)
    elif alpha > 1:
        log_int = (1.0 - alpha) * math.log(a) - math.log(alpha - 1.0)
    else:
        return math.inf
    return _remainder_from(alpha, lam, a, log_int)


@kernel
def _remainder_from(alpha, lam, a, log_int):
    """The remainder of :func:`_tpl_log_remainder` given its integral's log ``log_int``."""
    loga = -alpha * math.log(a) - lam * a
    corr = 0.5 + (alpha / a + lam) / 12.0  # f(a)/2 - f'(a)/12, relative to f(a)
    return logaddexp(log_int, loga + math.log(corr))


@kernel
def _far_sf(alpha, lam, a, lug, lz0):
    """P(X >= a) = min(exp(ln remainder(a) - ln Z), 1) of the discrete TPL beyond its directly summed
    part, at every a (λ > 0), from lug = ln Γ(1 - α, λa)."""
    out = np.empty(a.size)
    t = (alpha - 1.0) * math.log(lam)
    for i in range(a.size):
        v = _remainder_from(alpha, lam, a[i], t + lug[i]) - lz0
        if v > 0.0:  # min(v, 0.0), NaN kept
            v = 0.0
        out[i] = math.exp(v)
    return out


@kernel
def _continuous_sf(lug, t, lz0):
    """exp(lug + t - lz0) at every lug: the continuous TPL's λ^{α-1} Γ(1-α, λx)/Z, t = (α - 1) ln λ."""
    out = np.empty(lug.size)
    for i in range(lug.size):
        out[i] = math.exp(lug[i] + t - lz0)
    return out


@functools.lru_cache(maxsize=64)
def _direct_grid(xmin: float) -> tuple[np.ndarray, np.ndarray]:
    """The directly summed support x_min, ..., x_min + DIRECT_TERMS - 1 and its logs (read-only): every
    evaluation of one fit's normaliser sums over the same grid."""
    x = xmin + np.arange(DIRECT_TERMS, dtype=np.float64)
    lx = np.log(x)
    x.flags.writeable = lx.flags.writeable = False
    return x, lx


def tpl_logz_grad(alpha: float, lam: float, xmin: float, discrete: bool) -> tuple[float, float, float]:
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
    x, lx = _direct_grid(xmin)
    logf = -alpha * lx - lam * x
    shift = float(logf.max())  # the peak (α < 0 puts it inside the range): exp never overflows
    w = np.exp(logf - shift)
    sw = float(w.sum())
    log_d = shift + math.log(sw)
    g_da = -float(np.dot(w, lx)) / sw
    g_dl = -float(np.dot(w, x)) / sw
    a = xmin + DIRECT_TERMS
    if lam * a >= 60.0:  # the remainder is below e^-60 of the sum
        return log_d, g_da, g_dl
    log_r, r_da, r_dl = fd(lambda a_, l_: _tpl_log_remainder(a_, l_, a))
    if not math.isfinite(log_r):
        return math.inf, math.nan, math.nan
    log_z = logaddexp(log_d, log_r)
    wd, wr = math.exp(log_d - log_z), math.exp(log_r - log_z)
    return log_z, wd * g_da + wr * r_da, wd * g_dl + wr * r_dl


def tpl_logz(alpha: float, lam: float, xmin: float, discrete: bool) -> float:
    return tpl_logz_grad(alpha, lam, xmin, discrete)[0]


def tpl_logpmf(x: np.ndarray, alpha: float, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    return -alpha * np.log(x) - lam * x - tpl_logz(alpha, lam, xmin, discrete)


def _log_diff_sf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln(Φ(b) - Φ(a)) for a < b, accurate in both tails."""
    la = special.log_ndtr(-a)  # ln sf(a)
    lb = special.log_ndtr(-b)
    with np.errstate(divide="ignore"):
        return la + np.log(-np.expm1(lb - la))


NARROW = 1e-4  # interval width in z below which Φ(b) - Φ(a) is taken from the midpoint density


def log_interval(x: np.ndarray, mu: float, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """z(x-1), z(x), the exact width w = ln(x/(x-1))/σ, and ln(Φ(z(x)) - Φ(z(x-1))); narrow
    intervals (large counts) use ln φ(mid) + ln w + ln(1 + w²(mid² - 1)/24) — subtracting two
    nearly equal tail probabilities would lose every digit."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (np.log(x - 1.0) - mu) / sigma  # -inf at x = 1
        b = (np.log(x) - mu) / sigma
        w = -np.log1p(-1.0 / x) / sigma
        narrow = w < NARROW
        if not narrow.any():  # the same values without the narrow branch's dozen array calls (issue 48)
            return a, b, w, _log_diff_sf(a, b)
        mid = b - 0.5 * w
        approx = log_phi(mid) + np.log(w) + np.log1p(w * w * (mid * mid - 1.0) / 24.0)
        exact = _log_diff_sf(np.where(narrow, -1.0, a), np.where(narrow, 0.0, b))
    return a, b, w, np.where(narrow, approx, exact)


def lognormal_logpmf(x: np.ndarray, mu: float, sigma: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        norm = special.log_ndtr(-(math.log(xmin - 1.0) - mu) / sigma) if xmin > 1 else 0.0
        return log_interval(x, mu, sigma)[3] - norm
    z = (np.log(x) - mu) / sigma
    norm = special.log_ndtr(-(math.log(xmin) - mu) / sigma)
    return -np.log(x) - math.log(sigma) - 0.5 * math.log(2 * math.pi) - 0.5 * z * z - norm


def exponential_logpmf(x: np.ndarray, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if discrete:
        return -lam * (x - xmin) + math.log(-math.expm1(-lam))
    return math.log(lam) - lam * (x - xmin)


def stretched_g(x: np.ndarray, beta: float, xmin: float) -> np.ndarray:
    """g_β(x) = (x^β - x_min^β)/β = x_min^β·expm1(β ln(x/x_min))/β, accurate as β -> 0; g_0 = ln(x/x_min)."""
    r = np.log(np.asarray(x, dtype=np.float64) / xmin)
    if beta == 0.0:
        return r
    return xmin**beta * np.expm1(beta * r) / beta


def stretched_exp_logpmf(x: np.ndarray, kappa: float, beta: float, xmin: float, discrete: bool) -> np.ndarray:
    """P(X >= x) = exp(-κ g_β(x)); discrete p(x) = P(X >= x) - P(X >= x + 1), continuous κ x^{β-1} e^{-κ g}."""
    x = np.asarray(x, dtype=np.float64)
    base = -kappa * stretched_g(x, beta, xmin)
    if discrete:
        # g(x + 1) - g(x) = x^β expm1(β ln(1 + 1/x))/β without cancellation; ln(1 + 1/x) at β = 0
        lp = np.log1p(1.0 / x)
        step = lp if beta == 0.0 else x**beta * np.expm1(beta * lp) / beta
        with np.errstate(divide="ignore"):
            return base + np.log(-np.expm1(-kappa * step))
    return math.log(kappa) + (beta - 1.0) * np.log(x) + base


def lognormal_nll_grad(theta, values, counts, xmin, discrete):
    """Negative log-likelihood of the (discrete or continuous) truncated log-normal and its gradient
    in (μ, ln σ)."""
    mu, logsig = theta
    sigma = math.exp(logsig)
    lo_edge = xmin - 1.0 if discrete else xmin
    c = (math.log(lo_edge) - mu) / sigma if lo_edge > 0 else -math.inf
    log_sc = cs.log_ndtr(-c)
    # d/dμ and d/dσ of ln S_c, S_c = 1 - Φ(c)
    h_c = math.exp(log_phi(c) - log_sc) if math.isfinite(c) else 0.0
    dsc_mu = h_c / sigma
    dsc_sig = c * h_c / sigma if math.isfinite(c) else 0.0
    if discrete:
        a, b, w, logd = log_interval(values, mu, sigma)
        with np.errstate(divide="ignore", invalid="ignore"):
            ra = np.where(np.isfinite(a), np.exp(log_phi(a) - logd), 0.0)
            rb = np.exp(log_phi(b) - logd)
            aa = np.where(np.isfinite(a), a * ra, 0.0)
            gm = (ra - rb) / sigma
            gs = (aa - b * rb) / sigma
            # narrow intervals: d/dμ and d/dσ of ln φ(mid) + ln w, mid = z at the log-midpoint
            narrow = w < NARROW
            if narrow.any():
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


def log_phi(z):
    return -0.5 * np.square(z) - 0.5 * math.log(2 * math.pi)




# ---------------------------------------------------------------------------------------------
# Survival functions P(X >= x) of the tail laws, for the families' KS distances (issue 26). They need
# absolute accuracy (a KS distance is an absolute difference of CDFs), not relative accuracy far out.


def tpl_sf(x: np.ndarray, alpha: float, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    """P(X >= x) = Z(x)/Z(x_min) of the truncated power law (λ > 0). Discrete: Z(x) = Z(x_min) minus the
    directly summed masses below x for x < x_min + DIRECT_TERMS, the Euler–Maclaurin remainder (the
    normaliser's own, accurate that far out) beyond. Continuous: λ^{α-1} Γ(1-α, λx) ratios."""
    x = np.asarray(x, dtype=np.float64)
    lz0 = tpl_logz(alpha, lam, xmin, discrete)
    if not discrete:
        return _continuous_sf(_log_upper_gammas(1.0 - alpha, lam * x), (alpha - 1.0) * math.log(lam), lz0)
    out = np.empty(x.size)
    near = x < xmin + DIRECT_TERMS
    grid = xmin + np.arange(DIRECT_TERMS, dtype=np.float64)
    below = np.concatenate([[0.0], np.cumsum(np.exp(-alpha * np.log(grid) - lam * grid - lz0))])
    out[near] = np.maximum(1.0 - below[(x[near] - xmin).astype(np.int64)], 0.0)
    far = x[~near]
    out[~near] = _far_sf(alpha, lam, far, _log_upper_gammas(1.0 - alpha, lam * far), lz0)
    return out


def lognormal_sf(x: np.ndarray, mu: float, sigma: float, xmin: float, discrete: bool) -> np.ndarray:
    """P(X >= x): P(Y > x - 1)/P(Y > x_min - 1) for ceil(Y), P(Y >= x)/P(Y >= x_min) for Y."""
    x = np.asarray(x, dtype=np.float64)
    lo, lo0 = (x - 1.0, xmin - 1.0) if discrete else (x, xmin)
    norm = float(special.log_ndtr(-(math.log(lo0) - mu) / sigma)) if lo0 > 0 else 0.0
    with np.errstate(divide="ignore"):
        z = (np.log(lo) - mu) / sigma  # -inf at x = 1 (discrete): P = 1
    return np.exp(np.minimum(special.log_ndtr(-z) - norm, 0.0))


def exponential_sf(x: np.ndarray, lam: float, xmin: float, discrete: bool) -> np.ndarray:
    return np.exp(-lam * (np.asarray(x, dtype=np.float64) - xmin))


def stretched_exp_sf(x: np.ndarray, kappa: float, beta: float, xmin: float, discrete: bool) -> np.ndarray:
    return np.exp(-kappa * stretched_g(x, beta, xmin))
