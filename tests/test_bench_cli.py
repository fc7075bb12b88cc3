"""``ctwm bench``: wiring, JSON envelope, errors and the Table 5 report."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"


def _ok(res):
    assert res.code == 0, res.err
    return res.out


def test_longmemeval_json(run_cli):
    doc = json.loads(_ok(run_cli(["bench", "longmemeval", FIXTURE, "--memory", "graph,ctwm", "--budget", "4096",
                                  "--seed", "4", "--bootstrap", "100", "--json"])))
    assert doc["command"] == "bench longmemeval" and doc["seed"] == 4
    assert doc["accuracy_measured"] is False
    assert doc["questions"] == 21 and doc["params"]["budget"] == 4096
    assert {a["name"] for a in doc["arms"]} == {"graph", "ctwm", "ctwm-relaxed"}
    tokens = [c for c in doc["comparisons"] if c["metric"] == "tokens" and c["group"] == "all"]
    assert {c["treatment"] for c in tokens} == {"ctwm", "ctwm-relaxed"}


def test_longmemeval_table_says_accuracy_not_measured(run_cli):
    res = run_cli(["bench", "longmemeval", FIXTURE, "--no-relax", "--seed", "1", "--bootstrap", "50"])
    out = _ok(res)
    assert "accuracy was not measured" in " ".join(out.split())
    assert "ctwm-relaxed" not in out
    assert "multi-session" in out


def test_seed_is_announced_when_drawn(run_cli):
    res = run_cli(["bench", "longmemeval", FIXTURE, "--bootstrap", "10", "--limit", "2", "--json"])
    seed = json.loads(_ok(res))["seed"]
    assert f"seed: {seed}" in res.err


def test_malformed_file_exits_3_naming_the_field(run_cli, tmp_path):
    doc = json.loads(FIXTURE.read_text())[:2]
    doc[1]["haystack_sessions"][2][5]["role"] = None
    p = tmp_path / "data.json"
    p.write_text(json.dumps(doc))
    res = run_cli(["bench", "longmemeval", p])
    assert res.code == 3
    want = f"ctwm: error: {p}: [1].haystack_sessions[2][5].role: expected a string, got null"
    assert res.err.strip().splitlines()[-1] == want
    assert res.out == ""


def test_usage_errors_exit_2(run_cli):
    res = run_cli(["bench", "longmemeval", FIXTURE, "--memory", "flat"])
    assert res.code == 2 and "unknown memory policy 'flat'" in res.err
    res = run_cli(["bench", "longmemeval", FIXTURE, "--budget", "10", "--seed", "1"])
    assert res.code == 2 and "raise --budget" in res.err
    res = run_cli(["bench", "report"])
    assert res.code == 2 and "nothing to report" in res.err


def test_report_collects_saved_results(run_cli, tmp_path):
    lme = tmp_path / "lme.json"
    lme.write_text(_ok(run_cli(["bench", "longmemeval", FIXTURE, "--seed", "2", "--bootstrap", "100", "--json"])))
    rep = json.loads(_ok(run_cli(["bench", "report", f"LongMemEval synthetic={lme}", "--synthetic", "1", "--size",
                                  "100", "--steps", "300", "--bootstrap", "50", "--seed", "3", "--json"])))
    rows = rep["results"]
    assert [r["configuration"] for r in rows] == ["Synthetic graph A (ctwm at graph's tokens)", "LongMemEval synthetic",
                                                  "LongMemEval synthetic (ctwm-relaxed)"]
    saved = json.loads(lme.read_text())
    tok = next(c for c in saved["comparisons"] if c["treatment"] == "ctwm" and c["metric"] == "tokens"
               and c["group"] == "all")
    rci = tok["relative_confidence_interval"]
    assert rows[1]["reduction"] == -tok["relative"]
    assert rows[1]["reduction_confidence_interval"] == {"low": -rci["high"], "high": -rci["low"], "level": rci["level"]}
    syn = rows[0]
    assert syn["reduction"] == pytest.approx(1 - syn["treatment_tokens"] / syn["baseline_tokens"])
    ci = syn["reduction_confidence_interval"]
    assert ci["low"] <= syn["reduction"] <= ci["high"] and ci["level"] == 0.95
    assert syn["reduction"] >= 0  # the matched rule: ctwm never spends more than graph here
    assert "--match-tokens graph" in syn["source"] and any("matched budget rule" in n for n in rep["notes"])
    # the quality that comes with the saving sits in the same row, with its interval
    assert syn["quality_metric"] == "tail_error"
    if syn["quality_interval_status"] == "formed":
        q = syn["quality_confidence_interval"]
        assert q["low"] <= syn["quality_delta"] <= q["high"]
    else:  # no tail step differs: said, not printed as [0, 0]
        assert syn["quality_delta"] == 0 and syn["quality_interval_status"] == "not formed: no step differs"
    p = next(c for c in saved["comparisons"] if c["treatment"] == "ctwm" and c["metric"] == rows[1]["quality_metric"]
             and c["group"] == "all")
    assert (rows[1]["quality_delta"], rows[1]["quality_confidence_interval"]) == (p["delta"], p["confidence_interval"])
    table = _ok(run_cli(["bench", "report", str(lme)]))
    assert "Table 5" in table and "LongMemEval" in table


def test_report_rejects_other_documents(run_cli, tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"command": "audit"}))
    res = run_cli(["bench", "report", p])
    assert res.code == 3 and "cannot report a 'audit' result" in res.err


@pytest.mark.parametrize("interval, says", [
    (None, "saved by an older ctwm (flat ci_low/ci_high intervals)"),
    ({"low": "x", "high": 1, "level": 0.95}, "relative_confidence_interval is not an interval {low, high, level}"),
])
def test_report_refuses_an_interval_it_cannot_read(run_cli, tmp_path, interval, says):
    """A saved comparison in the flat shape of before issue 24, or a malformed interval: a one-line input
    error naming the file, never a row printed without its interval."""
    comp = {"treatment": "ctwm", "baseline": "graph", "metric": "tokens", "group": "all", "units": 3,
            "baseline_value": 10.0, "treatment_value": 8.0, "relative": -0.2,
            "relative_confidence_interval": interval}
    if interval is None:
        comp.update(relative_ci_low=-0.3, relative_ci_high=-0.1)
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"command": "bench longmemeval", "comparisons": [comp]}))
    res = run_cli(["bench", "report", p])
    assert res.code == 3 and str(p) in res.err and says in res.err and len(res.err.strip().splitlines()) == 1


@pytest.mark.skipif(importlib.util.find_spec("textworld") is not None, reason="textworld is installed")
def test_textworld_without_the_extra_says_how_to_install(run_cli, tmp_path):
    game = tmp_path / "g.z8"
    game.write_bytes(b"")
    res = run_cli(["bench", "textworld", game, "--seed", "1"])
    assert res.code == 2 and "pip install 'ctwm[textworld]'" in res.err


def test_help_texts(run_cli):
    for cmd in (["bench"], ["bench", "longmemeval"], ["bench", "textworld"], ["bench", "report"]):
        res = run_cli([*cmd, "--help"])
        assert res.code == 0 and "Usage" in res.out
