"""Issue 44's small print: integer quantities get integer intervals, and p-values below the float range
print as a bound (``< 1e-300``) with their logarithm in JSON."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from ctwm_cli.tail import audit
from ctwm_cli.tail.compare import P_BOUND, nested_power_law, pvalue_text, vuong
from ctwm_cli.tail.powerlaw import Histogram, fit_power_law
from ctwm_cli.tail.uncertainty import summarise


def _rows(xmins, ns):
    return [np.column_stack([np.asarray(xmins, float), np.full(len(xmins), 2.0), np.asarray(ns, float)])]


def test_integer_quantities_get_order_statistics_not_interpolations():
    # 40 replicates: the 2.5% and 97.5% points fall between order statistics, where numpy's default
    # interpolates (x_min [1, 1.025], the issue's example); the interval must be made of replicates' values
    xmins = [1.0] * 38 + [2.0, 3.0]
    ns = list(range(100, 140))
    pl = fit_power_law(Histogram.from_sample(np.arange(1, 200)), min_tail=10)
    u = summarise(pl, _rows(xmins, ns), replicates=40, seed=0)
    iv = u.interval["n_tail"]
    assert iv is not None and float(iv.low).is_integer() and float(iv.high).is_integer()
    assert iv.low in ns and iv.high in ns
    # type 1 (an independent formula): the ceil(n q)-th order statistic, the smallest replicate value whose
    # share of replicates at or below it reaches q; at least 95% of the replicates lie inside
    q = [(1 - 0.95) / 2, (1 + 0.95) / 2]
    assert (iv.low, iv.high) == tuple(float(sorted(ns)[math.ceil(len(ns) * p) - 1]) for p in q)
    assert np.mean((np.asarray(ns) >= iv.low) & (np.asarray(ns) <= iv.high)) >= 0.95
    assert np.quantile(ns, [0.025, 0.975]).tolist() != [iv.low, iv.high]  # the interpolating default differs
    x = u.interval["xmin"]
    assert x is None or (float(x.low).is_integer() and float(x.high).is_integer())


def test_audit_intervals_of_xmin_and_n_tail_are_integers_and_say_when_they_exclude_the_estimate():
    rng = np.random.default_rng(7)
    x = np.ceil(rng.lognormal(1.0, 1.2, 400))
    u = audit(x, bootstrap=0, uncertainty=40, seed=2, jobs=1).uncertainty
    for q in ("xmin", "n_tail"):
        iv = u.interval[q]
        if iv is not None:
            assert float(iv.low).is_integer() and float(iv.high).is_integer(), (q, iv)
            inside = iv.low <= u.estimate[q] <= iv.high
            assert inside == (q not in u.excludes_estimate)
    assert "excludes_estimate" in u.to_dict()


def test_vuong_log_pvalue_matches_the_normal_tail_in_log_space():
    d = np.array([1.0, 3.0])
    w = np.array([1.0, 1.0]) * 1e3  # z = Λ/σ = 2000/sqrt(2000 * 1) = 44.7: 2Φ(-z) underflows
    c = vuong("a", "b", d, w, 1.96)
    assert c.pvalue == 0.0  # the float underflows ...
    assert c.log_pvalue == pytest.approx(math.log(2) + stats.norm.logsf(c.z), rel=1e-12)
    mp = float(mpmath.log(mpmath.erfc(mpmath.mpf(c.z) / mpmath.sqrt(2))))  # 2Φ(-z) = erfc(z/√2)
    assert c.log_pvalue == pytest.approx(mp, rel=1e-12)  # ... its log does not
    assert c.to_dict()["pvalue"] == P_BOUND and c.to_dict()["log_pvalue"] == pytest.approx(c.log_pvalue)
    small = vuong("a", "b", np.array([0.1, -0.05]), np.array([50.0, 50.0]), 1.96)
    assert small.log_pvalue == pytest.approx(math.log(small.pvalue), rel=1e-10)
    assert isinstance(small.to_dict()["pvalue"], float)


def test_nested_log_pvalue_is_half_the_chi2_tail():
    for lr in (0.5, 9.0, 4000.0):
        c = nested_power_law(0.0, lr / 2, 0.05)
        # ½P(χ²_1 >= LR) = ½erfc(sqrt(LR/2)), at 40 digits (scipy's chi2.logsf itself underflows at LR = 4000)
        exact = float(mpmath.log(mpmath.mpf(0.5) * mpmath.erfc(mpmath.sqrt(mpmath.mpf(lr) / 2))))
        assert c.log_pvalue == pytest.approx(exact, rel=1e-10)
    assert nested_power_law(0.0, 2000.0, 0.05).to_dict()["pvalue_asymptotic"] == P_BOUND


def test_pvalue_text():
    assert pvalue_text(0.0) == "< 1e-300" and pvalue_text(1e-310) == "< 1e-300"
    assert pvalue_text(0.0123456) == "0.01235" and pvalue_text(math.nan) == "–"


@pytest.fixture(scope="module")
def zipf_counts(tmp_path_factory):
    x = np.random.default_rng(1).zipf(2.0, 10**6)  # the case: z ~ 44, p underflows
    path = tmp_path_factory.mktemp("zipf") / "zipf.parquet"
    pq.write_table(pa.table({"item": [f"i{k}" for k in range(x.size)], "count": x}), path)
    return path


def test_an_underflowed_p_prints_as_a_bound_in_json_and_table(run_cli, zipf_counts):
    res = run_cli(["audit", zipf_counts, "--bootstrap", "0", "--seed", "1", "--json"])
    assert res.code == 0, res.err
    cmp = json.loads(res.out)["results"][0]["comparisons"]
    rule = cmp[0]
    assert rule["z"] > 38.5 and rule["pvalue"] == "< 1e-300"
    assert rule["log_pvalue"] < -690 and math.isfinite(rule["log_pvalue"])
    assert all(c["pvalue"] != 0 for c in cmp)
    table = run_cli(["audit", zipf_counts, "--bootstrap", "0", "--seed", "1", "--no-diagnostics"]).out
    assert "< 1e-300" in table
