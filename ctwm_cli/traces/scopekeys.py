"""Scope texts in a trace's ``run`` column: who a row belongs to, readable by any scope key.

The wrappers write a row's owner into ``run`` as a *scope text*: ``key=value`` pairs joined by ``&``,
keys sorted, ``%``, ``&`` and ``=`` inside a value escaped as ``%25``, ``%26``, ``%3D`` — Mem0's own
session-scope key (``agent_id=planner&user_id=alice``), or a LangGraph namespace named by the
wrapper's ``scope_keys`` (``kind=memories&user=alice``). A LangGraph namespace without names is a path
(``memories/alice``). ``--group-by user`` reads the ``user`` (or ``user_id``) part of a scope text when
the trace has no ``user`` column; one search's filter scope *contains* each hit's scope.
"""

from __future__ import annotations

import re

_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)=([^&=]*)$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def escape(value: object) -> str:
    return str(value).replace("%", "%25").replace("&", "%26").replace("=", "%3D")


def unescape(value: str) -> str:
    return value.replace("%3D", "=").replace("%26", "&").replace("%25", "%")


def scope_text(parts: dict[str, object]) -> str | None:
    """``{"user": "alice", "kind": "memories"}`` -> ``kind=memories&user=alice`` (None: no non-empty part)."""
    out = [f"{k}={escape(v)}" for k, v in sorted(parts.items()) if v not in (None, "")]
    return "&".join(out) or None


def parse_scope(text: str | None) -> dict[str, str] | None:
    """The parts of a scope text, else None (the text is not one: a namespace path, an episode id)."""
    if not text:
        return None
    out = {}
    for part in text.split("&"):
        m = _PART.match(part)
        if m is None:
            return None
        out[m.group(1)] = unescape(m.group(2))
    return out


def key_names(key: str) -> tuple[str, ...]:
    """The scope keys ``--group-by key`` reads: ``user`` reads ``user`` or ``user_id``; ``user_id`` reads
    ``user_id`` or ``user``."""
    base = key.removesuffix("_id")
    return tuple(dict.fromkeys((key, f"{base}_id", base)))


def scope_value(text: str | None, key: str) -> str | None:
    """The ``key`` part of a scope text (see :func:`key_names`), else None."""
    parts = parse_scope(text)
    if parts is None:
        return None
    return next((parts[k] for k in key_names(key) if k in parts), None)


def contains(outer: str | None, inner: str | None) -> bool:
    """Whether the scope ``outer`` (a search's filter) contains ``inner`` (a hit's scope): no filter
    contains everything; scope texts by their parts (``user_id=alice`` contains
    ``agent_id=planner&user_id=alice``); paths by prefix (``memories`` contains ``memories/alice``)."""
    if not outer:
        return True
    if outer == inner:
        return True
    if inner is None:
        return False
    a, b = parse_scope(outer), parse_scope(inner)
    if a is not None and b is not None:
        return all(b.get(k) == v for k, v in a.items())
    return a is None and b is None and inner.startswith(outer + "/")


def is_scope_key(key: str) -> bool:
    return bool(_KEY.match(key))


def group_sql(run_sql: str, key: str) -> str:
    """DuckDB expression: the ``key`` part of the scope text in ``run_sql`` (NULL without one)."""
    if not is_scope_key(key):
        raise ValueError(f"not a scope key: {key!r}")
    names = "|".join(re.escape(k) for k in key_names(key))
    raw = f"regexp_extract('&' || CAST({run_sql} AS VARCHAR), '&(?:{names})=([^&]*)', 1)"
    return f"nullif(replace(replace(replace({raw}, '%3D', '='), '%26', '&'), '%25', '%'), '')"
