"""Schema version 3 (issue 43) renamed ``interval`` (a status) to ``interval_status`` and an audit's ``label``/``n`` to
``source``/``n_items``; a result saved by the ctwm of version 2 still reads, in the new names, with nothing lost.

The version-2 documents in tests/data/schema_v2/ were written by main's code at commit fc753fa (the last of
version 2), run from the repository root:

    ctwm audit sample_traces/tpl_events.parquet --group-by run -b 10 --seed 1 --json > audit_group_by_run.json
    ctwm bench longmemeval sample_traces/longmemeval/longmemeval_synthetic.json --memory graph,ctwm --seed 2 \
        --bootstrap 100 --json > bench_longmemeval.json

Each test runs this ctwm on the same input and seed and compares: the upgraded old document must equal the new one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ctwm_cli.baseline import diff_results, saved_result
from ctwm_cli.common.results import SCHEMA_VERSION
from ctwm_cli.common.upgrade import upgrade

ROOT = Path(__file__).resolve().parents[1]
V2 = ROOT / "tests" / "data" / "schema_v2"
AUDIT_ARGS = ["audit", "sample_traces/tpl_events.parquet", "--group-by", "run", "-b", "10", "--seed", "1", "--json"]
LME_ARGS = ["bench", "longmemeval", "sample_traces/longmemeval/longmemeval_synthetic.json", "--memory", "graph,ctwm",
            "--seed", "2", "--bootstrap", "100", "--json"]


def _v2(name: str) -> dict:
    doc = json.loads((V2 / name).read_text(encoding="utf-8"))
    assert doc["schema_version"] == 2  # a real document of the old version, not one written by this code
    return doc


@pytest.fixture
def new_doc(run_cli, monkeypatch):
    """This ctwm's JSON for ``args``, run where the old document was (the repository root: the same names)."""
    monkeypatch.chdir(ROOT)

    def run(args: list[str]) -> dict:
        res = run_cli(args)
        assert res.code == 0, res.err
        return json.loads(res.out)

    return run


def _leaves(doc) -> list:
    """Every scalar of a document, in order (the keys aside): what a rename must keep."""
    if isinstance(doc, dict):
        return [x for v in doc.values() for x in _leaves(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in _leaves(v)]
    return [doc]


def _paths(doc, path: str = "") -> list[str]:
    """Every key's dotted path, in document order (``[]`` for an array's items)."""
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in [f"{path}.{k}", *_paths(v, f"{path}.{k}")]]
    if isinstance(doc, list):
        return [p for v in doc for p in _paths(v, f"{path}[]")]
    return []


def test_this_version_is_3():
    assert SCHEMA_VERSION == 3


def _joined(doc: dict) -> dict:
    """Version 3's audit with each group's ``source`` and ``group`` joined as version 2 named it (``source[group]``,
    kept whole by the upgrade: a bracket in a name cannot be told from a group)."""
    results = [{k: v for k, v in r.items() if k != "group"} | {"source": f"{r['source']}[{r['group']}]"}
               for r in doc["results"]]
    return {**doc, "results": [dict(sorted(r.items(), key=lambda kv: list(doc["results"][0]).index(kv[0])))
                               for r in results]}


def test_a_version_2_audit_reads_as_this_version_writes_it(new_doc):
    old, new = _v2("audit_group_by_run.json"), new_doc(AUDIT_ARGS)
    first = new["results"][0]
    assert new["schema_version"] == 3 and "label" not in first and "n" not in first
    assert (first["source"], first["group"]) == ("sample_traces/tpl_events.parquet", "run-0")  # apart, as documented
    got, want = upgrade(old), _joined(new)
    # The same keys in the same order, and the same decisions. Not every value: a change within Monte Carlo
    # error since version 2 (issue 48's Newton refits moved a few replicates' null values) is not the upgrade's.
    assert _paths(got) == _paths(want), "the same keys in the same order"
    assert [r["verdict"] for r in got["results"]] == [r["verdict"] for r in want["results"]]
    assert [(r["source"], r["n_items"], r["power_law"]["xmin"]) for r in got["results"]] == [
        (r["source"], r["n_items"], r["power_law"]["xmin"]) for r in want["results"]]
    assert old["schema_version"] == 2 and "label" in old["results"][0], "the document read is not modified"
    # nothing lost: the same values in the same order, only the schema version differs
    assert [x for x in _leaves(got) if x != 3] == [x for x in _leaves(old) if x != 2]


def test_a_version_2_bench_result_reads_as_this_version_writes_it(new_doc):
    old, new = _v2("bench_longmemeval.json"), new_doc(LME_ARGS)
    statuses = [c["interval_status"] for c in new["comparisons"]]
    assert "formed" in statuses and all("interval" not in c for c in new["comparisons"])
    assert upgrade(old) == new


def test_ctwm_diff_pairs_a_version_2_result_with_a_version_3_one(run_cli, new_doc, tmp_path):
    head = tmp_path / "head.json"
    head.write_text(json.dumps(new_doc(AUDIT_ARGS)), encoding="utf-8")
    res = run_cli(["diff", V2 / "audit_group_by_run.json", head, "--tol", "n_items=0", "--tol", "alpha=0",
                   "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    subjects = {c["subject"] for c in doc["changes"]}
    assert subjects == {f"sample_traces/tpl_events.parquet[run-{i}]" for i in range(4)}
    n_items = [c for c in doc["changes"] if c["metric"] == "n_items"]
    assert len(n_items) == 4 and all(c["base"] == c["head"] > 0 and c["change"] == 0 for c in n_items)
    assert doc["regressions"] == 0 and len(doc["checks"]) == 8


def test_report_diff_reads_a_version_2_result(run_cli, tmp_path):
    old = V2 / "audit_group_by_run.json"
    moved = _v2("audit_group_by_run.json")
    moved["results"][0]["n"] += 7  # a head of version 2 too, with one count changed
    head = tmp_path / "head.json"
    head.write_text(json.dumps(moved), encoding="utf-8")
    res = run_cli(["report", "--diff", old, head, "--tol", "n_items=1", "-o", tmp_path / "pr.html", "--json"])
    assert res.code == 1, res.err  # the change of 7 items is seen under its new name, and gated
    section = json.loads(res.out)["sections"][0]
    assert section["card"]["headline"].startswith("regression")


def test_the_baseline_reader_gives_the_new_names(tmp_path):
    doc = saved_result(str(V2 / "audit_group_by_run.json"))
    assert doc["schema_version"] == 3
    assert all({"source", "n_items"} <= set(r) and not {"label", "n"} & set(r) for r in doc["results"])
    assert diff_results(_v2("audit_group_by_run.json"), doc).regressions == 0  # a library caller's dict too


def test_bench_report_reads_a_version_2_comparison(run_cli, new_doc, tmp_path):
    new = tmp_path / "new.json"
    new.write_text(json.dumps(new_doc(LME_ARGS)), encoding="utf-8")
    rows = []
    for path in (V2 / "bench_longmemeval.json", new):
        res = run_cli(["bench", "report", f"LME={path}", "--synthetic", "0", "--json"])
        assert res.code == 0, res.err
        rows.append([{k: v for k, v in r.items() if k != "source"} for r in json.loads(res.out)["results"]])
    assert rows[0] == rows[1] and all(r["quality_interval_status"] for r in rows[0])


def test_interval_keeps_its_name_where_it_is_an_interval():
    """``audit --power``'s ``curves[].interval`` is an interval, not a status: an upgrade leaves it (and a key whose
    new name is taken keeps its old one: nothing is overwritten)."""
    doc = {"schema_version": 2, "tool": "ctwm", "command": "audit",
           "results": [{"label": "x", "n": 3, "source": "kept",
                        "power": {"curves": [{"interval": {"100": [0.1, 0.3]}}, {"interval": None}]}}],
           "comparisons": [{"interval": "formed", "interval_status": "there already"}]}
    before = copy.deepcopy(doc)
    got = upgrade(doc)
    assert doc == before
    r = got["results"][0]
    assert (r["label"], r["source"], r["n_items"]) == ("x", "kept", 3) and "n" not in r
    assert r["power"]["curves"] == [{"interval": {"100": [0.1, 0.3]}}, {"interval": None}]
    assert got["comparisons"] == [{"interval": "formed", "interval_status": "there already"}]


def test_other_versions_are_left_for_the_reader_to_refuse(run_cli, tmp_path):
    for doc in ({"schema_version": 3, "results": [{"label": "x"}]}, {"schema_version": 1, "interval": "formed"},
                [1, 2], "text"):
        assert upgrade(doc) is doc
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema_version": 1, "tool": "ctwm", "command": "audit", "audits": []}))
    res = run_cli(["diff", old, V2 / "audit_group_by_run.json"])
    assert res.code == 3 and "schema_version 1" in res.err and "reads 2 and 3" in res.err, res.err


def test_a_deep_document_does_not_exhaust_the_stack():
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    got = upgrade({"schema_version": 2, "x": deep, "interval": "formed"})
    assert got["interval_status"] == "formed" and got["schema_version"] == 3


@pytest.mark.parametrize("args, flag", [(["--fail-on", "n<10"], "--fail-on"), (None, "tol")])
def test_an_old_metric_name_gets_its_new_one_as_the_did_you_mean(run_cli, tmp_path, args, flag):
    if args is None:
        old = V2 / "audit_group_by_run.json"
        res = run_cli(["diff", old, old, "--tol", "n=1"])
    else:
        res = run_cli(["audit", ROOT / "sample_traces" / "tpl_events.parquet", "-b", "0", "--seed", "1", *args])
    assert res.code == 2 and "did you mean 'n_items'?" in res.err and flag in res.err, res.err


HEALTH_V2 = {  # written by fc753fa's code from the repository root, as the module docstring says for the others
    "health_otel.json": ["health", "sample_traces/telemetry/otel_spans.json", "--budget", "1000", "--json"],
    "health_tpl_events.json": ["health", "sample_traces/tpl_events.parquet", "--json"],
}


@pytest.mark.parametrize("name", sorted(HEALTH_V2))
def test_a_version_2_health_report_reads_as_this_version_writes_it(new_doc, name):
    """Health's flat ``[low, high]`` pairs become ``{low, high, level}`` (failure attribution at Newcombe's 0.95,
    growth's trend at growth's ``level``) and growth's ``bins`` count ``n_bins``: the same keys in the same order as
    this ctwm writes, and the same values."""
    old, new = _v2(name), new_doc(HEALTH_V2[name])
    got = upgrade(old)
    assert _paths(got) == _paths(new), "the same keys in the same order"
    assert got == new
    assert "failure_attribution_ci" not in json.dumps(got) and "rate_trend_ci" not in json.dumps(got)


def test_a_flat_pair_not_formed_becomes_null_and_a_list_of_bins_keeps_its_name():
    doc = {"schema_version": 2, "command": "health",
           "growth": {"bins": 0, "rate_trend_ci": [None, None], "level": 0.9},
           "success_curve": {"bins": [{"tasks": 3}]},
           "failures": {"failure_attribution_ci": [-0.2, 0.4]}}
    got = upgrade(doc)
    assert got["growth"] == {"n_bins": 0, "rate_trend_confidence_interval": None, "level": 0.9}
    assert got["success_curve"] == {"bins": [{"tasks": 3}]}
    assert got["failures"] == {"failure_attribution_confidence_interval": {"low": -0.2, "high": 0.4, "level": 0.95}}
