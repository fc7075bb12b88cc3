"""Each command registers the result class it prints, beside its definition (issue 43).

``@result("audit", "ctwm_cli.auditing.AuditResult", key="results", many=True)`` on a command's function
records what ``ctwm audit --format json`` holds; :func:`ctwm_cli.cli.output.emit` refuses a command name
with no registration, and ``ctwm schema``, the schema test and the vocabulary test walk :func:`registered`
(every ``cmd_*`` module imported, so every command that exists). Classes are named by dotted path, not
imported: a command module never loads the library at import time (``ctwm --help`` stays fast).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class Registered:
    """What one command prints under ``--format json``.

    ``result``: the dotted path of its result class (``None`` with ``schema``); ``key``: the key the result sits
    under (``None``: its fields are the document's); ``many``: a list of results under ``key``; ``variants``:
    ``mode`` value -> result class, for a command whose document is one of several (``ctwm simulate``);
    ``schema``: the document's own top-level keys, for a command with no result class (``ctwm check``).
    """

    name: str
    result: str | None = None
    key: str | None = None
    many: bool = False
    variants: Mapping[str, str] = dataclasses.field(default_factory=dict)
    schema: Mapping[str, Any] | None = None


#: command name ("replay compare") -> its registration; filled as the command modules are imported
REGISTRY: dict[str, Registered] = {}


def result(name: str, cls: str | None = None, *, key: str | None = None, many: bool = False,
           variants: Mapping[str, str] | None = None, schema: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """Decorator: the command function ``name`` prints ``cls`` (see :class:`Registered`)."""
    if sum(x is not None for x in (cls, variants, schema)) != 1:
        raise TypeError(f"command {name!r}: register exactly one of a result class, variants or a schema")
    entry = Registered(name, cls, key, many, dict(variants or {}), schema)
    if REGISTRY.get(name, entry) != entry:
        raise ValueError(f"command {name!r} is registered twice, with different results")
    REGISTRY[name] = entry

    def mark(fn: F) -> F:
        fn.__dict__.setdefault("ctwm_results", []).append(name)
        return fn

    return mark


def registered() -> dict[str, Registered]:
    """Every command's registration: imports every ``cmd_*`` module (no library import), sorted by name."""
    from .application import command_modules

    command_modules()
    return dict(sorted(REGISTRY.items()))
