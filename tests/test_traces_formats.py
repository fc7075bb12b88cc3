"""The format registry (issue 41): a format is one :class:`TraceFormat` entry, read by the sniffer, the reader,
the errors and ``--help`` alike. A throwaway entry (pipe-separated values, read by DuckDB's CSV reader) is
registered for one test and works end to end with nothing else changed."""

from __future__ import annotations

import dataclasses

import pytest

from ctwm_cli.common.errors import InputError
from ctwm_cli.traces import formats, item_counts, open_trace, scan_trace
from ctwm_cli.traces.formats import FORMATS, TraceFormat


def _psv(reader, engine, types, locate):
    return (f"read_csv({reader.files_sql()}, header = true, delim = '|', filename = {str(locate).lower()}, "
            "all_varchar = true)")


@pytest.fixture
def psv(monkeypatch):
    entry = TraceFormat(name="psv", title="pipe-separated values", label="psv", suffixes=(".psv",), relation=_psv,
                        rows_sql=FORMATS["csv"].rows_sql, row_word="line", row_offset=1, lenient_text=True,
                        help=".psv")
    monkeypatch.setitem(FORMATS, "psv", entry)
    return entry


def test_one_entry_adds_a_format_end_to_end(tmp_path, psv):
    (tmp_path / "log.psv").write_text("item|step\na|1\nb|2\na|3\n")
    scan = scan_trace(open_trace(tmp_path / "log.psv"))
    assert (scan.format, scan.n_rows, scan.step_min, scan.step_max) == ("psv", 3, 1, 3)
    (counts,) = item_counts(scan)
    assert dict(zip(counts.items.to_pylist(), counts.counts.tolist(), strict=True)) == {"a": 2, "b": 1}
    assert ".psv" in formats.traces_help() and ".psv" in formats.unknown_format()


def test_the_entry_names_rows_in_errors(tmp_path, psv):
    (tmp_path / "log.psv").write_text("item|step\na|1\nb|two\n")
    with pytest.raises(InputError, match=r"log\.psv: line 3: column 'step' must be an integer"):
        scan_trace(open_trace(tmp_path / "log.psv"))


def test_a_folder_of_the_new_format_beside_another_is_one_table(tmp_path, psv):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.psv").write_text("item|step\na|1\n")
    (tmp_path / "d" / "b.csv").write_text("item,step\nb,2\n")
    scan = scan_trace(open_trace(tmp_path / "d"))
    assert (scan.format, scan.n_rows, scan.n_items) == ("psv+csv", 2, 2)


def test_without_the_entry_the_suffix_is_unknown(tmp_path):
    (tmp_path / "log.psv").write_text("item|step\na|1\n")
    with pytest.raises(InputError, match="unknown trace format"):
        open_trace(tmp_path / "log.psv")


def test_every_entry_is_complete():
    for name, f in FORMATS.items():
        assert f.name == name and f.suffixes and f.title and f.help, name
        assert "{raw}" in f.rows_sql
        assert dataclasses.replace(f).label_for(type("L", (), {"root": None})()) == f.label


def test_the_help_text_lists_every_format():
    from ctwm_cli.cli.options import TRACES_HELP

    for f in FORMATS.values():
        assert f.help in TRACES_HELP


@pytest.mark.parametrize(("rel", "other"), [
    ("README.md", True), ("readme", True), ("LICENSE", True), ("manifest.json", True), ("_SUCCESS", True),
    ("_metadata", True), ("_delta_log/000.json", True), (".part-0.parquet.crc", True), ("x.crc", True),
    ("notes.txt", True), ("plot.png", True), ("config.yaml", True), ("run=a/.hidden.jsonl", True),
    ("part-0.parquet", False), ("2026-12-01.jsonl", False), ("events.csv.gz", False), ("result.json", False),
    ("data.xlsx", False), ("agent.log", False),
])
def test_files_of_other_kinds_are_a_short_list(rel, other):
    from ctwm_cli.traces.sources import other_kind

    assert other_kind(rel) is other


def test_a_saved_result_json_beside_jsonl_logs_is_not_data(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "events.jsonl").write_text('{"item": "a"}\n{"item": "b"}\n')
    (tmp_path / "d" / "audit.json").write_text('{"tool": "ctwm", "command": "audit"}')
    assert scan_trace(open_trace(tmp_path / "d")).n_rows == 2
