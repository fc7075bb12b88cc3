"""ctwm: audit the memory traces of long-horizon language agents.

The library never imports Typer or Rich; those belong to :mod:`ctwm_cli.cli`.
"""

from ._version import __version__
from .errors import CheckFailed, CtwmError, InputError, UsageError
from .traces import ColumnMap, ItemCounts, TraceScan, item_counts, open_trace, scan_trace

__all__ = [
    "CheckFailed",
    "ColumnMap",
    "CtwmError",
    "InputError",
    "ItemCounts",
    "TraceScan",
    "UsageError",
    "__version__",
    "item_counts",
    "open_trace",
    "scan_trace",
]
