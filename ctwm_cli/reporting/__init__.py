"""``ctwm report``: one self-contained HTML page for traces, ``world grid`` directories and replay results.

The page composes the results the commands already compute (audit, concentration, psd, health,
simulate --trace, finite-size, the replay commands' JSON): it calls the same library functions and computes
nothing of its own. Each figure is inline SVG with its finding as alt text and the numbers behind it in a
collapsible table; the CSS is inline, no script is needed, nothing is fetched, and every string from a trace is
escaped, so the page is safe to open from an untrusted trace. The same inputs and seed give the same bytes.

    >>> from ctwm_cli import report
    >>> page = report("sample_traces/tpl_events.parquet", seed=1, bootstrap=200)   # doctest: +SKIP
    >>> page.html[:15], page.to_dict()["sections"][0]["card"]["verdict"]             # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from .model import Block, Card, Estimate, Figure, Report, Section, Table

__all__ = ["DEFAULT_SWEEP", "Block", "Card", "Estimate", "Figure", "Report", "Section", "Table", "report"]


def __getattr__(name: str) -> Any:
    """``report`` and ``DEFAULT_SWEEP`` load the assembly (every section's library: the audit, health, PSD,
    allocation and the figures) on first use, so that ``ctwm audit`` and ``ctwm health``, which import
    :mod:`.summary` for their lead paragraph, do not pay for it (0.4 s measured)."""
    if name in ("report", "DEFAULT_SWEEP"):
        from . import assemble

        return getattr(assemble, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
