"""ctwm_cli/tail/lbfgsb.py drives scipy's compiled L-BFGS-B engine itself; it must give what
``scipy.optimize.minimize(method="L-BFGS-B")`` gives, to the bit, with and without an analytic gradient."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy.optimize._numdiff import approx_derivative

from ctwm_cli.tail import families as fam
from ctwm_cli.tail import lbfgsb
from ctwm_cli.tail.powerlaw import Histogram, fit_power_law

pytestmark = pytest.mark.skipif(lbfgsb._setulb() is None, reason="this scipy's engine is not the one driven")


def rosen(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def rosen_grad(x):
    return rosen(x), optimize.rosen_der(x)


def _same(fun, x0, box, jac):
    want = optimize.minimize(fun, np.asarray(x0, dtype=float), jac=jac, method="L-BFGS-B", bounds=box)
    x, f, ok = lbfgsb.minimize(fun, x0, box, jac=jac)
    assert [v.hex() for v in x] == [float(v).hex() for v in want.x]
    assert float(f).hex() == float(want.fun).hex()
    assert ok == bool(want.success)


@pytest.mark.parametrize("jac", [True, False])
@pytest.mark.parametrize("box", [
    [(-2.0, 2.0)] * 3,
    [(1.2, 3.0), (-1.0, 0.5), (None, None)],  # the optimum outside: bounds active, one free coordinate
    [(None, 0.9), (0.0, None), (-5.0, 5.0)],  # one-sided bounds
])
@pytest.mark.parametrize("x0", [[-1.2, 1.0, 0.3], [5.0, -7.0, 0.0]])  # the second starts outside the box
def test_rosenbrock_as_minimize(jac, box, x0):
    _same(rosen_grad if jac else rosen, x0, box, jac)


def test_non_finite_values_and_the_evaluation_limit_as_minimize():
    # the families' wrapper turns a non-finite value into 1e300; a wall that the line search runs into
    def walled(x):
        return 1e300 if x[0] > 0.7 else (x[0] - 1.0) ** 2 + (x[1] + 0.5) ** 4

    _same(walled, [0.0, 0.0], [(-3.0, 3.0), (-3.0, 3.0)], False)


def test_forward_differences_as_approx_derivative():
    rng = np.random.default_rng(3)
    lb, ub = np.array([-1.0, 0.0, -np.inf]), np.array([1.0, 1e-9, np.inf])
    for _ in range(200):
        x = np.clip(rng.normal(size=3) * rng.choice([1e-12, 1.0, 1e9]), lb, ub)
        x[rng.integers(3)] = rng.choice([lb[0], ub[0], 1.0 - 5e-9])  # at and next to a bound
        x = np.clip(x, lb, ub)
        f0 = rosen(x)
        want = approx_derivative(rosen, x, method="2-point", abs_step=lbfgsb.EPS, bounds=(lb, ub), f0=f0)
        got = lbfgsb.forward_gradient(rosen, x, f0, lb, ub)
        assert [v.hex() for v in got] == [float(v).hex() for v in want]


def _tails():
    rng = np.random.default_rng(11)
    for k in range(6):
        discrete = k % 2 == 0
        if k < 2:
            x = rng.zipf(2.3, 3000).astype(float) if discrete else 2.0 * np.exp(rng.exponential(1 / 1.4, 3000))
        elif k < 4:
            x = np.ceil(rng.lognormal(1.5, 1.1, 3000)) if discrete else rng.lognormal(1.5, 1.1, 3000)
        else:
            x = np.ceil(rng.pareto(1.2, 3000) * 3 * np.exp(-rng.exponential(0.3, 3000)) + 1)
            if not discrete:
                x = x + rng.random(3000)
        hist = Histogram.from_sample(x)
        pl = fit_power_law(hist, discrete=discrete, min_tail=50)
        yield fam.Tail.of(hist, pl.xmin, discrete), pl


@pytest.mark.parametrize("name", ["truncated_power_law", "lognormal", "stretched_exponential", "power_law_mixture"])
def test_every_family_fits_as_with_minimize(name, monkeypatch):
    """Each family's fit through the driver, then through scipy.optimize.minimize itself (the driver's
    fallback): the same parameters and likelihood, bit for bit."""
    family = fam.REGISTRY[name]
    tails = list(_tails())
    ours = [family.fit(t, reference=pl) for t, pl in tails]
    monkeypatch.setattr(lbfgsb, "_setulb", lambda: None)
    theirs = [family.fit(t, reference=pl) for t, pl in tails]
    for a, b in zip(ours, theirs, strict=True):
        assert {k: float(v).hex() for k, v in a.params.items()} == {k: float(v).hex() for k, v in b.params.items()}
        assert float(a.loglik).hex() == float(b.loglik).hex()
        assert a.converged == b.converged and a.at_bound == b.at_bound


def test_the_audit_does_not_run_scipy_optimize_init():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from ctwm_cli.tail.audit import audit; "
            "audit(np.random.default_rng(1).zipf(2.2, 20000), bootstrap=0, seed=1); "
            "print('scipy.optimize._lbfgsb' in sys.modules, 'scipy.optimize._minimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True False"  # the engine, without the package's solvers

