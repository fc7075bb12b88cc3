"""One vocabulary in every command's JSON (README "Vocabulary"): a walk over every ``ctwm schema`` fails on a
synonym of a canonical name. ``PENDING`` lists the (command, key) pairs not yet renamed, by name, so the list
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

#: not renamed yet (issue 24 follow-up): replay's and bench's paired intervals
PENDING = {
    ("bench longmemeval", "ci_low"), ("bench longmemeval", "ci_high"), ("bench report", "ci_low"),
    ("bench report", "ci_high"), ("bench textworld", "ci_low"), ("bench textworld", "ci_high"),
    ("replay", "ci_low"), ("replay", "ci_high"), ("replay ablation", "ci_low"), ("replay ablation", "ci_high"),
    ("replay compare", "ci_low"), ("replay compare", "ci_high"),
    ("bench longmemeval", "relative_ci_low"), ("bench longmemeval", "relative_ci_high"),
    ("replay", "relative_ci_low"), ("replay", "relative_ci_high"), ("replay ablation", "relative_ci_low"),
    ("replay ablation", "relative_ci_high"), ("replay compare", "relative_ci_low"),
    ("replay compare", "relative_ci_high"), ("replay pareto", "relative_ci_low"),
    ("replay pareto", "relative_ci_high"), ("replay pareto", "tokens_ci_low"), ("replay pareto", "tokens_ci_high"),
    ("replay pareto", "answerable_tail_error_ci_low"), ("replay pareto", "answerable_tail_error_ci_high"),
    ("replay pareto", "task_rate_ci_low"), ("replay pareto", "task_rate_ci_high"),
    ("replay frozen", "tail_ci_low"), ("replay frozen", "tail_ci_high"), ("replay frozen", "ci_low"),
    ("replay frozen", "ci_high"), ("bench report", "quality_ci_low"), ("bench report", "quality_ci_high"),
    ("replay pareto", "ci_low"), ("replay pareto", "ci_high"),
    # lists of rows not yet called results; world grid's rows is also its resumable manifest's key
    ("bench report", "rows"), ("replay frozen", "rows"), ("world grid", "rows"),
}


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
