"""The replicates' Newton refit of the truncated power law (tail/newton.py, issue 48): the same objective as the
optimiser of the observed fits, its exact Hessian, the same MLE (against a tight independent Nelder-Mead run and
against L-BFGS-B), the power-law limit found as L-BFGS-B finds it, and the closed forms where there are some."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from ctwm_cli.tail import densities as dens
from ctwm_cli.tail import newton
from ctwm_cli.tail.families import REGISTRY, Tail
from ctwm_cli.tail.powerlaw import Histogram, fit_power_law, sample_power_law
from ctwm_cli.tail.samplers import sample_tpl_tail

SEED = 48
TPL = REGISTRY["truncated_power_law"]
# (α, λ, x_min, discrete): small and large λ, a remainder that is most of the mass (blackouts' x_min), α < 0
POINTS = [(2.1, 1e-4, 1.0, True), (2.1, 6.5e-9, 206000.0, True), (1.5, 0.01, 3.0, True), (-2.0, 0.5, 1.0, True),
          (1.6, 2e-6, 1.0, True), (2.5, 1e-3, 1.0, False), (1.2, 0.1, 5.0, False)]


@pytest.mark.parametrize("point", POINTS, ids=str)
def test_value_and_gradient_are_the_optimisers_and_the_hessian_is_their_derivative(point):
    a, lam, xmin, d = point
    lz, g, h = newton.tpl_logz_hess(a, lam, xmin, d)
    want = dens.tpl_logz_grad(a, lam, xmin, d)
    assert lz == pytest.approx(want[0], rel=1e-12, abs=1e-12)
    assert g == pytest.approx(np.array(want[1:]), rel=1e-12)
    step = 1e-4  # the Hessian against central differences of the gradient the optimiser uses
    num = np.empty((2, 2))
    for j, (da, dl) in enumerate([(step, 0.0), (0.0, lam * step)]):
        up, down = dens.tpl_logz_grad(a + da, lam + dl, xmin, d), dens.tpl_logz_grad(a - da, lam - dl, xmin, d)
        num[:, j] = (np.array(up[1:]) - np.array(down[1:])) / (2 * (da + dl))
    assert h == pytest.approx(0.5 * (num + num.T), rel=2e-2)


def test_newton_reaches_a_closed_form_and_refuses_what_is_no_minimum():
    """The normal law's MLE in (μ, ln σ) is the mean and the standard deviation (ddof 0)."""
    x = np.random.default_rng(SEED).normal(3.0, 2.0, 500)
    print("seed", SEED)

    def fgh(t):
        mu, s = t
        z = (x - mu) * math.exp(-s)
        f = x.size * s + 0.5 * float(z @ z)
        g = np.array([-math.exp(-s) * z.sum(), x.size - float(z @ z)])
        h = np.array([[x.size * math.exp(-2 * s), 2 * math.exp(-s) * z.sum()], [2 * math.exp(-s) * z.sum(),
                                                                               2 * float(z @ z)]])
        return f, g, h

    out = newton.newton(fgh, [0.0, 0.0], lambda t: True)
    assert out is not None
    assert out[0][0] == pytest.approx(x.mean(), rel=1e-10)
    assert math.exp(out[0][1]) == pytest.approx(x.std(), rel=1e-10)
    # a concave objective has no minimum; a minimum outside the feasible set is not reported
    assert newton.newton(lambda t: (-float(t @ t), -2 * t, -2 * np.eye(2)), [1.0, 1.0], lambda t: True,
                         damp=False) is None
    assert newton.newton(fgh, [0.0, 0.0], lambda t: t[0] < 1.0) is None


def _tail(v: np.ndarray, xmin: float, d: bool) -> tuple[Tail, object]:
    val, cnt = np.unique(v, return_counts=True)
    if d and val[0] != xmin:
        val, cnt = np.r_[xmin, val], np.r_[0, cnt]
    pl = fit_power_law(Histogram(values=val, counts=cnt), discrete=d, xmin=xmin)
    return Tail(values=val, counts=cnt.astype(np.float64), xmin=xmin, discrete=d), pl


def _nelder_mead(tail: Tail, x0: list[float]) -> tuple[np.ndarray, float]:
    slog, sx, n = float(tail.counts @ np.log(tail.values)), float(tail.counts @ tail.values), tail.n

    def nll(t):
        lam = math.exp(t[1])
        return t[0] * slog + lam * sx + n * dens.tpl_logz(t[0], lam, tail.xmin, tail.discrete)

    res = optimize.minimize(nll, x0, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-13, "maxiter": 4000})
    return res.x, -float(res.fun)


@pytest.mark.parametrize("case", [(2.0, 1e-3, 1.0, True, 300), (1.7, 0.02, 3.0, True, 500),
                                  (2.5, 1e-4, 1.0, True, 2000), (1.5, 1e-3, 10.0, False, 400),
                                  (-1.0, 0.3, 1.0, True, 300), (2.1, 5e-7, 2e5, True, 70)], ids=str)
def test_the_replicate_refit_is_the_same_mle(case):
    """Warm (Newton) against cold (L-BFGS-B, the observed fits' optimiser) and both against Nelder-Mead run to
    1e-12 from the cold answer: Newton's log-likelihood is never lower than L-BFGS-B's, agrees with Nelder-Mead's
    to 1e-11 relative and its (α, λ) to 1e-6. (L-BFGS-B itself stops at gtol 1e-5 and leaves a flat λ up to 30 %
    off, which is why it is not the reference for λ.)"""
    a, lam, xmin, d, n = case
    rng = np.random.default_rng([SEED, int(1000 * abs(a)), n])
    print("seed", [SEED, int(1000 * abs(a)), n])
    checked = 0
    for _ in range(6):
        tail, pl = _tail(sample_tpl_tail(a, lam, xmin, n, rng, d), xmin, d)
        cold = TPL.fit(tail, reference=pl, errors=False)
        warm = TPL.fit(tail, reference=pl, start={"alpha": a, "lambda": lam})
        assert (cold.limit, cold.at_bound) == (warm.limit, warm.at_bound)
        assert warm.loglik >= cold.loglik - 1e-12 * abs(cold.loglik)
        assert warm.loglik == pytest.approx(cold.loglik, rel=1e-8)
        if warm.limit is not None:
            continue
        x, ll = _nelder_mead(tail, [cold.params["alpha"], math.log(cold.params["lambda"])])
        assert warm.loglik == pytest.approx(ll, rel=1e-11)
        assert warm.params["alpha"] == pytest.approx(x[0], rel=1e-6)
        # λ to 1e-6 relative, or 1e-5 of its standard error where it is barely identified (SE ~ λ): there the
        # objective's rounding (1e-13) leaves every optimiser's λ a few 1e-6 apart
        se = warm.se["lambda"]
        assert abs(warm.params["lambda"] - math.exp(x[1])) <= max(1e-6 * math.exp(x[1]), 1e-5 * se), se
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("discrete", [True, False])
def test_the_power_law_limit_is_found_as_the_optimiser_finds_it(discrete):
    """Power-law samples: where the refit reports the limit λ = 0 (at_bound), so does L-BFGS-B, with the power
    law's α -- for densities the closed form 1 + n / Σ ln(x / x_min); elsewhere its likelihood is at least
    L-BFGS-B's, which on a flat λ sometimes stops at λ's bound short of an interior optimum (α_PL < 2)."""
    rng = np.random.default_rng([SEED, discrete])
    print("seed", [SEED, discrete])
    limits = 0
    for alpha in (1.9, 2.5, 3.0):
        for _ in range(8):
            tail, pl = _tail(sample_power_law(alpha, 1.0, 400, rng, discrete), 1.0, discrete)
            cold = TPL.fit(tail, reference=pl, errors=False)
            warm = TPL.fit(tail, reference=pl, start={"alpha": alpha, "lambda": 1e-3}, errors=False)
            if warm.limit is None:
                assert warm.loglik >= cold.loglik - 1e-12 * abs(cold.loglik)
                if cold.limit is not None:  # L-BFGS-B stopped on a flat λ at its bound; for α <= 2 E[X] = ∞,
                    assert pl.alpha <= 2.0  # so ∂/∂λ = -∞ at λ = 0+: the optimum is interior, as Newton finds
                    assert warm.loglik > pl.loglik
                continue
            assert (cold.limit, cold.at_bound) == (warm.limit, warm.at_bound)
            limits += 1
            assert warm.at_bound == {"lambda": 0.0} and warm.params["lambda"] == 0.0
            assert warm.params["alpha"] == pl.alpha
            if not discrete:
                closed = 1 + tail.n / float(tail.counts @ np.log(tail.values / tail.xmin))
                assert warm.params["alpha"] == pytest.approx(closed, rel=1e-12)
    assert limits >= 3
