"""Every column the user names is checked against the trace, like the item column (issue 41).

A column named by a flag (``step_col``, ``event_col``, ``col rank=position``), a notebook argument or the
project's column map must exist: a typo is an :class:`~ctwm_cli.common.errors.InputError` (exit 3) naming where the
name came from, the name, the columns found and the closest one. Before, ``--event-col evnt`` dropped the
trace's own ``event`` column and counted its writes as retrievals, and ``--count-col nope`` turned a counts
table into an events table, both with exit 0.

A table read as events in which every item occurs once, beside an integer column whose name says "count"
(``n``, ``hits``, ``freq``...), is almost surely a counts table under another name: it gets a
:class:`CountsLikeWarning` naming the column and the fix.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Mapping, Sequence

from ..common.errors import CtwmWarning, InputError
from .schema import ColumnMap

#: Names of a per-item count column other than ``count`` (matched case-insensitively, as whole names).
COUNT_LIKE_NAMES = frozenset({
    "n", "cnt", "counts", "count_", "hits", "freq", "frequency", "num", "times", "total", "accesses", "uses",
    "retrievals", "reads", "value_counts", "size",
})
#: ... and name patterns: ``access_count``, ``n_hits``, ``retrieval_counts``, ``count_retrieved``.
_COUNT_LIKE = re.compile(r"^(n_\w+|\w+_(count|counts|cnt|hits|freq|n)|count_\w+|num_\w+)$", re.IGNORECASE)
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                  "UBIGINT", "UHUGEINT")


class CountsLikeWarning(CtwmWarning):
    """An events table whose every item occurs once, beside a column that looks like per-item counts."""


def did_you_mean(name: str, found: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``found``, else ``""``."""
    close = difflib.get_close_matches(name, list(found), n=1, cutoff=0.6)
    if not close:
        close = [f for f in found if f.lower() == name.lower()]
    return f"; did you mean {close[0]!r}?" if close else ""


def named_missing_message(source: str, field: str, column: str, origin: str, found: Sequence[str]) -> str:
    """The one line for a named column the trace lacks: ``origin`` is the parameter that named it."""
    listed = ", ".join(repr(f) for f in found[:30]) + (f" and {len(found) - 30} more" if len(found) > 30 else "")
    what = f"{origin} {column!r}" if origin.endswith("_col") else f"{origin} {field}={column!r}"  # col, config
    return (f"{source}: {what}: no such column (columns found: {listed or 'none'})"
            f"{did_you_mean(column, found)}")


def check_named(source: str, columns: ColumnMap, found: Sequence[str], *, shown: Sequence[str] | None = None) -> None:
    """Refuse the first column the user named (:attr:`ColumnMap.given`) that ``found`` lacks (``shown``: the
    columns the message lists, default ``found``)."""
    have = set(found)
    for field, origin in columns.given.items():
        column = getattr(columns, field)
        if column not in have:
            listed = list(found if shown is None else shown)
            raise InputError(named_missing_message(source, field, column, origin, listed), params=(origin,))


def counts_like(types: Mapping[str, str], columns: ColumnMap, *, untyped: bool = False) -> str | None:
    """The first column of ``types`` that looks like per-item counts (by name, and integer where typed;
    ``untyped``: the reader does not know the types of columns it does not map, as for JSONL)."""
    mapped = set(columns.canonical().values())
    for name, dtype in types.items():
        if name in mapped or not (name.lower() in COUNT_LIKE_NAMES or _COUNT_LIKE.match(name)):
            continue
        if dtype in _INTEGER_TYPES or (untyped and dtype in ("VARCHAR", "JSON")):
            return name
    return None


def warn_if_counts_like(source: str, types: Mapping[str, str], columns: ColumnMap, *, rows: int, items: int,
                        untyped: bool = False) -> None:
    """A :class:`CountsLikeWarning` when every one of ``rows`` is its own item and a counts-like column exists."""
    if rows < 2 or rows != items:
        return
    name = counts_like(types, columns, untyped=untyped)
    if name is not None:
        warning = CountsLikeWarning(
            f"{source}: read as events, and each of its {items:,} items occurs once (all counts equal); column "
            f"{name!r} looks like the count per item: if so, read it with count_col {name}")
        warning.params = ("count_col",)  # type: ignore[attr-defined]  # the CLI shows it as its flag
        warnings.warn(warning, stacklevel=3)
