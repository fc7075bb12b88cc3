"""Reading never silently wrong (issue 25): columns first seen late, totals past 2^63, mixed kinds,
torn final lines — each either read exactly or refused in one line naming the file."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ctwm_cli.cli import app
from ctwm_cli.traces import open_trace, scan_trace
from ctwm_cli.traces.paths import read_counts


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _inspect(path):
    res = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    return res, (json.loads(res.stdout)["traces"][0] if res.exit_code == 0 else None)


# ---------------------------------------------------------------------------------------------
# Columns that first appear past DuckDB's 20,480-row sample


def test_a_column_first_seen_after_the_sample_is_counted(tmp_path):
    rows = [{"item": f"m{i % 100}", "step": i} for i in range(25_000)]
    rows += [{"item": f"m{i % 100}", "step": i, "event": "write"} for i in range(10_000)]
    res, scan = _inspect(_jsonl(tmp_path / "late.jsonl", rows))
    assert res.exit_code == 0, res.output
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


def test_a_nested_key_or_a_value_is_not_a_column(tmp_path):
    rows = [{"item": "a", "meta": {"event": "x"}} for _ in range(21_000)] + [{"item": "event"}]
    _, scan = _inspect(_jsonl(tmp_path / "nested.jsonl", rows))
    assert scan["columns_found"] == ["item", "meta"]
    assert scan["events"] == {"retrieve": 21_001}
