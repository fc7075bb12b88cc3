"""Memory-object tables: one row per memory object with the metadata ``ctwm health`` uses.

Columns (all but ``id`` optional): ``id``, ``type`` (working / episodic / semantic / procedural),
``subject``, ``content``, ``source``, ``created_at``, ``last_hit_at``, ``hit_count``, ``confidence``,
``decay``, ``valid_until``, ``supersedes`` (a list of ids, one id, or a JSON list as text) and
``scope``. Files: ``.jsonl`` / ``.ndjson`` / ``.json`` (JSON lines or one JSON array), optionally
gzip'd, or ``.parquet``.

A time (``created_at``, ``valid_until``, ``last_hit_at``) is either an ISO-8601 timestamp, compared
with the event trace's ``ts``, or a number, compared with the trace's ``step``; one table uses one
kind. ``valid_until`` null means "no expiry".
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..common.results import ToDict, result
from ..runtime.confine import admit_file, admit_name
from .guard import MAX_DEPTH, json_depth, load_json, read_document
from .mem0 import is_memory_row, memory_objects_rows, per_scope_records

OBJECT_TYPES = ("working", "episodic", "semantic", "procedural")
TIME_FIELDS = ("created_at", "valid_until", "last_hit_at")


@result
class MemoryObjects(ToDict):
    """A memory-object table, indexed by id. Times are floats (seconds or steps, see ``time_kind``)."""

    source: str
    ids: tuple[str, ...]
    types: Mapping[str, str | None]
    created_at: Mapping[str, float | None]
    valid_until: Mapping[str, float | None]
    supersedes: Mapping[str, tuple[str, ...]]
    confidence: Mapping[str, float | None]
    hit_count: Mapping[str, int | None]
    time_kind: str | None  # "timestamp" (ISO 8601, seconds since the epoch), "step", or None
    #: owner: a text (a Mem0 session scope, a namespace) or a mapping of texts ({"user": ..., "project": ...})
    scope: Mapping[str, str | Mapping[str, str] | None] = dataclasses.field(default_factory=dict)
    #: what the memory says (``content``) and what it is about (``subject``), when the table gives them
    content: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    subject: Mapping[str, str | None] = dataclasses.field(default_factory=dict)

    def restrict(self, keep: Callable[[str, str | Mapping[str, str] | None], bool]) -> MemoryObjects:
        """The objects for which ``keep(id, scope)`` holds (one tenant's share of a shared table)."""
        ids = tuple(i for i in self.ids if keep(i, self.scope.get(i)))
        pick = set(ids)

        def sub(m: Mapping) -> dict:
            return {k: v for k, v in m.items() if k in pick}

        return dataclasses.replace(
            self, ids=ids, types=sub(self.types), created_at=sub(self.created_at), valid_until=sub(self.valid_until),
            supersedes=sub(self.supersedes), confidence=sub(self.confidence), hit_count=sub(self.hit_count),
            scope=sub(self.scope), content=sub(self.content), subject=sub(self.subject),
        )

    def to_dict(self) -> dict:
        by_type: dict[str, int] = {}
        for t in self.types.values():
            by_type[t or "unknown"] = by_type.get(t or "unknown", 0) + 1
        return {
            "source": self.source,
            "objects": len(self.ids),
            "by_type": dict(sorted(by_type.items())),
            "with_valid_until": sum(v is not None for v in self.valid_until.values()),
            "superseding": sum(bool(v) for v in self.supersedes.values()),
            "time_kind": self.time_kind,
        }


def read_objects(path: str | Path) -> MemoryObjects:
    """Read a memory-object table (JSONL, JSON array or Parquet)."""
    p = Path(path)
    source = str(path)
    admit_name(source)
    if not p.is_file():
        raise InputError(f"{source}: no such file")
    admit_file(source)  # a config's entry reads only files inside its repository (ctwm_cli.runtime.confine)
    rows = _rows(p, source)
    if not rows:
        raise InputError(f"{source}: memory-object table is empty")
    ids: list[str] = []
    types, created, valid, sup, conf, hits, scope = {}, {}, {}, {}, {}, {}, {}
    content: dict[str, str | None] = {}
    subject: dict[str, str | None] = {}
    kinds: set[str] = set()
    for where, row in rows:
        oid = row.get("id")
        if oid is None or oid == "":
            raise InputError(f"{source}: {where}: missing value in column 'id'")
        oid = str(oid)
        if oid in types:
            raise InputError(f"{source}: {where}: duplicate object id {oid!r}")
        ids.append(oid)
        typ = row.get("type")
        types[oid] = None if typ is None else str(typ)
        times = {}
        for f in TIME_FIELDS:
            value, kind = _time(row.get(f), f, source, where)
            if kind:
                kinds.add(kind)
            times[f] = value
        created[oid], valid[oid] = times["created_at"], times["valid_until"]
        sup[oid] = _id_list(row.get("supersedes"), source, where)
        conf[oid] = _number(row.get("confidence"), "confidence", source, where)
        h = _number(row.get("hit_count"), "hit_count", source, where)
        hits[oid] = None if h is None else int(h)
        content[oid], subject[oid] = _text(row.get("content")), _text(row.get("subject"))
        sc = row.get("scope")
        if isinstance(sc, dict):
            scope[oid] = {str(k): str(v) for k, v in sc.items() if v is not None}
        else:
            scope[oid] = None if sc in (None, "") else str(sc)
    if len(kinds) > 1:
        raise InputError(f"{source}: times mix ISO-8601 timestamps and step numbers; use one kind")
    return MemoryObjects(
        source=source, ids=tuple(ids), types=types, created_at=created, valid_until=valid, supersedes=sup,
        confidence=conf, hit_count=hits, time_kind=next(iter(kinds), None), scope=scope, content=content,
        subject=subject,
    )


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else value if isinstance(value, str) else json.dumps(value, default=str)


def _rows(p: Path, source: str) -> list[tuple[str, dict]]:
    """The object rows of a table; a Mem0 ``get_all()`` / ``search()`` dump becomes object rows
    (:func:`~ctwm_cli.traces.mem0.memory_objects_rows`: expiry as ``valid_until``, owner as ``scope``)."""
    rows = _table_rows(p, source)
    if rows and all(is_memory_row(r) for _, r in rows):
        return [(w, o) for (w, _), o in zip(rows, memory_objects_rows([r for _, r in rows]), strict=True)]
    return rows


def _table_rows(p: Path, source: str) -> list[tuple[str, dict]]:
    """(where, record) of every record of a Parquet table, a JSON array, a ``get_all()`` dump or JSON lines."""
    name = p.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            return _parquet_rows(p, source)
        raw = read_document(p, source)
    except (OSError, EOFError) as exc:
        raise InputError(f"{source}: cannot read ({exc})") from None
    raw, head = _unwrap_dump(raw, source)
    if head == b"[":
        return _array_rows(raw, source)
    return _line_rows(raw, source)


def _parquet_rows(p: Path, source: str) -> list[tuple[str, dict]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(p))
    except Exception as exc:
        raise InputError(f"{source}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    return [(f"row {i + 1}", r) for i, r in enumerate(table.to_pylist())]


def _unwrap_dump(raw: bytes, source: str) -> tuple[bytes, bytes]:
    """(the document, its first byte): a ``get_all()`` dump (one JSON object) becomes the JSON array of its
    records; anything else is returned as it is."""
    head = raw.lstrip()[:1]
    if head != b"{":
        return raw, head
    if b"\n" in raw.strip():  # one JSON object over several lines: get_all()'s {"results": [...]}
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            doc = None  # JSON lines after all: read line by line, with the line in any error
    else:
        doc = load_json(raw, source, "line 1")
    if (recs := _dump_records(doc)) is not None:
        return json.dumps(recs).encode(), b"["
    return raw, head


def _array_rows(raw: bytes, source: str) -> list[tuple[str, dict]]:
    if json_depth(raw) > MAX_DEPTH:
        raise InputError(f"{source}: JSON nested deeper than {MAX_DEPTH} levels")
    data = load_json(raw, source)
    out = []
    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise InputError(f"{source}: element {i + 1}: expected a JSON object")
        out.append((f"element {i + 1}", r))
    return out


def _line_rows(raw: bytes, source: str) -> list[tuple[str, dict]]:
    out = []
    for i, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        r = load_json(line, source, f"line {i}")
        if not isinstance(r, dict):
            raise InputError(f"{source}: line {i}: expected a JSON object, got {type(r).__name__}")
        out.append((f"line {i}", r))
    return out


def _dump_records(doc: Any) -> list | None:
    """The memories of a ``get_all()`` dump: ``{"results": [...]}`` or per scope ``{"alice": [...], ...}``."""
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        return doc["results"]
    return per_scope_records(doc)


def parse_timestamp(value: str) -> float | None:
    """Seconds since the epoch of an ISO-8601 text (``Z`` allowed; naive means UTC), else None."""
    try:
        t = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.timestamp()


def _time(value: Any, field: str, source: str, where: str) -> tuple[float | None, str | None]:
    if value is None or value == "":
        return None, None
    if isinstance(value, _dt.datetime):
        v = value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
        return v.timestamp(), "timestamp"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InputError(f"{source}: {where}: column {field!r} must be a time, got {value!r}")
        return float(value), "step"
    if isinstance(value, str):
        ts = parse_timestamp(value)
        if ts is not None:
            return ts, "timestamp"
        try:
            return float(value), "step"
        except ValueError:
            pass
    raise InputError(f"{source}: {where}: column {field!r} must be an ISO-8601 time or a step, got {value!r}")


def _number(value: Any, field: str, source: str, where: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InputError(f"{source}: {where}: column {field!r} must be a number, got {value!r}") from None
    return float(value)


def _id_list(value: Any, source: str, where: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                value = json.loads(s)
            except (json.JSONDecodeError, RecursionError):
                raise InputError(f"{source}: {where}: column 'supersedes' holds malformed JSON") from None
        else:
            return (s,)
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if v is not None and v != "")
    raise InputError(f"{source}: {where}: column 'supersedes' must be a list of ids, got {type(value).__name__}")
