"""``ctwm report --diff BASE HEAD``: the pull-request page. Its verdict and gates are ``ctwm diff``'s (the same
inputs through both commands give the same statuses and exit code); the list changes are checked against lists
written out by hand."""

from __future__ import annotations

import json

import pytest
from report_helpers import external_references, parse

import ctwm_cli
from ctwm_cli.common.errors import InputError, UsageError


def _events(path, counts: dict[str, int]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for item, n in counts.items():
            for _ in range(n):
                fh.write(json.dumps({"item": item, "event": "retrieve"}) + "\n")


BASE = {f"m{i:02d}": 60 - 4 * i for i in range(12)}  # m00 60, m01 56, ... m11 16: top 10 = m00..m09
HEAD = {**{k: v for k, v in BASE.items() if k not in ("m00", "m05")}, "m11": 70, "n1": 58, "n2": 1}


@pytest.fixture
def saved(run_cli, tmp_path):
    base, head = tmp_path / "base.jsonl", tmp_path / "head.jsonl"
    _events(base, BASE)
    _events(head, HEAD)
    out = []
    for name, trace in (("base", base), ("head", head)):
        res = run_cli(["concentration", trace, "--label", "main", "--json"])
        assert res.code == 0, res.err
        (tmp_path / f"{name}.json").write_text(res.out, encoding="utf-8")
        out.append(tmp_path / f"{name}.json")
    return base, head, *out


@pytest.mark.parametrize("tol", ["gini=0.001", "gini=0.5"])
def test_saved_results_gate_as_ctwm_diff_gates_them(run_cli, saved, tmp_path, tol):
    _, _, base, head = saved
    diff = run_cli(["diff", base, head, "--tol", tol, "--json"])
    page = tmp_path / "pr.html"
    rep = run_cli(["report", "--diff", base, head, "--tol", tol, "-o", page, "--json"])
    assert rep.code == diff.code == (1 if tol == "gini=0.001" else 0), (rep.err, diff.err)
    want = {(c["subject"], c["status"]) for c in json.loads(diff.out)["checks"]}
    section = json.loads(rep.out)["sections"][0]
    gates = next(t for b in section["blocks"] for t in b["tables"] if t["caption"].startswith("The gates"))
    assert {(r["Check"].split(" ")[0], r["Gate"]) for r in gates["rows"]} == {("|Δgini|", s) for _, s in want}
    assert section["card"]["headline"].startswith("regression" if rep.code else "pass")
    tree = parse(page.read_text(encoding="utf-8"))
    assert list(tree.root.iter("script")) == [] and external_references(tree) == []
    cells = [td.all_text() for td in tree.root.iter("td")]
    assert "fail" in cells if rep.code else "pass" in cells


def test_two_traces_show_what_entered_and_left_the_top(tmp_path):
    base, head = tmp_path / "base.jsonl", tmp_path / "head.jsonl"
    _events(base, BASE)
    _events(head, HEAD)
    rep = ctwm_cli.report([str(base), str(head)], diff=True, tol={"gini": 0.5}, diff_bootstrap=20, seed=4)
    s = rep.sections[0]
    assert s.kind == "diff" and rep.seed == 4 and s.seed == 4
    moved = next(t for b in s.blocks for t in b.tables if t.caption.startswith("Most-accessed"))
    # head's top 10 by accesses: m11 70, n1 58, m01 56, m02 52, m03 48, m04 44, m06 36, m07 32, m08 28, m09 24
    assert [r[:2] for r in moved.rows] == [("entered", "m11"), ("entered", "n1"), ("left", "m00"), ("left", "m05")]
    assert [r[2:] for r in moved.rows] == [(None, 70), (None, 58), (60, None), (40, None)]
    assert moved.summary == "8 of 10 stay; 4 moved."
    numbers = next(t for b in s.blocks for t in b.tables if t.caption.startswith("Headline numbers"))
    from ctwm_cli.baseline import diff_counts
    from ctwm_cli.traces.paths import read_counts

    b, h = (read_counts([str(p)])[0].counts for p in (base, head))
    ref = diff_counts(b, h, subject="x", tolerances={"gini": 0.5}, replicates=20, seed=4)
    cells = [r[numbers.columns.index("change_interval")] for r in numbers.rows]
    assert [(c.value, c.low, c.high) for c in cells] == [
        (c.change, None if c.confidence_interval is None else c.confidence_interval.low,
         None if c.confidence_interval is None else c.confidence_interval.high) for c in ref.changes]
    assert [r[numbers.columns.index("status")] for r in numbers.rows] == ["pass", "not gated", "not gated"]


def test_diff_usage_and_input_errors(saved):
    base_trace, _, base, head = saved
    with pytest.raises(UsageError, match="two sources"):
        ctwm_cli.report([str(base)], diff=True)
    with pytest.raises(InputError, match="not one of each"):
        ctwm_cli.report([str(base), str(base_trace)], diff=True)
    with pytest.raises(UsageError, match="did you mean 'gini'"):
        ctwm_cli.report([str(base), str(head)], diff=True, tol={"ginni": 0.1})
    with pytest.raises(UsageError, match="METRIC=VALUE"):
        ctwm_cli.report([str(base), str(head)], diff=True, tol=["gini"])
    with pytest.raises(UsageError, match="gate a diff"):
        ctwm_cli.report([str(base)], tol={"gini": 0.1})


def test_cli_diff_errors_are_one_line(run_cli, saved, tmp_path):
    _, _, base, head = saved
    res = run_cli(["report", "--diff", base, head, "--tol", "ginni=0.1", "-o", tmp_path / "r.html"])
    assert res.code == 2 and "did you mean 'gini'" in res.err and "Traceback" not in res.err  # ctwm diff's words
    res = run_cli(["report", "--diff", base, "-o", tmp_path / "r.html"])
    assert res.code == 2 and "two sources" in res.err.lower()  # the flag map writes the argument as SOURCES
