"""Option groups: options several commands share, declared once and added to each command's signature.

A group is a list of :class:`inspect.Parameter` (each an ``Annotated[T, typer.Option(...)]`` with its
default) and a dataclass with a field per parameter (fields the group lacks need defaults).
:func:`option_group` returns a decorator that puts the group's parameters where the command declares its
keyword-only ``opts`` (so ``--help`` lists them there; at the end without one) and calls the command with
``opts=<dataclass>``; a parameter of the command with a group option's name replaces that option (``opts``
then holds the group's default). Typer reads the rebuilt signature (only its public API is used).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Annotated, Any

import typer

from ..common.errors import UsageError
from ..common.limits import check_limit
from ..common.settings import Declaration


def choice(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A ``str`` Enum whose members are ``values``: Typer shows them as ``[a|b|c]`` and rejects others."""
    return Enum(name, {v: v for v in values}, type=str)  # type: ignore[return-value]


def param(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    """A keyword-only parameter of a group."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def opt(name: str, typ: Any, flags: tuple[str, ...], text: str, default: Any, **kw: Any) -> inspect.Parameter:
    """A group parameter that is a ``typer.Option`` with ``flags`` and help ``text``."""
    return param(name, Annotated[typ, typer.Option(*flags, help=text, **kw)], default)


def option_group(
    shared: Sequence[inspect.Parameter], cls: Callable[..., Any], *, name: str = "opts", without: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator that adds ``shared`` to a command and hands it ``opts: cls`` (see the module docstring).

    ``cls`` is any callable taking the group's values as keywords (a dataclass, or a function that resolves
    them to one value); ``name`` is the command's placeholder parameter that receives its result, so two
    groups (``opts`` and ``fmt``) can decorate one command. ``without`` names group options the command does
    not offer at all (``cls`` gets their defaults), so no command inherits an option only to refuse it."""
    absent = {p.name: p.default for p in shared if p.name in without}
    shared = [p for p in shared if p.name not in without]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        names = list(sig.parameters)
        at = names.index(name) if name in names else len(names)
        own = [p for p in sig.parameters.values() if p.name != name]
        own_names = {p.name for p in own}
        kept = [p for p in shared if p.name not in own_names]
        kept_names = {p.name for p in kept}
        params = [*own[:at], *kept, *own[at:]]

        @functools.wraps(fn)
        def wrapper(**kw: Any) -> Any:
            values = {p.name: kw.pop(p.name) if p.name in kept_names else p.default for p in shared}
            values.update(absent)
            return fn(**{name: cls(**values)}, **kw)

        del wrapper.__wrapped__  # Typer must read the new signature, not the wrapped one
        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def at_most(name: str):
    """Typer callback for a size option: its value, or exit 2 with the limit and why (``ctwm_cli.common.limits``)."""

    def check(value: int | None) -> int | None:
        if value is not None:
            try:
                check_limit(name, value)
            except UsageError as exc:
                raise typer.BadParameter(str(exc)) from None
        return value

    return check


#: Declared options a config may not set (``config=False``), by parameter name, with the reason: read by
#: :mod:`.check_config` beside its own refusals.
CONFIG_REFUSED: dict[str, str] = {}
#: Declared options whose value is a file the command reads (``path=True``), by parameter name: a config's value
#: is admitted like its traces (:mod:`.check_config`).
CONFIG_PATHS: set[str] = set()


def _cli_type(d: Declaration) -> Any:
    optional = d.default is None
    if d.spec.choices is not None:
        base: Any = choice("".join(w.title() for w in d.name.split("_")), d.spec.choices)
    elif d.spec.parse is not None:
        base = str
    else:
        args = [a for a in typing.get_args(d.type) if a is not type(None)]
        base = args[0] if isinstance(d.type, types.UnionType) and len(args) == 1 else d.type
    return base | None if optional else base


def hidden_name(d: Declaration, i: int) -> str:
    """The parameter name of ``d``'s ``i``-th deprecated spelling."""
    return f"{d.name}_alias" if i == 0 else f"{d.name}_alias{i}"


def declared_params(decls: Sequence[Declaration]) -> list[inspect.Parameter]:
    """The Typer parameters of ``decls`` (those with flags; :mod:`ctwm_cli.common.settings`): choices shown as choices,
    size limits as :func:`at_most`, metavars, an envvar, each deprecated spelling a hidden parameter."""
    out = []
    for d in decls:
        if not d.spec.flags:
            continue
        kw: dict[str, Any] = {}
        if d.spec.metavar:
            kw["metavar"] = d.spec.metavar
        if d.spec.limit:
            kw["callback"] = at_most(d.spec.limit if isinstance(d.spec.limit, str) else d.name)
        if d.spec.envvar:
            kw["envvar"] = d.spec.envvar
        if d.spec.minimum is not None:
            kw["min"] = d.spec.minimum
        if d.spec.hidden:
            kw["hidden"] = True
        if not d.spec.show_default:
            kw["show_default"] = False
        if d.spec.path:
            CONFIG_PATHS.add(d.name)
        if not d.spec.config:
            CONFIG_REFUSED[d.name] = d.spec.reason or "a config may not set it"
        typ = _cli_type(d)
        out.append(opt(d.name, typ, d.spec.flags, d.spec.help, d.default, **kw))
        for i, old in enumerate(d.spec.deprecated):
            hidden_type = typ if d.default is None else typ | None
            out.append(opt(hidden_name(d, i), hidden_type, (old,), f"Deprecated spelling of {d.flag}.", None,
                           hidden=True, **{k: v for k, v in kw.items() if k not in ("envvar", "hidden")}))
    return out
