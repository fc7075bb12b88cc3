"""The one optimiser of the tail families (L-BFGS-B from several starts), box-edge detection and
Hessian standard errors; apart from :mod:`.families` so that module holds the families only."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..common.results import result
from . import lbfgsb

REL_EDGE = 1e-7  # an internal coordinate this close to a box edge counts as on it


@result
class Optimum:
    x: np.ndarray
    fun: float
    success: bool


def minimise(nll: Callable, starts: list[list[float]], box: list[tuple[float, float]], *, jac: bool = False,
             warm: bool = False) -> Optimum:
    """The one optimiser of the package: L-BFGS-B (:mod:`.lbfgsb`) from each start, the best finite optimum kept.
    ``warm``: the first start is a warm start (a calibration replicate near the observed fit); when
    it converges the other starts are skipped. A non-finite objective value counts as 1e300."""

    def safe(theta):  # called inside minimise's np.errstate(all="ignore")
        try:
            v = nll(theta)
        except (OverflowError, ValueError, ZeroDivisionError):
            v = (math.inf, np.zeros(len(theta))) if jac else math.inf
        f = v[0] if jac else v
        if not np.isfinite(f):
            return (1e300, np.zeros(len(theta))) if jac else 1e300
        return v

    best = Optimum(x=np.asarray(starts[0], dtype=float), fun=math.inf, success=False)
    for i, x0 in enumerate(starts):
        if i == 1 and warm and best.success:
            break
        with np.errstate(all="ignore"):
            x, fun, success = lbfgsb.minimize(safe, x0, box, jac=jac)
        if np.isfinite(fun) and fun < 1e300 and fun < best.fun:
            best = Optimum(x=x, fun=float(fun), success=success)
    return best


def edges(theta: np.ndarray, box: list[tuple[float, float]]) -> list[int]:
    """-1 / +1 where a coordinate sits on its lower / upper box edge, else 0."""
    out = []
    for t, (lo, hi) in zip(theta, box, strict=True):
        tol = REL_EDGE * max(1.0, abs(lo), abs(hi))
        out.append(-1 if t <= lo + tol else 1 if t >= hi - tol else 0)
    return out


def hessian_se(grad: Callable[[np.ndarray], np.ndarray], theta: np.ndarray) -> np.ndarray:
    """Standard errors sqrt(diag(H^-1)) from the Hessian of the negative log-likelihood, by central
    differences of its analytic gradient; NaN when H is not positive definite."""
    k = theta.size
    h = np.empty((k, k))
    for j in range(k):
        step = 1e-5 * max(1.0, abs(theta[j]))
        e = np.zeros(k)
        e[j] = step
        h[:, j] = (grad(theta + e) - grad(theta - e)) / (2 * step)
    h = 0.5 * (h + h.T)
    try:
        np.linalg.cholesky(h)
    except np.linalg.LinAlgError:
        return np.full(k, math.nan)
    return np.sqrt(np.diag(np.linalg.inv(h)))
