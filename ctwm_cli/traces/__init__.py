"""Trace schema, readers and streaming aggregation into per-item counts."""

from .aggregate import ItemCounts, TraceScan, item_counts, scan_trace
from .readers import TraceReader, open_trace
from .schema import COLUMN_TYPES, EVENT_KINDS, ColumnMap

__all__ = [
    "COLUMN_TYPES",
    "EVENT_KINDS",
    "ColumnMap",
    "ItemCounts",
    "TraceReader",
    "TraceScan",
    "item_counts",
    "open_trace",
    "scan_trace",
]
