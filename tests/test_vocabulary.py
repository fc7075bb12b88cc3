"""One vocabulary in every command's JSON (docs/reference.md, "Vocabulary"): a walk over every ``ctwm schema``
fails on a synonym of a canonical name. ``PENDING`` lists the (command, key) pairs not yet renamed, by name, so the list
can only shrink: a pending pair that no longer occurs fails too (remove it from the list)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ctwm_cli.cli.schemas import COMMANDS, command_schema

#: synonym -> the one name the vocabulary uses for it
FORBIDDEN = {
    "audits": "results (the list of per-subject results)",
    "traces": "results (the list of per-subject results)",
    "rows": "results (a list of per-subject results) or n_rows (a count of trace rows)",
    "distinct_items": "n_items",
    "skew": "skewness",
    "total": "n_events",
    "ci_low": "confidence_interval: {low, high, level}",
    "ci_high": "confidence_interval: {low, high, level}",
}
#: intervals written as flat <metric>_ci_low/_ci_high pairs: the vocabulary's shape is {low, high, level}
FORBIDDEN_SUFFIXES = ("_ci_low", "_ci_high", "_ci")

#: not renamed yet: none (the list may only shrink; a new synonym is renamed, not listed here)
PENDING: set[tuple[str, str]] = set()


def _keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, sub in schema.get("properties", {}).items():
            yield key
            yield from _keys(sub)
        for part in ("items", "additionalProperties"):
            yield from _keys(schema.get(part))
        for sub in [*schema.get("anyOf", []), *schema.get("prefixItems", [])]:
            yield from _keys(sub)


def synonyms() -> set[tuple[str, str]]:
    found = set()
    for command in COMMANDS:
        for key in _keys(command_schema(command)):
            if key in FORBIDDEN or key.endswith(FORBIDDEN_SUFFIXES):
                found.add((command, key))
    return found


def test_no_command_writes_a_synonym():
    bad = sorted(synonyms() - PENDING)
    assert not bad, "; ".join(f"ctwm {c}: {k!r} (say {FORBIDDEN.get(k, 'confidence_interval')})" for c, k in bad)


def test_the_pending_list_only_shrinks():
    gone = sorted(PENDING - synonyms())
    assert not gone, f"renamed, so remove from PENDING: {gone}"


@pytest.mark.parametrize("key", ["audits", "rows", "skew"])
def test_the_walk_sees_nested_keys(key):
    """The walk reaches keys inside arrays and nested objects (so a synonym cannot hide there)."""
    schema = {"properties": {"a": {"type": "array", "items": {"properties": {"b": {"anyOf": [
        {"properties": {key: {}}}]}}}}}}
    assert key in set(_keys(schema))
