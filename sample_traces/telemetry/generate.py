"""Write the telemetry examples in this directory (rerun with ``python sample_traces/telemetry/generate.py``).

* ``otel_spans.json``     OTLP JSON (one ExportTraceServiceRequest) with GenAI memory/retrieval spans:
                          two agent invocations (traces) of conversation ``conv-1``, hand-written
                          so that the imported rows and the health metrics can be checked by hand
* ``events.jsonl``        a synthetic event trace of one agent over 80 tasks with task outcomes,
                          token counts, context rows, maintenance steps, supersede chains (seeded)
* ``objects.jsonl``       the memory-object table of the same store (id, type, subject, content,
                          source, created_at, last_hit_at, hit_count, confidence, decay,
                          valid_until, supersedes, scope); times are step numbers

Only numpy and the standard library are used; the output is byte-identical on every run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261130
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z, seconds
CONV = "conv-1"
TRACE_A = "5b8efff798038103d269b633813fc60c"
TRACE_B = "0af7651916cd43dd8448eb211c80319c"


# ---------------------------------------------------------------------------------------------
# OTLP JSON


def _value(v):
    """A Python value as an OTLP JSON AnyValue (int64 as a decimal string, as protobuf JSON does)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(x)} for k, x in v.items()]}}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    raise TypeError(type(v))


def _span(trace, span, parent, name, start_s, end_s, attrs, status=None, kind=3):
    out = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str((T0 + start_s) * 1_000_000_000),
        "endTimeUnixNano": str((T0 + end_s) * 1_000_000_000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    if status is not None:
        out["status"] = {"code": status}
    return out


def otel_document() -> dict:
    c = {"gen_ai.conversation.id": CONV}
    mem = {"gen_ai.memory.store.id": "ms_demo", **c}
    a, b = TRACE_A, TRACE_B
    spans = [
        # Task A (succeeds): search (2 hits), chat, create, search (nothing found), chat, update.
        _span(a, "a000000000000001", None, "invoke_agent planner", 0, 10,
              {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", **c}, status=1, kind=1),
        _span(a, "a000000000000002", "a000000000000001", "search_memory", 1, 1,
              {"gen_ai.operation.name": "search_memory", **mem, "gen_ai.memory.record.count": 2,
               "gen_ai.memory.records": [
                   {"id": "mem_a", "content": "Read-only account: switch credentials before writing", "score": 0.9},
                   {"id": "mem_b", "content": "Task T-2291 is already done", "score": 0.5}]}),
        _span(a, "a000000000000003", "a000000000000001", "chat gpt-4o", 2, 3,
              {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
               "gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 80, **c}),
        _span(a, "a000000000000004", "a000000000000001", "create_memory", 3, 3,
              {"gen_ai.operation.name": "create_memory", **mem, "gen_ai.memory.record.id": "mem_c"}),
        _span(a, "a000000000000005", "a000000000000001", "search_memory", 4, 4,
              {"gen_ai.operation.name": "search_memory", **mem, "gen_ai.memory.record.count": 0,
               "gen_ai.memory.records": []}),
        _span(a, "a000000000000006", "a000000000000001", "chat gpt-4o", 5, 6,
              {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
               "gen_ai.usage.input_tokens": 1500, **c}),
        # Records recorded as a JSON string (allowed on spans when structured values are not supported).
        _span(a, "a000000000000007", "a000000000000001", "update_memory", 6, 6,
              {"gen_ai.operation.name": "update_memory", **mem, "gen_ai.memory.record.count": 1,
               "gen_ai.memory.records": json.dumps(
                   [{"id": "mem_a", "content": "Read-only account: use the rw role"}])}),
        # Task B (fails): retrieval, chat, upsert (one known id, one new), delete, search hits the deleted entry.
        _span(b, "b000000000000001", None, "invoke_agent planner", 100, 110,
              {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", **c}, status=2, kind=1),
        _span(b, "b000000000000002", "b000000000000001", "retrieval docs", 101, 101,
              {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "docs", **c,
               "gen_ai.retrieval.documents": [{"id": "doc_1", "score": 0.8}]}),
        _span(b, "b000000000000003", "b000000000000001", "chat gpt-4o", 102, 103,
              {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
               "gen_ai.usage.input_tokens": 900, **c}),
        _span(b, "b000000000000004", "b000000000000001", "upsert_memory", 103, 103,
              {"gen_ai.operation.name": "upsert_memory", **mem, "gen_ai.memory.record.count": 2,
               "gen_ai.memory.records": [{"id": "mem_c", "content": "x"}, {"id": "mem_d", "content": "y"}]}),
        _span(b, "b000000000000005", "b000000000000001", "delete_memory", 104, 104,
              {"gen_ai.operation.name": "delete_memory", **mem, "gen_ai.memory.record.id": "mem_b"}),
        _span(b, "b000000000000006", "b000000000000001", "search_memory", 105, 105,
              {"gen_ai.operation.name": "search_memory", **mem,
               "gen_ai.memory.records": [{"id": "mem_b", "content": "Task T-2291 is already done", "score": 0.7}]}),
        _span(b, "b000000000000007", "b000000000000001", "chat gpt-4o", 106, 107,
              {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
               "gen_ai.usage.input_tokens": 1000, **c}),
        _span(b, "b000000000000008", "b000000000000001", "execute_tool run_sql", 107, 108,
              {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_sql", **c}),
    ]
    return {
        "resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "demo-agent"}}]},
            "scopeSpans": [{"scope": {"name": "demo.instrumentation", "version": "0.1"}, "spans": spans}],
        }]
    }


# ---------------------------------------------------------------------------------------------
# Synthetic event trace + memory-object table


TYPES = ("episodic", "semantic", "procedural")


def synthetic(rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """80 tasks of one agent. The store saturates; success peaks at a middle store size."""
    rows: list[dict] = []
    objs: dict[str, dict] = {}
    live: list[str] = []
    revoked: set[str] = set()
    step = 0
    n_items = 0
    for k in range(80):
        task = f"T{k:03d}"
        used_revoked = False
        for _ in range(int(rng.integers(4, 9))):
            # Maintenance step (about 6% of steps): rewrite a few entries, nothing else.
            if live and rng.random() < 0.06:
                for it in rng.choice(live, size=min(2, len(live)), replace=False):
                    rows.append({"item": str(it), "step": step, "run": "agent-1", "event": "maintain", "task": task})
                step += 1
                continue
            rows.append({"item": f"q{step}", "step": step, "run": "agent-1", "event": "search", "task": task})
            injected = 0
            if live and rng.random() < 0.9:
                pool = list(live)
                if rng.random() < 0.25:  # now and then a stale entry is still retrieved
                    pool += [x for x in objs if x in revoked][-2:]
                for rank, it in enumerate(rng.choice(pool, size=min(3, len(pool)), replace=False), 1):
                    it = str(it)
                    tok = int(rng.integers(40, 121))
                    rows.append({"item": it, "step": step, "run": "agent-1", "event": "retrieve", "rank": rank,
                                 "task": task})
                    rows.append({"item": it, "step": step, "run": "agent-1", "event": "inject", "tokens": tok,
                                 "task": task})
                    injected += tok
                    used_revoked |= it in revoked or (
                        objs[it]["valid_until"] is not None and step > objs[it]["valid_until"])
                    objs[it]["hit_count"] += 1
                    objs[it]["last_hit_at"] = step
            rows.append({"item": "model:demo", "step": step, "run": "agent-1", "event": "context",
                         "tokens": 900 + injected + int(rng.integers(0, 200)), "task": task})
            # Writes become rarer as the store fills (saturating growth).
            if rng.random() < 0.8 * np.exp(-len(live) / 60):
                it = f"mem{n_items:04d}"
                n_items += 1
                typ = TYPES[int(rng.integers(0, 3))]
                rows.append({"item": it, "step": step, "run": "agent-1", "event": "write", "task": task})
                objs[it] = {"id": it, "type": typ, "subject": f"subject-{int(rng.integers(0, 12))}",
                            "content": f"lesson {it}", "source": {"task_id": task, "step": step},
                            "created_at": step, "last_hit_at": None, "hit_count": 0,
                            "confidence": round(float(rng.uniform(0.5, 0.95)), 2),
                            "decay": {"episodic": "7d", "semantic": "30d", "procedural": "180d"}[typ],
                            "valid_until": step + 300 if typ == "episodic" else None, "supersedes": [],
                            "scope": {"user": "u_102", "project": "p_77"}}
                # A newer conclusion on the same subject supersedes an older one (recency-first).
                same = [x for x in live if objs[x]["subject"] == objs[it]["subject"]]
                if same and rng.random() < 0.3:
                    old = same[0]
                    rows.append({"item": old, "step": step, "run": "agent-1", "event": "supersede", "by": it,
                                 "task": task})
                    objs[it]["supersedes"].append(old)
                    live.remove(old)
                    revoked.add(old)
                live.append(it)
            elif live and rng.random() < 0.05:
                old = live.pop(0)
                rows.append({"item": old, "step": step, "run": "agent-1", "event": "archive", "task": task})
                revoked.add(old)
            step += 1
        # Success peaks around 40 live items; using a revoked entry halves the odds.
        p = 0.85 - 0.012 * abs(len(live) - 40)
        if used_revoked:
            p *= 0.5
        ok = bool(rng.random() < max(0.05, p))
        rows.append({"item": f"task:{task}", "step": step - 1, "run": "agent-1", "event": "task_outcome",
                     "task": task, "outcome": "success" if ok else "failure"})
    # A supersede cycle in the object table: two entries that keep replacing each other.
    a, b = "mem0000", "mem0001"
    for x, y in ((a, b), (b, a)):
        if y not in objs[x]["supersedes"]:
            objs[x]["supersedes"].append(y)
    return rows, list(objs.values())


def main() -> None:
    rng = np.random.default_rng(SEED)
    (HERE / "otel_spans.json").write_text(json.dumps(otel_document(), indent=1) + "\n")
    rows, objs = synthetic(rng)
    with (HERE / "events.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    with (HERE / "objects.jsonl").open("w") as fh:
        for o in objs:
            fh.write(json.dumps(o, separators=(",", ":")) + "\n")
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["event"]] = kinds.get(r["event"], 0) + 1
    print(f"events.jsonl: {len(rows)} rows, {kinds}")
    print(f"objects.jsonl: {len(objs)} objects")


if __name__ == "__main__":
    main()
