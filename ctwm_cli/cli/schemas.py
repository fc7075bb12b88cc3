"""JSON Schema (draft 2020-12) of every command's ``--format json`` document, derived from the result classes.

A result class is a frozen dataclass; its fields and type hints are the contract: every field is a
property of the matching type (``float`` is ``number`` or ``null``, since NaN is written as null; a
tuple or ndarray is an ``array``; a nested result is an object with its own fields). Fields are
required unless the class writes its own ``to_dict()`` (which may add or drop keys: then only its scalar fields and
the non-scalar ones it names in a ``json_fields`` class variable are published). The envelope
(``schema_version``, ``tool``, ``version``, ``command``, ``seed``) and the gate outcomes (``checks``)
are the same for every command. ``tests/test_cli_schema.py`` validates real outputs against it.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any

from ..common.results import SCHEMA_VERSION
from ..common.vocabulary import SUMMARY_KEY
from .registry import registered

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def commands() -> tuple[str, ...]:
    """Every command that prints a ``--format json`` document: the ones registered beside their definitions
    (:mod:`ctwm_cli.cli.registry`), every ``cmd_*`` module imported."""
    return tuple(registered())


def result_class(path: str) -> type:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


#: the lead paragraph (:mod:`ctwm_cli.reporting.summary`): command -> the objects the CLI adds ``summary`` to,
#: beside the result's own fields ("" the document; "results[]" each result; "groups[].report" each scope's report)
SUMMARY = {"audit": ("", "results[]"), "health": ("", "groups[].report")}
SUMMARY_SCHEMA = {"type": "string", "description": "the lead paragraph: the result in plain words, the numbers "
                  "as the result holds them (ctwm_cli.reporting.summary)"}


#: the scalar types' schemas; a float may be NaN or infinite, written as null
_SCALARS: dict[Any, dict[str, Any]] = {type(None): {"type": "null"}, bool: {"type": "boolean"},
                                       int: {"type": "integer"}, float: {"type": ["number", "null"]},
                                       str: {"type": "string"}}


def _type_schema(tp: Any, seen: set[type]) -> dict[str, Any]:
    """JSON Schema of one type hint."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return {}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a, seen) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    if dataclasses.is_dataclass(tp):
        return _object_schema(tp, seen)
    if origin in (list, tuple, set, frozenset) or (isinstance(origin, type) and issubclass(origin, typing.Sequence)):
        items = [a for a in args if a is not Ellipsis]
        out: dict[str, Any] = {"type": "array"}
        if origin is tuple and args and Ellipsis not in args:
            out["prefixItems"] = [_type_schema(a, seen) for a in args]
        elif items:
            out["items"] = _type_schema(items[0], seen)
        return out
    if origin in (dict,) or (isinstance(origin, type) and issubclass(origin, typing.Mapping)):
        out = {"type": "object"}
        if len(args) == 2:
            out["additionalProperties"] = _type_schema(args[1], seen)
        return out
    name = getattr(tp, "__name__", "")
    if name == "ndarray":
        return {"type": "array"}
    return {}  # a type the JSON does not pin down (written as text or a structure of its own)


def _object_schema(cls: type, seen: set[type]) -> dict[str, Any]:
    if cls in seen:  # a recursive result: stop at an untyped object
        return {"type": "object"}
    seen = seen | {cls}
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if not f.name.startswith("_") and not f.metadata.get("timing")]
    own_to_dict = "to_dict" in vars(cls)
    props = {f.name: _type_schema(hints.get(f.name, Any), seen) for f in fields}
    if own_to_dict:  # its to_dict() may summarise arrays and nested parts: only plain scalars are pinned, and the
        # non-scalar fields the class says its to_dict() writes as they are typed (``json_fields``)
        written = set(getattr(cls, "json_fields", ()))
        props = {k: v for k, v in props.items() if _scalar(v) or k in written}
    out: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": props}
    if not own_to_dict:
        out["required"] = [f.name for f in fields]
    return out


def _scalar(schema: dict[str, Any]) -> bool:
    kinds = {"boolean", "integer", "number", "string", "null"}
    if "anyOf" in schema:
        return all(_scalar(s) for s in schema["anyOf"])
    t = schema.get("type")
    if isinstance(t, list):
        return set(t) <= kinds
    return t in kinds or "enum" in schema


def _variant(mode: str, path: str, gates: dict[str, Any]) -> dict[str, Any]:
    body = _object_schema(result_class(path), set())
    return {"properties": {"mode": {"const": mode}, "checks": gates, **body["properties"]},
            "required": ["mode", *body.get("required", [])]}


def envelope_schema(command: str) -> dict[str, Any]:
    from ..common.gates import CheckOutcome

    return {
        "type": "object",
        "required": ["schema_version", "tool", "version", "command"],
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "tool": {"const": "ctwm"},
            "version": {"type": "string"},
            "command": {"const": command},
            "seed": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
            "checks": {"type": "array", "items": _object_schema(CheckOutcome, set())},
        },
    }


def _add_summary(doc: dict[str, Any], where: str) -> None:
    """:data:`SUMMARY_KEY` as a required string of the object at ``where`` (dotted keys, ``key[]`` an array's items)."""
    node = doc
    for key in [k for k in where.split(".") if k]:
        name, many = key.removesuffix("[]"), key.endswith("[]")
        node = node.setdefault("properties", {}).setdefault(
            name, {"type": "array", "items": {"type": "object"}} if many else {"type": "object"})
        node = node["items"] if many else node
    node.setdefault("properties", {})[SUMMARY_KEY] = SUMMARY_SCHEMA
    node["required"] = [*node.get("required", []), SUMMARY_KEY]


def command_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``ctwm COMMAND --format json``."""
    doc = envelope_schema(command)
    entry = registered()[command]
    if entry.result is not None:
        body = _object_schema(result_class(entry.result), set())
        if entry.key is None:
            doc["properties"] = {**body["properties"], **doc["properties"]}
            doc["required"] = list(dict.fromkeys([*doc["required"], *body.get("required", [])]))
        else:
            doc["properties"][entry.key] = {"type": "array", "items": body} if entry.many else body
            doc["required"].append(entry.key)
    elif entry.variants:  # one document of several, told apart by its mode
        gates = doc["properties"].pop("checks")  # a variant's own ``checks`` (simulate's sweep) replaces the gates'
        doc["anyOf"] = [_variant(mode, path, gates) for mode, path in entry.variants.items()]
        doc["properties"]["mode"] = {"enum": list(entry.variants)}
        doc["required"].append("mode")
    else:
        assert entry.schema is not None
        doc["properties"].update(entry.schema["properties"])
        doc["required"] += entry.schema["required"]
    for where in SUMMARY.get(command, ()):
        _add_summary(doc, where)
    name = command.replace(" ", "-")
    return {"$schema": DRAFT, "$id": f"https://ctwm.invalid/schema/v{SCHEMA_VERSION}/{name}.json",
            "title": f"ctwm {command} --format json", **doc}


def glossary() -> dict[str, str]:
    """``ctwm_cli/common/glossary.tsv``: JSON key -> its one-line meaning (``*_suffix`` entries name key families)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "common" / "glossary.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t", 1) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return {key: meaning.strip() for key, meaning in rows}


def meaning(key: str, terms: dict[str, str] | None = None) -> str | None:
    """The glossary's meaning of ``key`` (its own entry, else the longest ``*_suffix`` it ends with), or None."""
    terms = glossary() if terms is None else terms
    if key in terms:
        return terms[key]
    suffixes = [k for k in terms if k.startswith("*_") and key.endswith(k[1:]) and len(key) > len(k) - 1]
    return terms[max(suffixes, key=len)] if suffixes else None


def glossary_page() -> str:
    """docs/glossary.md: the glossary as a table (a test fails when the page is stale). Write it with
    ``python -c "from ctwm_cli.cli.schemas import glossary_page as g; print(g(), end='')" > docs/glossary.md``."""
    rows = "\n".join(f"| `{key}` | {text.replace('|', '/')} |" for key, text in glossary().items())
    return f"""# Glossary of JSON keys

Every key any command prints under `--format json` (as its schema, `ctwm schema COMMAND`, publishes it, and as
its real output holds it), with its meaning in one line; the keys of maps keyed by data (family, event, column or
policy names) are not field names and are not listed. Generated from `ctwm_cli/common/glossary.tsv`;
`tests/test_vocabulary.py` and `tests/test_cli_schema.py` fail when a command's schema or real output holds a key
that is not here, when an entry is no longer printed, or when this page is stale.
A `*_suffix` entry names every key that ends so (`tail_confidence_interval`, `tokens_mean`).

| key | meaning |
|---|---|
{rows}
"""
