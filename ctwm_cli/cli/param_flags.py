"""Library parameter names -> the flags of the command being run, read off the command itself.

Library errors name parameters as the library spells them (``input_format must be one of …``) and list
them in ``exc.params``. Each option's Python name is the library's parameter name (``input_format`` for
``--input-format``, ``events`` for ``--event``), so the option declarations are the one table:
:func:`command_flags` reads it from the command the arguments select, and :func:`flag_message` rewrites
the names into the flags the user typed (``--input-format must be one of …``) before
:func:`ctwm_cli.cli.main` prints the one-line error. No hand-kept mapping can drift from the options.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..common.errors import CtwmError


def option_flags(command: Any) -> dict[str, str]:
    """Each parameter of one (click) command: an option's Python name -> its first long flag (else its first
    flag); a positional argument's -> its name as usage shows it (``TRACES``)."""
    out: dict[str, str] = {}
    for p in getattr(command, "params", ()):
        kind = getattr(p, "param_type_name", "")
        if not p.name or kind not in ("option", "argument"):
            continue
        if kind == "argument":
            out[p.name] = p.name.upper()
            continue
        longs = [o for o in p.opts if o.startswith("--")]
        out[p.name] = (longs or list(p.opts))[0]
        if getattr(p, "secondary_opts", None):  # a boolean pair: ``discrete=False`` is --continuous
            out[f"{p.name}=True"], out[f"{p.name}=False"] = out[p.name], p.secondary_opts[0]
    return out


def selected_commands(root: Any, args: Sequence[str]) -> list[Any]:
    """The chain of commands ``args`` selects: the root, each group named, the command at the end."""
    chain = [root]
    for token in args:
        sub = getattr(chain[-1], "commands", None)
        if sub is None:
            break
        if token in sub:
            chain.append(sub[token])
    return chain


def command_flags(root: Any, args: Sequence[str]) -> dict[str, str]:
    """Python name -> flag over the commands ``args`` selects (the innermost command's option wins)."""
    out: dict[str, str] = {}
    for command in selected_commands(root, args):
        out.update(option_flags(command))
    return out


def all_commands(root: Any) -> Iterable[tuple[str, Any]]:
    """Every command of the tree with its path (``"replay compare"``), the root as ``""``."""
    stack = [("", root)]
    while stack:
        path, command = stack.pop()
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items(), reverse=True):
            stack.append((f"{path} {name}".strip(), sub))


def flag_message(exc: CtwmError, flags: Mapping[str, str]) -> str:
    """``str(exc)`` with each of ``exc.params`` replaced by its flag: whole words only, never inside a path
    or a quoted value (``out 'out': …`` -> ``--out 'out': …``). A parameter the command has no option for
    keeps its library name."""
    text = str(exc)
    for param in sorted(getattr(exc, "params", ()), key=len, reverse=True):  # discrete=False before discrete
        flag = flags.get(param)
        if flag is not None:
            text = re.sub(rf"(?<![\w./\x27\x22-]){re.escape(param)}(?![\w/\x27\x22-]|\.\w)", flag, text)
    return text
