"""Mem0 history exports as trace rows; the mapping is documented in :mod:`ctwm_cli.traces.telemetry`."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..errors import InputError
from .guard import load_json_documents

MEM0_EVENTS = {"ADD": "write", "UPDATE": "update", "DELETE": "archive"}
#: A Mem0 history export records the store's writes only.
MEM0_NOTE = ("a Mem0 history export holds writes, updates and deletes but no retrievals: `ctwm health` reads it; "
             "audit, concentration and psd need retrieve or inject events")


def _parse_time(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        t = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.UTC)
        return t.timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def mem0_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """Trace rows from a Mem0 history export; also the number of history rows and of rows mapped."""
    source = str(path)
    docs = [doc for _, doc in load_json_documents(path, source)]
    if len(docs) == 1 and isinstance(docs[0], list):
        hist = docs[0]
    elif len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("results"), list):
        hist = docs[0]["results"]
    else:
        hist = docs
    rows = []
    for i, h in enumerate(hist, 1):
        if not isinstance(h, dict):
            raise InputError(f"{source}: history row {i}: expected a JSON object, got {type(h).__name__}")
        mid = h.get("memory_id")
        if mid in (None, ""):
            raise InputError(f"{source}: history row {i}: missing memory_id")
        ev = str(h.get("event") or "").upper()
        if ev == "NONE":
            continue
        if ev not in MEM0_EVENTS:
            raise InputError(
                f"{source}: history row {i}: event must be ADD, UPDATE, DELETE or NONE, got {h.get('event')!r}"
            )
        when = h.get("created_at") if ev == "ADD" else (h.get("updated_at") or h.get("created_at"))
        meta = h.get("metadata") if isinstance(h.get("metadata"), dict) else {}
        task = h.get("task_id") or h.get("task") or meta.get("task_id") or meta.get("task")
        run = h.get("run_id") or h.get("user_id") or h.get("agent_id")
        rows.append({
            "item": str(mid), "event": MEM0_EVENTS[ev], "ts": None if when is None else str(when),
            "run": None if run is None else str(run), "task": None if task is None else str(task),
            "_t": _parse_time(when), "_order": i,
        })
    if not rows:
        raise InputError(f"{source}: no ADD/UPDATE/DELETE rows in the Mem0 history export")
    if all(r["_t"] is not None for r in rows):
        rows.sort(key=lambda r: (r["_t"], r["_order"]))
        step, last = -1, None
        for r in rows:
            if r["_t"] != last:
                step, last = step + 1, r["_t"]
            r["step"] = step
    else:
        for k, r in enumerate(rows):
            r["step"] = k
    for r in rows:
        del r["_t"], r["_order"]
    return rows, len(hist), len(rows)
