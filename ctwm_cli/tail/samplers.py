"""Exact draws from the fitted tail families (x >= x_min), used through :mod:`ctwm_cli.tail.families`."""

from __future__ import annotations

import functools
import math

import numpy as np

from . import special
from .densities import DIRECT_TERMS, tpl_logz, tpl_sf
from .powerlaw import sample_power_law


def sample_lognormal_tail(mu: float, sigma: float, xmin: float, size: int, rng: np.random.Generator,
                          discrete: bool) -> np.ndarray:
    """Exact draws of ceil(Y), Y ~ LogNormal(μ, σ) conditioned on ceil(Y) >= x_min (or Y >= x_min)."""
    lo = xmin - 1.0 if discrete else xmin
    z0 = (math.log(lo) - mu) / sigma if lo > 0 else -math.inf
    s0 = special.ndtr(-z0)  # P(Z > z0)
    u = rng.random(size)
    z = -special.ndtri(u * s0)  # Z | Z > z0 by inversion in the upper tail
    y = np.exp(mu + sigma * z)
    if not discrete:
        return np.maximum(y, xmin)
    return np.maximum(np.ceil(y), xmin)


def _accept(size: int, propose, accept_prob, rng: np.random.Generator) -> np.ndarray:
    """Rejection sampling: proposals from ``propose(m)``, kept with probability ``accept_prob(x)``."""
    out = np.empty(size)
    filled = 0
    while filled < size:
        want = size - filled
        prop = propose(int(want * 1.5) + 32)
        keep = prop[rng.random(prop.size) < accept_prob(prop)][:want]
        out[filled : filled + keep.size] = keep
        filled += keep.size
    return out


def sample_tpl_tail(alpha: float, lam: float, xmin: float, size: int, rng: np.random.Generator,
                    discrete: bool) -> np.ndarray:
    """Exact draws from p(x) ∝ x^-α e^{-λx}, x >= x_min."""
    if lam <= 0:
        return sample_power_law(alpha, xmin, size, rng, discrete)
    if discrete and alpha >= 0:
        return _sample_tpl_table(alpha, lam, xmin, size, rng)
    if alpha > 1:  # continuous: power-law proposal, accept with e^{-λ(x - x_min)}
        return _accept(size, lambda m: sample_power_law(alpha, xmin, m, rng, discrete),
                       lambda x: np.exp(-lam * (x - xmin)), rng)
    if not discrete:
        # x^-α e^{-λx} with α < 1 is a Gamma(1 - α, 1/λ) density: invert its upper tail above x_min
        a = 1.0 - alpha
        q0 = special.gammaincc(a, lam * xmin)
        return np.maximum(special.gammainccinv(a, rng.random(size) * q0) / lam, xmin)
    # α < 0: invert the tabulated CDF (the mass beyond the grid is below e^-60)
    hi = xmin + math.ceil(60.0 / lam) + math.ceil(-alpha / lam)
    grid = np.arange(xmin, hi + 1.0)
    logp = -alpha * np.log(grid) - lam * grid
    cdf = np.cumsum(np.exp(logp - logp.max()))
    return grid[np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1]), grid.size - 1)]


@functools.lru_cache(maxsize=32)
def _tpl_table(alpha: float, lam: float, xmin: float) -> tuple[np.ndarray, float]:
    """The discrete TPL's CDF at x_min, ..., x_min + DIRECT_TERMS - 1 (read-only) and its total with the mass
    beyond, P(X >= x_min + DIRECT_TERMS): the same split as the normaliser's (direct sum + Euler–Maclaurin
    remainder), so the cells and the rest add up to the normaliser the fits use. One fit's replicates share it."""
    x = xmin + np.arange(DIRECT_TERMS, dtype=np.float64)
    cdf = np.cumsum(np.exp(-alpha * np.log(x) - lam * x - tpl_logz(alpha, lam, xmin, True)))
    rest = float(tpl_sf(np.array([xmin + DIRECT_TERMS]), alpha, lam, xmin, True)[0])
    cdf.flags.writeable = False
    return cdf, float(cdf[-1]) + rest


def _sample_tpl_table(alpha: float, lam: float, xmin: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Exact discrete TPL draws (α >= 0, λ > 0) without rejecting most proposals: inversion on the table of
    :func:`_tpl_table` for x < x_min + DIRECT_TERMS, and for the rest (rarely drawn: the far tail) rejection
    from x0 = x_min + DIRECT_TERMS with whichever envelope fits there: the geometric x0 + floor(Exp(λ)),
    accepted with (x/x0)^-α, when λ·x0 >= α - 1 (the cutoff dominates), else the discrete power law from x0,
    accepted with e^{-λ(x - x0)}. One uniform per draw, plus the few the far tail needs."""
    cdf, total = _tpl_table(float(alpha), float(lam), float(xmin))
    out = xmin + np.searchsorted(cdf, rng.random(size) * total, side="right").astype(np.float64)
    far = out >= xmin + DIRECT_TERMS
    if far.any():
        x0 = xmin + DIRECT_TERMS
        if lam * x0 >= alpha - 1.0:
            draws = _accept(int(far.sum()), lambda m: x0 + np.floor(rng.exponential(1.0 / lam, m)),
                            lambda x: np.exp(-alpha * np.log(x / x0)), rng)
        else:
            draws = _accept(int(far.sum()), lambda m: sample_power_law(alpha, x0, m, rng, True),
                            lambda x: np.exp(-lam * (x - x0)), rng)
        out[far] = draws
    return out


def sample_exponential_tail(lam: float, xmin: float, size: int, rng: np.random.Generator, discrete: bool) -> np.ndarray:
    """Geometric x_min + Geom(1 - e^{-λ}) - 1, or x_min + Exp(λ)."""
    if discrete:
        return xmin + rng.geometric(-math.expm1(-lam), size) - 1.0
    return xmin + rng.exponential(1.0 / lam, size)


def sample_stretched_tail(kappa: float, beta: float, xmin: float, size: int, rng: np.random.Generator,
                          discrete: bool) -> np.ndarray:
    """Y with κ g_β(Y) = E, E ~ Exp(1), by inversion; the discrete law is floor(Y), since
    P(floor(Y) >= x) = P(Y >= x) = exp(-κ g_β(x)) at every integer x."""
    e = rng.exponential(1.0, size) / kappa
    # g_β(y) = e  <=>  y = x_min (1 + β e / x_min^β)^{1/β};  β = 0: y = x_min e^e
    y = xmin * np.exp(e if beta == 0.0 else np.log1p(beta * e / xmin**beta) / beta)
    return np.floor(y) if discrete else y
