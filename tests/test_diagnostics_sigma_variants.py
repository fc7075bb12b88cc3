"""The σ_top10 readings (issue 30): log (default), raw (the paper's words), cv (closest to its numbers)."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.diagnostics import concentration, finite_size_of_traces
from ctwm_cli.diagnostics.finite_size import uniform_null_sigma
from ctwm_cli.diagnostics.measures import sigma_top, sigma_top10_cv


def test_cv_closed_form_and_scale_behaviour():
    x = np.array([100, 60, 40, 20] + [1] * 36, dtype=float)  # 40 items: top decile = the first 4
    top = x[:4]
    assert sigma_top10_cv(x) == pytest.approx(np.std(top, ddof=1) / top.mean())
    assert sigma_top10_cv(x) == pytest.approx(math.sqrt(((100 - 55) ** 2 + 5**2 + 15**2 + 35**2) / 3) / 55)
    desc = np.sort(x)[::-1]
    for variant, factor in (("log", 1.0), ("cv", 1.0), ("raw", 3.0)):  # only raw grows with the counts
        assert sigma_top(desc * 3, variant) == pytest.approx(factor * sigma_top(desc, variant))
    assert concentration(x).sigma_top10_cv == pytest.approx(sigma_top10_cv(x))
    assert math.isnan(sigma_top10_cv([5, 4, 3]))  # top decile of one item
    with pytest.raises(UsageError, match="sigma"):
        sigma_top(desc, "median")


def _traces(tmp_path):
    rng = np.random.default_rng(3)
    specs = []
    for size in (100, 400, 1600):
        counts = rng.lognormal(2.0, 0.5 + 0.2 * math.log(size / 100), size=size).round().astype(int) + 1
        path = tmp_path / f"n{size}.parquet"
        pq.write_table(pa.table({"item": [f"i{j}" for j in range(size)], "count": counts}), path)
        specs.append(f"{path}:{size}")
    return specs


def test_finite_size_trend_uses_the_chosen_reading(tmp_path):
    specs = _traces(tmp_path)
    log = finite_size_of_traces(specs, family="f")
    cv = finite_size_of_traces(specs, family="f", sigma="cv")
    raw = finite_size_of_traces(specs, family="f", sigma="raw")
    assert log.sigma_variant == "log" and cv.sigma_variant == "cv" and "sd (ddof=1) / mean" in cv.statistic
    for rep, variant in ((log, "log"), (cv, "cv"), (raw, "raw")):
        for r in rep.runs:
            assert r.sigma_raw == pytest.approx(raw.runs[[x.size for x in raw.runs].index(r.size)].sigma)
        assert rep.sigma_variant == variant
    assert cv.families[0].sigma != log.families[0].sigma
    assert raw.families[0].slope == pytest.approx(log.families[0].slope_raw)
    with pytest.raises(UsageError, match="sigma"):
        finite_size_of_traces(specs, family="f", sigma="std")


def test_null_follows_the_reading():
    # uniform access, 1000 items, 20 events each: the top-decile cv is about 3 sd / 20 of a Poisson tail
    a = uniform_null_sigma(1000, 20_000, 20, rng=1, sigma="cv")
    b = uniform_null_sigma(1000, 20_000, 20, rng=1, sigma="log")
    assert 0 < a < 0.2 and a != b


def test_cli_sigma_option(tmp_path, run_cli):
    specs = _traces(tmp_path)
    r = run_cli(["finite-size", *specs, "--family", "f", "--sigma", "cv", "--json"])
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["sigma_variant"] == "cv"
    r = run_cli(["concentration", specs[0].rsplit(":", 1)[0], "--sigma", "cv"])
    assert r.code == 0, r.err
    assert "σ cv" in r.out
    r = run_cli(["finite-size", *specs, "--family", "f", "--sigma", "sd"])
    assert r.code == 2


def test_cli_choices_mirror_the_library():
    from ctwm_cli.cli.cmd_diagnostics import SigmaVariant
    from ctwm_cli.diagnostics.measures import SIGMA_VARIANTS

    assert tuple(v.value for v in SigmaVariant) == SIGMA_VARIANTS
