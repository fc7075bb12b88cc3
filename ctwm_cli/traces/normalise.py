"""Normalisation to the canonical schema as SQL: each mapped raw column renamed and cast to its schema type.

A value that cannot be cast (a fraction in ``step``, a boolean ``count``, an object where an id belongs) raises
inside DuckDB with :data:`CHECK_MARK`; each expression comes with the :class:`Check` (a SQL condition true on a
bad row) the reader's locator uses to name the first offending row or line (:mod:`.base`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pyarrow as pa

from ..common.errors import InputError
from .engine import quote_ident, quote_literal
from .schema import COLUMN_TYPES, INTEGER_COLUMNS, ColumnMap

#: Raised inside DuckDB by a value normalisation cannot accept; the reader then locates it.
CHECK_MARK = "ctwm-check"

_INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
              "UBIGINT", "UHUGEINT")
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")
_JSON_INT = ("BIGINT", "UBIGINT")


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """A row-level rule: ``condition`` (SQL over the raw relation) is true on a bad row."""

    condition: str
    message: str


def kind_of(target: pa.DataType) -> str:
    if pa.types.is_integer(target):
        return "integers"
    if pa.types.is_floating(target):
        return "numbers"
    return "text"


def _is_int(t: str) -> bool:
    return t in _INT_TYPES


def _is_float(t: str) -> bool:
    return t in _FLOAT_TYPES or t.startswith("DECIMAL")


def error_sql(message: str) -> str:
    return f"error({quote_literal(CHECK_MARK + ': ' + message)})"


def text_expr(c: str, src: str, dtype: str) -> tuple[str, list[Check]]:
    if dtype == "VARCHAR":
        return c, []
    if dtype == "JSON":
        bad = f"json_type({c}) IN ('OBJECT', 'ARRAY')"
        expr = (f"CASE WHEN {bad} THEN {error_sql(f'column {src!r} must be a scalar')} "
                f"WHEN json_type({c}) = 'VARCHAR' THEN {c}->>'$' ELSE CAST({c} AS VARCHAR) END")
        return expr, [Check(bad, f"column {src!r} must be a scalar")]
    if dtype.startswith(("STRUCT", "MAP", "UNION")) or dtype.endswith("]"):
        raise InputError(f"column {src!r} has type {dtype}, expected text")
    return f"CAST({c} AS VARCHAR)", []


def _integer_expr(c: str, src: str, canon: str, dtype: str, json_text: bool) -> tuple[str, list[Check]]:
    if dtype == "JSON":
        t = f"json_type({c})"
        frac = f"({t} = 'DOUBLE' AND CAST({c} AS DOUBLE) <> floor(CAST({c} AS DOUBLE)))"
        bad = f"({c} IS NOT NULL AND {t} NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'NULL')) OR {frac}"
        expr = (f"CASE WHEN {bad} THEN {error_sql(f'column {src!r} must be an integer')} "
                f"WHEN {t} = 'DOUBLE' THEN CAST(CAST({c} AS DOUBLE) AS BIGINT) ELSE CAST({c} AS BIGINT) END")
        return expr, [Check(bad, f"column {src!r} must be an integer")]
    if dtype == "BOOLEAN":
        raise InputError(f"column {src!r} must hold integers, found true/false")
    if _is_int(dtype):
        if dtype.startswith(("HUGE", "UHUGE", "UBIG")):
            big = f"{c} > 9223372036854775807 OR {c} < -9223372036854775808"
            msg = f"column {src!r} is outside the 64-bit integer range"
            return f"CASE WHEN {big} THEN {error_sql(msg)} ELSE CAST({c} AS BIGINT) END", [Check(big, msg)]
        return f"CAST({c} AS BIGINT)", []
    if _is_float(dtype):
        bad = f"({c} <> floor({c}) OR isinf({c}) OR isnan({c}))"
        if dtype.startswith("DECIMAL"):
            bad = f"{c} <> floor({c})"
        msg = f"column {src!r} must hold integers, found a fraction"
        return f"CASE WHEN {bad} THEN {error_sql(msg)} ELSE CAST({c} AS BIGINT) END", [Check(bad, msg)]
    if json_text and dtype == "VARCHAR":  # CSV: a column with a stray word is read as text
        bad = f"({c} IS NOT NULL AND TRY_CAST({c} AS BIGINT) IS NULL)"
        msg = f"column {src!r} must be an integer"
        return f"CASE WHEN {bad} THEN {error_sql(msg)} ELSE TRY_CAST({c} AS BIGINT) END", [Check(bad, msg)]
    raise InputError(f"column {src!r} has type {_arrow_name(dtype)}, expected {kind_of(COLUMN_TYPES[canon])}")


def score_expr(c: str, src: str, dtype: str, json_text: bool) -> tuple[str, list[Check]]:
    if dtype == "JSON":
        bad = f"({c} IS NOT NULL AND json_type({c}) NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'NULL'))"
        msg = f"column {src!r} must be a number"
        return f"CASE WHEN {bad} THEN {error_sql(msg)} ELSE CAST({c} AS DOUBLE) END", [Check(bad, msg)]
    if _is_int(dtype) or _is_float(dtype):
        return f"CAST({c} AS DOUBLE)", []
    if dtype == "BOOLEAN":
        raise InputError(f"column {src!r} must hold numbers, found true/false")
    if json_text and dtype == "VARCHAR":
        bad = f"({c} IS NOT NULL AND TRY_CAST({c} AS DOUBLE) IS NULL)"
        msg = f"column {src!r} must be a number"
        return f"CASE WHEN {bad} THEN {error_sql(msg)} ELSE TRY_CAST({c} AS DOUBLE) END", [Check(bad, msg)]
    raise InputError(f"column {src!r} has type {_arrow_name(dtype)}, expected numbers")


def _arrow_name(dtype: str) -> str:
    return "string" if dtype == "VARCHAR" else dtype.lower()


def canonical_select(
    types: dict[str, str], columns: ColumnMap, extras: Sequence[str], *, lenient_text: bool = False,
) -> tuple[list[str], list[Check]]:
    """SELECT expressions renaming and casting the raw columns, and the row checks they imply.

    ``types`` maps every raw column to its DuckDB type; ``extras`` are source columns carried as
    text (absent ones as nulls). ``lenient_text`` (CSV) lets numeric fields arrive as text and
    checks them row by row. Columns named neither canonically nor as extras pass through unchanged
    under their own names, so a ``where`` predicate can use them.
    """
    out: list[str] = []
    checks: list[Check] = []
    used: set[str] = set()
    for canon, src in columns.canonical().items():
        if src not in types:
            continue
        used.add(src)
        c, dtype = quote_ident(src), types[src]
        if canon in INTEGER_COLUMNS:
            expr, more = _integer_expr(c, src, canon, dtype, lenient_text)
        elif canon == "score":
            expr, more = score_expr(c, src, dtype, lenient_text)
        else:
            expr, more = text_expr(c, src, dtype)
        if canon == "count":
            pos = f"({c} IS NULL OR ({expr}) < 1)"
            more = [*more, Check(f"{c} IS NULL", f"missing value in column {src!r}"),
                    Check(f"({expr}) < 1", f"count must be a positive integer (column {src!r})")]
            expr = f"CASE WHEN {pos} THEN {error_sql('count')} ELSE {expr} END"
        out.append(f"{expr} AS {quote_ident(canon)}")
        checks += more
    canon_names = set(columns.canonical())
    for extra in dict.fromkeys(extras):
        if extra in used or extra in canon_names:
            continue
        used.add(extra)
        if extra not in types:
            out.append(f"CAST(NULL AS VARCHAR) AS {quote_ident(extra)}")
            continue
        expr, more = text_expr(quote_ident(extra), extra, types[extra])
        out.append(f"{expr} AS {quote_ident(extra)}")
        checks += more
    for name in types:
        if name not in used and name not in canon_names:
            out.append(quote_ident(name))
    return out, checks
