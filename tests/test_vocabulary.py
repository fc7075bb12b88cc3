"""One vocabulary in every command's JSON (docs/reference.md, "Vocabulary"): a walk over every ``ctwm schema``
fails on a synonym of a canonical name. ``PENDING`` lists the (command, key) pairs not yet renamed, by name, so the list
can only shrink: a pending pair that no longer occurs fails too (remove it from the list)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ctwm_cli.cli.schemas import command_schema, commands

COMMANDS = commands()

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
    "lead": "summary (the lead paragraph)",
    "lede": "summary (the lead paragraph)",
    "narrative": "summary (the lead paragraph)",
    "plain_summary": "summary (the lead paragraph)",
    "summary_text": "summary (the lead paragraph)",
}
#: intervals written as flat <metric>_ci_low/_ci_high pairs: the vocabulary's shape is {low, high, level}
FORBIDDEN_SUFFIXES = ("_ci_low", "_ci_high", "_ci")

#: not renamed yet (the list may only shrink; a new synonym is renamed, not listed here). Empty since the per-τ
#: ``rows`` of ``ctwm simulate`` became ``results`` (issue 43)
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


def _paths(schema: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, its schema) of every key, ``[]`` marking an array's items."""
    if isinstance(schema, dict):
        for key, sub in schema.get("properties", {}).items():
            yield f"{path}.{key}".lstrip("."), sub
            yield from _paths(sub, f"{path}.{key}".lstrip("."))
        if "items" in schema:
            yield from _paths(schema["items"], path + "[]")
        for sub in schema.get("anyOf", []):
            yield from _paths(sub, path)


#: ``summary`` is the lead paragraph, a string (ctwm_cli.common.vocabulary.SUMMARY_KEY). Keys of that name that hold
#: something else, written before the lead existed, by name: the list may only shrink (rename, then remove).
SUMMARY_NOT_A_LEAD = {("bench longmemeval", "summary")}


def _summaries_not_strings() -> set[tuple[str, str]]:
    return {(command, path) for command in COMMANDS for path, sub in _paths(command_schema(command))
            if path.rpartition(".")[2].removesuffix("[]") == "summary" and sub.get("type") != "string"}


def test_summary_is_the_lead_paragraph_wherever_it_appears():
    bad = sorted(_summaries_not_strings() - SUMMARY_NOT_A_LEAD)
    assert not bad, f"'summary' is the lead paragraph (a string); name these otherwise: {bad}"
    assert not SUMMARY_NOT_A_LEAD - _summaries_not_strings(), "renamed, so remove from SUMMARY_NOT_A_LEAD"


@pytest.mark.parametrize("command, where", [("audit", "summary"), ("audit", "results[].summary"),
                                            ("health", "summary"), ("health", "groups[].report.summary")])
def test_the_lead_is_published_where_the_cli_writes_it(command, where):
    from ctwm_cli.common.vocabulary import SUMMARY_KEY

    found = dict(_paths(command_schema(command)))
    assert where.endswith(SUMMARY_KEY) and found[where]["type"] == "string"


def _objects(schema: Any, path: str = "") -> Iterator[tuple[str, dict]]:
    """(dotted path, schema) of every object schema reachable, anyOf branches included."""
    if isinstance(schema, dict):
        if "properties" in schema:
            yield path, schema
        for key, sub in schema.get("properties", {}).items():
            yield from _objects(sub, f"{path}.{key}".lstrip("."))
        for part in ("items", "additionalProperties"):
            yield from _objects(schema.get(part), f"{path}[]" if part == "items" else f"{path}.*")
        for sub in [*schema.get("anyOf", []), *schema.get("prefixItems", [])]:
            yield from _objects(sub, path)


def test_every_interval_carries_its_level():
    """Issue 43: an object with ``low`` and ``high`` is an interval and says its confidence level (``--uncertainty``
    wrote ``{low, high}`` through a second Interval class)."""
    bare = sorted({(c, p) for c in COMMANDS for p, s in _objects(command_schema(c))
                   if {"low", "high"} <= set(s["properties"]) and "level" not in s["properties"]})
    assert bare == []


#: where the key ``interval`` is a status string ("formed", or why not) rather than an interval: issue 43 renamed
#: it ``interval_status`` in schema version 3 (paired, frozen, pareto and bench results); the list may only shrink
INTERVAL_AS_STATUS: set[str] = set()


def _string_intervals() -> set[str]:
    found = set()
    for c in COMMANDS:
        for _, s in _objects(command_schema(c)):
            sub = s["properties"].get("interval")
            types = [sub.get("type")] + [a.get("type") for a in sub.get("anyOf", [])] if isinstance(sub, dict) else []
            if any(t == "string" or (isinstance(t, list) and "string" in t) for t in types):
                found.add(c)
    return found


def test_interval_never_names_a_status_outside_the_pending_list():
    found = _string_intervals()
    assert found - INTERVAL_AS_STATUS == set(), "a status is interval_status, never interval"
    gone = INTERVAL_AS_STATUS - found
    assert gone == set(), f"renamed, so remove from INTERVAL_AS_STATUS: {gone}"


def _unglossed(schema: Any, terms: dict[str, str]) -> set[str]:
    from ctwm_cli.cli.schemas import meaning

    return {k for k in _keys(schema) if meaning(k, terms) is None}


def test_every_key_of_every_command_is_in_the_glossary():
    """The allow-list: a key no glossary entry explains (ctwm_cli/common/glossary.tsv) fails, whatever its name."""
    from ctwm_cli.cli.schemas import glossary

    terms = glossary()
    bad = sorted({(c, k) for c in COMMANDS for k in _unglossed(command_schema(c), terms)})
    assert not bad, f"add a one-line meaning to ctwm_cli/common/glossary.tsv (or use a glossary name): {bad}"


def test_the_glossary_has_no_empty_entry():
    """(Stale entries, printed by no command, are caught by tests/test_cli_schema.py, which holds the real outputs:
    some keys only a hand-written to_dict() prints.)"""
    from ctwm_cli.cli.schemas import glossary

    assert all(glossary().values()), "every entry has a meaning"


def test_a_throwaway_schema_with_rows_audits_ci_low_fails_the_allow_list():
    """rows and audits have no glossary entry (they are synonyms); nor has a new key (``ci_low``, ``frobnicity``)."""
    from ctwm_cli.cli.schemas import glossary

    throwaway = {"properties": {"audits": {"type": "array", "items": {"properties": {
        "ci_low": {}, "frobnicity": {}, "rows": {}}}}}}
    assert _unglossed(throwaway, glossary()) == {"audits", "ci_low", "frobnicity", "rows"}


def _kind(schema: Any) -> str:
    """object, array, string, number (integer too), boolean: what a key holds, null set aside."""
    if not isinstance(schema, dict):
        return "any"
    if "anyOf" in schema:
        kinds = {_kind(a) for a in schema["anyOf"]} - {"null"}
        return "|".join(sorted(kinds)) if kinds else "null"
    t = schema.get("type")
    if isinstance(t, list):
        t = "|".join(sorted(set(t) - {"null"}))
    if "properties" in schema or t == "object":
        return "object"
    return {"integer": "number", None: "string" if "enum" in schema else "any"}.get(t, t)


def two_meanings(schemas: list[Any] | None = None) -> set[str]:
    """Keys that hold different kinds of value in different places (an interval here, a status string there)."""
    kinds: dict[str, set[str]] = {}
    for schema in [command_schema(c) for c in COMMANDS] if schemas is None else schemas:
        for path, sub in _paths(schema):
            kinds.setdefault(path.rpartition(".")[2].removesuffix("[]"), set()).add(_kind(sub))
    return {k for k, v in kinds.items() if len(v - {"any"}) > 1}


#: keys that hold two kinds of value today (found by this walk, 2026-12): the list may only shrink. Some are one
#: meaning in two shapes (``sigma``: one per size, or one; ``session_all``: per question, or the share), others two
#: meanings (``checks``: gate outcomes or a count; ``config``: replay's settings or ctwm check's file); a rename
#: raises the schema version (``interval``, an interval or a status, became ``interval_status`` in version 3)
TWO_MEANINGS = {
    "alpha", "block", "bootstrap", "checks", "config", "cross_check", "events", "failed",
    "matched_over_budget", "n_runs", "n_tail", "needed", "ours", "power", "runs", "session_all", "session_any",
    "sigma", "sigma_null", "sigma_raw", "sigma_sd", "statistic", "steps", "summary", "theirs", "turn_all",
    "turn_any", "uncertainty", "units", "verdict",
}


def test_no_new_key_means_two_things():
    found = two_meanings()
    assert found - TWO_MEANINGS == set(), "a key holds one kind of value everywhere: name the new one otherwise"
    assert TWO_MEANINGS - found == set(), f"fixed, so remove from TWO_MEANINGS: {sorted(TWO_MEANINGS - found)}"


def test_the_two_meanings_walk_can_fail():
    """A throwaway document where ``interval`` is an object in one place and a string in another is caught."""
    schema = {"properties": {"a": {"properties": {"interval": {"type": "object", "properties": {}}}},
                             "b": {"properties": {"interval": {"type": "string"}}}}}
    assert two_meanings([schema]) == {"interval"}
    assert two_meanings([schema["properties"]["a"]]) == set()


def test_the_docs_glossary_is_generated_and_current():
    from pathlib import Path

    from ctwm_cli.cli.schemas import glossary_page

    page = (Path(__file__).parents[1] / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert page == glossary_page(), "docs/glossary.md is stale: regenerate it from schemas.glossary_page()"
    assert "| `n_items` | distinct items |" in page
