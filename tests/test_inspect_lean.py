"""``ctwm inspect`` computes and imports only what it reports (issue 29): a Parquet trace loads no
JSONL or telemetry reader, no ``pyarrow.compute``, no pandas; a scan without its per-item table
(``table=False``) and the step range taken from Parquet footers report exactly what the full scan does."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces import item_counts, open_trace, scan_trace
from ctwm_cli.traces.paths import ReadOptions, scan_paths

#: Loaded by a JSONL or telemetry trace, or by work on the per-item Arrow table; a Parquet inspect needs none.
NOT_FOR_PARQUET = ("ctwm_cli.traces.jsonl", "ctwm_cli.traces.telemetry", "ctwm_cli.traces.mem0",
                   "ctwm_cli.traces.otel", "ctwm_cli.traces.openinference", "ctwm_cli.traces.writer",
                   "ctwm_cli.traces.durable_files", "ctwm_cli.traces.event_rows",
                   "pyarrow.compute", "pandas", "sqlite3")


def _events(n: int = 3000) -> pa.Table:
    items = [f"m{(i * 7919) % 97 if i % 3 else i % 5}" for i in range(n)]
    return pa.table({"item": items, "step": [1000 + i // 4 for i in range(n)], "run": [f"r{i % 6}" for i in range(n)]})


def test_parquet_inspect_loads_no_other_format_reader(tmp_path, cli_in_child):
    t = _events()
    path = tmp_path / "t.parquet"
    pq.write_table(t, path)
    out, loaded = cli_in_child(["inspect", str(path), "--json"], NOT_FOR_PARQUET)
    (doc,) = out["results"]
    assert loaded == []
    assert doc["n_rows"] == t.num_rows
    assert doc["n_items"] == len(set(t.column("item").to_pylist()))
    assert (doc["step_min"], doc["step_max"]) == (1000, 1000 + (t.num_rows - 1) // 4)
    assert doc["runs"] == 6 and doc["events"] == {"retrieve": t.num_rows}


def test_jsonl_inspect_loads_its_readers(tmp_path, cli_in_child):  # the probe itself can fail
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _events(50).to_pylist()))
    out, loaded = cli_in_child(["inspect", str(path), "--json"], NOT_FOR_PARQUET)
    (doc,) = out["results"]
    assert doc["n_rows"] == 50
    assert {"ctwm_cli.traces.jsonl", "ctwm_cli.traces.telemetry"} <= set(loaded)


def _traces(tmp_path) -> dict[str, str]:
    """Parquet traces of each kind the totals distinguish, and the same events as JSONL."""
    out = {}
    plain = _events()
    pq.write_table(plain, out.setdefault("plain", str(tmp_path / "plain.parquet")))
    kinds = ["retrieve", "inject", "search", "write", None, "context"]
    evented = plain.append_column("event", pa.array([kinds[i % 6] for i in range(plain.num_rows)]))
    pq.write_table(evented, out.setdefault("events", str(tmp_path / "events.parquet")))
    counts = pa.table({"item": ["a", "b", "c", "a"], "count": [5, 1, 7, 2]})
    pq.write_table(counts, out.setdefault("counts", str(tmp_path / "counts.parquet")))
    narrow = pa.table({"item": ["x", "y", "x"], "step": pa.array([-5, 9, 3], pa.int32())})  # no run column
    pq.write_table(narrow, out.setdefault("int32 steps", str(tmp_path / "narrow.parquet")))
    jl = tmp_path / "events.jsonl"
    jl.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n"
                          for r in evented.to_pylist()))
    out["jsonl"] = str(jl)
    return out


@pytest.mark.parametrize("where", [None, "step >= 1100 AND run <> 'r2'"])
def test_scan_without_table_reports_what_the_full_scan_does(tmp_path, where):
    for name, path in _traces(tmp_path).items():
        if where and name in ("counts", "int32 steps"):
            continue
        full = scan_trace(open_trace(path, where=where))
        lean = scan_trace(open_trace(path, where=where), table=False)
        assert lean.to_dict() == full.to_dict(), name
        assert lean.table is None and full.table is not None
        (via_paths,) = scan_paths([path], ReadOptions(where=where), table=False)
        assert via_paths.to_dict() == full.to_dict() and via_paths.table is None


def test_step_range_and_runs_agree_with_pyarrow_and_jsonl(tmp_path):
    traces = _traces(tmp_path)
    table = pq.read_table(traces["events"])
    steps, runs = table.column("step").to_pylist(), set(table.column("run").to_pylist())
    for name in ("events", "jsonl"):
        scan = scan_trace(open_trace(traces[name]), table=False)
        assert (scan.step_min, scan.step_max, scan.runs) == (min(steps), max(steps), len(runs)), name
    narrow = scan_trace(open_trace(traces["int32 steps"]), table=False)
    assert (narrow.step_min, narrow.step_max, narrow.runs) == (-5, 9, None)


def test_totals_count_the_memory_items_only(tmp_path):
    scan = scan_trace(open_trace(_traces(tmp_path)["events"]), table=False)
    table = pq.read_table(tmp_path / "events.parquet").to_pylist()
    memory = {r["item"] for r in table if r["event"] not in ("search", "context")}
    assert scan.n_items == len(memory)
    assert scan.events == {k: sum((r["event"] or "retrieve") == k for r in table)
                           for k in ("context", "inject", "retrieve", "search", "write")}


def test_item_counts_of_a_scan_without_table_is_refused(tmp_path):
    scan = scan_trace(open_trace(_traces(tmp_path)["plain"]), table=False)
    with pytest.raises(UsageError, match="table=False") as err:
        item_counts(scan)
    assert err.value.params == ("scan",)


@pytest.mark.parametrize("table", [True, False])
def test_errors_are_the_full_scans(tmp_path, table):
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"item": ["a", None, "b"], "step": [1, 2, 3]}), nulls)
    with pytest.raises(InputError, match=r"nulls.parquet: row 2: missing value in column 'item'"):
        scan_trace(open_trace(nulls), table=table)
    with pytest.raises(InputError, match=r"no rows match where 'step > 99'"):
        scan_trace(open_trace(nulls, where="step > 99"), table=table)
    fractional = tmp_path / "fractional.parquet"
    pq.write_table(pa.table({"item": ["a", "b"], "step": [1.0, 2.5], "run": ["r", "r"]}), fractional)
    with pytest.raises(InputError, match=r"fractional.parquet: row 2: ") as err:
        scan_trace(open_trace(fractional), table=table)
    assert "step" in str(err.value)
