"""Exceptions of the library, each carrying the CLI exit code it maps to.

Exit codes (documented in README and ``ctwm --help``):
0 ok; 1 a requested check failed; 2 usage error; 3 input/data error; 4 unexpected error.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_UNEXPECTED = 4


class CtwmError(Exception):
    """Base of every error the library raises on purpose. The message is one line.

    ``params`` names the library parameters the message is about, spelled as the library spells them
    (``input_format``, ``base_url``); a front end may rewrite them into its own vocabulary (the CLI
    turns them into its flags, ``--input-format``) while a notebook user reads the parameter names.
    """

    exit_code = EXIT_UNEXPECTED

    def __init__(self, *args: object, params: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.params = tuple(params)


class UsageError(CtwmError, ValueError):
    """A parameter is out of range or options contradict each other."""

    exit_code = EXIT_USAGE


class InputError(CtwmError):
    """A trace or data file cannot be read or does not fit the schema."""

    exit_code = EXIT_INPUT


class WriteError(InputError):
    """An output could not be written (a full disk, a file size limit, a file another writer holds).

    Exit 3 like an unreadable input: the data, not the invocation, is at fault."""


class CheckFailed(CtwmError):
    """A check the user asked for (``--expect``, ``--fail-on``) did not hold."""

    exit_code = EXIT_CHECK_FAILED


class CtwmWarning(UserWarning):
    """Base class of the warnings ctwm emits."""
