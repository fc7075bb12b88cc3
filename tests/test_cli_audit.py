"""``ctwm audit`` wiring: formats, groups, --expect, plots, errors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.tail import sample_power_law


@pytest.fixture
def grouped_trace(tmp_path):
    rng = np.random.default_rng(0)
    items, runs = [], []
    for run, gen in (("pl", lambda: sample_power_law(2.2, 1.0, 1500, rng, True)),
                     ("ln", lambda: np.ceil(rng.lognormal(1.0, 1.0, 1500)))):
        counts = gen().astype(int)
        for i, c in enumerate(counts):
            items += [f"{run}-{i}"] * int(c)
            runs += [run] * int(c)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"item": items, "run": runs}), path)
    return path


def test_audit_json_carries_seed_and_full_result(run_cli, grouped_trace):
    res = run_cli(["audit", grouped_trace, "--bootstrap", "20", "--seed", "5", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "audit" and doc["seed"] == 5 and doc["schema_version"] == 3
    a = doc["results"][0]
    assert a["settings"]["seed"] == 5
    assert a["verdict"]["verdict"] in ("tpl-compatible", "lognormal-compatible", "inconclusive")
    assert {c["second"] for c in a["comparisons"]} >= {"lognormal", "exponential", "power_law"}
    assert "seed: 5" in res.err


def test_audit_group_by_gives_one_row_per_group_and_csv(run_cli, grouped_trace):
    res = run_cli(["audit", grouped_trace, "--group-by", "run", "-b", "10", "--seed", "1", "--format", "csv"])
    assert res.code == 0, res.err
    lines = res.out.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("source,group,n_items,")
    assert [line.split(",")[1] for line in lines[1:]] == ["ln", "pl"]


def test_expect_mismatch_exits_1_with_reason(run_cli, grouped_trace):
    res = run_cli(["audit", grouped_trace, "--group-by", "run", "-b", "10", "--seed", "1",
                   "--expect", "lognormal-compatible"])
    doc_verdicts = run_cli(["audit", grouped_trace, "--group-by", "run", "-b", "10", "--seed", "1", "--json"]).out
    verdicts = {a["verdict"]["verdict"] for a in json.loads(doc_verdicts)["results"]}
    if verdicts == {"lognormal-compatible"}:
        assert res.code == 0
    else:
        assert res.code == 1
        assert "expected lognormal-compatible" in res.err and "Traceback" not in res.err


def test_expect_match_exits_0(run_cli, tmp_path):
    path = tmp_path / "flat.jsonl"
    path.write_text("".join(json.dumps({"item": f"m{i}", "count": 3}) + "\n" for i in range(300)))
    res = run_cli(["audit", path, "-b", "5", "--seed", "1", "--expect", "inconclusive"])
    assert res.code == 0, res.err
    assert "all counts are equal" in res.out


def test_audit_table_and_plot(run_cli, grouped_trace, tmp_path):
    out = tmp_path / "ccdf.png"
    res = run_cli(["audit", grouped_trace, "-b", "10", "--seed", "2", "--plot", out])
    assert res.code == 0, res.err
    assert "Tail audit" in res.out and "verdict" in res.out and "Gini" in res.out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--expect", "maybe"], 2, "is not one of 'tpl-compatible'"),
        (["--bootstrap", "-1"], 2, "bootstrap must be >= 0"),
        (["--plot", "x.gif"], 2, ".png, .svg or .pdf"),
        (["--event", "evict"], 3, "no events of kind evict"),
    ],
)
def test_audit_errors(run_cli, grouped_trace, args, code, text):
    res = run_cli(["audit", grouped_trace, "-b", "5", *args])
    assert res.code == code
    assert text in res.err and "Traceback" not in res.err
    # the error line (plus the seed line at most); a choice Typer rejects comes with its usage line
    lines = [line for line in res.err.strip().splitlines() if line and not line.startswith(("Usage:", "Try "))]
    assert len(lines) <= 2


def test_audit_reads_the_shipped_sample_with_no_options(run_cli):
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "sample_traces" / "tpl_events.parquet"
    res = run_cli(["audit", sample, "-b", "20", "--seed", "3", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["results"][0]["power_law"]["n_tail"] >= 100


def test_audit_new_options_reach_the_result(run_cli, grouped_trace):
    res = run_cli(["audit", grouped_trace, "--bootstrap", "20", "--seed", "5", "--uncertainty", "30",
                   "--xmin-range", "1:20", "--scan-floor", "20", "--json"])
    assert res.code == 0, res.err
    a = json.loads(res.out)["results"][0]
    assert a["settings"]["xmin_range"] == [1.0, 20.0] and a["settings"]["scan_floor"] == 20
    assert 1 <= a["power_law"]["xmin"] <= 20
    assert a["uncertainty"]["replicates"] == 30 and "alpha" in a["uncertainty"]["se"]
    nested = next(c for c in a["comparisons"] if c["nested"])
    assert nested["method"] == "monte-carlo"


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--xmin-range", "5"], 2, "--xmin-range must be LO:HI"),
        (["--xmin-range", "9:3"], 2, "--xmin-range needs 0 < low <= high, got low 9 and high 3"),
        (["--uncertainty", "-1"], 2, "uncertainty must be >= 0"),
        (["--scan-floor", "1"], 2, "--scan-floor must be >= 2"),
    ],
)
def test_audit_new_option_errors(run_cli, grouped_trace, args, code, text):
    res = run_cli(["audit", grouped_trace, "--bootstrap", "5", *args])
    assert res.code == code and text in res.err and "Traceback" not in res.err


def test_expect_rule_calibrated_without_a_calibration_is_an_explicit_error(run_cli, tmp_path):
    path = tmp_path / "short.jsonl"
    path.write_text("".join(json.dumps({"item": f"m{i}", "count": i + 1}) + "\n" for i in range(40)))
    res = run_cli(["audit", path, "--bootstrap", "5", "--seed", "1", "--calibrate", "20",
                   "--expect", "inconclusive", "--expect-rule", "calibrated"])
    assert res.code == 3 and "no calibration ran" in res.err and "Traceback" not in res.err


def test_cross_check_powerlaw_is_rendered(run_cli, tmp_path):
    pytest.importorskip("powerlaw")
    x = sample_power_law(3.5, 1.0, 2000, np.random.default_rng(2), True)
    path = tmp_path / "steep.jsonl"
    path.write_text("".join(json.dumps({"item": f"m{i}", "count": int(c)}) + "\n" for i, c in enumerate(x)))
    res = run_cli(["audit", path, "-b", "0", "--seed", "1", "--cross-check", "powerlaw", "--no-diagnostics"])
    assert res.code == 0, res.err
    assert "Cross-check: powerlaw" in res.out and "[0, 3]" in res.out
