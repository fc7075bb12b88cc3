"""``ctwm inspect`` in-process: what it reports, and every error's exit code and one-line message."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctwm_cli.cli import main
from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.traces import guard, paths

ROWS = [
    {"item": "m1", "step": 0, "run": "r1", "event": "retrieve", "rank": 1},
    {"item": "m2", "step": 0, "run": "r1", "event": "retrieve", "rank": 2},
    {"item": "m1", "step": 1, "run": "r1", "event": "inject"},
    {"item": "m3", "step": 4, "run": "r2", "event": "write"},
    {"item": "m1", "step": 7, "run": "r2"},
]


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def inspect_json(run_cli, *args):
    res = run_cli(["inspect", *args, "--json"])
    assert res.code == 0, res.err
    return json.loads(res.out)["results"]


def test_inspect_reports_trace(tmp_path, run_cli):
    (doc,) = inspect_json(run_cli, jsonl(tmp_path / "t.jsonl", ROWS))
    assert doc["n_rows"] == 5
    assert doc["n_items"] == 3
    assert doc["runs"] == 2
    assert doc["events"] == {"retrieve": 3, "inject": 1, "write": 1}
    assert (doc["step_min"], doc["step_max"]) == (0, 7)
    assert doc["columns_found"] == ["item", "step", "run", "event", "rank"]
    assert doc["mapping"] == {c: c for c in ["item", "step", "run", "event", "rank"]}
    assert doc["kind"] == "events" and doc["format"] == "jsonl"


def test_inspect_several_traces_and_formats(tmp_path, run_cli):
    a = jsonl(tmp_path / "a.jsonl", ROWS)
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"item": ["x", "y"], "count": [5, 7]}), b)
    docs = inspect_json(run_cli, a, b)
    assert [d["source"] for d in docs] == [str(a), str(b)]
    assert docs[1]["kind"] == "counts" and docs[1]["format"] == "parquet"
    assert docs[1]["events"] == {"retrieve": 12} and docs[1]["runs"] is None and docs[1]["step_min"] is None


def test_inspect_remapped_columns(tmp_path, run_cli):
    rows = [{"memory_id": f"m{i % 3}", "agent_step": 10 + i, "item": "decoy"} for i in range(9)]
    path = jsonl(tmp_path / "remap.jsonl", rows)
    (doc,) = inspect_json(run_cli, path, "--item-col", "memory_id", "--step-col", "agent_step")
    assert doc["mapping"] == {"item": "memory_id", "step": "agent_step"}
    assert doc["n_items"] == 3
    assert (doc["step_min"], doc["step_max"]) == (10, 18)
    (doc,) = inspect_json(run_cli, path, "--col", "item=memory_id", "--col", "step=agent_step")
    assert doc["mapping"] == {"item": "memory_id", "step": "agent_step"}


def test_inspect_hive_dataset(tmp_path, run_cli):
    pq.write_to_dataset(pa.table({"item": ["a", "b", "a", "c"], "run": ["x", "y", "x", "z"]}), tmp_path / "ds",
                        partition_cols=["run"])
    (doc,) = inspect_json(run_cli, tmp_path / "ds")
    assert doc["format"] == "parquet-dataset"
    assert (doc["n_rows"], doc["n_items"], doc["runs"]) == (4, 3, 3)


def test_inspect_table_output(tmp_path, run_cli):
    rows = [{"item": f"m{i % 250}", "step": i} for i in range(1234)]
    res = run_cli(["inspect", jsonl(tmp_path / "t.jsonl", rows)])
    assert res.code == 0, res.err
    for text in ("1,234", "250", "0 .. 1,233", "no run column", "item <- item"):
        assert text in res.out
    assert res.err == ""


# ---------------------------------------------------------------------------------------------
# Errors


def one_line_error(res, code, *fragments):
    assert res.code == code, (res.code, res.out, res.err)
    assert res.out == ""
    assert "Traceback" not in res.err
    assert res.err.startswith("ctwm: error: ")
    assert res.err.count("\n") == 1 and res.err.endswith("\n"), res.err
    for f in fragments:
        assert f in res.err, (f, res.err)


def test_error_malformed_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(guard, "BLOCK_BYTES", 512)
    lines = [json.dumps({"item": f"m{i}"}) for i in range(1000)]
    lines[876] = '{"item": "m876"'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    one_line_error(run_cli(["inspect", path]), 3, f"{path}: line 877: malformed JSON")


def test_error_malformed_line_stdin(run_cli):
    res = run_cli(["inspect", "-"], stdin=b'{"item": "a"}\n{"item": "b"}\nnot json\n')
    one_line_error(res, 3, "<stdin>: line 3: malformed JSON")


def test_error_missing_column(tmp_path, run_cli):
    path = jsonl(tmp_path / "m.jsonl", [{"memory_id": "a", "agent_step": 1}])
    one_line_error(run_cli(["inspect", path]), 3, "missing column 'item'", "columns found: memory_id, agent_step")


def test_error_empty_trace(tmp_path, run_cli):
    (tmp_path / "e.jsonl").write_text("")
    one_line_error(run_cli(["inspect", tmp_path / "e.jsonl"]), 3, "e.jsonl: trace is empty")
    one_line_error(run_cli(["inspect", "-"], stdin=b""), 3, "<stdin>: trace is empty")


@pytest.mark.parametrize(("value", "fragment"), [(2.5, "got 2.5"), ("x", "got 'x'")])
def test_error_non_integer_count(tmp_path, run_cli, value, fragment):
    path = jsonl(tmp_path / "c.jsonl", [{"item": "a", "count": 1}, {"item": "b", "count": value}])
    one_line_error(run_cli(["inspect", path]), 3, "c.jsonl: line 2:", "'count' must be an integer", fragment)


@pytest.mark.parametrize("value", [0, -1])
def test_error_non_positive_count(tmp_path, run_cli, value):
    path = jsonl(tmp_path / "c.jsonl", [{"item": "a", "count": value}])
    one_line_error(run_cli(["inspect", path]), 3, "c.jsonl: line 1: count must be a positive integer")
    pq.write_table(pa.table({"item": ["a", "b"], "count": [3, value]}), tmp_path / "c.parquet")
    one_line_error(run_cli(["inspect", tmp_path / "c.parquet"]), 3, "c.parquet: row 2: count must be a positive")


def test_error_missing_file(tmp_path, run_cli):
    one_line_error(run_cli(["inspect", tmp_path / "nope.parquet"]), 3, "nope.parquet: no such file or directory")


def test_error_unreadable_parquet(tmp_path, run_cli):
    (tmp_path / "x.parquet").write_bytes(bytes(range(256)) * 4)
    one_line_error(run_cli(["inspect", tmp_path / "x.parquet"]), 3, "x.parquet: not a readable Parquet file")


def test_error_unknown_extension(tmp_path, run_cli):
    (tmp_path / "t.txt").write_text('{"item": "a"}\n')
    one_line_error(run_cli(["inspect", tmp_path / "t.txt"]), 3, "t.txt: unknown trace format")


def test_error_col_without_equals(tmp_path, run_cli):
    path = jsonl(tmp_path / "t.jsonl", ROWS)
    one_line_error(run_cli(["inspect", path, "--col", "memory_id"]), 2, "--col expects FIELD=SOURCE, got 'memory_id'")


def test_error_col_unknown_field(tmp_path, run_cli):
    path = jsonl(tmp_path / "t.jsonl", ROWS)
    one_line_error(run_cli(["inspect", path, "--col", "colour=x"]), 2, "unknown trace column(s) to remap: colour")


def test_error_bad_format_option_is_usage_error(tmp_path, run_cli):
    res = run_cli(["inspect", jsonl(tmp_path / "t.jsonl", ROWS), "--format", "xml"])
    assert res.code == 2 and res.out == "" and "Traceback" not in res.err


def test_debug_prints_the_traceback_and_keeps_the_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CTWM_DEBUG", "1")
    assert main(["inspect", str(tmp_path / "nope.jsonl")]) == InputError.exit_code == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "no such file" in err
    assert main(["inspect", str(tmp_path / "nope.jsonl"), "--col", "x"]) == UsageError.exit_code == 2
    assert "Traceback" in capsys.readouterr().err


def test_unexpected_error_is_exit_4_one_line(tmp_path, run_cli, monkeypatch, capsys):
    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(paths, "scan_paths", boom)
    res = run_cli(["inspect", jsonl(tmp_path / "t.jsonl", ROWS)])
    assert res.code == 4 and "Traceback" not in res.err and res.err.count("\n") == 1
    assert "unexpected error: RuntimeError: disk on fire" in res.err and "CTWM_DEBUG=1" in res.err
    monkeypatch.setenv("CTWM_DEBUG", "1")  # the traceback, and still exit 4
    assert main(["inspect", str(tmp_path / "t.jsonl")]) == 4
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: disk on fire" in err


def test_gzip_jsonl_via_cli(tmp_path, run_cli):
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in ROWS).encode()))
    (doc,) = inspect_json(run_cli, path)
    assert (doc["n_rows"], doc["n_items"]) == (5, 3)
