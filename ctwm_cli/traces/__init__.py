"""Trace schema, readers and counting (DuckDB is the one reading and counting engine).

The public names load on first use (PEP 562), so ``--help`` can read the format registry
(:mod:`.formats`, the TRACE help text) without loading pyarrow and the readers."""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "ItemCounts": "counts", "TraceScan": "counts", "item_counts": "aggregate", "scan_trace": "aggregate",
    "TraceReader": "base", "EngineOptions": "engine", "open_trace": "readers",
    "COLUMN_TYPES": "schema", "EVENT_KINDS": "schema", "ColumnMap": "schema",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
