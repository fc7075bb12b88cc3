"""Flags (issue 24): one meaning per name (--significance vs --confidence, their old --level hidden and
warned about), τ specs read alike everywhere, no option inherited only to be refused, and click's usage
errors in one line with a did-you-mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AGENT_LOG = ROOT / "sample_traces" / "agent_log.jsonl"
COUNTS = ROOT / "sample_traces" / "powerlaw_counts.jsonl"


@pytest.mark.parametrize(("args", "line"), [
    (["audit", AGENT_LOG, "--bootstarp", "3"],
     "ctwm: error: no such option: --bootstarp; did you mean --bootstrap"),
    (["audit", AGENT_LOG, "--expect", "tpl"], "ctwm: error: invalid value for '--expect': 'tpl' is not one of"),
    (["audti", AGENT_LOG], "ctwm: error: no such command 'audti'. Did you mean 'audit'?"),
    (["replay", "pareto", "--out", "x"], "ctwm: error: no such option: --out"),
])
def test_click_usage_errors_are_one_line(run_cli, args, line):
    res = run_cli(args)
    assert res.code == 2
    assert res.err.count("\n") == 1 and res.err.startswith(line), res.err
    assert "Value error" not in res.err and "Usage:" not in res.err


def test_audit_significance_and_its_deprecated_level(run_cli):
    bad = run_cli(["audit", AGENT_LOG, "--significance", "0.7", "--bootstrap", "0"])
    assert bad.code == 2 and bad.err == "ctwm: error: --significance must be in (0, 0.5), got 0.7\n"
    new = run_cli(["audit", COUNTS, "--significance", "0.1", "--calibrate", "2", "--bootstrap", "2",
                   "--seed", "1", "--json"])
    old = run_cli(["audit", COUNTS, "--level", "0.1", "--calibrate", "2", "--bootstrap", "2", "--seed", "1",
                   "--json"])
    assert new.code == old.code == 0, new.err + old.err
    assert json.loads(new.out) == json.loads(old.out)
    assert old.err.count("warning: --level is deprecated here; use --significance") == 1
    assert "deprecated" not in new.err
    assert "--level" not in run_cli(["audit", "--help"]).out


def test_confidence_and_its_deprecated_level(run_cli):
    small = ["replay", "compare", "--memory", "flat,ctwm", "--steps", "60", "--episodes", "1", "--bootstrap", "20",
             "--seed", "2", "--json"]
    new = run_cli([*small, "--confidence", "0.9"])
    old = run_cli([*small, "--level", "0.9"])
    assert new.code == old.code == 0, new.err + old.err
    assert json.loads(new.out) == json.loads(old.out) and json.loads(new.out)["config"]["level"] == 0.9
    assert "warning: --level is deprecated here; use --confidence" in old.err and "deprecated" not in new.err


def test_tau_specs_are_read_alike(run_cli):
    """simulate: --tau 0.5:2:4 = --sweep 0.5:2:4 = --tau 0.5,1,1.5,2 = repeated --tau; xmin-path the same."""
    def rows(args):
        res = run_cli(["simulate", "-K", "3", "-M", "50", "-B", "20", "--json", *args])
        assert res.code == 0, res.err
        return json.loads(res.out)

    spec = rows(["--tau", "0.5:2:4"])
    assert spec == rows(["--sweep", "0.5:2:4"]) == rows(["--tau", "0.5,1,1.5,2"])
    assert spec == rows(["--tau", "0.5", "--tau", "1", "--tau", "1.5,2"])
    bad = run_cli(["simulate", "--tau", "a"])
    assert bad.code == 2 and "--tau expects a number, a comma list or START:STOP:N" in bad.err
    xmin = ["xmin-path", "--items", "200", "--events", "2000", "--replicates", "1", "--seed", "1", "--json"]
    a, b = run_cli([*xmin, "--tau", "1:2:2"]), run_cli([*xmin, "--sweep", "1:2:2"])
    assert a.code == b.code == 0 and json.loads(a.out) == json.loads(b.out)


def test_world_list_options_take_commas_and_repeats(run_cli, tmp_path):
    small = ["world", "ladder", "--size", "100", "--steps", "1500", "--seed", "3", "--json"]
    comma = run_cli([*small, "--family", "scale-free,uniform", "--retriever", "none,state-frequency"])
    repeated = run_cli([*small, "--family", "scale-free", "--family", "uniform", "--retriever", "none",
                        "--retriever", "state-frequency"])
    assert comma.code == repeated.code == 0, comma.err + repeated.err
    assert comma.out == repeated.out
    assert {(r["family"], r["retriever"]) for r in json.loads(comma.out)["results"]} == {
        (f, r) for f in ("scale-free", "uniform") for r in ("none", "state-frequency")}
    bad = run_cli(["world", "grid", "--out", str(tmp_path / "g"), "--family", "uniform,bogus"])
    assert bad.code == 2 and "--family must be one of uniform" in bad.err and "got 'bogus'" in bad.err
    assert "--writes" not in run_cli(["world", "ladder", "--help"]).out  # the ladder records both event kinds
