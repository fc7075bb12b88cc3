"""Heavy-tail fits, bootstrap goodness of fit, likelihood-ratio tests and the audit's verdict."""

from .alternatives import TailFit
from .audit import AuditResult, AuditSettings, audit, audit_many, derive_seed, fit_alternatives
from .bootstrap import GofResult, bootstrap_gof
from .compare import Comparison
from .powerlaw import Histogram, PowerLawFit, fit_power_law, sample_power_law
from .verdict import INCONCLUSIVE, LOGNORMAL, TPL, VERDICTS, Verdict, paper_rule

__all__ = [
    "INCONCLUSIVE",
    "LOGNORMAL",
    "TPL",
    "VERDICTS",
    "AuditResult",
    "AuditSettings",
    "Comparison",
    "GofResult",
    "Histogram",
    "PowerLawFit",
    "TailFit",
    "Verdict",
    "audit",
    "audit_many",
    "derive_seed",
    "bootstrap_gof",
    "fit_alternatives",
    "fit_power_law",
    "paper_rule",
    "sample_power_law",
]
