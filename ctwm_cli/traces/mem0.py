"""What Mem0 writes, as trace rows; the mapping is documented in :mod:`ctwm_cli.traces.telemetry`.

Mem0 (``mem0ai`` 2.x) keeps one SQLite database (``history_db_path``, default ``~/.mem0/history.db``)
with a ``history`` table (``id, memory_id, old_memory, new_memory, event, created_at, updated_at,
is_deleted, actor_id, role``) and a ``messages`` table of raw messages. It records no searches and no
owner: ``user_id`` / ``agent_id`` / ``run_id`` live only on the memories themselves (``get_all()``),
and a deleted memory is gone from there. Read here:

* the SQLite database itself (read only, through :mod:`sqlite3`);
* ``Memory.history()`` output or a dump of the ``history`` table, as JSON (array, ``{"results": [...]}``
  or JSON lines);
* ``get_all()`` / ``search()`` output (``{"results": [{"id", "memory", "user_id", ...}]}``, or one per
  scope saved as ``{"alice": [...], "bob": {"results": [...]}}``): memories, not events. These give
  owners (``owners=``) and, as a memory-object table, expiry and scope.

A row is Mem0 history only when its ``event`` is one of Mem0's (ADD, UPDATE, DELETE, NONE) and it has
``memory_id`` and at least one of Mem0's other history fields: an agent log that happens to have a
``memory_id`` and an ``event`` column is an ordinary trace.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from .guard import load_json_documents, read_document
from .sources import is_sqlite

MEM0_EVENTS = {"ADD": "write", "UPDATE": "update", "DELETE": "archive"}
MEM0_EVENT_NAMES = frozenset({*MEM0_EVENTS, "NONE"})
#: Fields of a Mem0 history row besides ``memory_id`` and ``event`` (one of them must be present).
HISTORY_FIELDS = ("old_memory", "new_memory", "created_at", "updated_at", "is_deleted", "actor_id", "role")
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
_MEMORIES_HINT = ("it holds memories, not history events: pass it as --objects to ctwm health, or as --owners to "
                  "ctwm import mem0; the history is Mem0's history.db or Memory.history() output")


def session_scope(record: Mapping[str, Any]) -> str | None:
    """Mem0's own session-scope key of a memory or filter (``agent_id=a&user_id=u``, keys sorted, values
    escaped as Mem0 escapes them), or None without any of user_id / agent_id / run_id."""
    parts = []
    for key in sorted(SCOPE_KEYS):
        val = record.get(key)
        if val not in (None, ""):
            esc = str(val).replace("%", "%25").replace("&", "%26").replace("=", "%3D")
            parts.append(f"{key}={esc}")
    return "&".join(parts) or None


_SCOPE_PART = re.compile(r"^(user_id|agent_id|run_id)=([^&=]*)$")


def scope_parts(scope: str | None) -> dict[str, str] | None:
    """``{"user_id": ..., ...}`` of a session-scope key, else None (the text is not one)."""
    if not scope:
        return None
    out = {}
    for part in scope.split("&"):
        m = _SCOPE_PART.match(part)
        if m is None:
            return None
        out[m.group(1)] = m.group(2).replace("%3D", "=").replace("%26", "&").replace("%25", "%")
    return out


def expiry_instant(expiration_date: Any) -> float | None:
    """When a Mem0 ``expiration_date`` (YYYY-MM-DD) takes effect, in seconds since the epoch: Mem0 hides a
    memory once ``expiration_date < today`` (UTC), i.e. from 00:00 UTC of the next day."""
    if expiration_date in (None, ""):
        return None
    try:
        day = _dt.date.fromisoformat(str(expiration_date)[:10])
    except ValueError:
        return None
    nxt = _dt.datetime.combine(day + _dt.timedelta(days=1), _dt.time(), tzinfo=_dt.UTC)
    return nxt.timestamp()


def parse_time(value: Any) -> float | None:
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


# --------------------------------------------------------------------------------------------
# Recognising what a file is


def is_history_row(row: Any) -> bool:
    return (isinstance(row, dict) and row.get("memory_id") not in (None, "")
            and str(row.get("event") or "").upper() in MEM0_EVENT_NAMES and any(f in row for f in HISTORY_FIELDS))


def is_memory_row(row: Any) -> bool:
    """A memory as ``get_all()`` / ``search()`` return it (``id`` and ``memory``)."""
    return isinstance(row, dict) and row.get("id") not in (None, "") and "memory" in row and "memory_id" not in row


_EVENT_RE = re.compile(rb'"event"\s*:\s*"(?:ADD|UPDATE|DELETE|NONE)"', re.IGNORECASE)
_FIELDS_RE = re.compile(rb'"(?:' + b"|".join(f.encode() for f in HISTORY_FIELDS) + rb')"\s*:')


def looks_like_history(head: bytes) -> bool:
    """The head of a JSON file holds Mem0 history rows: ``memory_id``, an event of Mem0's and one of its
    other history fields (an agent log with ``memory_id`` and ``event: write`` is not)."""
    return (b'"memory_id"' in head and _EVENT_RE.search(head) is not None and _FIELDS_RE.search(head) is not None)


_MEMORY_RE = re.compile(rb'^\s*[\[{]\s*(?:"results"\s*:\s*\[\s*)?\{[^{}]*?"(?:id|memory)"\s*:')


def looks_like_memories(head: bytes) -> bool:
    """The head of a JSON file is a ``get_all()`` / ``search()`` result: memories with ``id`` and
    ``memory`` and no ``memory_id`` (read as a Mem0 file, so that the reader can say what it is)."""
    return (b'"memory"' in head and b'"id"' in head and b'"memory_id"' not in head and b'"item"' not in head
            and _MEMORY_RE.match(head) is not None)


# --------------------------------------------------------------------------------------------
# Reading


def read_history_db(path: str | Path) -> list[dict]:
    """Every row of the ``history`` table of Mem0's SQLite database, oldest first (opened read only)."""
    source = str(path)
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"{source}: cannot open the SQLite database ({exc})") from None
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "history" not in tables:
            raise InputError(f"{source}: an SQLite database without Mem0's history table "
                             f"(tables: {', '.join(sorted(tables)) or 'none'}); expected Mem0's history.db")
        cols = [r[1] for r in con.execute("PRAGMA table_info(history)")]
        if "memory_id" not in cols or "event" not in cols:
            raise InputError(f"{source}: its history table is not Mem0's (columns: {', '.join(cols)})")
        cur = con.execute("SELECT * FROM history ORDER BY rowid")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{source}: not a readable SQLite database ({exc})") from None
    finally:
        con.close()


def per_scope_records(doc: Any) -> list | None:
    """The memories of a per-scope dump, ``{"alice": [...], "bob": {"results": [...]}}`` (one
    ``get_all()`` per user, saved under the user's name), in key order; None if ``doc`` is not one."""
    if not isinstance(doc, dict) or not doc or "results" in doc:
        return None
    out: list = []
    for value in doc.values():
        recs = value.get("results") if isinstance(value, dict) else value
        if not isinstance(recs, list) or not all(is_memory_row(r) for r in recs):
            return None
        out += recs
    return out


def _json_records(path: str | Path, source: str) -> list:
    docs = [doc for _, doc in load_json_documents(path, source)]
    if len(docs) == 1 and isinstance(docs[0], list):
        return docs[0]
    if len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("results"), list):
        return docs[0]["results"]
    if len(docs) == 1 and (scoped := per_scope_records(docs[0])) is not None:
        return scoped
    return docs


def read_memories(path: str | Path) -> list[dict]:
    """The memories of a ``get_all()`` / ``search()`` JSON dump (:class:`InputError` if it is not one)."""
    source = str(path)
    recs = _json_records(path, source)
    if not recs or not all(is_memory_row(r) for r in recs):
        raise InputError(f"{source}: not a Mem0 get_all()/search() result "
                         "(expected {\"results\": [{\"id\", \"memory\", \"user_id\", ...}]})")
    return recs


def read_owners(path: str | Path) -> dict[str, str]:
    """memory id -> session scope, from a ``get_all()`` dump or from a trace the Mem0 wrapper wrote
    (the ``run`` of each item's rows)."""
    source = str(path)
    if is_sqlite(path):
        raise InputError(f"{source}: owners come from a get_all() dump or a wrapper trace, not the history db")
    if str(path).lower().endswith((".parquet", ".pq")) or Path(path).is_dir():
        import pyarrow.dataset as ds

        t = ds.dataset(str(path), format="parquet").to_table(columns=["item", "run", "event"])
        recs = t.to_pylist()
    else:
        recs = _json_records(path, source)
    owners: dict[str, str] = {}
    for r in recs:
        if is_memory_row(r):
            scope = session_scope(r)
            if scope:
                owners[str(r["id"])] = scope
        elif isinstance(r, dict) and r.get("item") not in (None, "") and r.get("run"):
            if r.get("event") not in ("search", "context", "task_outcome"):
                owners.setdefault(str(r["item"]), str(r["run"]))
        else:
            raise InputError(f"{source}: owners must be a Mem0 get_all() result or a ctwm trace with item and run")
    return owners


@dataclasses.dataclass(frozen=True, slots=True)
class Mem0History:
    """Trace rows of a Mem0 history and what the mapping dropped or joined."""

    rows: list[dict]
    records: int  # history rows read
    mapped: int  # of which became a trace row
    unchanged_updates: int  # UPDATE rows whose text did not change (expiry or metadata only)
    with_owner: int  # memories whose owner is known
    memories: int


def history_records(path: str | Path) -> list:
    """The history rows of ``path`` (SQLite database or JSON), with a one-line error for anything else."""
    source = str(path)
    if is_sqlite(path):
        return read_history_db(path)
    head = read_document(path, source, limit=1 << 16)
    if head.lstrip()[:1] not in (b"[", b"{"):
        raise InputError(f"{source}: neither Mem0's SQLite history.db nor JSON (history(), get_all() or search() "
                         "output)")
    hist = _json_records(path, source)
    if hist and all(is_memory_row(h) for h in hist):
        raise InputError(f"{source}: a Mem0 get_all()/search() result ({len(hist):,} memories); {_MEMORIES_HINT}")
    if hist and not any(is_history_row(h) for h in hist):
        keys = sorted({k for h in hist[:100] if isinstance(h, dict) for k in h})[:12]
        raise InputError(f"{source}: not a Mem0 history (expected rows with memory_id, event ADD/UPDATE/DELETE/NONE, "
                         f"old_memory, new_memory, created_at; keys found: {', '.join(keys) or 'none'})")
    return hist


def mem0_history(path: str | Path, owners: Mapping[str, str] | None = None) -> Mem0History:
    """Trace rows of a Mem0 history (``history.db`` or JSON); ``owners`` (memory id -> session scope,
    :func:`read_owners`) fills ``run`` where the history has no owner."""
    source = str(path)
    hist = history_records(path)
    rows, unchanged = [], 0
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
        if ev == "UPDATE" and "old_memory" in h and h.get("old_memory") == h.get("new_memory"):
            unchanged += 1  # Mem0 writes one for an expiry or metadata change: not an edit of the memory
            continue
        when = h.get("created_at") if ev == "ADD" else (h.get("updated_at") or h.get("created_at"))
        meta = h.get("metadata") if isinstance(h.get("metadata"), dict) else {}
        task = h.get("task_id") or h.get("task") or meta.get("task_id") or meta.get("task")
        run = session_scope(h) or (owners or {}).get(str(mid))
        rows.append({
            "item": str(mid), "event": MEM0_EVENTS[ev], "ts": None if when is None else str(when),
            "run": run, "task": None if task is None else str(task), "_t": parse_time(when), "_order": i,
        })
    if not rows:
        raise InputError(f"{source}: no ADD/UPDATE/DELETE rows in the Mem0 history export")
    owner: dict[str, str] = {}
    for r in rows:  # a memory has one owner: a row that names it names it for all of the memory's rows
        if r["run"] is not None:
            owner.setdefault(r["item"], r["run"])
    for r in rows:
        r["run"] = owner.get(r["item"])
    _number_steps(rows)
    items = {r["item"] for r in rows}
    owned = {r["item"] for r in rows if r["run"] is not None}
    return Mem0History(rows=rows, records=len(hist), mapped=len(rows), unchanged_updates=unchanged,
                       with_owner=len(owned), memories=len(items))


def _number_steps(rows: list[dict]) -> None:
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


def mem0_rows(path: str | Path) -> tuple[list[dict], int, int]:
    """Trace rows from a Mem0 history; also the number of history rows and of rows mapped."""
    h = mem0_history(path)
    return h.rows, h.records, h.mapped


def memory_objects_rows(memories: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Memory-object rows (``ctwm health --objects``) of ``get_all()`` / ``search()`` memories.

    ``valid_until`` is when Mem0 starts hiding the memory: the day after ``expiration_date`` at 00:00
    UTC, but never before ``updated_at`` — an expiry set on a memory is only known from the update that
    set it, so a hit before that update is never counted as stale (the dump cannot say when an expiry
    was set if the text changed afterwards; then the bound is later than the truth, never earlier)."""
    out = []
    for m in memories:
        exp = expiry_instant(m.get("expiration_date"))
        upd = parse_time(m.get("updated_at"))
        vu = None if exp is None else max(exp, upd) if upd is not None else exp
        out.append({
            "id": str(m["id"]), "content": m.get("memory"), "created_at": m.get("created_at"),
            "valid_until": None if vu is None else _dt.datetime.fromtimestamp(vu, _dt.UTC).isoformat(),
            "scope": session_scope(m),
        })
    return out
