"""Reporters for CI: JUnit XML read back by a real consumer (junitparser), GitHub annotations, Markdown,
and ``ctwm check`` running a project's config end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

junitparser = pytest.importorskip("junitparser")


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    """Three runs whose labels look like Rich markup (``[...]``), Zipf counts."""
    rng = np.random.default_rng(11)
    items, runs, counts = [], [], []
    for run in ("baseline-symmetric-100-42", "scale-free-500-1", "[bold]x"):
        c = rng.zipf(2.0, 600)
        items += [f"{run}:{i}" for i in range(c.size)]
        runs += [run] * c.size
        counts += c.tolist()
    path = tmp_path_factory.mktemp("r") / "grid.parquet"
    pq.write_table(pa.table({"item": items, "run": runs, "count": counts}), path)
    return str(path)


def _audit_json(run_cli, path):
    res = run_cli(["audit", path, "--group-by", "run", "-b", "0", "--seed", "5", "--json"])
    assert res.code == 0, res.err
    return json.loads(res.out)["results"]


def test_junit_carries_observed_value_and_threshold(run_cli, grouped, tmp_path):
    audits = _audit_json(run_cli, grouped)
    alphas = {f"{a['source']}[{a['group']}]": a["power_law"]["alpha"] for a in audits}  # the gate subjects
    cut = float(np.median(list(alphas.values())))  # one group below, one above, one at the median
    xml = tmp_path / "out.xml"
    res = run_cli(["audit", grouped, "--group-by", "run", "-b", "0", "--seed", "5", "--fail-on", f"alpha>{cut}",
                   "--fail-on", "n_tail<1", "--junit-xml", xml])
    expected_failures = sum(a > cut for a in alphas.values())
    assert res.code == (1 if expected_failures else 0)
    suite = junitparser.JUnitXml.fromfile(str(xml))
    cases = [c for s in suite for c in s]
    assert len(cases) == 3 * 2  # a testcase per group x check
    assert suite.failures == expected_failures and suite.errors == 0
    failed = [c for c in cases if c.result]
    for case in failed:
        (failure,) = case.result
        label = case.classname.removeprefix("ctwm audit.")
        assert f"observed {alphas[label]:.6g}" in failure.message and f"threshold > {cut:.6g}" in failure.message


def test_grouped_table_has_distinct_labels_and_one_summary(run_cli, grouped):
    res = run_cli(["audit", grouped, "--group-by", "run", "-b", "0", "--seed", "5"])
    assert res.code == 0, res.err
    out = res.out
    assert out.count("Summary: 3 audit results") == 1
    for group in ("baseline-symmetric-100-42", "scale-free-500-1", "[bold]x"):  # the group column, then the trace
        assert f"│ {group} " in out  # not eaten as markup, not cut at 80 columns
    assert "grid.parquet" in out
    assert "Tail audit:" not in out  # details only with --details
    detailed = run_cli(["audit", grouped, "--group-by", "run", "-b", "0", "--seed", "5", "--details"]).out
    assert detailed.count("Tail audit:") == 3 and "Tail audit: " + grouped + "[[bold]x]" in detailed


def test_github_annotations_and_markdown(run_cli, grouped):
    args = ["audit", grouped, "--group-by", "run", "-b", "0", "--seed", "5", "--fail-on", "alpha>0"]
    gh = run_cli([*args, "--format", "github"])
    assert gh.code == 1
    lines = gh.out.splitlines()
    assert sum(line.startswith("::error title=ctwm audit%3A ") for line in lines) == 3
    assert lines[-1] == "::notice title=ctwm audit::3 check(s), 3 failed"
    md = run_cli([*args, "--format", "markdown"]).out
    assert md.startswith("### ctwm audit (seed 5)\n")
    # labels are data: their brackets are escaped, so Markdown never reads them as a link
    table = [line for line in md.splitlines() if line.startswith("| ") and "grid.parquet" in line]
    assert len(table) == 3 + 3  # summary rows + check rows
    assert sum("\\[bold\\]x" in line for line in table) == 2 and sum("grid.parquet\\[" in line for line in table) == 3
    assert all(line.count("|") == md.splitlines()[2].count("|") for line in table[:3])


CONFIG = """
junit_xml = "junit.xml"

[[check]]
name = "tails"
command = "audit"
traces = ["*.parquet"]
options = {{ seed = 1, bootstrap = 0, group_by = "run" }}
fail_on = ["alpha>{cut}", "n_tail<1"]

[[check]]
command = "concentration"
traces = ["grid.parquet"]
options = {{ group_by = "run" }}
fail_on = ["gini?>2"]
"""


def test_ctwm_check_runs_the_config_and_junit_parses(run_cli, grouped, tmp_path):
    data = tmp_path / "proj"
    data.mkdir()
    (data / "grid.parquet").write_bytes(Path(grouped).read_bytes())
    alphas = [a["power_law"]["alpha"] for a in _audit_json(run_cli, str(data / "grid.parquet"))]
    cut = sorted(alphas)[1]  # exactly one group above
    (data / "ctwm.toml").write_text(CONFIG.format(cut=cut))
    proc = subprocess.run([sys.executable, "-m", "ctwm_cli", "check", "--json"], cwd=data, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(e["command"], e["status"]) for e in doc["entries"]] == [("audit", "fail"), ("concentration", "pass")]
    assert sum(c["failed"] for c in doc["checks"]) == 1
    suite = junitparser.JUnitXml.fromfile(str(data / "junit.xml"))
    assert (suite.tests, suite.failures, suite.errors) == (3 * 2 + 3, 1, 0)
    md = subprocess.run([sys.executable, "-m", "ctwm_cli", "check", "--format", "markdown"], cwd=data,
                        capture_output=True, text=True, timeout=300).stdout
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| check "))
    head, summary = lines[start], lines[start + 2:lines.index("", start)]  # the summary table, not the checks
    rows = [line for line in summary if line.startswith(("| tails ", "| concentration "))]
    col = [c.strip() for c in head.split("|")].index("checks")
    # each entry's row counts its checks as in table/CSV/JSON (it read "none" in every row)
    assert [[c.strip() for c in r.split("|")][col] for r in rows] == ["6", "3"]


def test_ctwm_check_entry_errors_keep_their_exit_code(tmp_path):
    (tmp_path / "ctwm.toml").write_text('[[check]]\ncommand = "audit"\ntraces = ["nope.parquet"]\n')
    proc = subprocess.run([sys.executable, "-m", "ctwm_cli", "check", "--junit-xml", "j.xml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3 and "nope.parquet" in proc.stderr
    suite = junitparser.JUnitXml.fromfile(str(tmp_path / "j.xml"))
    assert (suite.tests, suite.errors) == (1, 1)
    (tmp_path / "ctwm.toml").write_text('[[check]]\ncommand = "audit"\ntraces = ["*.nothing"]\n')
    proc = subprocess.run([sys.executable, "-m", "ctwm_cli", "check"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 3 and "no file matches" in proc.stderr


def test_ctwm_check_reads_tool_ctwm_from_pyproject(grouped, tmp_path):
    (tmp_path / "grid.parquet").write_bytes(Path(grouped).read_bytes())
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[[tool.ctwm.check]]\ncommand = "concentration"\ntraces = ["grid.parquet"]\n'
        'fail_on = ["gini<0"]\n'
    )
    proc = subprocess.run([sys.executable, "-m", "ctwm_cli", "check", "--format", "github"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "::notice title=ctwm check::1 check(s), 0 failed"
