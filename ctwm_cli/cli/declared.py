"""Typer options generated from declared settings (:mod:`ctwm_cli.common.settings`): one field, one option.

:func:`declared_flags` turns each :class:`~ctwm_cli.common.settings.Declaration` with flags into a Typer option
(choices shown as choices, size limits as :func:`.option_groups.at_most`, metavars, each deprecated spelling a
hidden option that warns), adds them to a command as an option group and hands the command the checked
settings (``build``, by default the class's own ``checked``). :func:`option_table` is the docs' table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

from ..common.settings import REQUIRED, Declaration
from .aliases import aliased
from .option_groups import CONFIG_REFUSED, declared_params, hidden_name, option_group

__all__ = ["CONFIG_REFUSED", "cli_values", "declared_flags", "declared_params", "option_table"]


def cli_values(decls: Sequence[Declaration], values: dict[str, Any]) -> dict[str, Any]:
    """The parsed flags as the library's keywords: a deprecated spelling's value (with its warning), choices as
    their strings, text options parsed (``LO:HI``)."""
    out = {}
    for d in decls:
        if d.name not in values:
            continue
        value = values[d.name]
        for i, old in enumerate(d.spec.deprecated):
            value = aliased(value, values.get(hidden_name(d, i)), old, d.flag or d.name)
        if isinstance(value, Enum):
            value = value.value
        if d.spec.parse is not None and isinstance(value, str):
            value = d.spec.parse(value)
        out[d.name] = value
    return out


def declared_flags(*classes: Any, build: Callable[..., Any] | None = None, name: str = "settings",
                   without: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator that adds the declared options of ``classes`` to a command, which receives
    ``build(**values)`` (default: the one class's ``checked``) as its keyword-only ``name``; ``without`` names
    options the command does not offer (``build`` gets their defaults)."""
    decls = [d for cls in classes for d in cls.declarations()]
    if build is None:
        (only,) = classes
        build = only.checked

    def group(**values: Any) -> Any:
        return build(**cli_values(decls, values))

    return option_group(declared_params(decls), group, name=name, without=without)


def option_table(*classes: Any) -> str:
    """A Markdown table of the declared options of ``classes``: flag, default, choices, config, help."""
    rows = ["| flag | default | choices | ctwm.toml | meaning |", "|---|---|---|---|---|"]
    for cls in classes:
        for d in cls.declarations():
            if not d.spec.flags:
                continue
            flags = ", ".join(f"`{f}`" for f in d.spec.flags)
            choices = ", ".join(d.spec.choices) if d.spec.choices else ""
            config = "yes" if d.spec.config else f"no ({d.spec.reason})"
            shown = "" if d.default is None else "required" if d.default is REQUIRED else f"`{d.default}`"
            rows.append(f"| {flags} | {shown} | {choices} | {config} | {d.spec.help.replace('|', '&#124;')} |")
    return "\n".join(rows) + "\n"
