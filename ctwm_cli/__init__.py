"""ctwm: audit the memory traces of long-horizon language agents.

The library never imports Typer or Rich; those belong to :mod:`ctwm_cli.cli`.

    >>> from ctwm_cli import audit
    >>> result = audit(counts, seed=1)          # doctest: +SKIP
    >>> result.verdict.verdict, result.verdict.reason   # doctest: +SKIP

Public names are loaded on first use (PEP 562): ``import ctwm_cli`` costs milliseconds, and
``ctwm --version`` never pays for scipy, numba or pyarrow (measured: 1.3 s -> see
``benchmarks/bench_startup.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .common.errors import CheckFailed as CheckFailed
from .common.errors import CtwmError as CtwmError
from .common.errors import InputError as InputError
from .common.errors import UsageError as UsageError

#: public name -> the module that defines it. A plain dict: add a name here to export it lazily.
LAZY: dict[str, str] = {
    "AuditResult": "ctwm_cli.auditing",
    "audit": "ctwm_cli.auditing",
    "audit_many": "ctwm_cli.auditing",
    "allocate": "ctwm_cli.allocation",
    "concentration": "ctwm_cli.diagnostics",
    "ColumnMap": "ctwm_cli.traces",
    "ItemCounts": "ctwm_cli.traces",
    "TraceScan": "ctwm_cli.traces",
    "item_counts": "ctwm_cli.traces",
    "open_trace": "ctwm_cli.traces",
    "scan_trace": "ctwm_cli.traces",
    "AuditResults": "ctwm_cli.api",
    "TraceCounts": "ctwm_cli.api",
    "audit_trace": "ctwm_cli.api",
    "read_trace": "ctwm_cli.api",
    "TraceWriter": "ctwm_cli.traces.writer",
    "Report": "ctwm_cli.reporting",
    "report": "ctwm_cli.reporting",
}

__all__ = sorted(["CheckFailed", "CtwmError", "InputError", "UsageError", "__version__", *LAZY])

if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from .allocation import allocate as allocate
    from .auditing import AuditResult as AuditResult
    from .auditing import audit as audit
    from .auditing import audit_many as audit_many
    from .diagnostics import concentration as concentration
    from .traces import ColumnMap as ColumnMap
    from .traces import ItemCounts as ItemCounts
    from .traces import TraceScan as TraceScan
    from .traces import item_counts as item_counts
    from .traces import open_trace as open_trace
    from .traces import scan_trace as scan_trace


def __getattr__(name: str) -> Any:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ctwm_cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
