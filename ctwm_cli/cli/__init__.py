"""The ``ctwm`` command line: a thin Typer layer over the library.

Each ``cmd_*.py`` module in this package defines ``register(app)``; :func:`main` maps the library's
exceptions to one line on stderr and a documented exit code.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence

import typer

from .._version import __version__
from ..errors import EXIT_UNEXPECTED, CtwmError
from ..interrupts import exit_code as interrupt_exit_code
from ..interrupts import interrupt_cause, signals_raise

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a requested check failed (--expect, --fail-on); 2 usage error; "
    "3 input/data error; 4 unexpected error. CTWM_DEBUG=1 adds the traceback (same exit code)."
)

app = typer.Typer(
    name="ctwm",
    help=(
        "Audit the memory traces of long-horizon language agents.\n\n"
        "Reads access logs (JSONL or Parquet) and tells whether the per-item access counts are "
        "heavy-tailed and of which family, how concentrated they are, and what a CTWM rank "
        "allocation would do with them.\n\n" + EXIT_CODES_HELP
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ctwm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Audit the memory traces of long-horizon language agents."""


# Command modules are light: each imports the library inside its command function, so building the
# whole command tree (for --help, --version, completion) loads no numpy, scipy, numba or pyarrow.
def _register_commands() -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{mod.name}").register(app)


_register_commands()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return (and, as a script, exit with) the exit code."""
    debug = os.environ.get("CTWM_DEBUG") == "1"
    try:
        with signals_raise():  # SIGTERM too: finally blocks run, workers end, exit 143
            app(args=list(argv) if argv is not None else None, prog_name="ctwm", standalone_mode=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if (cause := interrupt_cause(exc)) is not None:  # Typer exits 130 on any KeyboardInterrupt
            print(f"ctwm: {cause or 'interrupted'}", file=sys.stderr)
            code = interrupt_exit_code(cause)
    except CtwmError as exc:
        if debug:
            traceback.print_exc()  # the traceback, and still the documented exit code
        print(f"ctwm: error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"ctwm: {exc or 'interrupted'}", file=sys.stderr)
        code = interrupt_exit_code(exc)
    except Exception as exc:  # the documented last resort: exit 4, one line
        if debug:
            traceback.print_exc()  # the traceback, and still the documented exit code
        print(
            f"ctwm: unexpected error: {type(exc).__name__}: {exc} (set CTWM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        code = EXIT_UNEXPECTED
    if argv is None:
        sys.exit(code)
    return code
