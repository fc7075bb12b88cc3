"""ctwm: audit the memory traces of long-horizon language agents.

The library never imports Typer or Rich; those belong to :mod:`ctwm_cli.cli`.

    >>> from ctwm_cli import audit
    >>> result = audit(counts, seed=1)          # doctest: +SKIP
    >>> result.verdict.verdict, result.verdict.reason   # doctest: +SKIP
"""

from ._version import __version__
from .allocation import allocate
from .diagnostics import concentration
from .errors import CheckFailed, CtwmError, InputError, UsageError
from .tail import AuditResult, audit, audit_many
from .traces import ColumnMap, ItemCounts, TraceScan, item_counts, open_trace, scan_trace

__all__ = [
    "AuditResult",
    "CheckFailed",
    "ColumnMap",
    "CtwmError",
    "InputError",
    "ItemCounts",
    "TraceScan",
    "UsageError",
    "__version__",
    "allocate",
    "audit",
    "audit_many",
    "concentration",
    "item_counts",
    "open_trace",
    "scan_trace",
]
