"""Telemetry import: the OTel and Mem0 example files map to the events worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ctwm_cli.common.errors import InputError, UsageError
from ctwm_cli.common.labels import identity
from ctwm_cli.traces import item_counts, open_trace, scan_trace
from ctwm_cli.traces.mem0 import mem0_history, read_owners
from ctwm_cli.traces.telemetry import any_value, import_telemetry, mem0_rows, otel_rows, sniff_format

HERE = Path(__file__).resolve().parent.parent / "sample_traces" / "telemetry"
OTEL = HERE / "otel_spans.json"
MEM0 = HERE / "mem0_history.json"
A = "5b8efff798038103d269b633813fc60c"
B = "0af7651916cd43dd8448eb211c80319c"

# Worked out by hand from the span list in sample_traces/telemetry/generate.py (see its README):
# inference spans of conv-1 start at t0+2, +5, +102, +106, so a span's step is the number of them
# that started before it. (event, item, step, task, rank, score, tokens, outcome)
OTEL_EXPECTED = [
    ("search", "query:a000000000000002", 0, A, None, None, None, None),
    ("retrieve", "mem_a", 0, A, 1, 0.9, None, None),
    ("retrieve", "mem_b", 0, A, 2, 0.5, None, None),
    ("context", "model:gpt-4o", 0, A, None, None, 1200, None),
    ("write", "mem_c", 1, A, None, None, None, None),
    ("search", "query:a000000000000005", 1, A, None, None, None, None),
    ("context", "model:gpt-4o", 1, A, None, None, 1500, None),
    ("update", "mem_a", 2, A, None, None, None, None),  # records given as a JSON string
    ("search", "query:b000000000000002", 2, B, None, None, None, None),
    ("retrieve", "doc_1", 2, B, 1, 0.8, None, None),  # gen_ai.retrieval.documents
    ("context", "model:gpt-4o", 2, B, None, None, 900, None),
    ("update", "mem_c", 3, B, None, None, None, None),  # upsert of a known id
    ("write", "mem_d", 3, B, None, None, None, None),  # upsert of a new id
    ("archive", "mem_b", 3, B, None, None, None, None),  # delete_memory
    ("search", "query:b000000000000006", 3, B, None, None, None, None),
    ("retrieve", "mem_b", 3, B, 1, 0.7, None, None),
    ("context", "model:gpt-4o", 3, B, None, None, 1000, None),
    ("task_outcome", f"task:{A}", 2, A, None, None, None, "success"),  # root span status OK, ends t0+10
    ("task_outcome", f"task:{B}", 4, B, None, None, None, "failure"),  # root span status ERROR
]


def _tuples(rows):
    return [
        (r["event"], r["item"], r["step"], r.get("task"), r.get("rank"), r.get("score"), r.get("tokens"),
         r.get("outcome"))
        for r in rows
    ]


def test_otel_example_imports_to_the_expected_events():
    rows, spans, mapped = otel_rows(OTEL)
    assert _tuples(rows) == OTEL_EXPECTED
    assert spans == 15 and mapped == 14  # execute_tool is not a memory operation
    assert {r["run"] for r in rows} == {"conv-1"}
    assert rows[0]["ts"] == "2026-01-01T00:00:01.000000Z"
    assert rows[-1]["ts"] == "2026-01-01T00:01:50.000000Z"  # the failed task's root span ends at t0+110


def _hist(i, mid, old, new, event, created, updated=None, **extra):
    return {"id": f"h{i}", "memory_id": mid, "old_memory": old, "new_memory": new, "event": event,
            "created_at": created, "updated_at": updated, "is_deleted": event == "DELETE", "actor_id": None,
            "role": "user", **extra}


def test_mem0_history_rows_map_to_the_expected_events(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([
        _hist(1, "m1", None, "Likes green tea", "ADD", "2026-01-01T10:00:00+00:00"),
        _hist(2, "m2", None, "Lives in Lyon", "ADD", "2026-01-01T10:00:00+00:00", user_id="alice"),
        _hist(3, "m1", "Likes green tea", "Likes oolong tea", "UPDATE", "2026-01-01T10:00:00+00:00",
              "2026-01-02T09:00:00+00:00"),
        _hist(4, "m3", None, "Works on billing", "ADD", "2026-01-03T08:00:00+00:00"),
        _hist(5, "m3", "Works on billing", "Works on billing", "UPDATE", "2026-01-03T08:00:00+00:00",
              "2026-01-03T09:00:00+00:00"),  # an expiry set: the text is unchanged, not an edit
        _hist(6, "m2", "Lives in Lyon", None, "DELETE", "2026-01-01T10:00:00+00:00", "2026-01-04T12:00:00+00:00"),
    ]))
    rows, n, mapped = mem0_rows(p)
    got = [(r["event"], r["item"], r["step"], r["run"], r["ts"]) for r in rows]
    assert got == [
        ("write", "m1", 0, None, "2026-01-01T10:00:00+00:00"),  # Mem0's history has no owner
        ("write", "m2", 0, "user_id=alice", "2026-01-01T10:00:00+00:00"),  # same time, same step
        ("update", "m1", 1, None, "2026-01-02T09:00:00+00:00"),  # UPDATE is timed by updated_at
        ("write", "m3", 2, None, "2026-01-03T08:00:00+00:00"),
        ("archive", "m2", 3, "user_id=alice", "2026-01-04T12:00:00+00:00"),  # DELETE
    ]
    assert (n, mapped) == (6, 5)


def test_the_sample_written_by_a_real_mem0_imports_with_owners_from_its_get_all():
    """``mem0_history.json`` is ``history()`` of a real Mem0 run (generate_mem0.py): 4 ADD, an edit, an
    expiry-only UPDATE and a DELETE; its get_all dump knows the owners of the 3 memories left."""
    hist = json.loads(MEM0.read_text())
    assert [h["event"] for h in hist].count("ADD") == 4 and len(hist) == 7
    assert not any(k in h for h in hist for k in ("user_id", "agent_id", "run_id"))  # Mem0 never writes them
    plain = mem0_history(MEM0)
    assert (plain.records, plain.mapped, plain.unchanged_updates, plain.with_owner) == (7, 6, 1, 0)
    owned = mem0_history(MEM0, read_owners(HERE / "mem0_get_all.json"))
    assert owned.with_owner == 3 and owned.memories == 4  # the deleted memory's owner is not in get_all
    assert {r["run"] for r in owned.rows} == {"user_id=alice", "agent_id=planner&user_id=bob", None}
    full = mem0_history(MEM0, read_owners(HERE / "mem0_trace.jsonl"))
    assert full.with_owner == 4


def test_any_value_decodes_typed_otlp_values():
    v = {"kvlistValue": {"values": [
        {"key": "n", "value": {"intValue": "12345678901234"}},
        {"key": "xs", "value": {"arrayValue": {"values": [
            {"doubleValue": 0.5}, {"boolValue": True}, {"stringValue": "s"}]}}},
    ]}}
    assert any_value(v) == {"n": 12345678901234, "xs": [0.5, True, "s"]}


def test_open_trace_sniffs_telemetry_and_the_audit_counts_see_it():
    assert sniff_format(OTEL) == "otel" and sniff_format(MEM0) == "mem0"
    reader = open_trace(OTEL)
    assert reader.format == "otel"
    scan = scan_trace(reader)
    assert scan.events == {
        "archive": 1, "context": 4, "retrieve": 4, "search": 4, "task_outcome": 2, "update": 2, "write": 2
    }
    (counts,) = item_counts(scan)
    got = dict(zip(counts.items.to_pylist(), counts.counts.tolist(), strict=True))
    assert got == {"mem_b": 2, "doc_1": 1, "mem_a": 1}
    assert scan_trace(open_trace(MEM0)).events == {"archive": 1, "update": 1, "write": 4}


def test_plain_jsonl_traces_are_not_mistaken_for_telemetry(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"item": "a", "memory_id": "x", "event": "retrieve"}\n')
    assert sniff_format(p) is None
    assert open_trace(p).format == "jsonl"


def test_otlp_json_lines_read_like_one_document(tmp_path):
    doc = json.loads(OTEL.read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    lines = []
    for i in (0, 7):  # file exporter: one ExportTraceServiceRequest per line, here one per trace
        part = json.loads(json.dumps(doc))
        part["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans[i : i + 7] if i == 0 else spans[7:]
        lines.append(json.dumps(part))
    p = tmp_path / "spans.jsonl"
    p.write_text("\n".join(lines) + "\n")
    rows, n, _ = otel_rows(p)
    assert n == 15 and _tuples(rows) == OTEL_EXPECTED
    assert open_trace(p).format == "otel"


def test_import_writes_a_parquet_trace_that_reads_back(tmp_path, run_cli):
    out = tmp_path / "otel.parquet"
    res = run_cli(["import", "otel", str(OTEL), "-o", str(out), "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["n_rows"] == len(OTEL_EXPECTED) and doc["tasks"] == 2 and doc["runs"] == 1
    table = pq.read_table(out)
    assert _tuples(table.to_pylist()) == OTEL_EXPECTED
    reader = open_trace(out, optional=("task", "outcome"))
    batch = next(iter(reader.batches()))
    assert batch.column("outcome").to_pylist()[-2:] == ["success", "failure"]
    res = run_cli(["import", "mem0", str(MEM0), "-o", str(tmp_path / "m.parquet")])
    assert res.code == 0 and "mem0" in res.out


def test_import_rejects_a_non_parquet_output(tmp_path, run_cli):
    res = run_cli(["import", "otel", str(OTEL), "-o", str(tmp_path / "x.csv")])
    assert res.code == 2 and "must end in .parquet" in res.err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}',
            "spans\\[0\\]: missing or malformed startTimeUnixNano",
        ),
        ('{"resourceSpans": []}', "no spans found"),
    ],
)
def test_otel_errors_name_the_span(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        otel_rows(p)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([{"memory_id": "m", "event": "ADD", "new_memory": "x"}, {"event": "ADD", "new_memory": "y"}],
         "history row 2: missing memory_id"),
        (
            [{"memory_id": "m", "event": "ADD", "new_memory": "x"}, {"memory_id": "m", "event": "MERGE"}],
            "history row 2: event must be ADD",
        ),
        ([{"memory_id": "m", "event": "NONE", "new_memory": "x"}], "no ADD/UPDATE/DELETE rows"),
        # an agent log with memory_id and event columns is not Mem0's history: one line says what is expected
        ([{"memory_id": "m", "event": "write"}], "not a Mem0 history .expected rows with memory_id"),
        ([{"id": "m", "memory": "likes tea", "user_id": "u"}],
         "a Mem0 get_all.*search.* result .1 memories.*--objects"),
    ],
)
def test_mem0_errors_name_the_row(tmp_path, rows, match):
    p = tmp_path / "h.json"
    p.write_text(json.dumps(rows))
    with pytest.raises(InputError, match=match):
        mem0_rows(p)


def test_mem0_accepts_results_wrapper_and_json_lines(tmp_path):
    rows = json.loads(MEM0.read_text())
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"results": rows}))
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert mem0_rows(a)[0] == mem0_rows(MEM0)[0] == mem0_rows(b)[0]


def test_forced_input_format_checks(tmp_path):
    with pytest.raises(UsageError, match=r"^input_format must be one of"):
        open_trace(OTEL, input_format="zipkin")
    with pytest.raises(UsageError, match="needs a file"):
        open_trace("-", input_format="otel")
    with pytest.raises(UsageError, match="format must be one of"):
        import_telemetry(OTEL, "zipkin")


def test_an_agent_log_with_memory_id_and_event_is_not_taken_for_mem0(run_cli):
    log = HERE.parent / "agent_log.jsonl"
    want = ("missing column 'item' (columns found: memory_id, agent_step, session, event); "
            "remap with --item-col memory_id")
    for cmd in ("inspect", "audit", "concentration"):
        from_file = run_cli([cmd, log])
        from_stdin = run_cli([cmd, "-"], stdin=log.read_bytes())
        assert from_file.code == from_stdin.code == 3
        assert from_file.err == f"ctwm: error: {identity(str(log))}: {want}\n"  # the name results carry
        assert from_stdin.err == f"ctwm: error: <stdin>: {want}\n"
    assert sniff_format(log) is None
    ok = run_cli(["inspect", log, "--item-col", "memory_id", "--step-col", "agent_step", "--run-col", "session"])
    assert ok.code == 0


def test_a_get_all_or_search_dump_given_as_a_trace_says_what_it_is(run_cli, tmp_path):
    dump = HERE / "mem0_get_all.json"
    for cmd in (["audit", dump], ["inspect", dump], ["health", dump]):
        res = run_cli(cmd)
        assert res.code == 3 and "a Mem0 get_all()/search() result (3 memories)" in res.err, res.err
        assert "pass it as --objects to ctwm health" in res.err and len(res.err.splitlines()) == 1
    one_line = tmp_path / "search.json"
    one_line.write_text(json.dumps({"results": [{"id": "x", "memory": "likes tea", "score": 0.4}]}))
    assert "a Mem0 get_all()/search() result (1 memories)" in run_cli(["audit", one_line]).err
    # an ordinary trace with an id-like column is not taken for one
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"item": "a", "memory": "x", "id": 1}\n')
    assert sniff_format(plain) is None
