"""The ``ctwm`` command line: a thin Typer layer over the library.

Each ``cmd_*.py`` module in this package defines ``register(app)``; :mod:`.application` joins them into one
Typer application. :func:`main` maps the library's exceptions to one line on stderr and a documented
exit code. Importing this package costs almost nothing: ``ctwm --version`` answers before Typer, Rich
or any command module is loaded, and everything else builds the application first.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..common.errors import EXIT_UNEXPECTED, CtwmError, CtwmWarning
from ..common.inert import visible  # error lines quote trace contents: no control character reaches the terminal
from ..runtime.interrupts import RAISED, interrupt_cause, last_interrupt, signals_raise
from ..runtime.interrupts import exit_code as interrupt_exit_code

# the library names parameters; the user reads flags
from .param_flags import all_commands, command_flags, flag_message, option_flags
from .usage_errors import INTERRUPTED, is_abort, is_usage_error, usage_line


def __getattr__(name: str) -> Any:
    if name in ("app", "EXIT_CODES_HELP"):
        from . import application  # the Typer application, built on first use

        return getattr(application, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return (and, as a script, exit with) the exit code."""
    debug = os.environ.get("CTWM_DEBUG") == "1"
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # the one answer that needs no command tree
        print(f"ctwm {__version__}")
        return _exit(0, argv)
    app = None
    try:
        from .application import app_for, full_app  # Typer, Rich and the command modules (not the library)

        app = full_app() if "_CTWM_COMPLETE" in os.environ else app_for(args)  # completion needs every option
        RAISED.clear()
        flagged = lambda w: flag_message(w, _flags(app, args, w))  # noqa: E731 - a warning's parameters as flags
        with signals_raise(), _one_line_warnings(flagged):  # SIGTERM too: finally blocks run, workers end, exit 143
            rv = app(args=args, prog_name="ctwm", standalone_mode=False)  # click's errors reach us (one line)
        code = rv if type(rv) is int else 0  # an Exit's code; a command's return value is not one
        if code == INTERRUPTED:  # Typer returns 130 for any KeyboardInterrupt: the signal says which
            cause = last_interrupt()
            print(f"ctwm: {cause or 'interrupted'}", file=sys.stderr)
            code = INTERRUPTED if cause is None else interrupt_exit_code(cause)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if (cause := interrupt_cause(exc)) is not None:  # Typer exits 130 on any KeyboardInterrupt
            print(f"ctwm: {cause or 'interrupted'}", file=sys.stderr)
            code = interrupt_exit_code(cause)
    except CtwmError as exc:
        if debug:
            traceback.print_exc()  # the traceback, and still the documented exit code
        print(f"ctwm: error: {visible(flag_message(exc, _flags(app, args, exc)))}", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"ctwm: {exc or 'interrupted'}", file=sys.stderr)
        code = interrupt_exit_code(exc)
    except Exception as exc:  # the documented last resort: exit 4, one line
        if is_abort(exc):  # click's Abort: end of input at a prompt
            print("ctwm: aborted", file=sys.stderr)
            return _exit(1, argv)
        if is_usage_error(exc):  # click's: a bad option, value or command
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # the help text, as click shows it
            else:
                print(f"ctwm: error: {visible(usage_line(exc))}", file=sys.stderr)
            return _exit(exc.exit_code, argv)
        if debug:
            traceback.print_exc()  # the traceback, and still the documented exit code
        print(
            f"ctwm: unexpected error: {type(exc).__name__}: {visible(str(exc))} (set CTWM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        code = EXIT_UNEXPECTED
    return _exit(code, argv)


def _flags(app: Any, args: Sequence[str], exc: CtwmError) -> dict[str, str]:
    """Python name -> flag of the options of the command ``args`` run (none before the app was built); a
    parameter of ``exc`` that command lacks (``ctwm diff`` naming the reading commands' ``label``) is
    looked up in every command."""
    if app is None:
        return {}
    import typer.main  # loaded already: the app was built

    flags = command_flags(typer.main.get_command(app), args)
    if any(p not in flags for p in getattr(exc, "params", ())):
        from .application import full_app

        for _, command in all_commands(typer.main.get_command(full_app())):
            for name, flag in option_flags(command).items():
                flags.setdefault(name, flag)
    return flags


@contextlib.contextmanager
def _one_line_warnings(flagged=None):
    """ctwm's own warnings as one line on stderr (``ctwm: warning: ...``), not Python's two-line form; a warning
    that names library parameters (its ``params``, as an error's) gets them as flags through ``flagged``."""
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CtwmWarning):
            text = flagged(message) if flagged is not None and getattr(message, "params", ()) else str(message)
            print(f"ctwm: warning: {visible(text)}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def _exit(code: int, argv: Sequence[str] | None) -> int:
    """As a script (argv None): exit with ``code``; called from Python: return it.

    Before a script exits, every object is moved to the collector's permanent generation
    (``gc.freeze``): interpreter shutdown runs full collections over every object still alive, and
    with numpy, pyarrow, DuckDB, Typer and pydantic loaded those took 0.05-0.1 s of each command's
    exit (``benchmarks/bench_inspect.py``). Objects are still released, files flushed and ``atexit``
    handlers run; only cycles among them are left for the process's end to reclaim."""
    if argv is None:
        gc.freeze()
        sys.exit(code)
    return code
