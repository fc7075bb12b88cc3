"""Output conventions shared by every command, checked on ``ctwm inspect``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ctwm_cli import __version__
from ctwm_cli.common.results import SCHEMA_VERSION

ROWS = [{"item": f"m{i % 37}", "step": 3 * i, "run": f"r{i % 3}", "event": "retrieve"} for i in range(4321)]


@pytest.fixture
def traces(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    b = tmp_path / "b.jsonl"
    b.write_text('{"item": "x", "count": 2}\n{"item": "y", "count": 5}\n')
    return [str(a), str(b)]


def _ok(res):
    assert res.code == 0, res.err
    return res.out


def test_json_envelope(run_cli, traces):
    doc = json.loads(_ok(run_cli(["inspect", *traces, "--format", "json"])))
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["version"] == __version__
    assert doc["command"] == "inspect"
    assert doc["tool"] == "ctwm"
    assert "seed" not in doc  # inspect uses no randomness
    assert [t["n_rows"] for t in doc["results"]] == [len(ROWS), 2]


def test_json_shortcut_equals_format_json(run_cli, traces):
    long = _ok(run_cli(["inspect", *traces, "--format", "json"]))
    short = _ok(run_cli(["inspect", *traces, "--json"]))
    assert json.loads(short) == json.loads(long)
    assert _ok(run_cli(["inspect", *traces, "-f", "json"])) == long


def test_jsonl_and_csv_parse_back_to_the_json_rows(run_cli, traces):
    rows = json.loads(_ok(run_cli(["inspect", *traces, "--json"])))["results"]
    lines = _ok(run_cli(["inspect", *traces, "--format", "jsonl"])).splitlines()
    # JSON lines: the JSON rows' fields, plus schema_version and seed on every line
    assert [json.loads(line) for line in lines] == [{"schema_version": SCHEMA_VERSION, "seed": None, **r} for r in rows]

    parsed = list(csv.DictReader(io.StringIO(_ok(run_cli(["inspect", *traces, "--format", "csv"])))))
    assert len(parsed) == len(rows)
    for got, want in zip(parsed, rows, strict=True):
        assert list(got) == list(want)
        for key, value in want.items():
            cell = got[key]
            if value is None:
                assert cell == ""
            elif isinstance(value, bool):
                assert cell == ("true" if value else "false")
            elif isinstance(value, (dict, list)):
                assert json.loads(cell) == value
            else:
                assert cell == str(value)


def test_table_output_mentions_the_numbers(run_cli, traces):
    out = _ok(run_cli(["inspect", *traces]))
    doc = json.loads(_ok(run_cli(["inspect", *traces, "--json"])))["results"][0]
    assert f"{doc['n_rows']:,}" in out  # 4,321
    assert f"{doc['step_max']:,}" in out
    assert f"retrieve: {len(ROWS):,}" in out
    assert "counts table" in out and "events table" in out


def test_results_on_stdout_messages_not(run_cli, traces):
    res = run_cli(["inspect", *traces, "--json"])
    assert res.err == ""  # no progress bar when stderr is not a terminal


def test_version_and_help(run_cli):
    res = run_cli(["--version"])
    assert res.code == 0 and res.out.strip() == f"ctwm {__version__}"
    res = run_cli(["--help"])
    assert res.code == 0
    text = " ".join(res.out.split())
    assert "Exit codes: 0 ok; 1 a requested check failed" in text and "3 input/data error" in text


def test_progress_lines_share_one_display(monkeypatch):
    """Two progress bars open at once (bootstrap + calibration) are two lines of one live display."""
    import io

    from rich.console import Console

    from ctwm_cli.cli import output, progress_display

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(output.sys, "stderr", Tty())
    monkeypatch.setattr(progress_display, "stderr_console", lambda: Console(file=io.StringIO(), force_terminal=True))
    clock = iter(range(0, 1000, 2))
    monkeypatch.setattr(output.time, "monotonic", lambda: float(next(clock)))
    with output.progress_bar("bootstrap", total=10) as a, output.progress_bar("calibration", total=4) as b:
        a(3, 10)
        b(1, 4)
        live = output.LIVE["progress"]
        assert live is not None and [t.description for t in live.tasks] == ["bootstrap", "calibration"]
        assert output.LIVE["users"] == 2
    assert output.LIVE["progress"] is None and output.LIVE["users"] == 0
