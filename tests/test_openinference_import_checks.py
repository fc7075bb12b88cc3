"""Every importer says in one line and exits 3 (no output file) when it maps nothing or its search spans
carry no record ids; a Mem0 history import says it holds no retrievals and which command applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TELEMETRY = Path(__file__).resolve().parents[1] / "sample_traces" / "telemetry"


def _span(name: str, attrs: dict, start: int) -> dict:
    return {"traceId": "ab" * 16, "spanId": f"{start:016x}", "name": name, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 1),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def _otlp(path: Path, spans: list[dict]) -> Path:
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


@pytest.mark.parametrize(
    ("spans", "text"),
    [
        ([_span("chat", {"gen_ai.operation.name": "chat"}, 1),
          _span("tool", {"gen_ai.operation.name": "execute_tool"}, 2)],
         "none of the 2 spans maps to a memory event; nothing written"),
        ([_span("search", {"gen_ai.operation.name": "search_memory", "gen_ai.memory.query.text": "q"}, 1),
          _span("search", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": "[{}]"}, 2)],
         "2 search spans but no record ids"),
    ],
)
def test_otel_import_that_maps_nothing_exits_3_without_a_file(tmp_path, run_cli, spans, text):
    src = _otlp(tmp_path / "spans.json", spans)
    out = tmp_path / "out.parquet"
    res = run_cli(["import", "otel", src, "-o", out])
    assert res.code == 3
    assert text in res.err and len(res.err.strip().splitlines()) == 1
    assert not out.exists()
    audit = run_cli(["audit", src, "--seed", 1])  # read directly: one line that says why there is nothing to count
    assert audit.code == 3 and len(audit.err.strip().splitlines()) == 1


def test_search_spans_without_ids_read_directly_say_so(tmp_path, run_cli):
    src = _otlp(tmp_path / "spans.json", [_span("s", {"gen_ai.operation.name": "search_memory"}, 1)])
    audit = run_cli(["audit", src, "--seed", 1])
    assert audit.code == 3 and "the search rows carry no record ids" in audit.err


def test_otel_sample_still_imports(tmp_path, run_cli):
    res = run_cli(["import", "otel", TELEMETRY / "otel_spans.json", "-o", tmp_path / "o.parquet", "--json"])
    assert res.code == 0, res.err
    assert json.loads(res.out)["notes"] == [] and json.loads(res.out)["events"]["retrieve"] > 0


def test_mem0_history_says_it_holds_no_retrievals(tmp_path, run_cli):
    res = run_cli(["import", "mem0", TELEMETRY / "mem0_history.json", "-o", tmp_path / "m.parquet", "--json"])
    assert res.code == 0, res.err
    note = json.loads(res.out)["notes"][0]
    assert "no retrievals" in note and "ctwm health" in note
    assert f"note: {note}" in res.err
    audit = run_cli(["audit", TELEMETRY / "mem0_history.json", "--seed", 1])
    assert audit.code == 3 and "no retrievals" in audit.err and "ctwm health" in audit.err
    assert len(audit.err.strip().splitlines()) == 1
    assert run_cli(["health", TELEMETRY / "mem0_history.json", "--json"]).code == 0
