"""Gates (``--fail-on``): one grammar, unknown names suggest the closest one, missing metrics fail unless '?'."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.common.gates import evaluate_checks, expect_outcome, parse_check, parse_checks
from ctwm_cli.health import METRICS


@pytest.mark.parametrize(
    ("spec", "op", "value", "optional"),
    [("stale_hit_share>0.05", ">", 0.05, False), ("maintenance_ratio >= 0.1", ">=", 0.1, False),
     ("store_size<=1e3", "<=", 1000.0, False), ("net_new_per_task<-1", "<", -1.0, False),
     ("context_usage?>0.5", ">", 0.5, True), ("store_size == 3", "==", 3.0, False),
     ("store_size!=3", "!=", 3.0, False)],
)
def test_parse(spec, op, value, optional):
    c = parse_check(spec, list(METRICS))
    assert (c.op, c.value, c.optional) == (op, value, optional)
    assert parse_check(str(c), list(METRICS)) == c  # str() is the canonical spelling and parses back


@pytest.mark.parametrize(
    ("spec", "match"),
    [("stale_hit_share", "expects METRIC>VALUE"), ("nope>1", "unknown metric 'nope'"),
     ("stale_hit_shar>1", "did you mean 'stale_hit_share'"), ("store_size>abc", "'abc' is not a number"),
     ("store_size>inf", "must be finite"), ("store_size=3", "expects"), ("store_size>nan", "must be finite")],
)
def test_parse_errors(spec, match):
    with pytest.raises(UsageError, match=match):
        parse_check(spec, list(METRICS))


def test_parse_error_names_the_parameter_given():
    with pytest.raises(UsageError, match=r"^--fail-on: unknown metric"):
        parse_checks(["x>1"], ["y"], parameter="--fail-on")


def test_evaluate_every_operator_and_missing_values():
    m = {"a": 0.2, "b": None, "c": 5.0, "d": float("nan")}
    specs = ("a>0.1", "a<0.1", "b>0", "b?>0", "c>=5", "c<=4", "c==5", "c!=5", "d<1", "e?<1")
    out = evaluate_checks(parse_checks(specs, ["a", "b", "c", "d", "e"]), m, subject="s", needs={"b": "budget"})
    assert [o.failed for o in out] == [True, False, True, False, True, False, True, False, True, False]
    assert [o.status for o in out] == ["fail", "pass", "not-available", "skipped", "fail", "pass", "fail", "pass",
                                       "not-available", "skipped"]
    assert out[0].note == "a = 0.2 > 0.1" and out[0].observed == 0.2 and out[0].threshold == 0.1
    assert out[2].note == "b not available (needs budget)" and out[2].needs == "budget"
    assert out[8].observed is None  # NaN is "not available", never a number that passes
    assert {o.subject for o in out} == {"s"}


def test_expectation_is_a_gate_outcome():
    ok, bad = expect_outcome("t", "paper_verdict", "inconclusive", "inconclusive"), expect_outcome(
        "t", "paper_verdict", "inconclusive", "tpl-compatible")
    assert (ok.failed, ok.status, bad.failed, bad.status) == (False, "pass", True, "fail")
    assert bad.threshold == "tpl-compatible" and bad.observed == "inconclusive"


# --------------------------------------------------------------------------------- on the commands


@pytest.fixture(scope="module")
def zipf_counts(tmp_path_factory):
    rng = np.random.default_rng(7)
    counts = rng.zipf(2.0, 3000)
    path = tmp_path_factory.mktemp("g") / "c.parquet"
    pq.write_table(pa.table({"item": [f"m{i}" for i in range(counts.size)], "count": counts}), path)
    return str(path), counts


def test_audit_gates_read_the_json_numbers(run_cli, zipf_counts):
    path, _ = zipf_counts
    doc = json.loads(run_cli(["audit", path, "-b", "0", "--seed", "1", "--json"]).out)["results"][0]
    alpha, gini = doc["power_law"]["alpha"], doc["concentration"]["gini"]
    # thresholds on either side of the observed value: one gate holds, the other does not
    res = run_cli(["audit", path, "-b", "0", "--seed", "1", "--fail-on", f"alpha>{alpha - 0.01}",
                   "--fail-on", f"gini<{gini - 0.01}", "--json"])
    assert res.code == 1
    checks = json.loads(res.out)["checks"]
    assert [(c["check"].split(">")[0].split("<")[0], c["failed"]) for c in checks] == [("alpha", True), ("gini", False)]
    assert checks[0]["observed"] == pytest.approx(alpha)
    assert "alpha>" in res.err and "observed" in res.err
    res = run_cli(["audit", path, "-b", "0", "--seed", "1", "--fail-on", f"alpha>{alpha + 0.01}"])
    assert res.code == 0, res.err


def test_audit_p_gof_without_bootstrap_is_not_available(run_cli, zipf_counts):
    path, _ = zipf_counts
    res = run_cli(["audit", path, "-b", "0", "--seed", "1", "--fail-on", "p_gof<0.1"])
    assert res.code == 1 and "p_gof not available" in res.err
    assert run_cli(["audit", path, "-b", "0", "--seed", "1", "--fail-on", "p_gof?<0.1"]).code == 0


def test_unknown_metric_suggests_the_closest(run_cli, zipf_counts):
    path, _ = zipf_counts
    res = run_cli(["audit", path, "--fail-on", "apha>2"])
    assert res.code == 2 and "did you mean 'alpha'" in res.err


def test_concentration_gate(run_cli, zipf_counts):
    path, _ = zipf_counts
    gini = json.loads(run_cli(["concentration", path, "--json"]).out)["results"][0]["gini"]
    assert run_cli(["concentration", path, "--fail-on", f"gini>{gini - 1e-6}"]).code == 1
    assert run_cli(["concentration", path, "--fail-on", f"gini>{gini + 1e-6}"]).code == 0
    assert run_cli(["concentration", path, "--fail-on", "beta>1"]).code == 2  # a psd metric, not a concentration one


def test_psd_gate(run_cli, tmp_path):
    rng = np.random.default_rng(3)
    steps = np.repeat(np.arange(2048), rng.poisson(3, 2048))
    items = np.where(rng.random(steps.size) < 0.5, "a", rng.integers(0, 200, steps.size).astype(str))
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"item": items, "step": steps}), path)
    beta = json.loads(run_cli(["psd", str(path), "--json"]).out)["beta"]
    assert run_cli(["psd", str(path), "--fail-on", f"beta>{beta - 0.01}"]).code == 1
    assert run_cli(["psd", str(path), "--fail-on", f"beta>{beta + 0.01}"]).code == 0


def test_simulate_trace_gate(run_cli, zipf_counts):
    path, _ = zipf_counts
    rows = json.loads(run_cli(["simulate", "--trace", path, "--tau", "1", "--json"]).out)["results"]
    dropped = rows[0]["access_share_dropped"]
    sim = ["simulate", "--trace", path, "--tau", "1", "--fail-on"]
    assert run_cli([*sim, f"access_share_dropped>={dropped}"]).code == 1
    assert run_cli([*sim, f"access_share_dropped>{dropped}"]).code == 0
    assert run_cli(["simulate", "--tau", "1", "--fail-on", "gini>0"]).code == 2  # gates need --trace
