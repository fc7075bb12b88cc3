"""Hostile input: every case of issue 20 is generated here (nothing shipped) and must end in exit 3
with one line — never a traceback, a RecursionError, a MemoryError or a signal — in the readers and
in the telemetry importers; then hypothesis throws arbitrary bytes and JSON at the same entry points.
Runtime: ~20 s."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctwm_cli.common.errors import CtwmError
from ctwm_cli.traces import guard, item_counts, open_trace, scan_trace
from ctwm_cli.traces.mem0 import mem0_rows
from ctwm_cli.traces.objects import read_objects
from ctwm_cli.traces.otel import otel_rows

DEPTH = 100_000


def _deep(tmp: Path) -> dict[str, bytes]:
    nest = b"[" * DEPTH + b"]" * DEPTH
    return {
        "deep.jsonl": b'{"item": "a"}\n{"item": ' + nest + b"}\n",
        "deep_bare.jsonl": b'{"item": "a"}\n' + nest + b"\n",
        "deep_otel.json": b'{"resourceSpans": ' + nest + b"}",
        "deep_mem0.json": b'[{"memory_id": "m", "event": "ADD", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}]",
    }


def _bomb() -> bytes:
    """~2 MB of gzip members that inflate to 2 GiB of zero bytes with no newline."""
    member = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    return member * 2048


HOSTILE = {
    "bad_utf8.jsonl": (b'{"item": "a"}\n{"item": "\xff\xfe"}\n', "line 2: not valid UTF-8"),
    "surrogate.jsonl": (b'{"item": "a"}\n{"item": "\\ud800x"}\n', "line 2: lone UTF-16 surrogate"),
    "surrogate_key.jsonl": (b'{"item": "a", "\\udfff": 1}\n', "line 1: lone UTF-16 surrogate"),
    "deep.jsonl": (None, "line 2: JSON nested deeper than"),
    "deep_bare.jsonl": (None, "line 2: JSON nested deeper than"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    for name, data in _deep(d).items():
        (d / name).write_bytes(data)
    for name, (data, _) in HOSTILE.items():
        if data is not None:
            (d / name).write_bytes(data)
    (d / "bomb.jsonl.gz").write_bytes(_bomb())
    return d


def one_line_exit_3(res, fragment: str) -> None:
    assert res.code == 3, (res.code, res.err)
    err = "".join(line for line in res.err.splitlines(keepends=True) if not line.startswith("seed: "))
    assert err.count("\n") == 1 and err.startswith("ctwm: error: ") and "Traceback" not in err, res.err
    assert fragment in err, res.err


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("command", [["inspect"], ["health"], ["audit", "--bootstrap", "0"],
                                     ["simulate", "-K", "1", "-B", "4", "--trace"]])
def test_hostile_jsonl_exit_3_everywhere(hostile, run_cli, name, command):
    one_line_exit_3(run_cli([*command, str(hostile / name)]), HOSTILE[name][1])


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_stdin(hostile, run_cli, name):
    one_line_exit_3(run_cli(["inspect", "-"], stdin=(hostile / name).read_bytes()), HOSTILE[name][1])


def test_gzip_bomb_is_refused_in_bounded_memory(hostile, run_cli):
    for command in (["inspect"], ["health"]):
        one_line_exit_3(run_cli([*command, str(hostile / "bomb.jsonl.gz")]), "decompression bomb")
    one_line_exit_3(run_cli(["import", "otel", str(hostile / "bomb.jsonl.gz"), "-o", str(hostile / "o.parquet")]),
                    "decompression bomb")


def test_line_without_newline_is_refused_before_it_is_buffered(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(guard, "MAX_LINE_BYTES", 1 << 16)
    (tmp_path / "long.jsonl").write_bytes(b'{"item": "a"}\n{"item": "' + b"x" * (1 << 18))
    one_line_exit_3(run_cli(["inspect", str(tmp_path / "long.jsonl")]), "line 2: line longer than 65,536 bytes")


@pytest.mark.parametrize(("name", "kind"), [("deep_otel.json", "otel"), ("deep_mem0.json", "mem0"),
                                            ("bad_utf8.jsonl", "otel"), ("surrogate.jsonl", "mem0")])
def test_importers_refuse_hostile_files(hostile, run_cli, name, kind):
    res = run_cli(["import", kind, str(hostile / name), "-o", str(hostile / f"{name}.parquet")])
    one_line_exit_3(res, name)
    assert not (hostile / f"{name}.parquet").exists()


def test_health_objects_refuse_deep_json(hostile, run_cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"item": "a", "step": 1}\n')
    one_line_exit_3(run_cli(["health", str(trace), "--objects", str(hostile / "deep_otel.json")]), "nested deeper")


@pytest.mark.parametrize("command", [["bench", "longmemeval"], ["bench", "report"]])
def test_bench_inputs_refuse_deep_json(hostile, run_cli, command):
    one_line_exit_3(run_cli([*command, str(hostile / "deep_otel.json")]), "nested too deeply")


def test_depth_check_is_exact_about_strings():
    assert guard.json_depth(b'{"a": "[[[[[[[[[[}}}}}"}') == 1
    assert guard.json_depth(b'{"a": "\\"", "b": [[1]]}') == 3
    assert guard.json_depth(b"[" * 300 + b"]" * 300, chunk=7) == 300  # chunked: depth carried across
    guard.check_block(b'{"item": "' + b"[" * 500 + b'"}\n', "x", 1)  # brackets inside a string are fine
    with pytest.raises(CtwmError, match="x: line 2: JSON nested deeper"):
        guard.check_block(b'{"item": 1}\n{"a": "}}}}}}", "b": ' + b"[" * 70 + b"]" * 70 + b"}\n", "x", 1)


# ------------------------------------------------------------------------------------------------
# hypothesis: arbitrary input never escapes as anything but a one-line CtwmError

KEYS = ["item", "step", "run", "event", "count", "rank", "score", "tokens", "ts", "memory_id", "resourceSpans",
        "scopeSpans", "spans", "attributes", "key", "value", "stringValue", "intValue", "startTimeUnixNano",
        "gen_ai.operation.name", "gen_ai.memory.records", "id", "created_at", "supersedes", "type"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=8), st.sampled_from(["retrieve", "ADD", "search_memory", "1e400", "\ud800"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
                      max_leaves=20)


def _encode(v) -> bytes:
    return json.dumps(v).encode("utf-8", "surrogatepass")


lines = st.lists(st.one_of(values.map(_encode), st.binary(max_size=40)), min_size=0, max_size=8)


def _read_everything(path: Path) -> None:
    for reader in (lambda: item_counts(scan_trace(open_trace(path))), lambda: otel_rows(path),
                   lambda: mem0_rows(path), lambda: read_objects(path)):
        try:
            reader()
        except CtwmError as exc:
            assert "\n" not in str(exc)


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(body=lines, gz=st.booleans())
def test_fuzz_jsonl_lines(body, gz, tmp_path_factory):
    data = b"\n".join(body) + b"\n"
    path = tmp_path_factory.mktemp("fz") / ("t.jsonl.gz" if gz else "t.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    _read_everything(path)


@FUZZ
@given(doc=values)
def test_fuzz_json_documents(doc, tmp_path_factory):
    path = tmp_path_factory.mktemp("fz") / "d.json"
    path.write_bytes(_encode(doc))
    _read_everything(path)


@FUZZ
@given(raw=st.binary(max_size=200))
def test_fuzz_raw_bytes(raw, tmp_path_factory):
    path = tmp_path_factory.mktemp("fz") / "r.jsonl"
    path.write_bytes(raw)
    _read_everything(path)
