"""Reading never silently wrong (issue 25): columns first seen late, totals past 2^63, mixed kinds,
torn final lines — each either read exactly or refused in one line naming the file."""

from __future__ import annotations

import json

import pytest

from ctwm_cli.traces import open_trace, scan_trace
from ctwm_cli.traces.paths import read_counts


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def inspect(run_cli):
    def _inspect(path):
        res = run_cli(["inspect", str(path), "--json"])
        return res, (json.loads(res.out)["results"][0] if res.code == 0 else None)
    return _inspect


# ---------------------------------------------------------------------------------------------
# Columns that first appear past DuckDB's 20,480-row sample


def test_a_column_first_seen_after_the_sample_is_counted(tmp_path, inspect):
    rows = [{"item": f"m{i % 100}", "step": i} for i in range(25_000)]
    rows += [{"item": f"m{i % 100}", "step": i, "event": "write"} for i in range(10_000)]
    res, scan = inspect(_jsonl(tmp_path / "late.jsonl", rows))
    assert res.code == 0, res.err
    assert scan["events"] == {"retrieve": 25_000, "write": 10_000}
    assert scan["columns_found"] == ["item", "step", "event"]
    (counts,) = read_counts([tmp_path / "late.jsonl"])
    assert counts.n_events == 25_000


def test_late_group_column_and_count_column_are_found(tmp_path):
    rows = [{"item": "a"} for _ in range(21_000)] + [{"item": "b", "run": "r2"}]
    path = _jsonl(tmp_path / "runs.jsonl", rows)
    scan = scan_trace(open_trace(path), group_by="run")
    groups = {(g, i): n for g, _, i, n in zip(*(scan.table.column(c).to_pylist()
                                               for c in ("group", "event", "item", "n")), strict=True)}
    assert groups == {("", "a"): 21_000, ("r2", "b"): 1}


def test_a_nested_key_or_a_value_is_not_a_column(tmp_path, inspect):
    rows = [{"item": "a", "meta": {"event": "x"}} for _ in range(21_000)] + [{"item": "event"}]
    _, scan = inspect(_jsonl(tmp_path / "nested.jsonl", rows))
    assert scan["columns_found"] == ["item", "meta"]
    assert scan["events"] == {"retrieve": 21_001}


# ---------------------------------------------------------------------------------------------
# A torn final line (a writer stopped mid-line) is named, the complete lines are read


@pytest.mark.filterwarnings("default::ctwm_cli.traces.readers.TornLineWarning")
def test_a_torn_final_line_is_named_and_the_complete_lines_read(tmp_path, run_cli):
    from ctwm_cli.traces.readers import TornLineWarning

    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(b'{"item":"m%d","step":%d}\n' % (i % 7, i) for i in range(2576)) + b'{"item":"m3","st')
    with pytest.warns(TornLineWarning, match=r"torn\.jsonl: line 2577: incomplete final line.*2,576 complete"):
        (counts,) = read_counts([path])
    assert counts.n_events == 2576
    res = run_cli(["inspect", str(path), "--json"])
    assert res.code == 0
    assert res.err.startswith("ctwm: warning: ") and "torn.jsonl: line 2577: incomplete final line" in res.err
    assert json.loads(res.out)["results"][0]["n_rows"] == 2576


def test_a_malformed_line_that_is_not_last_is_still_refused(tmp_path, run_cli):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"item":"a"}\n{"item":"b\n{"item":"c"}\n')
    res = run_cli(["inspect", str(path)])
    assert res.code == 3
    assert "bad.jsonl: line 2: malformed JSON" in res.err


def test_a_complete_final_line_without_newline_is_read(tmp_path):
    path = tmp_path / "nonl.jsonl"
    path.write_bytes(b'{"item":"a"}\n{"item":"b"}')
    (counts,) = read_counts([path])
    assert counts.n_events == 2


# ---------------------------------------------------------------------------------------------
# Totals past 2**63: exact, or refused with exit 3 — never wrapped


def test_totals_past_2_to_the_63_are_exact(tmp_path, inspect, run_cli):
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts = [2**62 + i for i in range(3)]
    path = _jsonl(tmp_path / "big.jsonl", [{"item": f"m{i}", "count": c} for i, c in enumerate(counts)])
    _, scan = inspect(path)
    assert scan["events"] == {"retrieve": sum(counts)}  # 13,835,058,055,282,163,715 > 2**63
    pq.write_table(pa.table({"item": ["a", "b", "c"], "count": counts}), tmp_path / "big.parquet")
    _, scan = inspect(tmp_path / "big.parquet")
    assert scan["events"] == {"retrieve": sum(counts)}
    (c,) = read_counts([path])
    assert c.n_events == sum(counts)
    res = run_cli(["concentration", str(path), "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["results"][0]["n_events"] == sum(counts)


def test_one_items_count_past_2_to_the_63_is_refused(tmp_path, run_cli):
    path = _jsonl(tmp_path / "one.jsonl", [{"item": "same", "count": 2**62 + i} for i in range(3)])
    res = run_cli(["inspect", str(path)])
    assert res.code == 3
    assert res.err.strip() == (f"ctwm: error: {path}: the counts of one item in column 'count' add up to more "
                               "than 2**63 - 1 (the 64-bit limit)")
    rows = [{"item": "same", "count": 2**62 + 1, "event": "retrieve"}, {"item": "same", "count": 2**62 + 1,
                                                                         "event": "inject"}]
    path = _jsonl(tmp_path / "two.jsonl", rows)
    res = run_cli(["concentration", str(path), "--event", "retrieve", "--event", "inject"])
    assert res.code == 3
    assert "the counted events of one item add up to more than 2**63 - 1" in res.err


# ---------------------------------------------------------------------------------------------
# Counts tables and event tables together are refused, naming each kind


@pytest.fixture
def mixed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"item": ["a", "b"], "count": [5, 3]}), tmp_path / "counts.parquet")
    pq.write_table(pa.table({"item": ["a", "b", "a"], "step": [1, 2, 3]}), tmp_path / "lognormal_events.parquet")
    return tmp_path


@pytest.mark.parametrize("target", ["dir", "glob"])
def test_a_dataset_of_counts_and_events_names_each_kind(mixed, run_cli, target):
    path = str(mixed) if target == "dir" else str(mixed / "*.parquet")
    for command in (["inspect"], ["audit", "-b", "10"]):
        res = run_cli([*command, path])
        assert res.code == 3
        assert res.err.strip() == (f"ctwm: error: {path}: mixes counts tables and event tables: 1 file(s) with "
                                   "column 'count' (counts.parquet) and 1 without (lognormal_events.parquet); "
                                   "point at one kind")


def test_jsonl_files_of_both_kinds_are_named(tmp_path, run_cli):
    (tmp_path / "d").mkdir()
    _jsonl(tmp_path / "d" / "a.jsonl", [{"item": "a", "count": 4}])
    _jsonl(tmp_path / "d" / "b.jsonl", [{"item": "b"}] * 30_000)  # a late count key would count too
    res = run_cli(["inspect", str(tmp_path / "d")])
    assert res.code == 3
    assert "1 file(s) with column 'count' (a.jsonl) and 1 without (b.jsonl)" in res.err


def test_one_jsonl_file_of_both_kinds_names_the_line(tmp_path, run_cli):
    path = _jsonl(tmp_path / "mixed.jsonl", [{"item": "a", "count": 4}, {"item": "b"}, {"item": "c", "count": 2}])
    res = run_cli(["inspect", str(path)])
    assert res.code == 3
    assert res.err.strip() == (f"ctwm: error: {path}: line 2: no column 'count' where earlier lines have one: a "
                               "counts table and events mixed in one file; split them into a counts file and an "
                               "events file")
    path = _jsonl(tmp_path / "null.jsonl", [{"item": "a", "count": 4}, {"item": "b", "count": None}])
    assert "line 2: missing value in column 'count'" in run_cli(["inspect", str(path)]).err
