"""The pruned x_min scan (tail/scan.py) gives the fits and bootstrap null distributions of the plain
scan it replaced: tests/data/scan_golden.json was written by tests/data/make_scan_golden.py from the code before
the pruning (commit c024add), and written again once after the discrete MLE's fix (see make_scan_golden.py), on a
machine with AVX-512. x_min, n_tail, the candidate count and the p-value must be the same; α̂, KS, the loglik and
each replicate's null KS agree to 1e-9 relative (the MLE's precision across CPUs, tests/data/golden_compare.py).
Bit-for-bit identity within one machine is tested by tests/test_audit_golden.py."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from ctwm_cli.tail.powerlaw import Histogram, scan_cutoffs
from ctwm_cli.tail.scan import gap_at, ks_bound, ks_continuous, ks_discrete
from ctwm_cli.tail.zeta import log_hurwitz_zeta

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import golden_compare  # noqa: E402
import make_scan_golden as golden  # noqa: E402

GOLDEN = json.loads((DATA / "scan_golden.json").read_text())
FAST = [c for c in golden.CASES if c[0] not in ("cities", "quakes") or c[1] is False]


def _check(case) -> None:
    want = GOLDEN[golden.case_key(*case)]
    got = golden.run_case(*case)
    assert golden_compare.mismatches(want, got) == []


@pytest.mark.parametrize("case", FAST, ids=[golden.case_key(*c) for c in FAST])
def test_same_fit_and_null_as_before(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in golden.CASES if c not in FAST])
def test_same_fit_and_null_as_before_slow(case):
    _check(case)


def test_every_case_is_stored():
    assert sorted(GOLDEN) == sorted(golden.case_key(*c) for c in golden.CASES)


def _brute_ks(values, counts, start, alpha, discrete):
    """D over every integer (discrete) or every data point (continuous), summed directly."""
    v, c = values[start:], counts[start:]
    n = c.sum()
    if discrete:
        xs = np.arange(v[0], v[-1] + 1)
        pmf = np.exp(-alpha * np.log(xs) - log_hurwitz_zeta(alpha, v[0]))
        model = np.cumsum(pmf)
        emp = np.cumsum(np.bincount((v - v[0]).astype(np.int64), weights=c)) / n
        return float(np.max(np.abs(emp - model)))
    f = 1.0 - (v / v[0]) ** (1.0 - alpha)
    cum = np.cumsum(c) / n
    return float(max(np.max(np.abs(cum - f)), np.max(np.abs(np.concatenate([[0.0], cum[:-1]]) - f))))


def _sample(discrete: bool, seed: int, n: int = 3000) -> Histogram:
    rng = np.random.default_rng(seed)
    kind = seed % 3
    if kind == 0:
        x = rng.zipf(2.1, n).astype(np.float64)
    elif kind == 1:
        x = np.ceil(rng.lognormal(2.0, 1.5, n))
    else:  # wide gaps between values: integers up to ~10^7
        x = np.ceil(np.exp(rng.uniform(0, 16, n)))
    if not discrete:
        x = x + rng.random(x.size)
    return Histogram.from_sample(x)


@pytest.mark.parametrize("discrete", [True, False])
def test_ks_is_the_supremum_and_every_gap_a_lower_bound(discrete):
    h = _sample(discrete, 3)
    values, counts = h.values[h.values < 5000], h.counts[h.values < 5000].astype(np.float64)
    ntail = np.cumsum(counts[::-1])[::-1]
    kern = ks_discrete if discrete else ks_continuous
    for start in (0, 3, 10):
        for alpha in (1.7, 2.1, 3.0):
            d = kern(values, counts, start, ntail[start], alpha, math.inf)
            assert d == pytest.approx(_brute_ks(values, counts, start, alpha, discrete), abs=1e-9)
            gaps = [gap_at(values, ntail, start, j, alpha, discrete) for j in range(start, values.size)]
            assert max(gaps) == pytest.approx(d, abs=1e-9)  # the supremum is at a data value or just below
            probe = np.zeros(1, dtype=np.int64)
            assert ks_bound(values, ntail, start, alpha, math.inf, discrete, probe) == pytest.approx(d, abs=1e-9)
            assert gaps[probe[0] - start] == pytest.approx(d, abs=1e-9)  # probe: where D peaks
            # a cap below D is reported as exceeded, a cap above it is not
            assert ks_bound(values, ntail, start, alpha, 0.9 * d, discrete, probe) > 0.9 * d
            assert ks_bound(values, ntail, start, alpha, 1.1 * d, discrete, probe) <= 1.1 * d


def _plain_scan(h: Histogram, discrete: bool, min_tail: float):
    """The scan before the bound: the exact pass at every candidate, the first minimum kept."""
    values, counts = h.values, h.counts.astype(np.float64)
    best, best_d, best_a = -1, math.inf, math.nan
    for i in range(values.size):
        # one candidate at a time: its α and its exact D (a single candidate always gets the full pass)
        b, a, d, _ = scan_cutoffs(values, counts, min_tail, discrete, i, i + 1)
        if b >= 0 and d < best_d:
            best, best_d, best_a = i, d, a
    return best, best_a, best_d


@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_same_choice_as_the_plain_scan(discrete, seed):
    h = _sample(discrete, seed, 1500)
    best, alpha, d, _ = scan_cutoffs(h.values, h.counts.astype(np.float64), 10.0, discrete, 0, h.values.size)
    assert (best, alpha, d) == _plain_scan(h, discrete, 10.0)

