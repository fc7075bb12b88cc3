"""Notebook entry points: :func:`audit_trace` and :func:`read_trace` take what an agent engineer has.

A source is a path, a glob (one data set, like ``duckdb.read_parquet('dir/*.parquet')``), a pandas
or Polars DataFrame, a pyarrow Table, a ``Counter``/mapping of item -> count, a pandas Series of counts
indexed by item (``value_counts()``), or an iterable of item ids: one reading per kind, tabled in
:mod:`ctwm_cli.traces.in_memory`. Paths go through the library's trace readers; an in-memory source
becomes an Arrow table that DuckDB reads in place (:class:`~ctwm_cli.traces.base.ArrowReader`), so
remapping, the ``where`` filter, event rules, validation and counting are those of ``ctwm audit``, not a
second implementation.

    >>> from ctwm_cli import audit_trace
    >>> audit_trace(df, item_col="memory_id", seed=1)              # doctest: +SKIP
    >>> audit_trace("runs/*.parquet", group_by="run").to_frame()   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from .auditing import AuditResult, audit_many
from .common.errors import UsageError
from .common.labels import trace_name
from .common.results import ToDict, html_table, jsonable, records_frame, result, short_value
from .plots.audit_groups import plot_audit_groups
from .tail.audit import new_seed
from .traces import ColumnMap, ItemCounts, TraceScan, item_counts, open_trace, scan_trace
from .traces.aggregate import event_kinds
from .traces.base import ArrowReader
from .traces.in_memory import as_table


@result
class TraceCounts(ToDict):
    """Per-item counts of a trace: ``counts`` has one entry per group (one if not grouped)."""

    source: str
    scan: TraceScan
    counts: tuple[ItemCounts, ...]

    def __len__(self) -> int:
        return len(self.counts)

    def __iter__(self) -> Iterator[ItemCounts]:
        return iter(self.counts)

    def __getitem__(self, i: int) -> ItemCounts:
        return self.counts[i]

    def to_dict(self) -> dict[str, Any]:
        return {**self.scan.to_dict(), "source": self.source, "counts": [c.to_dict() for c in self.counts]}

    def frame_rows(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.counts]

    def to_arrow(self) -> pa.Table:
        """One row per (group, item): ``group`` (if grouped), ``item``, ``count``, most accessed first."""
        parts = []
        for c in self.counts:
            cols = {"group": pa.repeat(pa.scalar(c.group, pa.string()), c.n_items)} if self.scan.group_by else {}
            parts.append(pa.table({**cols, "item": c.items.cast(pa.string()), "count": pa.array(c.counts)}))
        return pa.concat_tables(parts)

    def to_frame(self):
        """The counts as a pandas DataFrame (``group``, ``item``, ``count``)."""
        return self.to_arrow().to_pandas()

    def __repr__(self) -> str:
        items = sum(c.n_items for c in self.counts)
        events = sum(c.n_events for c in self.counts)
        return (f"TraceCounts(source={short_value(self.source)}, groups={len(self.counts)}, items={items}, "
                f"events={events}, counted={short_value(list(self.counts[0].events) if self.counts else [])})")


@result
class AuditResults(ToDict):
    """Several audits (one per group) with the seed they were derived from; ``to_dict()`` is the
    ``audits`` payload of ``ctwm audit --json`` (plus the seed)."""

    source: str
    seed: int
    audits: tuple[AuditResult, ...]
    groups: tuple[str | None, ...] = ()  # the group value of each audit (``group_by``), in order

    def __len__(self) -> int:
        return len(self.audits)

    def __iter__(self) -> Iterator[AuditResult]:
        return iter(self.audits)

    def __getitem__(self, key: int | str) -> AuditResult:
        """By position, by label (``res["runs[r1]"]``) or by group value (``res["r1"]``)."""
        if isinstance(key, (int, slice)) and not isinstance(key, bool):
            return self.audits[key]
        if isinstance(key, str):
            for labels in ([a.label for a in self.audits], list(self.groups)):
                if key in labels:
                    return self.audits[labels.index(key)]
        known = ", ".join(repr(a.label) for a in self.audits[:5]) + (", ..." if len(self.audits) > 5 else "")
        raise KeyError(f"no audit labelled {key!r} and no group {key!r} (labels: {known})")

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "results": [a.to_dict() for a in self.audits]}

    def frame_rows(self) -> list[dict[str, Any]]:
        """One row per audit: :meth:`AuditResult.summary_row`, which holds its ``source`` and ``group`` (the rows of
        ``ctwm audit --format jsonl``, the same columns in the same order)."""
        return [a.summary_row() for a in self.audits]

    def plot(self, *, ax: Any = None) -> Any:
        """The groups side by side (``ctwm audit --group-by --plot``, paper Fig. 4): α with its standard
        error, p_gof and Vuong's z per group. ``ax``: three axes, or None for a new figure; returns the
        matplotlib Figure."""
        return plot_audit_groups(self.audits, ax=ax)

    def _repr_html_(self) -> str:
        keep = ("group", "source", "n_items", "n_tail", "alpha", "p_gof", "z", "verdict", "reason")
        rows = [{k: v for k, v in jsonable(r).items() if k in keep} for r in self.frame_rows()]
        return html_table(rows, f"{len(self.audits)} audits of {self.source} (seed {self.seed})")

    def __repr__(self) -> str:
        verdicts: dict[str, int] = {}
        for a in self.audits:
            verdicts[a.verdict.verdict] = verdicts.get(a.verdict.verdict, 0) + 1
        tally = ", ".join(f"{k}: {v}" for k, v in sorted(verdicts.items()))
        return (f"AuditResults(source={short_value(self.source)}, audits={len(self.audits)}, seed={self.seed}, "
                f"verdicts={{{tally}}})")

    def to_frame(self):
        return records_frame(self.frame_rows())


def read_trace(
    source: Any,
    *,
    item_col: str | None = None,
    group_by: str | None = None,
    events: str | Sequence[str] | None = None,
    columns: Mapping[str, str] | None = None,
    where: str | None = None,
    label: str | None = None,
) -> TraceCounts:
    """Read ``source`` and count accesses per item (per group with ``group_by``).

    ``item_col`` names the column holding item ids; ``columns`` remaps any other schema field
    (``{"step": "agent_step"}``); ``events`` chooses the event kinds counted (default: ``retrieve``
    if present, else ``inject``); ``where`` is a SQL predicate over the trace's columns applied
    before counting (``"run LIKE 'prod-%' AND step > 100"``); ``label`` names the source in results
    (default: the path, or ``<DataFrame>``, ``<Counter>``... for in-memory data). Grouped audits
    derive each group's seed from its label, so the same label and seed give the same result as
    ``ctwm audit``.
    """
    origins = {**{k: "columns" for k in columns or {}}, **({"item": "item_col"} if item_col else {})}
    cmap = ColumnMap.from_overrides({**(columns or {}), **({"item": item_col} if item_col else {})}, origins=origins)
    events = event_kinds(events)  # the readers' one check (a string is one kind)
    keep = (group_by,) if group_by and group_by not in cmap.canonical() else ()
    if isinstance(source, (str, Path)):
        name = str(source)
        scan = scan_trace(open_trace(name, cmap, keep=keep, where=where), group_by=group_by)
        # named as ctwm audit names it (./x and file://x are x): the same label, so the same grouped seeds and diff
        # pairs
        return _relabel(scan, item_counts(scan, events), label or trace_name(name))
    table, kind = _as_table(source)
    name = label or f"<{kind}>"
    scan = scan_trace(ArrowReader(table, name, "arrow", cmap, keep, where=where), group_by=group_by)
    return _relabel(scan, item_counts(scan, events), name)


def audit_trace(
    source: Any,
    *,
    item_col: str | None = None,
    group_by: str | None = None,
    events: str | Sequence[str] | None = None,
    columns: Mapping[str, str] | None = None,
    where: str | None = None,
    label: str | None = None,
    seed: int | None = None,
    **audit_options: Any,
) -> AuditResult | AuditResults:
    """Audit a trace from whatever holds it (see :func:`read_trace` for ``source`` and the reading
    options). ``audit_options`` are those of :func:`ctwm_cli.audit` (``bootstrap``, ``min_tail``,
    ``p_star``, ``z_star``, ``calibrate``, ``jobs``...). Returns one :class:`AuditResult`, or
    :class:`AuditResults` (one audit per group, in group order) with ``group_by``.
    ``seed=None`` draws a seed, recorded in the result."""
    for bad in ("counts_list", "labels", "counts"):
        if bad in audit_options:
            raise UsageError(f"audit_trace: {bad} is not an audit option (the counts come from source)", params=(bad,))
    if isinstance(source, TraceCounts):  # already read: audit its counts as they are
        given = [n for n, v in {"item_col": item_col, "group_by": group_by, "events": events, "columns": columns,
                                "where": where, "label": label}.items() if v is not None]
        if given:
            raise UsageError(f"audit_trace: {', '.join(given)} apply when reading; source is already counted",
                             params=tuple(given))
        counts = source
    else:
        counts = read_trace(source, item_col=item_col, group_by=group_by, events=events, columns=columns,
                            where=where, label=label)
    seed = new_seed() if seed is None else int(seed)
    results = audit_many(list(counts.counts), seed=seed, **audit_options)
    if counts.scan.group_by is None:
        return results[0]
    return AuditResults(source=counts.source, seed=seed, audits=tuple(results),
                        groups=tuple(c.group for c in counts.counts))


# --------------------------------------------------------------------------------------------
# Sources


def _as_table(source: Any) -> tuple[pa.Table, str]:
    """An in-memory source as an Arrow table (:func:`ctwm_cli.traces.in_memory.as_table` has the readings)."""
    if isinstance(source, (TraceCounts, ItemCounts)):
        raise UsageError(f"source is already counted ({type(source).__name__}); audit it with audit_trace or "
                         "ctwm_cli.audit", params=("source",))
    return as_table(source)


def _relabel(scan: TraceScan, counts: list[ItemCounts], label: str) -> TraceCounts:
    scan = dataclasses.replace(scan, source=label)
    return TraceCounts(source=label, scan=scan, counts=tuple(dataclasses.replace(c, source=label) for c in counts))
