"""The Typer application: the root options and every ``cmd_*.py`` module's commands.

Typer builds every option of every registered command before it parses anything (about 400 options:
most of ``ctwm --help``'s time). So :func:`app_for` registers only what the arguments need: a command
registers the one module that defines it; the root help lists every command from its one-line
summary (read off the same ``register(app)`` calls through :class:`_Summaries`, so it cannot drift);
anything else (an unknown command, shell completion) gets the whole application, :data:`app`'s.
Command modules never import the library at module level, so none of this loads numpy or scipy.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import typer

from .._version import __version__

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a requested check failed (--expect, --fail-on); 2 usage error; "
    "3 input/data error; 4 unexpected error. CTWM_DEBUG=1 adds the traceback (same exit code)."
)
ROOT_HELP = (
    "Audit the memory traces of long-horizon language agents.\n\n"
    "Reads access logs (JSONL or Parquet) and tells whether the per-item access counts are "
    "heavy-tailed and of which family, how concentrated they are, and what a CTWM rank "
    "allocation would do with them.\n\n" + EXIT_CODES_HELP
)
ROOT_HELP_ARGS = ([], ["--help"], ["-h"])


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ctwm {__version__}")
        raise typer.Exit()


def _root_options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Audit the memory traces of long-horizon language agents."""


def root_app() -> typer.Typer:
    """The root with its options and no commands yet."""
    root = typer.Typer(
        name="ctwm", help=ROOT_HELP, no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
        rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root_options)
    return root


def command_modules() -> list[ModuleType]:
    package = __name__.rpartition(".")[0]
    path = importlib.import_module(package).__path__
    return [importlib.import_module(f"{package}.{m.name}")
            for m in sorted(pkgutil.iter_modules(path), key=lambda m: m.name) if m.name.startswith("cmd_")]


class _Summaries:
    """Stands in for the root app in ``register(app)``: records each command's name, help and module."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, ModuleType]] = []
        self.module: ModuleType | None = None

    def command(self, name: str | None = None, *, help: str | None = None, **_: Any) -> Callable:
        def record(fn: Callable) -> Callable:
            self.entries.append((name or fn.__name__.replace("_", "-"), help or fn.__doc__ or "", self.module))
            return fn

        return record

    def add_typer(self, sub: typer.Typer, *, name: str | None = None, help: str | None = None, **_: Any) -> None:
        self.entries.append((name or sub.info.name, help or sub.info.help or "", self.module))


def summaries() -> list[tuple[str, str, ModuleType]]:
    rec = _Summaries()
    for module in command_modules():
        rec.module = module
        module.register(rec)
    return rec.entries


def _listed_only() -> None:
    """Listed in the root help; running it goes through the full application."""


def app_for(args: Sequence[str]) -> typer.Typer:
    """The application these arguments need (see the module docstring)."""
    if list(args) in ROOT_HELP_ARGS:
        root = root_app()
        for name, text, _ in summaries():
            root.command(name, help=text, add_help_option=False)(_listed_only)
        return root
    first = args[0] if args else ""
    owner = _named_owner(first)  # most commands live in cmd_<name>: import that one module only (~45 ms less)
    if owner is None:
        owner = {name: module for name, _, module in summaries()}.get(first)
    if owner is not None:
        root = root_app()
        owner.register(root)
        return root
    return full_app()


def _named_owner(command: str) -> ModuleType | None:
    """``cmd_<command>`` if that module exists and registers ``command``, else None."""
    if not re.fullmatch(r"[a-z][a-z-]{0,30}", command):
        return None
    name = f"{__name__.rpartition('.')[0]}.cmd_{command.replace('-', '_')}"
    if importlib.util.find_spec(name) is None:
        return None
    rec = _Summaries()
    module = rec.module = importlib.import_module(name)
    module.register(rec)
    return module if any(entry[0] == command for entry in rec.entries) else None


def full_app() -> typer.Typer:
    root = root_app()
    for module in command_modules():
        module.register(root)
    return root


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole application, built on first use (tests walk every command)
        globals()["app"] = value = full_app()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
