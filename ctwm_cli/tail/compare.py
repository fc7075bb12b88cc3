"""Likelihood-ratio tests between tail families fitted on the same tail.

Non-nested pairs: Vuong's test. With pointwise differences d_i = ln p1(x_i) - ln p2(x_i) over the
n tail points, Λ = Σ d_i, σ = sqrt(n)·sd(d) (population sd), z = Λ/σ, p = 2·Φ(-|z|).
Nested pair (power law inside the truncated power law at λ = 0): LR = 2(ℓ_TPL - ℓ_PL); λ = 0 lies on
the boundary, so the null distribution is ½χ²_0 + ½χ²_1 (Self & Liang 1987): p = ½·P(χ²_1 >= LR).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..results import ToDict, result


@result
class Comparison(ToDict):
    """``first`` vs ``second``: Λ > 0 favours ``first``."""

    first: str
    second: str
    nested: bool
    statistic: float  # Λ (sum of log-likelihood ratios)
    sigma: float  # σ_LR (Vuong); NaN for the nested test
    z: float  # Λ/σ (Vuong); NaN for the nested test
    pvalue: float
    preferred: str | None  # family favoured at the audit's level, or None


def vuong(first: str, second: str, d: np.ndarray, weights: np.ndarray, z_star: float) -> Comparison:
    """Vuong's test from pointwise log-likelihood differences ``d`` at distinct values with
    multiplicities ``weights``."""
    n = float(weights.sum())
    if not np.all(np.isfinite(d)):  # a fit failed somewhere on the tail: no test
        return Comparison(first=first, second=second, nested=False, statistic=math.nan, sigma=math.nan,
                          z=math.nan, pvalue=math.nan, preferred=None)
    lam = float(np.dot(weights, d))
    mean = lam / n
    var = float(np.dot(weights, (d - mean) ** 2) / n)
    sigma = math.sqrt(n * var) if var > 0 else 0.0
    z = lam / sigma if sigma > 0 else math.nan
    p = float(2.0 * stats.norm.sf(abs(z))) if sigma > 0 else math.nan
    preferred = None
    if sigma > 0 and abs(z) >= z_star:
        preferred = first if lam > 0 else second
    return Comparison(first=first, second=second, nested=False, statistic=lam, sigma=sigma, z=z, pvalue=p,
                      preferred=preferred)


def nested_power_law(ll_pl: float, ll_tpl: float, level: float) -> Comparison:
    """Power law (null) against the truncated power law that contains it."""
    lr = max(2.0 * (ll_tpl - ll_pl), 0.0)
    p = 1.0 if lr == 0 else float(0.5 * stats.chi2.sf(lr, 1))
    preferred = "truncated_power_law" if p < level else None
    return Comparison(
        first="truncated_power_law", second="power_law", nested=True, statistic=ll_tpl - ll_pl,
        sigma=math.nan, z=math.nan, pvalue=p, preferred=preferred,
    )
