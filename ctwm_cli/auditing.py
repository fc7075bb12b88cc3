"""The audit of per-item counts as ``ctwm audit`` reports it: the tail audit with the counts' concentration.

The tail audit (:mod:`ctwm_cli.tail`) fits, tests and decides; the concentration measures (Gini, skew,
max/median, top-decile spread) are :mod:`ctwm_cli.diagnostics`, one level above ``tail`` (README,
Layering: ``diagnostics`` uses the tail's fits for the x_min path). This module, above both, composes
them, so ``tail`` never imports ``diagnostics``. The concentration sits in the same place of the JSON
as before the split (between ``power_law_pass`` and ``calibration``): the output is byte-identical.

    >>> from ctwm_cli import audit
    >>> audit(counts, seed=1).concentration.gini     # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .common.errors import UsageError
from .common.results import result
from .diagnostics.measures import Concentration, concentration
from .plots.ccdf import plot_audit
from .runtime.progress import ProgressCallback
from .tail.audit import AuditResult as TailAudit
from .tail.audit import as_values
from .tail.audit import audit_many as tail_audit_many


@result
class AuditResult(TailAudit):
    """A tail audit (:class:`ctwm_cli.tail.AuditResult`) with the concentration of the audited counts
    (``None`` with ``diagnostics=False``)."""

    concentration: Concentration | None = None  # redeclared: the field keeps its place, now typed
    # the audited values, kept for plot() (like a timing: on the object, never in to_dict() or the schema)
    sample: np.ndarray | None = dataclasses.field(default=None, compare=False, metadata={"timing": True})

    @classmethod
    def composed(cls, audited: TailAudit, measures: Concentration | None, sample: np.ndarray) -> AuditResult:
        fields = {f.name: getattr(audited, f.name) for f in dataclasses.fields(audited)}
        return cls(**{**fields, "concentration": measures, "sample": sample})

    def plot(self, *, ax: Any = None) -> Any:
        """The audit's CCDF figure (``ctwm audit --plot``): the data, the fitted power law, TPL and
        log-normal tails and x_min. Draws into ``ax`` if given; returns the matplotlib Figure
        (matplotlib is imported now, not before)."""
        if self.sample is None:
            raise UsageError("plot: this result holds no data to draw (it was built without its sample)", params=())
        return plot_audit(self, self.sample, ax=ax)


def audit(counts: Any, *, label: str | None = None, progress: ProgressCallback | None = None,
          **options: Any) -> AuditResult:
    """Audit per-item counts (an array or :class:`~ctwm_cli.traces.ItemCounts`): :func:`ctwm_cli.tail.audit`
    plus the concentration measures (``diagnostics=False`` leaves them out). ``options`` are those of
    :func:`audit_many`."""
    return audit_many([counts], labels=[label], progress=progress, **options)[0]


def audit_many(counts_list: Sequence[Any], *, diagnostics: bool = True, **options: Any) -> list[AuditResult]:
    """Audit several count vectors (:func:`ctwm_cli.tail.audit_many`, whose options these are) and, with
    ``diagnostics`` (default), measure the concentration of each."""
    counts_list = list(counts_list)
    audits = tail_audit_many(counts_list, **options)
    settings = options.get("settings")
    discrete = bool(settings.discrete if settings is not None else options.get("discrete", True))
    # the values the tail audit fitted, in the same order (a sum's last bit depends on it)
    samples = [as_values(c, discrete) for c in counts_list]
    return [AuditResult.composed(a, concentration(x) if diagnostics else None, x)
            for a, x in zip(audits, samples, strict=True)]
