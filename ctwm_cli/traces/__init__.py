"""Trace schema, readers and counting (DuckDB is the one reading and counting engine)."""

from .aggregate import ItemCounts, TraceScan, item_counts, scan_trace
from .base import TraceReader
from .engine import EngineOptions
from .readers import open_trace
from .schema import COLUMN_TYPES, EVENT_KINDS, ColumnMap

__all__ = [
    "COLUMN_TYPES",
    "EVENT_KINDS",
    "ColumnMap",
    "EngineOptions",
    "ItemCounts",
    "TraceReader",
    "TraceScan",
    "item_counts",
    "open_trace",
    "scan_trace",
]
