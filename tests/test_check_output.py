"""``ctwm check`` in a CI log (issue 39): one line per entry and one summary line when green, details only
for what failed; JUnit read back by junitparser names each gate once and gives it its own time. Labels are
unique (docs/security.md row R3): two results under one name would let ``ctwm diff`` hide one of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

junitparser = pytest.importorskip("junitparser")

ROWS = "".join(f'{{"step": {i}, "item": "m{i % 29}", "run": "r{i % 2}", "event": "retrieve"}}\n' for i in range(400))
CONFIG = """junit_xml = "j.xml"
[[check]]
name = "tails"
command = "audit"
traces = ["a.jsonl", "b.jsonl"]
options = {{ seed = 1, bootstrap = 0, group_by = "run" }}
fail_on = ["n_tail<1", "alpha>{cut}"]

[[check]]
name = "spread"
command = "concentration"
traces = ["a.jsonl"]
fail_on = ["gini>0.99"]
"""


def _check(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTWM_")}
    return subprocess.run([sys.executable, "-m", "ctwm_cli", "check", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "a.jsonl").write_text(ROWS)
    (tmp_path / "b.jsonl").write_text(ROWS.replace('"m', '"n'))
    return tmp_path


def test_a_green_check_prints_one_line_per_entry_and_a_summary(repo):
    (repo / "ctwm.toml").write_text(CONFIG.format(cut=100))
    proc = _check(repo)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == ["pass  tails   audit: 8 checks", "pass  spread  concentration: 1 check",
                     "ctwm check: 2 entries: 2 passed, 0 failed, 0 could not run"]


def test_a_failed_gate_is_detailed_under_its_entry(repo):
    (repo / "ctwm.toml").write_text(CONFIG.format(cut=0))
    proc = _check(repo)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "FAIL  tails   audit: 4 of 8 checks failed"
    detail = lines[1:5]
    assert all(line.startswith("      ") and "alpha>0 failed: observed " in line for line in detail)
    assert {line.split(":")[0].strip() for line in detail} == {"a.jsonl[r0]", "a.jsonl[r1]", "b.jsonl[r0]",
                                                               "b.jsonl[r1]"}
    assert lines[5:] == ["pass  spread  concentration: 1 check",
                         "ctwm check: 2 entries: 1 passed, 1 failed, 0 could not run"]


def test_junit_names_each_gate_once_with_its_own_time(repo):
    (repo / "ctwm.toml").write_text(CONFIG.format(cut=0))
    _check(repo)
    xml = junitparser.JUnitXml.fromfile(str(repo / "j.xml"))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"ctwm check: tails", "ctwm check: spread"}
    cases = list(suites["ctwm check: tails"])
    assert len(cases) == 8 and xml.failures == 4
    # the classname names the entry once, then the subject as the entry's command printed it
    assert sorted({c.classname for c in cases}) == [f"ctwm check: tails.{t}[{r}]" for t in ("a.jsonl", "b.jsonl")
                                                    for r in ("r0", "r1")]
    assert {c.name for c in cases} == {"n_tail<1", "alpha>0"}
    assert all(c.time == 0.0 for c in cases)  # a gate's own time, not its entry's
    assert suites["ctwm check: tails"].time > 0 and suites["ctwm check: spread"].time > 0


def test_an_entry_that_could_not_run_is_an_error_everywhere(repo):
    (repo / "ctwm.toml").write_text('junit_xml = "j.xml"\n[[check]]\nname = "gone"\ncommand = "audit"\n'
                                    'traces = ["missing.jsonl"]\n')
    proc = _check(repo)
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == ["ERROR gone  audit: error (exit 3)",
                                        "      missing.jsonl: no such file or directory",
                                        "ctwm check: 1 entry: 0 passed, 0 failed, 1 could not run"]
    gh = _check(repo, "--format", "github")
    assert gh.stdout.splitlines()[0] == "::error title=ctwm check%3A gone::could not run: missing.jsonl: no such " \
                                        "file or directory"
    doc = json.loads(_check(repo, "--json").stdout)
    assert doc["checks"][0]["status"] == "error" and doc["entries"][0]["status"] == "error (exit 3)"
    xml = junitparser.JUnitXml.fromfile(str(repo / "j.xml"))
    assert (xml.tests, xml.errors) == (1, 1)


def test_check_refuses_two_entries_of_one_name(repo):
    (repo / "ctwm.toml").write_text(CONFIG.format(cut=1).replace('name = "spread"', 'name = "tails"'))
    proc = _check(repo)
    assert proc.returncode == 2 and "check #1 and check #2 are both named 'tails'" in proc.stderr


def test_check_refuses_an_unknown_top_level_key_and_knows_columns(repo):
    (repo / "ctwm.toml").write_text("junit-xml = 'x.xml'\n" + CONFIG.format(cut=1))
    proc = _check(repo)
    assert proc.returncode == 2 and "unknown key 'junit-xml' (did you mean 'junit_xml'?" in proc.stderr
    (repo / "ctwm.toml").write_text(CONFIG.format(cut=100) + '\n[columns]\nitem = "item"\n')
    assert _check(repo).returncode == 0


@pytest.mark.parametrize("command", ["audit", "concentration"])
def test_commands_refuse_duplicate_labels(run_cli, repo, command):
    a, b = str(repo / "a.jsonl"), str(repo / "b.jsonl")
    extra = ["-b", "0", "--seed", "1"] if command == "audit" else []
    res = run_cli([command, a, b, "--label", "same", "--label", "same", *extra])
    assert res.code == 2 and "'same'" in res.err and "Traceback" not in res.err
    assert "its own --label" in res.err  # the flag, not the library's parameter name
    assert run_cli([command, a, b, "--label", "same", "--label", "other", *extra]).code == 0


def test_diff_refuses_a_saved_result_with_two_results_of_one_name(run_cli, repo):
    """Issue 40: a head whose first 'same' regressed passed --tol alpha=0.1, diff keeping the last 'same'."""
    a, b = str(repo / "a.jsonl"), str(repo / "b.jsonl")
    res = run_cli(["audit", a, b, "--label", "same", "--label", "other", "-b", "0", "--seed", "1", "--json"])
    doc = json.loads(res.out)
    base = repo / "base.json"
    base.write_text(json.dumps(doc))
    doc["results"][1]["source"] = "same"  # a result written before labels were unique
    head = repo / "head.json"
    head.write_text(json.dumps(doc))
    res = run_cli(["diff", base, head, "--tol", "alpha=0.1"])
    assert res.code == 3 and "two results are named 'same'" in res.err and str(head) in res.err
