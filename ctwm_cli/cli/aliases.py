"""Deprecated option spellings, kept hidden and warned about once per run.

``--level`` meant a significance level in ``audit`` and a confidence level elsewhere; it is now
``--significance`` and ``--confidence``, and ``--level`` stays on each command as a hidden alias of the
one it meant there. :data:`CONFIDENCE` declares the pair once for every option group with intervals.
"""

from __future__ import annotations

from typing import Any

from .option_groups import opt
from .output import message

CONFIDENCE_HELP = "Confidence level of the intervals."
#: ``--confidence`` and its hidden deprecated spelling ``--level`` (a group field ``level_alias``)
CONFIDENCE = [
    opt("level", float, ("--confidence",), CONFIDENCE_HELP, 0.95),
    opt("level_alias", float | None, ("--level",), "Deprecated spelling of --confidence.", None, hidden=True),
]


def aliased(value: Any, alias: Any, old: str, new: str) -> Any:
    """``alias`` (with one warning on stderr) when the deprecated ``old`` flag was given, else ``value``."""
    if alias is None:
        return value
    message(f"warning: {old} is deprecated here; use {new}")
    return alias
