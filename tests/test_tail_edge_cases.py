"""Edge cases found in review: extreme exponents and counts, fixed cutoffs, small R, bad options."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.tail import INCONCLUSIVE, audit


def _write(path, counts):
    path.write_text("".join(json.dumps({"item": f"m{i}", "count": int(c)}) + "\n" for i, c in enumerate(counts)))
    return path


def test_non_integer_xmin_is_a_usage_error_for_discrete_fits(run_cli, tmp_path):
    f = _write(tmp_path / "c.jsonl", np.arange(1, 400))
    res = run_cli(["audit", f, "--xmin", "2.5", "-B", "5"])
    assert res.code == 2 and "xmin must be an integer" in res.err
    with pytest.raises(UsageError):
        audit(np.arange(1.0, 400.0), xmin=2.5)


def test_steep_tail_far_from_one_bootstraps_without_error():
    rng = np.random.default_rng(1)
    x = 10_000 + rng.geometric(0.3, 2000) - 1.0  # the power-law fit has α in the thousands
    r = audit(x, bootstrap=20, seed=1, jobs=1)
    assert r.power_law.alpha > 1000 and 0 < r.p_gof <= 1


def test_huge_clustered_counts_finish():
    x = np.concatenate([np.full(300, 1e12), np.full(300, 1e12 + 1)])
    r = audit(x, bootstrap=0, seed=1)
    assert r.power_law is not None and np.isfinite(r.power_law.alpha)


def test_continuous_fit_of_a_narrow_tail_does_not_overflow():
    x = 100 + np.random.default_rng(2).geometric(0.5, 1000) - 1.0
    r = audit(x, discrete=False, bootstrap=0, seed=1)
    assert r.verdict.verdict in ("tpl-compatible", "lognormal-compatible", "inconclusive")


def test_discrete_lognormal_stays_accurate_at_huge_counts():
    # the same data scaled by 1e9: discrete and continuous audits must tell the same story
    rng = np.random.default_rng(3)
    base = np.floor(rng.pareto(1.2, 2000) * 1e3) + 1e3
    small = audit(base, bootstrap=0, seed=1).tpl_vs_lognormal.z
    big = audit(base * 1e9, bootstrap=0, seed=1).tpl_vs_lognormal.z
    assert abs(small - big) < 0.5


def test_too_few_calibration_replicates_cannot_call_a_family():
    x = np.ceil(np.random.default_rng(4).lognormal(2.0, 1.0, 3000))
    r = audit(x, bootstrap=10, seed=1, calibrate=10, level=0.05, jobs=1)
    assert r.calibration.verdict.verdict == INCONCLUSIVE
    assert "cannot reach level" in r.calibration.verdict.reason


def test_failed_bootstrap_replicates_count_against_the_fit():
    x = np.array([1.0] * 299 + [2.0])
    r = audit(x, bootstrap=40, seed=1, jobs=1, min_tail=1)
    if r.gof is not None and r.gof.failed:
        assert r.p_gof >= (1 + r.gof.failed) / 41


def test_fixed_xmin_above_the_data_says_so():
    r = audit(np.arange(1.0, 500.0), xmin=10_000, bootstrap=0, seed=1)
    assert r.verdict.verdict == INCONCLUSIVE and "xmin = 10000" in r.verdict.reason
    assert "--" not in r.verdict.reason  # the library names parameters, never flags (issue 24)


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["audit", "{f}", "--seed", "-1"], 2, "seed"),
        (["audit", "{f}", "-B", "-1"], 2, "bootstrap must be >= 0"),
    ],
)
def test_bad_options_fail_before_reading(run_cli, tmp_path, args, code, text):
    f = _write(tmp_path / "c.jsonl", np.arange(1, 50))
    res = run_cli([a.replace("{f}", str(f)) for a in args])
    assert res.code == code and text in res.err and "Traceback" not in res.err


def test_count_outside_int64_is_a_data_error(run_cli, tmp_path):
    f = tmp_path / "big.jsonl"
    f.write_text('{"item": "a", "count": 99999999999999999999}\n')
    res = run_cli(["inspect", f])
    assert res.code == 3 and "64-bit" in res.err
