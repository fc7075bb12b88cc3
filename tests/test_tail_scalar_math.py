"""Scalar math of the fits that replaces numpy and scipy ufunc calls for speed gives their bits."""

from __future__ import annotations

import numpy as np
import pytest


def test_scalar_logaddexp_is_numpys():
    from ctwm_cli.tail.densities import logaddexp

    rng = np.random.default_rng(0)
    a = rng.normal(size=50_000) * rng.choice([1e-3, 1.0, 30.0, 800.0], 50_000)
    b = a + rng.normal(size=50_000) * rng.choice([0.0, 1e-9, 1.0, 50.0], 50_000)
    special = [(np.inf, np.inf), (-np.inf, -np.inf), (np.inf, 1.0), (-np.inf, 2.0), (1.0, -np.inf), (0.0, -0.0),
               (np.nan, 1.0), (1.0, np.nan), (-745.0, 0.0), (710.0, 709.0)]
    with np.errstate(invalid="ignore"):
        for x, y in [*zip(a.tolist(), b.tolist(), strict=True), *special]:
            assert logaddexp(x, y).hex() == float(np.logaddexp(x, y)).hex()


@pytest.mark.parametrize("name", ["gammaincc", "gammaln", "gamma", "exp1", "log_ndtr"])
def test_cython_special_scalars_are_the_ufuncs(name):
    """densities calls scipy.special.cython_special for scalars: the same C function as the ufunc."""
    from scipy import special
    from scipy.special import cython_special

    rng = np.random.default_rng(1)
    ufunc, scalar = getattr(special, name), getattr(cython_special, name)
    for _ in range(5000):
        a, x = float(rng.uniform(1e-3, 8.0)), float(rng.choice([1e-8, 1e-2, 1.0, 40.0]) * rng.random())
        args = (a, x) if name == "gammaincc" else (x - 20.0,) if name == "log_ndtr" else (x + 1e-12,)
        assert float(scalar(*args)).hex() == float(ufunc(*args)).hex()
