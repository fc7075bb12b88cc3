"""Trace schema v1 (see README "Trace schema"): canonical columns, their types, and remapping."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence

import pyarrow as pa

from ..common.errors import UsageError

TRACE_SCHEMA_VERSION = 1

#: Canonical column -> Arrow type the readers normalise it to.
COLUMN_TYPES: dict[str, pa.DataType] = {
    "item": pa.string(),
    "step": pa.int64(),
    "run": pa.string(),
    "event": pa.string(),
    "rank": pa.int64(),
    "score": pa.float64(),
    "tokens": pa.int64(),
    "count": pa.int64(),
}
#: Columns read as plain strings whatever their source type (``ts`` is kept as text).
TEXT_COLUMNS = ("ts",)

EVENT_KINDS = ("retrieve", "inject", "write", "update", "supersede", "invalidate", "archive", "evict", "maintain",
               "read", "restore")
#: ``read``: the item was read by key (a store's ``get()``): a use, not a retrieval hit. ``restore``: an
#: expired item is live again (its expiry cleared or moved later, or a read refreshed an expired TTL
#: before the store swept it). The transitions of every kind: :mod:`ctwm_cli.health.lifecycle`.
#: Rows that carry no memory item (``ctwm health``; telemetry import): ``search`` marks a retrieval
#: query (so queries returning nothing are visible), ``context`` carries the prompt size of a model
#: call in ``tokens``, ``task_outcome`` carries a task's result in the ``outcome`` column.
CONTEXT_EVENT_KINDS = ("search", "context", "task_outcome")
#: Optional extra columns of an event trace used by ``ctwm health``: the task a row belongs to, a
#: task's outcome, and (on ``supersede`` rows) the item that supersedes ``item``.
HEALTH_COLUMNS = ("task", "outcome", "by")
DEFAULT_EVENT = "retrieve"
#: A Mem0 history export records the store's writes only.
MEM0_NOTE = ("a Mem0 history export holds writes, updates and deletes but no retrievals: `ctwm health` reads it; "
             "audit, concentration and psd need retrieve or inject events (Mem0 records no searches: "
             "ctwm_cli.integrations.mem0 logs them)")
#: Column names that hold who or what a row belongs to, never the memory item itself.
_OWNER_IDS = frozenset({"run_id", "session_id", "user_id", "agent_id", "trace_id", "span_id", "task_id", "thread_id"})
INTEGER_COLUMNS = frozenset({"step", "rank", "tokens", "count"})


#: The fields of a :class:`ColumnMap`: the schema's columns, in schema order.
FIELDS = ("item", "step", "run", "event", "rank", "score", "tokens", "count", "ts")


@dataclasses.dataclass(frozen=True, slots=True)
class ColumnMap:
    """Which source column holds each canonical column (``--item-col memory_id`` and friends).

    ``given`` records each field the user named and where it was named (``{"step": "step_col"}``, or the
    project's column map): a named column must exist in the trace (:mod:`.column_checks`), while a default
    one is read when present."""

    item: str = "item"
    step: str = "step"
    run: str = "run"
    event: str = "event"
    rank: str = "rank"
    score: str = "score"
    tokens: str = "tokens"
    count: str = "count"
    ts: str = "ts"
    given: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, str | None] | None = None, *,
                       origins: Mapping[str, str] | None = None) -> ColumnMap:
        """Build a map from ``{canonical: source}``; ``None`` values keep the default. ``origins`` names where
        each override came from (default ``{field}_col``, the parameter that names it)."""
        overrides = {k: v for k, v in (overrides or {}).items() if v}
        unknown = sorted(set(overrides) - set(FIELDS))
        if unknown:
            close = [c for u in unknown for c in difflib.get_close_matches(u, FIELDS, n=1)]
            hint = f"; did you mean {', '.join(close)}?" if close else f" (fields: {', '.join(FIELDS)})"
            raise UsageError(f"unknown trace column(s) to remap: {', '.join(unknown)}{hint}", params=())
        given = {k: (origins or {}).get(k, f"{k}_col") for k in overrides}
        cmap = cls(**overrides, given=given)
        sources = [getattr(cmap, f) for f in FIELDS]
        dup = sorted({s for s in sources if sources.count(s) > 1})
        if dup:
            raise UsageError(f"column(s) mapped to more than one trace field: {', '.join(dup)}", params=())
        return cmap

    def canonical(self) -> dict[str, str]:
        """``{canonical name: source name}`` for every field."""
        return {f: getattr(self, f) for f in FIELDS}


def item_column_guess(found: Sequence[str]) -> str | None:
    """The found column most likely to hold the item id (``id``, ``memory_id``, ``doc_id``...), else None."""
    for name in found:
        low = name.lower()
        if low in ("id", "item_id", "key") or (low.endswith(("_id", "id")) and low not in _OWNER_IDS):
            return name
    return None


def missing_column_message(source: str, missing: str, found: Sequence[str], *, item: bool = True) -> str:
    """The one line for a trace without a required column, naming a likely item column when there is one.

    ``item``: the missing column is the item column. It names the parameter ``item_col`` (the CLI shows
    its flag)."""
    guess = item_column_guess(found) if item else None
    hint = f"remap with item_col {guess}" if guess else "remap with item_col or the matching *_col option"
    return f"{source}: missing column {missing!r} (columns found: {', '.join(found) if found else 'none'}); {hint}"
