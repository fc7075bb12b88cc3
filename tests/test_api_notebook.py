"""Notebook-style use of ``audit_trace`` / ``read_trace``: every kind of source agrees with ``ctwm audit --json``."""

from __future__ import annotations

import json
from collections import Counter
from html import escape

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ctwm_cli
from ctwm_cli import InputError, UsageError
from ctwm_cli.api import AuditResults, TraceCounts, audit_trace, read_trace

SEED = 7
B = 40


def _ids(seed: int, n: int = 6000) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"m{k}" for k in rng.zipf(1.9, n)]


@pytest.fixture
def events(tmp_path):
    """A two-run event trace, as a Parquet file and as a hive directory with one file per run."""
    a, b = _ids(1), _ids(2, 4000)
    runs = ["r1"] * len(a) + ["r2"] * len(b)
    table = pa.table({"memory_id": a + b, "run": runs, "step": list(range(len(runs)))})
    path = tmp_path / "trace.parquet"
    pq.write_table(table, path)
    d = tmp_path / "runs"
    d.mkdir()
    for run in ("r1", "r2"):
        pq.write_table(table.filter(pa.compute.equal(table["run"], run)), d / f"{run}.parquet")
    return table, path, d


def _cli_audits(run_cli, *args) -> list[dict]:
    res = run_cli(["audit", *args, "--seed", SEED, "--bootstrap", B, "--json"])
    assert res.code == 0, res.err
    results = json.loads(res.out)["results"]
    for r in results:  # the CLI adds each result's lead paragraph beside the result's own fields
        name = r["source"] if r["group"] is None else f"{r['source']}[{r['group']}]"  # the subject's name
        assert r.pop("summary").startswith(f"{name}: ")
    return results


def _same(api: dict, cli: dict) -> None:
    assert {k: v for k, v in api.items() if k != "source"} == {k: v for k, v in cli.items() if k != "source"}


def test_dataframe_counter_ids_and_table_agree_with_the_cli(run_cli, events):
    pd = pytest.importorskip("pandas")
    table, path, _ = events
    (cli,) = _cli_audits(run_cli, path, "--item-col", "memory_id")
    ids = table.column("memory_id").to_pylist()
    tables = [pd.DataFrame(table.to_pydict()), table]
    for source in tables:
        _same(audit_trace(source, item_col="memory_id", seed=SEED, bootstrap=B).to_dict(), cli)
    frame = pd.DataFrame(table.to_pydict())
    for source in (Counter(ids), ids, iter(ids), np.array(ids), frame["memory_id"], read_trace(ids)):
        _same(audit_trace(source, seed=SEED, bootstrap=B).to_dict(), cli)
    # the label is the caller's (or the kind of source), never a temporary file
    assert audit_trace(Counter(ids), seed=SEED, bootstrap=B).source == "<Counter>"
    assert audit_trace(ids, seed=SEED, bootstrap=B, label=str(path)).to_dict() == cli


def test_polars_frame_and_lazy_frame(run_cli, events):
    pl = pytest.importorskip("polars")
    table, path, _ = events
    (cli,) = _cli_audits(run_cli, path, "--item-col", "memory_id")
    frame = pl.from_arrow(table)
    for source in (frame, frame.lazy()):
        _same(audit_trace(source, item_col="memory_id", seed=SEED, bootstrap=B).to_dict(), cli)
    _same(audit_trace(frame["memory_id"], seed=SEED, bootstrap=B).to_dict(), cli)  # a Series of ids


def test_glob_group_by_to_frame_matches_the_cli_on_the_same_data(run_cli, events):
    pd = pytest.importorskip("pandas")
    _, _, d = events
    cli = _cli_audits(run_cli, d, "--item-col", "memory_id", "--group-by", "run")
    res = audit_trace(str(d / "*.parquet"), item_col="memory_id", group_by="run", seed=SEED, bootstrap=B, label=str(d))
    assert isinstance(res, AuditResults) and len(res) == 2
    assert res.to_dict()["results"] == cli
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["source"]) == [str(d)] * 2 and list(frame["group"]) == ["r1", "r2"]
    assert list(frame["verdict"]) == [a["verdict"]["verdict"] for a in cli]
    assert frame["p_gof"].tolist() == pytest.approx([a["gof"]["pvalue"] for a in cli])
    # the glob itself, given to the CLI quoted, is the same data set with the same labels
    pattern = str(d / "*.parquet")
    cli_glob = _cli_audits(run_cli, pattern, "--item-col", "memory_id", "--group-by", "run")
    api_glob = audit_trace(pattern, item_col="memory_id", group_by="run", seed=SEED, bootstrap=B)
    assert api_glob.to_dict()["results"] == cli_glob
    assert (cli_glob[0]["source"], cli_glob[0]["group"]) == (pattern, "r1")
    # a row per audit with the CLI's JSON-lines field names
    rows = [json.loads(line) for line in run_cli(["audit", d, "--item-col", "memory_id", "--group-by", "run",
                                                   "--seed", SEED, "-b", B, "--format", "jsonl"]).out.splitlines()]
    envelope = {"schema_version", "tool", "version", "command", "seed"}  # carried per JSON line, not per audit
    assert list(frame.columns) == [k for k in rows[0] if k not in envelope]
    assert list(frame["group"]) == ["r1", "r2"]


def test_short_repr_html_and_summary(events):
    _, path, d = events
    res = audit_trace(path, item_col="memory_id", seed=SEED, bootstrap=B)
    text = repr(res)
    assert len(text) < 1000 and text.startswith("AuditResult(") and res.verdict.verdict in text
    assert "null_distribution" not in text and "np.float64" not in text
    html = res._repr_html_()
    assert "<table>" in html and f"<b>{res.verdict.verdict}</b>" in html and escape(res.verdict.reason) in html
    assert html.index(">verdict<") < html.index(">reason<") < html.index(">alpha<")  # the verdict leads
    assert f"verdict: {res.verdict.verdict}" in res.summary() and f"reason: {res.verdict.reason}" in res.summary()
    many = audit_trace(str(d), item_col="memory_id", group_by="run", seed=SEED, bootstrap=B)
    assert len(repr(many)) < 1000 and "audits=2" in repr(many)
    many_html = many._repr_html_()
    assert many_html.count("<tr>") == 3  # header + one row per group
    assert ">source<" in many_html and ">r1<" in many_html and f">{d}<" in many_html  # each row says its group
    # nested results are short too (no dataclass-generated repr with every replicate)
    assert len(repr(res.gof)) < 1000


def test_read_trace_counts_and_frame(events):
    table, path, _ = events
    expected = Counter(table.column("memory_id").to_pylist())
    tc = read_trace(path, item_col="memory_id")
    assert isinstance(tc, TraceCounts) and len(tc) == 1
    assert dict(zip(tc[0].items.to_pylist(), tc[0].counts.tolist(), strict=True)) == dict(expected)
    grouped = read_trace(table, item_col="memory_id", group_by="run").to_arrow()
    assert set(grouped.column("group").to_pylist()) == {"r1", "r2"}
    assert sum(grouped.column("count").to_pylist()) == table.num_rows
    pytest.importorskip("pandas")
    frame = tc.to_frame()
    assert frame.set_index("item")["count"].to_dict() == dict(expected)


def test_where_filters_rows_before_counting(events):
    table, path, _ = events
    for source in (path, table):
        tc = read_trace(source, item_col="memory_id", where="run = 'r2' AND step % 2 = 0")
        assert tc[0].n_events == 2000  # run r2 holds rows 6000..9999
    assert "groups=1" in repr(tc) and "events=2000" in repr(tc)


def test_events_counts_table_and_item_ids_as_text():
    rows = {"item": ["a", "a", "b", "c"], "event": ["retrieve", "inject", "inject", "write"]}
    assert read_trace(pa.table(rows))[0].n_events == 1  # retrieve only, by default
    assert read_trace(pa.table(rows), events="inject")[0].n_events == 2
    assert read_trace(pa.table(rows), events=["inject", "retrieve"])[0].n_events == 3
    assert read_trace({5: 2, "5": 1, "x": 4})[0].counts.tolist() == [4, 3]  # 5 and "5" are one item


@pytest.mark.parametrize(
    ("source", "kwargs", "error", "text"),
    [
        (pa.table({"memory_id": ["a"]}), {}, InputError, r"^<Table>: missing column 'item' \(columns found: memory_id"),
        ([], {}, InputError, "<list>: trace is empty"),
        ({"b": 3, "a": 0}, {}, InputError, r"^<dict>: row 2: count must be a positive integer \(column 'count'\)$"),
        (pa.table({"item": ["a", "b"], "step": [1.0, 2.5]}), {}, InputError,
         r"^<Table>: row 2: column 'step' must hold integers, found a fraction$"),
        (["a", None], {}, InputError, r"^<list>: row 2: missing value in column 'item'$"),
        (pa.table({"item": ["a"]}), {"where": "nonsense >"}, UsageError, "^where: "),
        ({"a": "x"}, {}, InputError, "counts must be integers"),
        (3.5, {}, UsageError, "source must be a path"),
        (np.array([1, 2, 2]), {"item_col": "x"}, InputError, "missing column 'x'"),
        ("nowhere/*.parquet", {}, InputError, "no files match"),
        (["a", "b"], {"labels": ["x"]}, UsageError, "labels is not an audit option"),
        (["a", "b"], {"bootstrap": -1}, UsageError, "bootstrap"),
    ],
)
def test_errors_name_the_source_and_parameter(source, kwargs, error, text):
    with pytest.raises(error, match=text):
        audit_trace(source, **kwargs)


def test_counted_sources():
    counts = read_trace(["a", "b", "b"], label="mine")
    with pytest.raises(UsageError, match="already counted"):
        read_trace(counts)
    with pytest.raises(UsageError, match="group_by, where apply when reading"):
        audit_trace(counts, group_by="run", where="step > 1")
    grouped = read_trace(pa.table({"item": list("abcab"), "run": list("xxyyy")}), group_by="run")
    res = audit_trace(grouped, seed=1, bootstrap=0)
    assert isinstance(res, AuditResults) and [a.label for a in res] == ["<Table>[x]", "<Table>[y]"]


def test_public_names():
    assert ctwm_cli.audit_trace is audit_trace
    assert ctwm_cli.read_trace is read_trace
