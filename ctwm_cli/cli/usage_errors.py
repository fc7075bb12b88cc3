"""Click's usage errors as one line: ``ctwm: error: no such option: --bootstarp; did you mean --bootstrap?
(try 'ctwm audit -h')`` instead of click's usage block, hint and ``Error:`` line.

:func:`ctwm_cli.cli.main` runs the application with ``standalone_mode=False`` so these errors reach it.
Recognised by click's documented exception interface (``exit_code``, ``format_message``, ``ctx``), not
by importing Typer's private copy of click; nothing here imports Typer (``ctwm --version`` stays lean).
"""

from __future__ import annotations

import re

#: the exit code Typer returns for any ``KeyboardInterrupt`` (128 + SIGINT)
INTERRUPTED = 130


def is_usage_error(exc: BaseException) -> bool:
    """A click ``ClickException`` (usage errors, bad parameters, unreadable click files)."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int) \
        and hasattr(exc, "ctx") and any(k.__name__ == "ClickException" for k in type(exc).__mro__)


def is_abort(exc: BaseException) -> bool:
    """click's ``Abort`` (end of input at a prompt)."""
    return any(k.__name__ == "Abort" for k in type(exc).__mro__) and not is_usage_error(exc)


def usage_line(exc: BaseException) -> str:
    """The error as one line, with a did-you-mean for an unknown option and the command's help hint."""
    possible = list(getattr(exc, "possibilities", None) or [])
    name = getattr(exc, "option_name", None)
    if name and type(exc).__name__ == "NoSuchOption":
        text = f"no such option: {name}"
        if possible:
            text += f"; did you mean {possible[0]}?"
            if len(possible) > 1:
                text = text[:-1] + f" (or {', '.join(possible[1:])})?"
    else:
        text = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        text = text.replace("Value error, ", "")
        text = re.sub(r"^(No such command|Missing|Invalid value|Got unexpected)", lambda m: m.group(1).lower(), text)
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None)
    return f"{text} (try '{path} -h')" if path else text
