"""Likelihood-ratio tests between tail families fitted on the same tail.

Non-nested pairs: Vuong's test. With pointwise differences d_i = ln p1(x_i) - ln p2(x_i) over the
n tail points, Λ = Σ d_i, σ = sqrt(n)·sd(d) (population sd), z = Λ/σ, p = 2·Φ(-|z|).
Nested pair (power law inside the truncated power law at λ = 0): LR = 2(ℓ_TPL - ℓ_PL). λ = 0 lies on
the boundary, and the textbook null ½χ²_0 + ½χ²_1 (Self & Liang 1987) needs a finite variance of X,
which a power law with α <= 3 does not have: measured on power-law data (α = 2, n = 2,000, x_min = 1)
P(LR = 0) is about 11%, not 50%, and the mixture rejects 7.8% at nominal 5%. So when the audit
bootstraps, the null of LR is taken from the same power-law replicates (the TPL fitted on each
replicate's tail) and p = (1 + #{LR_b >= LR})/(B + 1) (``method = "monte-carlo"``); the mixture's
p = ½·P(χ²_1 >= LR) is kept as ``pvalue_asymptotic`` and is the p-value only when B = 0
(``method = "chi2-mixture"``).

**p-values below the float range.** 2Φ(−|z|) underflows to 0 at |z| ≈ 38.6 (Zipf(2), n = 10⁶ gives
z ≈ 41): a printed "0" claims a certainty no test gives. Every asymptotic p-value is also computed as its
logarithm in log space (``log_ndtr``: ln 2Φ(−|z|) = ln 2 + ln Φ(−|z|); ½P(χ²_1 ≥ LR) = Φ(−√LR)), kept as
``log_pvalue``; below :data:`P_FLOOR` ``to_dict()`` writes the p-value as the bound ``"< 1e-300"`` and
:func:`pvalue_text` prints it so (the table, the report).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..common.results import ToDict, result
from . import special

#: p-values below this are written as the bound "< 1e-300" (a double's normal range ends near 2.2e-308)
P_FLOOR = 1e-300
P_BOUND = "< 1e-300"


def pvalue_text(p: float, digits: int = 4) -> str:
    """A p-value for people: ``"< 1e-300"`` below :data:`P_FLOOR`, else ``digits`` significant digits."""
    if p != p:
        return "–"
    return P_BOUND if p < P_FLOOR else f"{p:.{digits}g}"


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
    method: str = "vuong"  # "vuong", "chi2-mixture" (nested, asymptotic) or "monte-carlo" (nested, simulated)
    pvalue_asymptotic: float = math.nan  # nested test: the ½χ²_0 + ½χ²_1 p-value, whichever decides
    log_pvalue: float = math.nan  # ln of the asymptotic p-value (finite where the p-value underflows)

    def to_dict(self) -> dict:
        out = ToDict.to_dict(self)  # (a slotted dataclass: no zero-argument super)
        for key in ("pvalue", "pvalue_asymptotic"):  # a bound, not 0, below the float range
            v = getattr(self, key)
            if v == v and v < P_FLOOR:
                out[key] = P_BOUND
        return out


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
    p = float(2.0 * special.ndtr(-abs(z))) if sigma > 0 else math.nan
    log_p = math.log(2.0) + float(special.log_ndtr(-abs(z))) if sigma > 0 else math.nan
    preferred = None
    if sigma > 0 and abs(z) >= z_star:
        preferred = first if lam > 0 else second
    return Comparison(first=first, second=second, nested=False, statistic=lam, sigma=sigma, z=z, pvalue=p,
                      preferred=preferred, log_pvalue=log_p)


def nested_power_law(ll_pl: float, ll_tpl: float, level: float) -> Comparison:
    """Power law (null) against the truncated power law that contains it."""
    lr = max(2.0 * (ll_tpl - ll_pl), 0.0)
    p = 1.0 if lr == 0 else float(0.5 * special.chdtrc(1, lr))
    log_p = 0.0 if lr == 0 else float(special.log_ndtr(-math.sqrt(lr)))  # ½P(χ²_1 >= LR) = Φ(-√LR)
    preferred = "truncated_power_law" if p < level else None
    return Comparison(
        first="truncated_power_law", second="power_law", nested=True, statistic=ll_tpl - ll_pl,
        sigma=math.nan, z=math.nan, pvalue=p, preferred=preferred, method="chi2-mixture", pvalue_asymptotic=p,
        log_pvalue=log_p,
    )


def calibrated_nested(asymptotic: Comparison, pvalue: float, level: float) -> Comparison:
    """The nested test with its Monte Carlo p-value (from the bootstrap's LR null) deciding."""
    preferred = "truncated_power_law" if pvalue <= level else None  # (k+1)/(B+1) <= a: a size-a test
    return dataclasses.replace(asymptotic, pvalue=pvalue, preferred=preferred, method="monte-carlo")
