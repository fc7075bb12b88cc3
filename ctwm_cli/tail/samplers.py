"""Exact draws from the fitted tail families (x >= x_min), used through :mod:`ctwm_cli.tail.families`."""

from __future__ import annotations

import math

import numpy as np

from . import special
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
    if alpha > 1:  # power-law proposal, accept with e^{-λ(x - x_min)}
        return _accept(size, lambda m: sample_power_law(alpha, xmin, m, rng, discrete),
                       lambda x: np.exp(-lam * (x - xmin)), rng)
    if not discrete:
        # x^-α e^{-λx} with α < 1 is a Gamma(1 - α, 1/λ) density: invert its upper tail above x_min
        a = 1.0 - alpha
        q0 = special.gammaincc(a, lam * xmin)
        return np.maximum(special.gammainccinv(a, rng.random(size) * q0) / lam, xmin)
    if alpha < 0:
        # invert the tabulated CDF (the mass beyond the grid is below e^-60)
        hi = xmin + math.ceil(60.0 / lam) + math.ceil(-alpha / lam)
        grid = np.arange(xmin, hi + 1.0)
        logp = -alpha * np.log(grid) - lam * grid
        cdf = np.cumsum(np.exp(logp - logp.max()))
        return grid[np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1]), grid.size - 1)]
    # 0 <= α <= 1: geometric proposal x_min + floor(Exp(λ)), accept with (x/x_min)^-α <= 1
    return _accept(size, lambda m: xmin + np.floor(rng.exponential(1.0 / lam, m)),
                   lambda x: np.exp(-alpha * np.log(x / xmin)), rng)


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
