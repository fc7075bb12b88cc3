"""Issue 24's output fixes: JUnit times, the τ note of simulate --trace, what world grid --resume did,
health's wording, ctwm check --format markdown's checks column."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SEM = "sample_traces/world_semantic/trace.parquet"


def test_junit_times_are_the_run_and_each_case_its_own(run_cli, tmp_path):
    out = tmp_path / "a.xml"
    res = run_cli(["concentration", SEM, "sample_traces/tpl_events.parquet", "--fail-on", "gini>0.99",
                   "--fail-on", "n_items<1", "--junit-xml", out])
    assert res.code == 0, res.err
    root = ET.parse(out).getroot()
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 4
    total = float(suite.get("time"))
    assert total > 0 and float(root.get("time")) == pytest.approx(total)  # was "0" everywhere
    # issue 39: a gate's own time (it compares one number of the finished result), not a share of the run's
    assert [c.get("time") for c in cases] == ["0.000"] * 4


def test_simulate_trace_says_why_its_rows_are_identical(run_cli):
    res = run_cli(["simulate", "--trace", SEM, "--sweep", "0.25:2.0:7", "-K", "10", "-B", "64"])
    assert res.code == 0, res.err
    doc = json.loads(run_cli(["simulate", "--trace", SEM, "--sweep", "0.25:2.0:7", "-K", "10", "-B", "64",
                              "--json"]).out)
    assert doc["max_list_length"] <= 10
    assert len({json.dumps({k: v for k, v in r.items() if k != "tau"}) for r in doc["results"]}) == 1
    assert f"every step lists at most {doc['max_list_length']} items" in " ".join(res.out.split())
    small = run_cli(["simulate", "--trace", SEM, "--sweep", "0.25:2.0:7", "-K", "1", "-B", "64"])
    assert "every step lists at most" not in small.out  # the note only when it holds


def test_grid_resume_says_what_it_kept_and_ran(run_cli, tmp_path):
    base = ["world", "grid", "--out", tmp_path / "g", "--family", "uniform", "--size", "100", "--steps", "300",
            "--seed", "1"]
    assert run_cli([*base, "--replicates", "2"]).code == 0
    (part,) = (tmp_path / "g").glob("family=uniform/size=100/seed=2/*.parquet")
    part.unlink()  # an interrupted grid: one cell's file missing
    res = run_cli([*base, "--replicates", "2", "--resume"])
    assert res.code == 0, res.err
    assert res.out.splitlines()[0] == "resume: 1 of 2 cells kept (file SHA-256 matched the manifest), 1 run"
    assert "kept" in res.out and " run " in res.out


def test_health_words_say_what_is_counted(run_cli):
    res = run_cli(["health", "sample_traces/telemetry/events.jsonl", "--objects",
                   "sample_traces/telemetry/objects.jsonl", "--budget", "1500"])
    text = " ".join(res.out.split())
    doc = json.loads(run_cli(["health", "sample_traces/telemetry/events.jsonl", "--objects",
                              "sample_traces/telemetry/objects.jsonl", "--budget", "1500", "--json"]).out)
    f = doc["failures"]
    assert (f"{f['revoked_items']} of {f['memory_items']} items superseded or invalidated; counted apart: "
            f"{f['archived_items']} archived") in text
    assert f"against {f['successes_with_revoked_use']} of {f['succeeded_tasks']} successful tasks" in text
    assert "superseded or archived" not in text and "share among successful tasks" not in text


def test_check_markdown_fills_the_checks_column(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.parquet").write_bytes((Path(__file__).parents[1] / SEM).read_bytes())
    (tmp_path / "ctwm.toml").write_text('[[check]]\ncommand = "concentration"\ntraces = ["t.parquet"]\n'
                                        'fail_on = ["gini>0.99", "n_items<1"]\n')
    res = run_cli(["check", "--format", "markdown"])
    assert res.code == 0, res.err
    assert "none" not in res.out.split("**Checks:**")[0] and "pass" in res.out
