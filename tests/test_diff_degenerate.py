"""``ctwm diff`` on identical degenerate inputs: no change for every metric, α included (issue 44)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ctwm_cli.baseline import diff_counts


def _write(path, counts):
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(len(counts))], "count": counts}), path)
    return str(path)


def test_identical_all_equal_traces_are_no_change_for_alpha_too(run_cli, tmp_path):
    flat = _write(tmp_path / "flat.parquet", np.full(400, 7))
    res = run_cli(["diff", flat, flat, "--tol", "alpha=0.1", "--tol", "gini=0", "-b", "20", "--seed", "2", "--json"])
    assert res.code == 0, res.err
    alpha = next(c for c in json.loads(res.out)["checks"] if c["metric"] == "Δalpha")
    assert not alpha["failed"] and "no change" in alpha["note"]


def test_identical_degenerate_saved_results_are_no_change(run_cli, tmp_path):
    flat = _write(tmp_path / "flat.parquet", np.full(400, 7))
    base = tmp_path / "base.json"
    base.write_text(run_cli(["audit", flat, "-b", "0", "--seed", "1", "--json"]).out)
    res = run_cli(["diff", base, base, "--tol", "alpha=0.1", "--tol", "xmin=0", "--tol", "z=0", "--tol", "p_gof=0"])
    assert res.code == 0, res.out + res.err


def test_a_metric_missing_on_one_side_only_still_fails():
    rng = np.random.default_rng(3)
    d = diff_counts(np.full(400, 7), rng.zipf(2.0, 400), tolerances={"alpha": 0.1}, replicates=20, seed=1)
    assert d.regressions == 1 and d.checks[0].failed
