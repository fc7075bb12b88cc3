"""JSON Schema (draft 2020-12) of every command's ``--format json`` document, derived from the result classes.

A result class is a frozen dataclass; its fields and type hints are the contract: every field is a
property of the matching type (``float`` is ``number`` or ``null``, since NaN is written as null; a
tuple or ndarray is an ``array``; a nested result is an object with its own fields). Fields are
required unless the class writes its own ``to_dict()`` (which may add or drop keys). The envelope
(``schema_version``, ``tool``, ``version``, ``command``, ``seed``) and the gate outcomes (``checks``)
are the same for every command. ``tests/test_cli_schema.py`` validates real outputs against it.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any

from ..vocabulary import SUMMARY_KEY
from ..results import SCHEMA_VERSION

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: command -> (module, result class, key the result sits under (None: the document itself), many?)
RESULTS: dict[str, tuple[str, str, str | None, bool]] = {
    "audit": ("ctwm_cli.auditing", "AuditResult", "results", True),
    "concentration": ("ctwm_cli.diagnostics.measures", "ConcentrationReport", None, False),
    "psd": ("ctwm_cli.diagnostics.spectrum", "PsdResult", None, False),
    "finite-size": ("ctwm_cli.diagnostics", "FiniteSizeReport", None, False),
    "health": ("ctwm_cli.health", "HealthReport", None, False),
    "inspect": ("ctwm_cli.traces", "TraceScan", "results", True),
    "replay": ("ctwm_cli.replay", "ReplayResult", None, False),
    "replay compare": ("ctwm_cli.replay", "ReplayResult", None, False),
    "replay ablation": ("ctwm_cli.replay", "ReplayResult", None, False),
    "replay frozen": ("ctwm_cli.replay", "FrozenReplay", None, False),
    "world run": ("ctwm_cli.world.run", "WorldRun", None, False),
    "world grid": ("ctwm_cli.world.grid", "WorldGrid", None, False),
    "world ladder": ("ctwm_cli.world.ladder", "Ladder", None, False),
    "bench longmemeval": ("ctwm_cli.bench.longmemeval", "LongMemEvalResult", None, False),
    "bench textworld": ("ctwm_cli.bench.textgames", "TextGameResult", None, False),
    "bench report": ("ctwm_cli.bench.report", "BenchReport", None, False),
    "diff": ("ctwm_cli.baseline", "Diff", None, False),
    "replay pareto": ("ctwm_cli.replay.pareto", "ParetoResult", None, False),
    "import otel": ("ctwm_cli.traces.telemetry", "ImportResult", None, False),
    "import mem0": ("ctwm_cli.traces.telemetry", "ImportResult", None, False),
    "import openinference": ("ctwm_cli.traces.openinference", "OpenInferenceImport", None, False),
    "model serve": ("ctwm_cli.localmodel", "LocalServerInfo", None, False),
    "xmin-path": ("ctwm_cli.diagnostics.xmin_path", "XminPath", None, False),
    "report": ("ctwm_cli.reporting", "Report", None, False),
}
#: commands whose document is not one result class: their own top-level keys
OTHER: dict[str, dict[str, Any]] = {
    "simulate": {"properties": {"mode": {"enum": ["allocation", "sweep", "trace"]}}, "required": ["mode"]},
    "check": {
        "properties": {"config": {"type": "string"}, "entries": {"type": "array", "items": {
            "type": "object", "required": ["check", "command", "checks", "failed", "exit_code", "status", "error"],
            "properties": {"check": {"type": "string"}, "command": {"type": "string"}, "checks": {"type": "integer"},
                           "failed": {"type": "integer"}, "exit_code": {"type": "integer"},
                           "status": {"type": "string"}, "error": {"type": ["string", "null"]}}}}},
        "required": ["config", "entries"],
    },
}
COMMANDS = tuple(sorted({*RESULTS, *OTHER}))
#: the lead paragraph (:mod:`ctwm_cli.reporting.summary`): command -> the objects the CLI adds ``summary`` to,
#: beside the result's own fields ("" the document; "results[]" each result; "groups[].report" each scope's report)
SUMMARY = {"audit": ("", "results[]"), "health": ("", "groups[].report")}
SUMMARY_SCHEMA = {"type": "string", "description": "the lead paragraph: the result in plain words, the numbers "
                  "as the result holds them (ctwm_cli.reporting.summary)"}


def _type_schema(tp: Any, seen: set[type]) -> dict[str, Any]:
    """JSON Schema of one type hint."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return {}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a, seen) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": ["number", "null"]}  # NaN and infinities are written as null
    if tp is str:
        return {"type": "string"}
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
    if own_to_dict:  # its to_dict() may summarise arrays and nested parts: only plain scalars are pinned
        props = {k: v for k, v in props.items() if _scalar(v)}
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


def envelope_schema(command: str) -> dict[str, Any]:
    from ..gates import CheckOutcome

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
    if command in RESULTS:
        module, name, key, many = RESULTS[command]
        body = _object_schema(getattr(importlib.import_module(module), name), set())
        if key is None:
            doc["properties"] = {**body["properties"], **doc["properties"]}
            doc["required"] = list(dict.fromkeys([*doc["required"], *body.get("required", [])]))
        else:
            doc["properties"][key] = {"type": "array", "items": body} if many else body
            doc["required"].append(key)
    else:
        extra = OTHER[command]
        doc["properties"].update(extra["properties"])
        doc["required"] += extra["required"]
    for where in SUMMARY.get(command, ()):
        _add_summary(doc, where)
    name = command.replace(" ", "-")
    return {"$schema": DRAFT, "$id": f"https://ctwm.invalid/schema/v{SCHEMA_VERSION}/{name}.json",
            "title": f"ctwm {command} --format json", **doc}
