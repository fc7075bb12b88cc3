"""Words (Moby Dick), power law vs stretched exponential (issue 44): Clauset, Shalizi & Newman (2009),
Table 6.2, publish a normalised log-likelihood ratio of 4.13 (the power law favoured, p = 0.00); the audit
prints 0.96. The difference is the stretched exponential's parametrisation, documented on
:class:`~ctwm_cli.tail.families.StretchedExponential`: ours reaches the power law at β = 0, theirs has λ
finite, so β stays bounded away from 0. These tests pin both readings on the published data: β free gives
the small z of a family that became the power law (and says so), and the same fit with β bounded below at
0.10 (where the ``powerlaw`` package's optimiser stops) gives the published sign and significance, z of the
published size (3.58 against 4.13)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from ctwm_cli.tail import audit
from ctwm_cli.tail.compare import vuong
from ctwm_cli.tail.families import StretchedExponential, Tail, logpmf
from ctwm_cli.tail.powerlaw import Histogram

powerlaw_data = pytest.importorskip("powerlaw.data")

TABLE_6_2_Z = 4.13  # words: power law vs stretched exponential, Clauset et al. (2009) Table 6.2


class BetaFloored(StretchedExponential):
    """The same family and fit with β bounded below, as a λ-finite parametrisation effectively is."""

    _BOX: ClassVar[list[tuple[float, float]]] = [(-60.0, 20.0), (0.10, 5.0)]


@pytest.fixture(scope="module")
def words():
    x = np.asarray(powerlaw_data.load_test_dataset("words"), dtype=float)
    return x, audit(x, bootstrap=0, seed=1)


def pl_vs_se(result, comparisons) -> float:
    (c,) = [c for c in comparisons if (c.first, c.second) == ("power_law", "stretched_exponential")]
    return c.z


def test_free_beta_reaches_the_power_law_and_says_so(words):
    _x, r = words
    assert r.power_law.xmin == 7 and r.power_law.n_tail == 2958  # Table 6.1's x_min
    se = r.alternatives["stretched_exponential"]
    assert se.limit == "power_law" and se.at_bound == {"beta": 0.0}
    z = pl_vs_se(r, r.comparisons)
    assert 0 < z < 1.96  # "fits no worse" because it is the power law here: 0.96, not 4.13
    assert z == pytest.approx(0.96, abs=0.01)


def test_beta_bounded_away_from_zero_gives_the_published_sign_and_size(words):
    x, r = words
    pl = r.power_law
    tail = Tail.of(Histogram.from_sample(x), pl.xmin, True)
    fit = BetaFloored().fit(tail)
    assert fit.params["beta"] == pytest.approx(0.10, abs=1e-3)  # the fit presses on the floor
    d = logpmf(pl, tail.values) - logpmf(fit, tail.values)
    z = vuong("power_law", "stretched_exponential", d, tail.counts, 1.96).z
    assert z > 1.96  # the power law favoured beyond the 5% two-sided band, as published
    assert abs(z - TABLE_6_2_Z) < 0.6  # 3.58; the powerlaw package, stopping near the same β, gives 3.27
    assert z > pl_vs_se(r, r.comparisons) + 2  # the gap to the free-β 0.96 is the bound, not the data
