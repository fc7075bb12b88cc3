"""densities.logaddexp, the scalar log(e^x + e^y) of the TPL's normaliser, gives numpy's bits."""

from __future__ import annotations

import numpy as np


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
