"""A data set of files in several formats, read as one table (issue 41).

A folder of rotated logs (``2026-11.parquet`` beside ``2026-12-01.jsonl``...) is one trace. Each format's files
are read by their own :class:`~ctwm_cli.traces.readers.FileReader` (its own checks, types and error locator),
normalised to canonical rows, and the rows joined with ``UNION ALL BY NAME``. The formats must hold the same
columns: otherwise the files of each format and the columns that differ are named, since a column present in
one format only (a ``count`` column, an ``event`` column) would change what the others' rows mean.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..common.errors import InputError
from .base import Check, TraceReader
from .engine import Engine
from .sources import Layout


def _files(reader, layout: Layout) -> str:
    names = [layout.relative(f) for f in reader.layout.files]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


class UnionReader(TraceReader):
    """The files of several formats (``parts``: one reader per format) as one trace."""

    def __init__(self, parts: Sequence[TraceReader], layout: Layout):
        first = parts[0]
        super().__init__(layout.source, "+".join(p.format for p in parts), first.columns, first._required_keep,
                         [k for k in first.keep if k not in first._required_keep], where=first.where,
                         engine=first.options)
        self.parts, self.layout = tuple(parts), layout
        found = [set(p.columns_found) for p in parts]
        if any(f != found[0] for f in found[1:]):
            every = set.union(*found)
            desc = "; ".join(
                f"{p.file_format.title}: {_files(p, layout)} (without {', '.join(sorted(every - f)) or '-'})"
                for p, f in zip(parts, found, strict=True))
            raise InputError(f"{self.source}: holds files of {len(parts)} formats whose columns differ ({desc}): "
                             "read each format as its own trace, or give them the same columns")
        self.columns_found = list(dict.fromkeys(c for p in parts for c in p.columns_found))

    def inputs(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        files = tuple(f for p in self.parts for f in p.inputs()[0])
        dirs = tuple(dict.fromkeys(d for p in self.parts for d in p.inputs()[1]))
        return files, dirs

    def raw_types(self) -> dict[str, str]:
        return {k: v for p in reversed(self.parts) for k, v in p.raw_types().items()}

    def raw_sql(self, engine: Engine) -> str:
        raise NotImplementedError("a data set of several formats is read through canonical_sql")  # pragma: no cover

    def _joined(self, sqls: list[str]) -> str:
        return "(" + " UNION ALL BY NAME ".join(f"(SELECT * FROM ({s}))" for s in sqls) + ")"

    def canonical_sql(self, engine: Engine, *, strict_item: bool) -> tuple[str, list[Check]]:
        sqls, checks = [], []
        for p in self.parts:
            sql, more = p.canonical_sql(engine, strict_item=strict_item)
            sqls.append(sql)
            checks += more
        return f"SELECT * FROM {self._joined(sqls)}", checks

    def values_sql(self, engine: Engine, column: str, group_by: str | None) -> tuple[str, list[Check]]:
        sqls, checks = [], []
        for p in self.parts:
            sql, more = p.values_sql(engine, column, group_by)
            sqls.append(sql)
            checks += more
        return f"SELECT * FROM {self._joined(sqls)}", checks

    def locate(self, engine: Engine, checks: Sequence[Check], exc: Exception) -> InputError:
        """The first part whose own rows fail names the file and row; else DuckDB's message."""
        import duckdb

        for p in self.parts:
            with p.open_engine(preserve_order=True) as own:
                sql, own_checks = p.canonical_sql(own, strict_item=True)
                try:
                    own.con.sql(f"SELECT count(*) FROM ({sql})").fetchall()
                except duckdb.Error as err:
                    return p.error_for(own, own_checks, err)
        return super().locate(engine, checks, exc)
