"""Warm-started Newton refits of the truncated power law (issue 48).

Why: a bootstrap replicate refits the TPL (the nested test's null, the TPL's fit check) and the
log-normal (its fit check) from the observed fit. L-BFGS-B took 15-40 Python-level evaluations per
refit and, on small tails (blackouts, many tenants), those refits were 80-90 % of the audit's CPU
(``benchmarks/audit_cost_profile.py``). A replicate's optimum is within a few standard errors of the
warm start, where Newton's method with the exact Hessian converges quadratically: 3-6 evaluations.

What: :func:`newton` is a damped Newton method (Armijo backtracking, steps kept inside a feasible
set) on an objective that returns (f, gradient, Hessian). It returns None -- and the caller falls back
to :func:`~.optimise.minimise`, the optimiser of every observed fit -- unless it converged (its Newton
decrement below ``DEC_TOL``, a positive definite Hessian) strictly inside the box, so a fit at a bound is
still found, and reported, by the one optimiser. The gradients are the ones the current objectives
return (the same functions of the parameters), so the optimum is the same stationary point, found to a
tighter tolerance than L-BFGS-B's (gtol 1e-5): tests/test_tail_newton.py compares both, and both with
a tight scipy run and with closed forms.

- TPL: in its natural parameters (α, λ), where the negative log-likelihood α·Σln x + λ·Σx + n ln Z is
  convex (an exponential family on a fixed support) and its Hessian is n times the covariance of
  (ln x, x) under the model. A boundary optimum λ = 0 is recognised by its Karush-Kuhn-Tucker condition
  at the power law, which is the family's limit there: ∂/∂λ at (α_PL, 0+) = Σx - n·E_PL[X] >= 0.

Not the log-normal: tried (its analytic Hessian in (μ, ln σ)), it was slower than L-BFGS-B where its
refits cost most, on ridges of the power-law limit (terrorism: μ = -15.8 ± 25.7), where Newton needed
11-56 evaluations from the warm start against L-BFGS-B's 15-40.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import densities as dens
from .kernels import kernel
from .zeta import log_hurwitz_zeta

#: converged when the Newton decrement g'H^-1 g (twice the predicted gain of a step) is below this, or
#: 1e-14 |f|: the remaining error is then below 1e-6 standard errors in every direction -- and the TPL's
#: gradient, part finite differences of its normaliser's remainder, is not exact to much better
DEC_TOL = 1e-12
MAX_ITER = 40
EDGE_MARGIN = 1e-4  # an optimum closer than this (relative to the box's scale) to an edge: the fallback decides


def _solve2(h: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """-H^-1 g for a 2x2 H, or None when H is not positive definite."""
    a, b, d = h[0, 0], 0.5 * (h[0, 1] + h[1, 0]), h[1, 1]
    det = a * d - b * b
    if not (a > 0 and d > 0 and det > 0 and math.isfinite(det)):
        return None
    return np.array([-(d * g[0] - b * g[1]) / det, -(a * g[1] - b * g[0]) / det])


def _damped(h: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """-(H + τI)^-1 g with the smallest τ = scale·10^k (k >= -8) that makes H + τI positive definite."""
    scale = max(abs(h[0, 0]), abs(h[1, 1]), 1e-300)
    for k in range(-8, 17):
        step = _solve2(h + scale * 10.0**k * np.eye(2), g)
        if step is not None:
            return step
    return None


def newton(fgh: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]], x0, inside: Callable[[np.ndarray], bool],
           *, max_iter: int = MAX_ITER, damp: bool = True) -> tuple[np.ndarray, float] | None:
    """(x, f) of the minimum reached by damped Newton from ``x0`` (2 parameters), or None when it did not
    converge within ``max_iter`` steps (a step that cannot stay ``inside``, non-finite values, a Hessian not
    positive definite where the decrement is small; where it is not positive definite elsewhere, ``damp``:
    a Levenberg-Marquardt step, else None)."""
    x = np.asarray(x0, dtype=np.float64)
    if not inside(x):
        return None
    with np.errstate(all="ignore"):
        try:
            f, g, h = fgh(x)
            for _ in range(max_iter):
                if not (math.isfinite(f) and np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
                    return None
                step = _solve2(h, g)
                if step is None:  # not convex here (a ridge): a Levenberg-Marquardt step, shorter and downhill
                    step = _damped(h, g) if damp else None
                    if step is None:
                        return None
                    if -float(g @ step) <= max(DEC_TOL, 1e-14 * abs(f)):
                        return None  # flat but not a minimum
                slope = float(g @ step)
                if -slope <= max(DEC_TOL, 1e-14 * abs(f)):
                    # the last step, free: quadratic convergence makes x + step far closer than x; its value is
                    # the quadratic model's, f + slope/2, off by a third-order term (< 1e-15 here)
                    end = x + step
                    return (end, f + 0.5 * slope) if inside(end) else (x, f)
                t = 1.0
                while True:
                    xn = x + t * step
                    if inside(xn):
                        fn, gn, hn = fgh(xn)
                        if math.isfinite(fn) and fn <= f + 1e-4 * t * slope + 4e-16 * abs(f):
                            break
                    t *= 0.5
                    if t < 1e-8:
                        return None
                x, f, g, h = xn, fn, gn, hn
        except (OverflowError, ValueError, ZeroDivisionError):
            return None
    return None


def interior(x: np.ndarray, box: list[tuple[float, float]]) -> bool:
    """Strictly inside ``box`` by EDGE_MARGIN of its scale in every coordinate."""
    return all(lo + EDGE_MARGIN * max(1.0, abs(lo)) < v < hi - EDGE_MARGIN * max(1.0, abs(hi))
               for v, (lo, hi) in zip(x, box, strict=True))


# ---------------------------------------------------------------------------------------------
# truncated power law


def tpl_logz_hess(alpha: float, lam: float, xmin: float, discrete: bool) -> tuple[float, np.ndarray, np.ndarray]:
    """(ln Z, its gradient, its Hessian) in (α, λ), λ > 0: the value and gradient of
    :func:`~.densities.tpl_logz_grad` (the same formulas, summed in a compiled loop: equal to ~1e-15 relative,
    tests/test_tail_newton.py) and the Hessian, the covariance of (ln x, x) under the model: exact on the
    directly summed part, by quadrature on the remainder beyond it (whose value and gradient are
    tpl_logz_grad's closed form and central differences). The Hessian's accuracy sets how fast Newton
    converges, not where."""
    if not discrete:
        def f(a_, l_):
            return (a_ - 1.0) * math.log(l_) + dens._log_upper_gamma(1.0 - a_, l_ * xmin)

        v, g = _fd_grad(f, alpha, lam)
        return v, g, _hess_fd(f, alpha, lam, 1e-4)
    x, lx = dens._direct_grid(xmin)
    log_d, m1, m2, c11, c12, c22 = _direct_moments(alpha, lam, x, lx)
    g_da, g_dl = -m1, -m2
    hd = np.array([[c11, c12], [c12, c22]])
    a = xmin + dens.DIRECT_TERMS
    if lam * a >= 60.0:  # as tpl_logz_grad: the remainder is below e^-60 of the sum
        return log_d, np.array([g_da, g_dl]), hd

    def rem(a_, l_):
        return dens._tpl_log_remainder(a_, l_, a)

    log_r, (r_da, r_dl) = _fd_grad(rem, alpha, lam)
    if not math.isfinite(log_r):
        return math.inf, np.array([math.nan, math.nan]), np.full((2, 2), math.nan)
    log_z = dens.logaddexp(log_d, log_r)
    wd, wr = math.exp(log_d - log_z), math.exp(log_r - log_z)
    diff = np.array([g_da - r_da, g_dl - r_dl])
    hz = wd * hd + wd * wr * np.outer(diff, diff)
    if log_r - log_d > -30.0:  # a weight below e^-30 adds nothing a Newton step could use
        r11, r12, r22 = _remainder_cov(alpha, lam, a)
        hz += wr * np.array([[r11, r12], [r12, r22]])
    return log_z, np.array([wd * g_da + wr * r_da, wd * g_dl + wr * r_dl]), hz


def _fd_grad(f: Callable[[float, float], float], alpha: float, lam: float) -> tuple[float, np.ndarray]:
    """f and its gradient by tpl_logz_grad's central differences (steps 1e-6 and λ·1e-6)."""
    h = 1e-6
    v = f(alpha, lam)
    da = (f(alpha + h, lam) - f(alpha - h, lam)) / (2 * h)
    dl = (f(alpha, lam * (1 + h)) - f(alpha, lam * (1 - h))) / (2 * h * lam)
    return v, np.array([da, dl])


def _hess_fd(f: Callable[[float, float], float], alpha: float, lam: float, h: float) -> np.ndarray:
    """The Hessian of a smooth scalar f by central second differences (steps h, λh)."""
    k = lam * h
    f0 = f(alpha, lam)
    faa = (f(alpha + h, lam) - 2 * f0 + f(alpha - h, lam)) / (h * h)
    fll = (f(alpha, lam + k) - 2 * f0 + f(alpha, lam - k)) / (k * k)
    fal = (f(alpha + h, lam + k) - f(alpha + h, lam - k) - f(alpha - h, lam + k) + f(alpha - h, lam - k)) / (4 * h * k)
    return np.array([[faa, fal], [fal, fll]])


@kernel
def _direct_moments(alpha, lam, x, lx):
    """ln Σ w, E[ln x], E[x] and the covariance of (ln x, x) under w = x^-α e^{-λx} on the grid (x, lx = ln x)."""
    n = x.size
    shift = -math.inf
    for i in range(n):
        v = -alpha * lx[i] - lam * x[i]
        if v > shift:
            shift = v
    w = np.empty(n)
    s0 = s1 = s2 = 0.0
    for i in range(n):
        wi = math.exp(-alpha * lx[i] - lam * x[i] - shift)
        w[i] = wi
        s0 += wi
        s1 += wi * lx[i]
        s2 += wi * x[i]
    m1, m2 = s1 / s0, s2 / s0
    c11 = c12 = c22 = 0.0
    for i in range(n):
        d1, d2 = lx[i] - m1, x[i] - m2
        c11 += w[i] * d1 * d1
        c12 += w[i] * d1 * d2
        c22 += w[i] * d2 * d2
    return shift + math.log(s0), m1, m2, c11 / s0, c12 / s0, c22 / s0


@kernel
def _remainder_cov(alpha, lam, a):
    """The covariance of (ln x, x) under x^-α e^{-λx} on [a, ∞), λ > 0: Simpson's rule on x = a·e^t over
    t in [0, T], T where the integrand has fallen by e^-40 from its peak (128 panels: ~1e-5 relative, which is
    all a Newton step needs)."""
    la = lam * a
    peak = 0.0  # ln of the integrand, relative to t = 0: (1 - α)t - λa(e^t - 1)
    if alpha < 1.0 and (1.0 - alpha) > la:
        ts = math.log((1.0 - alpha) / la)
        peak = (1.0 - alpha) * ts - la * (math.exp(ts) - 1.0)
    t_end = 1.0
    while t_end < 80.0 and (1.0 - alpha) * t_end - la * (math.exp(t_end) - 1.0) > peak - 40.0:
        t_end *= 1.5
    m = 128
    step = t_end / m
    s0 = s1 = s2 = s11 = s12 = s22 = 0.0
    for j in range(m + 1):
        t = j * step
        c = 1.0 if j == 0 or j == m else (4.0 if j % 2 == 1 else 2.0)
        w = c * math.exp((1.0 - alpha) * t - la * (math.exp(t) - 1.0) - peak)
        u = t  # ln x - ln a
        v = math.exp(t)  # x / a
        s0 += w
        s1 += w * u
        s2 += w * v
        s11 += w * u * u
        s12 += w * u * v
        s22 += w * v * v
    m1, m2 = s1 / s0, s2 / s0
    return s11 / s0 - m1 * m1, a * (s12 / s0 - m1 * m2), a * a * (s22 / s0 - m2 * m2)


def tpl_refit(tail, alpha0: float, lam0: float, box_alpha: tuple[float, float], log_lambda: tuple[float, float],
              pl_alpha: float) -> tuple[np.ndarray, float] | str | None:
    """The TPL's MLE on ``tail`` by Newton from (α0, λ0): (α, ln λ) and the negative log-likelihood;
    ``"limit"`` when the optimum is the power law (λ = 0, by the KKT condition at α_PL); None: not
    converged inside the box (the caller's optimiser decides)."""
    n, xmin, d = tail.n, tail.xmin, tail.discrete
    slog = float(np.dot(tail.counts, np.log(tail.values)))
    sx = float(np.dot(tail.counts, tail.values))
    if pl_alpha > 2.0 and sx > n * _power_law_mean(pl_alpha, xmin, d) * (1 + 1e-9):
        return "limit"
    lo_l, hi_l = math.exp(log_lambda[0]), math.exp(log_lambda[1])

    def inside(t):
        return box_alpha[0] < t[0] < box_alpha[1] and lo_l < t[1] < hi_l

    def fgh(t):
        lz, gz, hz = tpl_logz_hess(float(t[0]), float(t[1]), xmin, d)
        return t[0] * slog + t[1] * sx + n * lz, np.array([slog + n * gz[0], sx + n * gz[1]]), n * hz

    out = newton(fgh, [alpha0, lam0], inside)
    if out is None:
        return None
    theta = np.array([out[0][0], math.log(out[0][1])])
    return (theta, out[1]) if interior(theta, [box_alpha, log_lambda]) else None


def _power_law_mean(alpha: float, xmin: float, discrete: bool) -> float:
    """E[X] of the power law on x >= x_min (α > 2): ζ(α-1, x_min)/ζ(α, x_min), or x_min(α-1)/(α-2)."""
    if discrete:
        return math.exp(log_hurwitz_zeta(alpha - 1.0, xmin) - log_hurwitz_zeta(alpha, xmin))
    return xmin * (alpha - 1.0) / (alpha - 2.0)
