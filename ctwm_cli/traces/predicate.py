"""``where``: a row predicate over a trace's columns, never SQL access.

A ``where`` string may arrive from a config in a pull request, so it is parsed by DuckDB's own
parser (``json_serialize_sql``) and its syntax tree is checked against an allow-list before any
query sees it: column references, literals, comparison / boolean / arithmetic operators, ``LIKE``,
``ILIKE``, ``GLOB``, ``SIMILAR TO``, ``IN`` (a list), ``BETWEEN``, ``IS [NOT] NULL``, ``CASE``,
casts and the scalar string, date/time and math functions below. Everything else is refused with
the token that was refused: subqueries (``(SELECT ...)``, ``EXISTS``, ``IN (SELECT ...)``), table
functions (``read_text``, ``glob``), ``error()``, ``getenv``, ``current_setting``, aggregates,
window functions, lambdas, parameters (``$1``, ``?``), positional references and anything that is
not one predicate (``UNION``, a second statement, ``ORDER BY``).

The parse checks the predicate in the same surroundings it runs in (``SELECT * FROM t WHERE (…)``),
so text that closes the parenthesis to append a clause of its own parses as something other than
one plain ``SELECT`` and is refused. The engine sandbox (:class:`ctwm_cli.traces.engine.Engine`)
is the second wall: a predicate that got through could still read no file but the trace's own.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ..common.errors import UsageError
from ..runtime.confine import active

#: Expression classes (DuckDB's parsed-expression ``class``) a predicate may contain.
_CLASSES = frozenset({
    "COLUMN_REF", "CONSTANT", "COMPARISON", "CONJUNCTION", "OPERATOR", "BETWEEN", "CASE", "CAST", "TYPE",
    "FUNCTION", "COLLATE",
})
#: ``OPERATOR`` kinds that may appear (``NOT``, ``IS [NOT] NULL``, ``IN (list)``, ``COALESCE``, indexing).
_OPERATORS = frozenset({
    "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN",
    "OPERATOR_COALESCE", "OPERATOR_NULLIF", "ARRAY_EXTRACT", "ARRAY_SLICE", "STRUCT_EXTRACT",
})
#: Operators DuckDB writes as functions: arithmetic, concatenation, LIKE/ILIKE/GLOB and their negations.
_OPERATOR_FUNCTIONS = frozenset({
    "+", "-", "*", "/", "//", "%", "^", "**", "||", "~~", "!~~", "~~*", "!~~*", "~~~", "like_escape",
    "not_like_escape", "ilike_escape", "not_ilike_escape",
})
#: Scalar functions a predicate may call: strings, regular expressions, dates and times, math,
#: null handling and type checks. None of them reads a file, the network, the environment or a setting.
SCALAR_FUNCTIONS = frozenset({
    # strings
    "lower", "lcase", "upper", "ucase", "length", "len", "strlen", "char_length", "character_length",
    "substr", "substring", "left", "right", "trim", "ltrim", "rtrim", "lpad", "rpad", "concat", "concat_ws",
    "replace", "reverse", "repeat", "split_part", "strpos", "instr", "position", "starts_with", "prefix",
    "ends_with", "suffix", "contains", "like", "ilike", "regexp_matches", "regexp_full_match",
    "regexp_replace", "regexp_extract", "ascii", "chr", "md5", "hash", "format", "printf",
    "string_split", "str_split", "list_contains", "list_has", "array_contains", "list_value",
    # dates and times
    "date_part", "datepart", "date_trunc", "datetrunc", "date_diff", "datediff", "date_sub", "datesub",
    "date_add", "epoch", "epoch_ms", "epoch_us", "epoch_ns", "year", "month", "day", "dayofmonth", "hour",
    "minute", "second", "millisecond", "microsecond", "dayofweek", "isodow", "dayofyear", "week",
    "weekofyear", "quarter", "strftime", "strptime", "try_strptime", "to_timestamp", "make_date",
    "make_time", "make_timestamp", "current_date", "today", "now", "current_timestamp", "to_days",
    "to_hours", "to_minutes", "to_seconds", "to_milliseconds", "trunc",
    # math
    "abs", "ceil", "ceiling", "floor", "round", "sqrt", "cbrt", "ln", "log", "log10", "log2", "exp",
    "pow", "power", "greatest", "least", "mod", "sign", "isnan", "isinf", "isfinite", "even",
    # nulls and types
    "coalesce", "ifnull", "nullif", "typeof",
})
#: Functions a predicate from a config may not call: each can allocate without bound from a short text
#: (``repeat(item, 10^8)``, ``lpad(item, 10^9, 'x')``, ``format('{:>1000000000}', item)``, a replace that
#: multiplies its input at every nesting level, a list built from literals). A ``where`` typed by the user
#: keeps them; one from a config (a process confined by ``ctwm check``) is refused them.
UNBOUNDED_FUNCTIONS = frozenset({
    "repeat", "lpad", "rpad", "format", "printf", "replace", "regexp_replace", "list_value", "string_split",
    "str_split", "range", "generate_series", "string_agg", "list", "array_agg", "concat", "concat_ws",
})
#: Bounds on any predicate: its text, and the expressions in its syntax tree (a 10^6-element IN list
#: takes DuckDB's parser 20 s and a tree walk deeper than Python's stack).
MAX_CHARS, MAX_TERMS = 65_536, 10_000
#: Tighter bounds for a predicate from a config: a row filter is a few comparisons, not a program.
CONFIG_MAX_CHARS, CONFIG_MAX_TERMS = 2_000, 200
_PLACEHOLDER = "ctwm_rows"


def check_where(where: str | None) -> str | None:
    """``where`` if it is one allowed row predicate, else a :class:`UsageError` quoting it."""
    if where is None:
        return None
    if not isinstance(where, str) or not where.strip():
        raise UsageError("where must be a non-empty predicate over the trace's columns", params=("where",))
    return _checked(where, active() is not None)


def _short(where: str) -> str:
    """The predicate as messages quote it: at most 80 characters."""
    return repr(where if len(where) <= 80 else where[:77] + "...")


@functools.lru_cache(maxsize=64)
def _checked(where: str, from_config: bool) -> str:
    """One parse per distinct predicate (options and every reader of a run check the same string).
    ``from_config``: the process runs a config's entry (:mod:`ctwm_cli.runtime.confine`), so the tighter bounds
    and the bounded function list apply."""
    chars, terms = (CONFIG_MAX_CHARS, CONFIG_MAX_TERMS) if from_config else (MAX_CHARS, MAX_TERMS)
    where_from = "a where from a config" if from_config else "a where"
    if "\x00" in where:
        raise UsageError(f"where: {_short(where)} holds a NUL character, which no predicate may", params=("where",))
    if len(where) > chars:
        raise UsageError(f"where: {where_from} may be at most {chars:,} characters long, this one has "
                         f"{len(where):,} ({_short(where)})", params=("where",))
    tree = _parse(where)
    walk = _Walk(where, terms, where_from, UNBOUNDED_FUNCTIONS if from_config else frozenset())
    try:
        walk.statement(tree)
    except RecursionError:
        raise UsageError(f"where: {_short(where)} is nested too deeply", params=("where",)) from None
    return where


@functools.lru_cache(maxsize=1)
def _parser():
    """An empty, sealed DuckDB connection that only ever parses (opening one costs ~40 ms)."""
    import duckdb

    con = duckdb.connect(config={"enable_external_access": False, "autoload_known_extensions": False,
                                 "autoinstall_known_extensions": False, "lock_configuration": True})
    return con


def _parse(where: str) -> dict[str, Any]:
    import duckdb

    sql = f"SELECT * FROM {_PLACEHOLDER} WHERE ({where})"
    try:
        with _parser().cursor() as cur:  # a cursor per call: safe from any thread
            text = cur.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0]
        doc = json.loads(text)
    except (duckdb.Error, ValueError) as exc:  # a NUL byte or the like, before any parse
        first = (str(exc).strip().splitlines() or ["syntax error"])[0]
        raise UsageError(f"where: not a SQL predicate: {_short(where)} ({first[:200]})", params=("where",)) from None
    except RecursionError:
        raise UsageError(f"where: {_short(where)} is nested too deeply", params=("where",)) from None
    if doc.get("error"):
        first = (str(doc.get("error_message", "")).strip().splitlines() or ["syntax error"])[0]
        raise UsageError(f"where: not a SQL predicate: {_short(where)} ({first[:200]})", params=("where",))
    return doc


def _refuse(where: str, token: str) -> UsageError:
    return UsageError(
        f"where: {token} is not allowed in {_short(where)} (a row filter uses columns, literals, operators, "
        "LIKE, IN, BETWEEN, IS NULL, CASE, casts and scalar functions)",
        params=("where",),
    )


class _Walk:
    """One check of a parsed predicate: the allow-list, less ``banned`` functions, and at most ``terms``
    expressions."""

    def __init__(self, where: str, terms: int, where_from: str, banned: frozenset[str]) -> None:
        self.where, self.terms, self.where_from, self.banned, self.seen = where, terms, where_from, banned, 0

    def statement(self, doc: dict[str, Any]) -> None:
        where = self.where
        statements = doc.get("statements") or []
        if len(statements) != 1:
            raise _refuse(where, "more than one statement")
        node = statements[0].get("node") or {}
        if statements[0].get("named_param_map"):
            raise _refuse(where, "a parameter")
        if node.get("type") != "SELECT_NODE":
            raise _refuse(where, "a set operation (UNION, EXCEPT, INTERSECT)")
        from_table = node.get("from_table") or {}
        plain = (
            from_table.get("type") == "BASE_TABLE" and from_table.get("table_name") == _PLACEHOLDER
            and not from_table.get("sample") and not from_table.get("at_clause")
            and [s.get("class") for s in node.get("select_list", [])] == ["STAR"]
            and not node.get("modifiers") and not (node.get("cte_map") or {}).get("map")
            and not node.get("group_expressions") and not node.get("group_sets") and not node.get("having")
            and not node.get("qualify") and not node.get("sample")
        )
        if not plain:
            raise _refuse(where, "a clause of its own (ORDER BY, LIMIT, GROUP BY, HAVING, a table)")
        self.expression(node.get("where_clause"))

    def expression(self, expr: Any) -> None:
        """Walk every nested expression; the first one outside the allow-list is refused by name."""
        if isinstance(expr, list):
            for item in expr:
                self.expression(item)
            return
        if not isinstance(expr, dict):
            return
        cls = expr.get("class")
        if cls is not None:
            self.seen += 1
            if self.seen > self.terms:
                raise UsageError(f"where: {self.where_from} may hold at most {self.terms:,} terms (columns, "
                                 f"literals, operators, calls); {_short(self.where)} holds more", params=("where",))
            self.node(expr, cls)
        for key, value in expr.items():
            ordered = value.get("orders") if isinstance(value, dict) else value
            if (key == "filter" and value) or (key == "order_bys" and ordered):
                raise _refuse(self.where, "an aggregate's FILTER or ORDER BY")
            if isinstance(value, (dict, list)):
                self.expression(value)

    def node(self, expr: dict[str, Any], cls: str) -> None:
        where = self.where
        if cls not in _CLASSES:
            names = {"SUBQUERY": "a subquery", "PARAMETER": "a parameter", "WINDOW": "a window function",
                     "LAMBDA": "a lambda", "STAR": "*", "POSITIONAL_REFERENCE": "a positional reference",
                     "COLUMN_REF": "a column"}
            raise _refuse(where, names.get(cls, f"a {cls.lower().replace('_', ' ')} expression"))
        if cls == "OPERATOR" and expr.get("type") not in _OPERATORS:
            raise _refuse(where, f"the operator {str(expr.get('type', '')).lower()}")
        if cls == "COLUMN_REF" and len(expr.get("column_names") or []) > 2:
            raise _refuse(where, "a qualified column name")
        if cls == "FUNCTION":
            name = str(expr.get("function_name", ""))
            qualified = expr.get("schema") or expr.get("catalog")
            allowed = name in _OPERATOR_FUNCTIONS if expr.get("is_operator") else name in SCALAR_FUNCTIONS
            if qualified or not (allowed or name in _OPERATOR_FUNCTIONS) or expr.get("distinct"):
                raise _refuse(where, f"the function {name}()")
            if name.lower() in self.banned:
                raise UsageError(f"where: the function {name}() is not allowed in {self.where_from} "
                                 f"({_short(where)}): it can allocate without bound", params=("where",))
