"""The fit checks' tail samplers draw from the exact laws (issue 48): chi-square tests of many draws at fixed seeds
against the pmf the fits use (densities.py), in cells that cover the table, the far tail beyond it and both of
the far tail's envelopes; each test also rejects a law off by a little, so it can fail."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ctwm_cli.tail.densities import DIRECT_TERMS, lognormal_sf, tpl_sf
from ctwm_cli.tail.samplers import sample_lognormal_tail, sample_tpl_tail

N = 200_000


def cells(xmin: float) -> np.ndarray:
    """Cell edges [e_i, e_{i+1}): single values near x_min, then log-spaced, beyond x_min + DIRECT_TERMS too."""
    near = xmin + np.arange(20.0)
    far = np.unique(np.floor(xmin + 20 * np.logspace(0, 6, 60)))
    return np.concatenate([near, far[far > near[-1]]])


def chi2_pvalue(draws: np.ndarray, sf, xmin: float) -> float:
    """Chi-square p of the draws' counts in :func:`cells` against P(e_i <= X < e_{i+1}) = sf(e_i) - sf(e_{i+1}),
    the last cell open; cells expecting fewer than 5 merged into their neighbour."""
    edges = cells(xmin)
    s = np.concatenate([sf(edges), [0.0]])
    expected = N * (s[:-1] - s[1:])
    observed = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=edges.size)
    obs, exp_, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected, strict=True):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp_.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp_[-1] += acc_e
    obs, exp_ = np.array(obs), np.array(exp_)
    assert abs(exp_.sum() - N) < 1e-6 * N  # the cells cover the whole law
    return float(stats.chi2.sf(np.sum((obs - exp_) ** 2 / exp_), obs.size - 1))


# (α, λ, x_min): the table only; the far tail by the geometric envelope (λ x0 >= α - 1); by the power-law one
TPL_CASES = [(2.2, 1e-3, 1.0), (0.5, 1e-3, 2.0), (1.05, 5e-4, 1.0), (2.5, 1e-5, 3.0), (1.2, 1e-6, 1.0)]


@pytest.mark.parametrize(("alpha", "lam", "xmin"), TPL_CASES)
def test_discrete_tpl_draws_follow_the_exact_pmf(alpha, lam, xmin):
    rng = np.random.default_rng(48)
    x = sample_tpl_tail(alpha, lam, xmin, N, rng, True)
    assert np.all(x == np.floor(x)) and x.min() >= xmin
    assert chi2_pvalue(x, lambda e: tpl_sf(e, alpha, lam, xmin, True), xmin) > 1e-3
    # the same test tells a law off by a little apart (the test can fail)
    assert chi2_pvalue(x, lambda e: tpl_sf(e, alpha + 0.03, lam, xmin, True), xmin) < 1e-6


@pytest.mark.parametrize(("alpha", "lam", "xmin"), [(1.05, 5e-4, 1.0), (1.2, 1e-6, 1.0)])
def test_the_far_tail_is_drawn_as_often_as_its_mass(alpha, lam, xmin):
    """Beyond the table (x >= x_min + DIRECT_TERMS): as many draws as P(X >= x0) says, binomially."""
    x = sample_tpl_tail(alpha, lam, xmin, N, np.random.default_rng(7), True)
    p = float(tpl_sf(np.array([xmin + DIRECT_TERMS]), alpha, lam, xmin, True)[0])
    k = int(np.sum(x >= xmin + DIRECT_TERMS))
    assert p * N > 1000  # the case exercises the far tail
    assert abs(k - p * N) < 4.5 * math.sqrt(N * p * (1 - p))


def test_same_seed_same_draws():
    a = sample_tpl_tail(1.05, 5e-4, 1.0, 5000, np.random.default_rng(3), True)
    b = sample_tpl_tail(1.05, 5e-4, 1.0, 5000, np.random.default_rng(3), True)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(("mu", "sigma", "xmin"), [(0.5, 1.5, 1.0), (2.0, 1.0, 5.0), (-1.0, 2.5, 3.0)])
def test_discrete_lognormal_draws_follow_the_exact_pmf(mu, sigma, xmin):
    x = sample_lognormal_tail(mu, sigma, xmin, N, np.random.default_rng(11), True)
    assert chi2_pvalue(x, lambda e: lognormal_sf(e, mu, sigma, xmin, True), xmin) > 1e-3
    assert chi2_pvalue(x, lambda e: lognormal_sf(e, mu, sigma * 1.03, xmin, True), xmin) < 1e-6


@pytest.mark.parametrize("xmin", [1.0, 4.0])
def test_the_checks_histogram_is_numpys_unique(xmin):
    """The fit check counts integer draws with bincount: the same arrays (values, dtypes) as np.unique."""
    from ctwm_cli.tail.fitcheck import _histogram

    d = sample_tpl_tail(1.8, 1e-3, xmin, 50_000, np.random.default_rng(2), True)
    for got, want in zip(_histogram(d, xmin, True), np.unique(d, return_counts=True), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    wide = np.array([xmin, xmin + 1e7])  # a range far beyond the sample's size: the sort is kept
    for got, want in zip(_histogram(wide, xmin, True), np.unique(wide, return_counts=True), strict=True):
        assert np.array_equal(got, want)


def test_no_fit_check_on_the_command_line_skips_the_checks(run_cli, tmp_path):
    """``ctwm audit --no-fit-check``: no check is run (JSON null) and the table says why (issue 48)."""
    import json

    x = np.random.default_rng(5).zipf(2.0, 3000)
    path = tmp_path / "c.jsonl"
    path.write_text("".join(f'{{"item":"i{i}","count":{int(v)}}}\n' for i, v in enumerate(x)))
    r = run_cli(["audit", path, "-b", "20", "-j", "1", "--seed", "1", "--no-fit-check", "--format", "json"])
    assert r.code == 0, r.err
    audit = json.loads(r.out)
    audit = audit["results"][0]
    assert audit["fit_checks"] is None and audit["settings"]["fit_check"] is False
    table = run_cli(["audit", path, "-b", "20", "-j", "1", "--seed", "1", "--no-fit-check"])
    assert "not run (--no-fit-check)" in table.out
    checked = json.loads(run_cli(["audit", path, "-b", "20", "-j", "1", "--seed", "1", "--format", "json"]).out)
    checked = checked["results"][0]
    assert set(checked["fit_checks"]) == {"truncated_power_law", "lognormal"}
