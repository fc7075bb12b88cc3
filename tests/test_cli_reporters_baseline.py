"""``ctwm diff`` and :mod:`ctwm_cli.baseline`: changes against a baseline, tolerances, bootstrap intervals."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.baseline import diff_counts, diff_results
from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.diagnostics.measures import gini


def _write(path, counts):
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(len(counts))], "count": counts}), path)
    return str(path)


@pytest.fixture
def saved(run_cli, tmp_path):
    rng = np.random.default_rng(4)
    a = _write(tmp_path / "a.parquet", rng.zipf(2.0, 3000))
    base = tmp_path / "base.json"
    base.write_text(run_cli(["audit", a, "-b", "0", "--seed", "1", "--json"]).out)
    return base


def test_identical_results_change_nothing(run_cli, saved):
    res = run_cli(["diff", saved, saved, "--tol", "gini=0", "--tol", "alpha=0", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert {c["change"] for c in doc["changes"] if c["change"] is not None} == {0.0}
    assert doc["regressions"] == 0 and len(doc["checks"]) == 2
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads(run_cli(["schema", "diff"]).out), cls=jsonschema.Draft202012Validator)


def test_a_change_beyond_tolerance_is_a_regression(run_cli, saved, tmp_path):
    doc = json.loads(saved.read_text())
    doc["results"][0]["concentration"]["gini"] += 0.05
    head = tmp_path / "head.json"
    head.write_text(json.dumps(doc))
    res = run_cli(["diff", saved, head, "--tol", "gini=0.02"])
    assert res.code == 1 and "|Δgini| within 0.02 failed: observed 0.05" in res.err
    assert run_cli(["diff", saved, head, "--tol", "gini=0.06"]).code == 0
    assert run_cli(["diff", saved, head]).code == 0  # reported, not gated


def test_mismatched_inputs_and_unknown_metrics(run_cli, saved, tmp_path):
    psd = tmp_path / "psd.json"
    psd.write_text(json.dumps({"tool": "ctwm", "command": "psd", "beta": 1.0}))
    assert run_cli(["diff", saved, psd]).code == 3
    res = run_cli(["diff", saved, saved, "--tol", "ginni=0.1"])
    assert res.code == 2 and "did you mean 'gini'" in res.err
    assert run_cli(["diff", saved, saved, "--tol", "gini"]).code == 2
    with pytest.raises(InputError, match="compare like with like"):
        diff_results({"command": "audit"}, {"command": "psd"})


def test_trace_change_equals_the_statistics_and_its_interval_covers_it(run_cli, tmp_path):
    rng = np.random.default_rng(8)
    base, head = rng.zipf(2.2, 2000), rng.zipf(1.8, 2000)
    res = diff_counts(base, head, replicates=60, seed=3)
    g = next(c for c in res.changes if c.metric == "gini")
    assert g.change == pytest.approx(gini(head) - gini(base))  # the point estimate is the plain difference
    assert g.confidence_interval.low < g.change < g.confidence_interval.high
    a = next(c for c in res.changes if c.metric == "alpha")
    assert a.change < 0 and a.confidence_interval.high < 0  # α of a heavier tail is smaller, and the interval says so
    again = diff_counts(base, head, replicates=60, seed=3)
    assert again.to_dict() == res.to_dict()  # seeded


def test_noise_alone_fails_the_trace_gate_at_most_at_its_level():
    """Calibration (issue 26): 60 same-law pairs at tolerance 0, R = 39 permutations, so the permutation
    test rejects with probability exactly 2/40 = 5% per metric. The old percentile-interval gate failed
    9.8% [7.9, 12.0] of such pairs (Zipf 2.0, 2,000 items). 10 or more failures in 60 at a true 5% has
    probability 0.3%; at the old 9.8% it would be 27%, so this test can fail either way it matters."""
    fails = {"gini": 0, "top10_share": 0, "alpha": 0}
    pvalues = []
    for seed in range(60):
        rng = np.random.default_rng([26, seed])
        res = diff_counts(rng.zipf(2.0, 2000), rng.zipf(2.0, 2000), tolerances=dict.fromkeys(fails, 0.0),
                          replicates=39, seed=seed)
        for c in res.changes:
            fails[c.metric] += c.regression
        pvalues.append(next(c.pvalue for c in res.changes if c.metric == "gini"))
    assert all(k < 10 for k in fails.values()), fails
    # and the p-values are not stuck at 1 (a test that cannot reject): roughly uniform on {1/40, ..., 1}
    assert 0.3 < float(np.mean(np.array(pvalues) <= 0.5)) < 0.7


def test_identical_and_degenerate_traces_never_fail(run_cli, tmp_path):
    """All counts equal: every replicate agrees, the interval is not formed, p = 1: no change, exit 0."""
    flat = _write(tmp_path / "flat.parquet", np.full(400, 7))
    res = run_cli(["diff", flat, flat, "--tol", "gini=0", "--tol", "top10_share=0", "-b", "30", "--seed", "2"])
    assert res.code == 0, res.out
    assert " fail " not in res.out and "FAIL" not in res.out and "not formed: every replicate agrees" in res.out
    rng = np.random.default_rng(1)
    x = rng.zipf(1.8, 3000)
    same = diff_counts(x, x.copy(), tolerances={"gini": 0.0, "top10_share": 0.0, "alpha": 0.0}, replicates=30, seed=4)
    assert same.regressions == 0 and all(c.pvalue == 1.0 for c in same.changes)


def test_a_shift_within_tolerance_passes_and_beyond_it_fails():
    """The same pair of laws: detected as a change at tolerance 0, passed at a tolerance wider than it."""
    rng = np.random.default_rng(7)
    base, head = rng.zipf(2.4, 3000), rng.zipf(1.9, 3000)
    tight = diff_counts(base, head, tolerances={"alpha": 0.0}, replicates=40, seed=1)
    a = next(c for c in tight.changes if c.metric == "alpha")
    assert a.regression and a.pvalue == pytest.approx(1 / 41)
    loose = diff_counts(base, head, tolerances={"alpha": abs(a.change) + 1.0}, replicates=40, seed=1)
    assert loose.regressions == 0


def test_trace_diff_cli_detects_a_real_shift(run_cli, tmp_path):
    rng = np.random.default_rng(5)
    a = _write(tmp_path / "a.parquet", rng.zipf(2.4, 2000))
    b = _write(tmp_path / "b.parquet", rng.zipf(1.7, 2000))
    res = run_cli(["diff", a, b, "--tol", "gini=0.02", "-b", "60", "--seed", "1", "--json"])
    assert res.code == 1
    doc = json.loads(res.out)
    assert doc["seed"] == 1 and doc["kind"] == "traces" and doc["regressions"] == 1
    with pytest.raises(UsageError, match="replicates"):
        diff_counts(np.arange(1, 10), np.arange(1, 10), replicates=1)


def test_results_pair_by_identity_not_by_spelling(run_cli, tmp_path, monkeypatch):
    """``x.parquet`` and ``./x.parquet`` (and ``sub/../x.parquet``) are one trace: their results pair up;
    issue 24 found every row "–" and exit 1 with no word that nothing matched."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(3)
    _write(tmp_path / "x.parquet", rng.zipf(2.0, 2000))
    (tmp_path / "sub").mkdir()
    docs = []
    for i, spelling in enumerate(["x.parquet", "./x.parquet", "sub/../x.parquet", str(tmp_path / "x.parquet")]):
        out = tmp_path / f"r{i}.json"
        out.write_text(run_cli(["concentration", spelling, "--json"]).out)
        docs.append(out)
        assert json.loads(out.read_text())["results"][0]["source"] == "x.parquet"
    res = run_cli(["diff", docs[0], docs[1], "--tol", "gini=0", "--json"])
    assert res.code == 0, res.err
    changes = json.loads(res.out)["changes"]
    assert changes and all(c["subject"] == "x.parquet" and c["change"] == 0 for c in changes)


def test_label_sets_the_identity_and_a_diff_that_matches_nothing_exits_3(run_cli, tmp_path):
    rng = np.random.default_rng(3)
    a = _write(tmp_path / "a.parquet", rng.zipf(2.0, 2000))
    b = _write(tmp_path / "b.parquet", rng.zipf(2.0, 2000))
    for cmd in (["audit", "-b", "0", "--seed", "1"], ["concentration"]):
        base, head = tmp_path / "base.json", tmp_path / "head.json"
        base.write_text(run_cli([*cmd, a, "--label", "main", "--json"]).out)
        head.write_text(run_cli([*cmd, b, "--json"]).out)
        res = run_cli(["diff", base, head, "--tol", "gini=0.5"])
        assert res.code == 3 and res.err.count("\n") == 1, res.err
        assert "nothing to compare" in res.err and "'main'" in res.err and "--label" in res.err
        head.write_text(run_cli([*cmd, b, "--label", "main", "--json"]).out)
        res = run_cli(["diff", base, head, "--tol", "gini=0.5", "--json"])
        assert res.code == 0, res.err
        assert {c["subject"] for c in json.loads(res.out)["changes"]} == {"main"}
    psd = run_cli(["psd", "sample_traces/world_semantic/trace.parquet", "--label", "sem", "--json"])
    assert json.loads(psd.out)["source"] == "sem"
    res = run_cli(["concentration", a, b, "--label", "only-one"])
    assert res.code == 2 and "--label given 1 time(s) for 2 trace(s)" in res.err
    grouped = tmp_path / "g.parquet"
    pq.write_table(pa.table({"item": ["m1", "m2", "m1"], "run": ["r1", "r1", "r2"]}), grouped)
    rows = json.loads(run_cli(["concentration", grouped, "--group-by", "run", "--label", "G", "--json"]).out)["results"]
    assert [(r["source"], r["group"]) for r in rows] == [("G", "r1"), ("G", "r2")]


def test_a_passing_trace_gate_says_what_was_compared(run_cli, tmp_path):
    """A change larger than the allowance that the test does not show beyond it passes; the row must say
    so (Δ, the interval against ±allowance, the p-value against its level), not "|Δ|<=tol ... pass ... observed
    0.0386" (issue 24)."""
    rng = np.random.default_rng(11)
    base, head = rng.zipf(2.0, 300), rng.zipf(2.0, 300)
    res = diff_counts(base, head, tolerances={"gini": 0.001}, replicates=30, seed=2)
    (gate,) = res.checks
    c = next(c for c in res.changes if c.metric == "gini")
    assert abs(c.change) > 0.001 and not c.regression, c  # the case the issue met: |Δ| above tol, and pass
    assert gate.check == "Δgini not shown beyond ±0.001" and gate.status == "pass"
    assert f"Δ {c.change:+.6g}" in gate.note and "interval" in gate.note and "±0.001" in gate.note
    assert ("overlaps" in gate.note) or ("> 0.05" in gate.note)
    saved = diff_results({"command": "concentration", "results": [{"source": "t", "gini": 0.5}]},
                         {"command": "concentration", "results": [{"source": "t", "gini": 0.51}]},
                         tolerances={"gini": 0.02})
    assert saved.checks[0].check == "|Δgini| within 0.02" and "<= allowance 0.02" in saved.checks[0].note


def test_diff_refuses_a_result_saved_under_another_schema_version(tmp_path, run_cli):
    old = {"schema_version": 1, "tool": "ctwm", "command": "audit", "audits": []}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps({**old, "schema_version": 2, "results": []}))
    res = run_cli(["diff", tmp_path / "old.json", tmp_path / "new.json"])
    assert res.code == 3 and "schema_version 1" in res.err and res.err.count("\n") == 1, res.err
