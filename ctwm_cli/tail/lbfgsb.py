"""L-BFGS-B on scipy's own compiled engine, without ``scipy.optimize.minimize`` around it (issue 29).

Why: the audit's fits are 2- and 3-parameter problems solved thousands of times (the nested test's null
and the families' fit checks re-fit the TPL and the log-normal in every bootstrap replicate). There,
``minimize``'s per-call machinery (bound standardisation, ``ScalarFunction``, ``MemoizeJac``, the finite-
difference wrappers, the result object) cost more than the objective itself: 3.2 s of 3.5 s spent in
``minimize`` on terrorism at B = 300 was outside the objective (cProfile). And ``import scipy.optimize``
loads every solver of the package (+0.2 s on every audit's start) to reach one of them.

What: :func:`minimize` drives ``scipy.optimize._lbfgsb.setulb`` -- the engine ``minimize(method="L-BFGS-B")``
drives -- with the same options (m = 10, ftol = 2.22e-9, gtol = 1e-5, maxls = 20, maxfun = maxiter =
15000), the same clipped start, the same evaluations and, without an analytic gradient, the same
forward differences as ``scipy.optimize._numdiff.approx_derivative`` (absolute step 1e-8, turned back at
a bound). The engine sees the same sequence of (x, f, g), so the optimum is the same to the bit: the tests
compare both on fits of every family and on textbook problems (tests/test_tail_lbfgsb.py), and
tests/test_audit_golden.py pins whole audits' JSON from before.

The extension is imported without running ``scipy.optimize``'s ``__init__`` (:mod:`ctwm_cli.runtime.deferred`);
on a scipy whose engine has another interface (before 1.15, the Fortran one) or lives elsewhere, the
module falls back to ``scipy.optimize.minimize`` itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np

from ..runtime.deferred import submodule

M = 10  # maxcor
FTOL = 2.2204460492503131e-09
FACTR = FTOL / np.finfo(float).eps
GTOL = 1e-5
EPS = 1e-8  # the forward-difference step (minimize's ``eps``)
MAXFUN = MAXITER = 15000
MAXLS = 20
_FD_REL = float(np.finfo(np.float64).eps ** 0.5)  # approx_derivative's fallback relative step, 2-point
_SIGNATURE = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"


@cache
def _setulb() -> Callable | None:
    """scipy's compiled ``setulb``, or None when this scipy's engine is not the one this module drives."""
    import scipy

    try:
        major, minor = (int(p) for p in scipy.__version__.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (1, 15):
        return None
    try:
        engine = submodule("scipy.optimize._lbfgsb")
    except ImportError:
        return None
    setulb = getattr(engine, "setulb", None)
    doc = (getattr(setulb, "__doc__", "") or "").splitlines()
    return setulb if doc and doc[0].strip() == _SIGNATURE else None


def forward_gradient(fun: Callable[[np.ndarray], float], x: np.ndarray, f0: float, lb: np.ndarray,
                     ub: np.ndarray) -> np.ndarray:
    """approx_derivative(fun, x, method="2-point", abs_step=EPS, bounds=(lb, ub), f0=f0), step for step."""
    sign = (x >= 0).astype(float) * 2 - 1
    h = np.where(((x + EPS) - x) == 0, _FD_REL * sign * np.maximum(1.0, np.abs(x)), EPS)
    if not np.all((lb == -np.inf) & (ub == np.inf)):
        lower, upper = x - lb, ub - x
        stepped = x + h
        fitting = np.abs(h) <= np.maximum(lower, upper)
        adjusted = h.copy()
        adjusted[((stepped < lb) | (stepped > ub)) & fitting] *= -1
        forward = (upper >= lower) & ~fitting
        adjusted[forward] = upper[forward]
        backward = (upper < lower) & ~fitting
        adjusted[backward] = -lower[backward]
        h = adjusted
    g = np.empty(x.size)
    for i in range(x.size):
        x1 = x.copy()
        x1[i] = x[i] + h[i]
        g[i] = (fun(x1) - f0) / ((x[i] + h[i]) - x[i])
    return g


def _scalar(fx):
    """The objective's value as minimize's ScalarFunction passes it on (a 0-d or 1-element array unwrapped)."""
    return fx if np.isscalar(fx) else np.asarray(fx).item()


def minimize(fun: Callable, x0, box: list[tuple[float, float]], *, jac: bool = False
             ) -> tuple[np.ndarray, float, bool]:
    """(x, f, success) of ``scipy.optimize.minimize(fun, x0, jac=jac, method="L-BFGS-B", bounds=box)``.
    ``jac=True``: ``fun`` returns (f, gradient); else the gradient is taken by forward differences."""
    setulb = _setulb()
    if setulb is None:
        from scipy import optimize

        res = optimize.minimize(fun, np.asarray(x0, dtype=float), jac=jac, method="L-BFGS-B", bounds=box)
        return res.x, res.fun, bool(res.success)
    lb = np.array([-np.inf if b[0] is None else b[0] for b in box], dtype=np.float64)
    ub = np.array([np.inf if b[1] is None else b[1] for b in box], dtype=np.float64)
    x = np.clip(np.asarray(x0, dtype=np.float64).ravel(), lb, ub).astype(np.float64)
    n = x.size
    nbd = np.zeros(n, np.int32)
    low, up = np.zeros(n), np.zeros(n)
    for i in range(n):
        lo_finite, up_finite = not math.isinf(lb[i]), not math.isinf(ub[i])
        low[i] = lb[i] if lo_finite else 0.0
        up[i] = ub[i] if up_finite else 0.0
        nbd[i] = {(False, False): 0, (True, False): 1, (True, True): 2, (False, True): 3}[lo_finite, up_finite]

    def value(at: np.ndarray) -> float:
        return _scalar(fun(at.copy()))

    state = {"nfev": 0}

    def evaluate(at: np.ndarray) -> tuple[float, np.ndarray]:
        state["nfev"] += 1
        if jac:
            fx, gx = fun(at.copy())
            return _scalar(fx), np.atleast_1d(gx)
        fx = value(at)
        state["nfev"] += n
        return fx, forward_gradient(value, at.copy(), fx, lb, ub)

    last_x = x.copy()
    last = evaluate(last_x)
    f = np.array(0.0, dtype=np.float64)
    g = np.zeros(n, dtype=np.float64)
    wa = np.zeros(2 * M * n + 5 * n + 11 * M * M + 8 * M, np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task, ln_task = np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int32)
    lsave, isave, dsave = np.zeros(4, dtype=np.int32), np.zeros(44, dtype=np.int32), np.zeros(29, np.float64)
    iterations = 0
    while True:
        g = g.astype(np.float64)
        setulb(M, x, low, up, nbd, f, g, FACTR, GTOL, wa, iwa, task, lsave, isave, dsave, MAXLS, ln_task)
        if task[0] == 3:  # f and g wanted at x
            if not np.array_equal(x, last_x):
                last_x = x.astype(np.float64)
                last = evaluate(last_x)
            f, g = last
        elif task[0] == 1:  # a new iteration
            iterations += 1
            if iterations >= MAXITER:
                task[0], task[1] = 5, 504
            elif state["nfev"] > MAXFUN:
                task[0], task[1] = 5, 502
        else:
            break
    return x, f, bool(task[0] == 4)
