"""List columns and nested fields (issue 41): the two shapes real agent logs have beside flat columns.

- A **list column** as the item column (``"retrieved": ["m1", "m2"]``, one row per step): each element is one
  event, its 1-based position in the list is its ``rank`` (the order the retriever returned them), and an empty
  or null list is a step that retrieved nothing. Elements may be objects: ``retrieved.id`` reads the ``id`` of
  each.
- A **nested field** (``"memory": {"id": "m1"}``), named by a dotted path (``memory.id``), for any mapped
  column. A column whose name really is ``memory.id`` is read as itself.

Both are SQL over the raw relation (DuckDB's ``unnest``/``generate_subscripts`` over a list, ``struct_extract``
over a struct, ``json_extract`` over JSON text), put beneath the normalisation of :mod:`.base`, so the checks,
the row locator and counting are unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..common.errors import InputError
from .engine import quote_ident, quote_literal
from .schema import ColumnMap


@dataclasses.dataclass(frozen=True, slots=True)
class ColumnPath:
    """A mapped column read from inside another: ``name`` as the user gave it, its top-level ``root`` column,
    the field ``path`` inside it, and whether the root is a list exploded into one row per element."""

    field: str
    name: str
    root: str
    path: tuple[str, ...]
    explode: bool

    def describe(self) -> str:
        """What ``ctwm inspect`` says was done."""
        inner = f"field {'.'.join(self.path)!r} of " if self.path else ""
        if self.explode:
            return (f"{self.field} <- {inner}each element of list column {self.root!r} (one event per element, "
                    "rank = its 1-based position)")
        return f"{self.field} <- {inner}column {self.root!r}"


def shape_of(dtype: str) -> str:
    """``list``, ``struct``, ``json`` (not known until read) or ``scalar``, from a DuckDB type name."""
    if dtype.endswith("]"):
        return "list"
    if dtype.startswith(("STRUCT", "MAP")):
        return "struct"
    return "json" if dtype == "JSON" else "scalar"


def resolve_paths(columns: ColumnMap, kinds: Mapping[str, str]) -> tuple[ColumnPath, ...]:
    """The mapped columns that are lists (the item column only) or dotted paths into another column."""
    out = []
    for field, src in columns.canonical().items():
        if src in kinds:
            if field == "item" and kinds[src] == "list":
                out.append(ColumnPath(field, src, src, (), True))
            continue
        parts = src.split(".")
        for i in range(len(parts) - 1, 0, -1):
            root = ".".join(parts[:i])
            if root in kinds and kinds[root] in ("struct", "json", "list"):
                if kinds[root] == "list" and field != "item":
                    raise InputError(f"column {root!r} is a list: only the item column may be read from a list")
                out.append(ColumnPath(field, src, root, tuple(parts[i:]), kinds[root] == "list"))
                break
    return tuple(out)


def _field(expr: str, path: tuple[str, ...], dtype: str) -> str:
    if not path:
        return expr
    if dtype in ("JSON", "VARCHAR"):
        return f"json_extract({expr}, {quote_literal('$' + ''.join(f'.{quote_ident(p)}' for p in path))})"
    for p in path:
        expr = f"struct_extract({expr}, {quote_literal(p)})"
    return expr


def shaped_sql(raw: str, paths: tuple[ColumnPath, ...], types: Mapping[str, str], rank: str) -> str:
    """``raw`` with each of ``paths`` added as a column named as the user named it; an exploded list's
    position as the column ``rank``."""
    if not paths:
        return raw
    add, drop = [], []
    for p in paths:
        dtype = types.get(p.root, "JSON")
        base = quote_ident(p.root)
        if not p.explode:
            add.append(f"{_field(base, p.path, dtype)} AS {quote_ident(p.name)}")
            continue
        if rank in types:
            raise InputError(f"list column {p.root!r}: its positions are the ranks, and column {rank!r} exists "
                             "too: drop one, or remap rank to another column")
        native = shape_of(dtype) == "list"
        items = base if native else f"CAST({base} AS JSON[])"
        elem_type = dtype[:-2] if native else "JSON"
        elem = f"list_transform({items}, lambda e: {_field('e', p.path, elem_type)})" if p.path else items
        add += [f"unnest({elem}) AS {quote_ident(p.name)}", f"generate_subscripts({items}, 1) AS {quote_ident(rank)}"]
        if p.name == p.root:
            drop.append(quote_ident(p.root))
    star = f"* EXCLUDE ({', '.join(drop)})" if drop else "*"
    return f"(SELECT {star}, {', '.join(add)} FROM {raw})"
