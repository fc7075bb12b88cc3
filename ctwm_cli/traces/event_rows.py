"""One trace event as a checked row: what :class:`~ctwm_cli.traces.writer.TraceWriter` appends and what
recovery reads back from a write-ahead log.

Every field is checked before anything is written (integers in the 64-bit range, ``rank`` >= 1,
``tokens`` >= 0, a finite ``score``, text fields as strings without lone surrogates): a rejected event
raises :class:`~ctwm_cli.common.errors.UsageError` naming the argument, so a flush cannot fail on the data.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import pyarrow as pa

from ..common.errors import UsageError
from .schema import CONTEXT_EVENT_KINDS, EVENT_KINDS

__all__ = ["WRITER_SCHEMA", "checked_integer", "checked_text", "event_row"]

#: Columns of a written trace, in order (schema v1 plus the ``ctwm health`` columns).
WRITER_SCHEMA = pa.schema([
    ("item", pa.string()), ("step", pa.int64()), ("run", pa.string()), ("event", pa.string()),
    ("rank", pa.int64()), ("score", pa.float64()), ("tokens", pa.int64()), ("ts", pa.string()),
    ("task", pa.string()), ("outcome", pa.string()), ("by", pa.string()),
])
_TEXT_FIELDS = ("run", "ts", "task", "outcome")
_KINDS = (*EVENT_KINDS, *CONTEXT_EVENT_KINDS)
_INT64 = (-(2**63), 2**63 - 1)


def event_row(kind: Any, item: Any, *, step: Any = None, run: Any = None, rank: Any = None, score: Any = None,
         tokens: Any = None, ts: Any = None, task: Any = None, outcome: Any = None, by: Any = None) -> dict[str, Any]:
    """One event as a row of :data:`WRITER_SCHEMA`, every field checked (UsageError naming it)."""
    if kind not in _KINDS:
        raise UsageError(f"event kind must be one of {', '.join(EVENT_KINDS)}, got {kind!r}", params=("kind",))
    if item is None or isinstance(item, (bool, dict, list, tuple, set, float, bytes)) or not str(item):
        raise UsageError(f"item must be a non-empty id, got {item!r}", params=("item",))
    row: dict[str, Any] = {"item": checked_text("item", str(item)), "step": None, "run": None, "event": kind,
                           "rank": None, "score": None, "tokens": None, "ts": None, "task": None,
                           "outcome": None, "by": None if by is None else checked_text("by", str(by))}
    for name, value, low, what in (("step", step, _INT64[0], ""), ("rank", rank, 1, " (1 = top)"),
                                   ("tokens", tokens, 0, "")):
        if value is not None:
            row[name] = checked_integer(value, name)
            if row[name] < low:
                raise UsageError(f"{name} must be >= {low}{what}, got {value!r}", params=(name,))
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(float(score)):
            raise UsageError(f"score must be a finite number, got {score!r}", params=("score",))
        row["score"] = float(score)
    for name, value in zip(_TEXT_FIELDS, (run, ts, task, outcome), strict=True):
        if value is not None:
            if not isinstance(value, str):
                raise UsageError(f"{name} must be a string, got {type(value).__name__} {value!r}", params=(name,))
            row[name] = checked_text(name, value)
    return row


def checked_text(name: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{name} must be valid Unicode text (it holds a lone surrogate): {value!r}",
                         params=(name,)) from None
    return value


def checked_integer(value: Any, name: str) -> int:
    """``value`` as a 64-bit integer (an integral float allowed), else a UsageError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    if not isinstance(value, numbers.Integral) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"{name} must be an integer, got {value!r}", params=(name,))
    value = int(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise UsageError(f"{name} must fit in 64 bits (|{name}| < 2**63), got {value}", params=(name,))
    return value
