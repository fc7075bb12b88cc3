"""What the audit returns: :class:`AuditResult`, its fits, tests and verdict, and its JSON (the pipeline that
computes it is :mod:`ctwm_cli.tail.audit`)."""

from __future__ import annotations

import math
from typing import Any

from .._version import __version__
from ..common.results import ToDict, result
from . import families as fam
from .bootstrap import GofResult
from .calibrate import Calibration
from .compare import Comparison
from .crosscheck import CrossCheck
from .families import TailFit
from .heterogeneity import Heterogeneity
from .power import PowerAnalysis
from .powerlaw import PowerLawFit
from .settings import AuditSettings
from .uncertainty import Uncertainty
from .verdict import Verdict


@result
class AuditResult(ToDict):
    """Everything the audit found: fits, p_gof, likelihood-ratio tests and the verdict.

    ``power_law`` is the KS-optimal cutoff over every candidate leaving ``settings.floor`` points.
    When its tail is shorter than ``min_tail`` the verdict is inconclusive (Assumption 3.3) and
    ``constrained`` holds the best cutoff that does leave ``min_tail`` points — reported, labelled,
    never used for the verdict."""

    source: str | None  # the trace's name (or the caller's label); ``label`` joins it with the group
    group: str | None = None  # the group of the trace audited (--group-by); None: the whole trace
    n_items: int  # the items whose counts were fitted
    distinct_values: int
    settings: AuditSettings
    power_law: PowerLawFit | None
    gof: GofResult | None
    alternatives: dict[str, TailFit]
    comparisons: list[Comparison]
    verdict: Verdict
    power_law_pass: bool | None
    # the trace's concentration measures: ctwm_cli.diagnostics sits above tail (README, Layering), so the
    # tail audit leaves this None and ctwm_cli.auditing, the level above both, fills it (same JSON position)
    concentration: ToDict | None = None
    calibration: Calibration | None = None
    constrained: PowerLawFit | None = None
    uncertainty: Uncertainty | None = None
    cross_check: CrossCheck | None = None
    power: PowerAnalysis | None = None
    # the checked families' own bootstrap goodness of fit on the tail (tail/fitcheck.py): TPL and log-normal,
    # every alternative with check_all; the power law's is ``gof``. None: not run (no bootstrap, or --xmax)
    fit_checks: dict[str, GofResult] | None = None
    # why the fit checks were not run although the bootstrap was (None: run, or no bootstrap at all)
    fit_checks_skipped: str | None = None
    # do the pooled trace's groups share one law? (tail/heterogeneity.py; None: not asked, or no cutoff)
    heterogeneity: Heterogeneity | None = None
    version: str = __version__

    # Shortcuts for the paper's Definition 3.2 tuple (x_min, α, p_gof, Λ, σ).
    @property
    def tpl_vs_lognormal(self) -> Comparison | None:
        return next((c for c in self.comparisons if (c.first, c.second) == fam.RULE_PAIR), None)

    @property
    def p_gof(self) -> float:
        return self.gof.pvalue if self.gof is not None else math.nan

    # The headline numbers of summary_row() (and of the repr) as attributes, under the same names; NaN
    # (None for a count) when there is no fit or no TPL vs log-normal comparison.
    @property
    def xmin(self) -> float:
        return self.power_law.xmin if self.power_law is not None else math.nan

    @property
    def n_tail(self) -> int | None:
        return self.power_law.n_tail if self.power_law is not None else None

    @property
    def alpha(self) -> float:
        return self.power_law.alpha if self.power_law is not None else math.nan

    @property
    def alpha_se(self) -> float:
        return self.power_law.alpha_se if self.power_law is not None else math.nan

    @property
    def Lambda(self) -> float:  # the paper's Λ, under the JSON's name
        c = self.tpl_vs_lognormal
        return c.statistic if c is not None else math.nan

    @property
    def sigma(self) -> float:
        c = self.tpl_vs_lognormal
        return c.sigma if c is not None else math.nan

    @property
    def z(self) -> float:
        c = self.tpl_vs_lognormal
        return c.z if c is not None else math.nan

    @property
    def reason(self) -> str:
        return self.verdict.reason

    @property
    def label(self) -> str | None:
        """The subject's name, ``source[group]`` for a group (tables, gates, ``ctwm diff``); None without a source."""
        if self.source is None:
            return None
        return self.source if self.group is None else f"{self.source}[{self.group}]"

    # the name of schema version 2 (issue 43 renamed the JSON's n), kept for library callers
    @property
    def n(self) -> int:
        return self.n_items

    def summary_row(self) -> dict[str, Any]:
        """One flat row for tables, CSV and JSON lines."""
        pl, c = self.power_law, self.tpl_vs_lognormal
        row = {
            "source": self.source,  # the JSON's field names (issue 15: one name per concept in every format)
            "group": self.group,
            "n_items": self.n_items,
            "distinct_values": self.distinct_values,
            "xmin": pl.xmin if pl else None,
            "n_tail": pl.n_tail if pl else None,
            "alpha": pl.alpha if pl else None,
            "alpha_se": pl.alpha_se if pl else None,
            "p_gof": self.p_gof,
            "Lambda": c.statistic if c else None,
            "sigma": c.sigma if c else None,
            "z": c.z if c else None,
            "verdict": self.verdict.verdict,
            "reason": self.verdict.reason,
            "power_law_pass": self.power_law_pass,
        }
        if self.calibration is not None:
            row["calibrated_verdict"] = self.calibration.verdict.verdict
        return row
