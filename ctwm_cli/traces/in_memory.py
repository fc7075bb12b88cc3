"""What a notebook hands :func:`ctwm_cli.audit_trace`, read as one Arrow table (issue 41).

Each kind of object has one documented reading (``docs/guide/your-logs.md``, "In a notebook"):

==========================================  ==========================================================
source                                      read as
==========================================  ==========================================================
pandas/Polars DataFrame, Arrow Table         a trace table (events, or counts with a ``count`` column)
pandas Series of text                        item ids, one event each
pandas Series of integers whose index holds  per-item counts: index = item, value = count
item ids (``value_counts()``,                (``s.index`` is named or not integers)
``groupby(col).size()``)
pandas Series of integers, unnamed integer   refused: it reads two ways (ids, or counts of items 0..n-1);
index (``df.memory_id``, a RangeIndex)       ``s.astype(str)`` says ids, ``s.to_dict()`` says counts
Polars Series, numpy array, list, iterator   item ids, one event each
dict, ``Counter``                            per-item counts: key = item, value = count
==========================================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..common.errors import InputError, UsageError


def as_table(source: Any) -> tuple[pa.Table, str]:
    """An in-memory source as an Arrow table, and the kind of source it was (for labels)."""
    kind = type(source).__name__
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source]), kind
    if isinstance(source, pa.Table):
        return source, kind
    if type(source).__module__.startswith("polars") and hasattr(source, "collect") and not hasattr(source, "shape"):
        source = source.collect()  # a LazyFrame
    if type(source).__module__.startswith("pandas") and kind == "Series":
        return _pandas_series(source), kind
    if getattr(source, "ndim", None) == 1 or kind == "Series":  # Polars Series, numpy array: the ids
        return _ids_table(source, kind), kind
    if hasattr(source, "__arrow_c_stream__") or hasattr(source, "to_arrow") or kind == "DataFrame":
        try:
            return pa.table(source), kind
        except (TypeError, ValueError, pa.ArrowException) as exc:
            raise InputError(f"<{kind}>: cannot convert to an Arrow table ({exc})") from None
    if isinstance(source, Mapping):
        return counts_table(list(source), list(source.values()), kind), kind
    if isinstance(source, (bytes, bytearray, str)) or not isinstance(source, Iterable):
        raise UsageError(
            f"source must be a path, a DataFrame, a pyarrow Table, a mapping of item -> count or an "
            f"iterable of item ids, got {kind}", params=("source",)
        )
    return pa.table({"item": pa.array([None if i is None else str(i) for i in source], pa.string())}), kind


def counts_table(items: list[Any], counts: list[Any], kind: str) -> pa.Table:
    """``item``/``count`` columns from parallel lists (ids as text; counts checked by the readers)."""
    try:
        values = pa.array(counts, type=pa.int64())
    except (TypeError, ValueError, pa.ArrowException):
        raise InputError(f"<{kind}>: counts must be integers (item -> count)") from None
    return pa.table({"item": pa.array([str(k) for k in items], pa.string()), "count": values})


def _ids_table(source: Any, kind: str) -> pa.Table:
    try:
        ids = pa.array(source)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        raise InputError(f"<{kind}>: cannot convert to an Arrow array ({exc})") from None
    return pa.table({"item": ids if ids.type == pa.string() else ids.cast(pa.string())})


def _pandas_series(s: Any) -> pa.Table:
    """A pandas Series: counts when its index holds the items (see the module table), else ids."""
    import pandas as pd

    if not pd.api.types.is_integer_dtype(s.dtype):
        if pd.api.types.is_float_dtype(s.dtype) and _labelled(s, pd):
            raise InputError("<Series>: the values are fractions, not counts (value_counts(normalize=True)?): "
                             "pass the counts (value_counts()) or the ids themselves")
        return _ids_table(s, "Series")
    if isinstance(s.index, pd.MultiIndex):
        raise UsageError(f"source: a Series counted by {s.index.nlevels} keys ({', '.join(map(str, s.index.names))}); "
                         "count by the item alone, or pass series.reset_index() as a DataFrame with group_by",
                         params=("source",))
    if not _labelled(s, pd):
        raise UsageError(
            "source: a Series of integers with an unnamed integer index reads two ways: as item ids "
            "(pass series.astype(str)) or as counts of the items in its index (pass series.to_dict())",
            params=("source",))
    if s.isna().any():
        raise InputError("<Series>: missing count (the Series holds NaN or None)")
    return counts_table(s.index.tolist(), s.tolist(), "Series")


def _labelled(s: Any, pd: Any) -> bool:
    """Whether the index of ``s`` names things (items) rather than numbering rows: ``value_counts()`` and
    ``groupby(col).size()`` name it after the column; ids as text are labels whatever the name."""
    return s.index.name is not None or not pd.api.types.is_integer_dtype(s.index.dtype)
