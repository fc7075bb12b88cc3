"""What counting a trace returns (:mod:`ctwm_cli.traces.aggregate` counts): a :class:`TraceScan` of one pass
and the per-item :class:`ItemCounts`, built from the aggregated Arrow table without pandas or
``pyarrow.compute`` on the common path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..common.results import ToDict, result

__all__ = ["INT64_MAX", "ItemCounts", "TraceScan", "counts_of", "int64_numpy", "split_groups"]

INT64_MAX = 2**63 - 1


@result
class ItemCounts(ToDict):
    """Per-item access counts of one trace (or one group of it)."""

    source: str
    group: str | None
    events: tuple[str, ...]
    items: pa.Array
    counts: np.ndarray

    @property
    def n_items(self) -> int:
        return int(self.counts.size)

    @property
    def n_events(self) -> int:
        """The total, exact: past 2**63 summed as Python integers (an int64 sum would wrap)."""
        c = self.counts
        if c.size and int(c.max()) > INT64_MAX // c.size:
            return sum(c.tolist())
        return int(c.sum())

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "group": self.group,
            "events": list(self.events),
            "n_items": self.n_items,
            "n_events": self.n_events,
        }


@result
class TraceScan(ToDict):
    """What one pass over a trace found; ``table`` holds the aggregated ``([group,] event, item, n)``
    (None when scanned with ``table=False``)."""

    source: str
    format: str
    kind: str  # "events" or "counts"
    n_rows: int
    columns_found: tuple[str, ...]
    mapping: dict[str, str]
    group_by: str | None
    step_min: int | None
    step_max: int | None
    events: dict[str, int]
    runs: int | None
    n_items: int
    table: pa.Table | None
    #: how list columns and nested fields were read (``item <- each element of list column 'retrieved' ...``)
    readings: tuple[str, ...] = ()
    #: where each mapping was named: the parameter (``item_col``, ``col``), the project's column map
    #: (``ctwm.toml [columns]``), or ``default``
    mapping_origins: dict[str, str] | None = None

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "format": self.format,
            "kind": self.kind,
            "n_rows": self.n_rows,
            "n_items": self.n_items,
            "runs": self.runs,
            "events": dict(self.events),
            "step_min": self.step_min,
            "step_max": self.step_max,
            "columns_found": list(self.columns_found),
            "mapping": dict(self.mapping),
            "readings": list(self.readings),
            "mapping_origins": dict(self.mapping_origins or {}),
            "group_by": self.group_by,
        }


def split_groups(source: str, events: Sequence[str], t: pa.Table, grouped: bool) -> list[ItemCounts]:
    """One :class:`ItemCounts` per group of a table sorted by group (one in all if not grouped)."""
    events = tuple(events)
    if not grouped:
        return [counts_of(source, None, events, t)]
    import pyarrow.compute as pc

    groups = t.column("group").combine_chunks()
    if len(groups) == 0:
        return []
    change = pc.not_equal(groups.slice(1), groups.slice(0, len(groups) - 1))
    bounds = np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(groups)]))
    return [counts_of(source, groups[s].as_py(), events, t.slice(s, e - s))
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def counts_of(source: str, group: str | None, events: tuple[str, ...], t: pa.Table) -> ItemCounts:
    return ItemCounts(
        source=source,
        group=group,
        events=events,
        items=t.column("item").combine_chunks(),
        counts=int64_numpy(t.column("n")),
    )


def int64_numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A null-free integer column as an int64 array, read from its buffer.

    pyarrow's ``to_numpy`` imports pandas on first use (0.2-0.6 s of every command's start-up, measured
    with ``python -X importtime``); the counts column is a plain BIGINT without nulls, so its data
    buffer is the array.
    """
    arr = column.combine_chunks()
    if arr.type != pa.int64():  # DuckDB's BIGINT already is; a cast loads pyarrow.compute (~0.04 s)
        arr = arr.cast(pa.int64())
    if arr.null_count:
        raise ValueError("count column has missing values")
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr), offset=arr.offset * 8).copy()
