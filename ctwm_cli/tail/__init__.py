"""Heavy-tail fits, bootstrap goodness of fit, likelihood-ratio tests and the audit's verdict."""

from .audit import AuditResult, AuditSettings, audit, audit_many, derive_seed, fit_alternatives
from .bootstrap import GofResult, bootstrap_gof
from .compare import Comparison
from .families import REGISTRY
from .family_base import Family, Tail, TailFit
from .heterogeneity import Heterogeneity, across_groups, heterogeneity_test
from .powerlaw import Histogram, PowerLawFit, fit_power_law, sample_power_law
from .verdict import INCONCLUSIVE, LOGNORMAL, TPL, VERDICTS, Verdict, paper_rule

__all__ = [
    "INCONCLUSIVE",
    "LOGNORMAL",
    "REGISTRY",
    "TPL",
    "VERDICTS",
    "AuditResult",
    "AuditSettings",
    "Comparison",
    "Family",
    "GofResult",
    "Heterogeneity",
    "Histogram",
    "PowerLawFit",
    "Tail",
    "TailFit",
    "Verdict",
    "across_groups",
    "audit",
    "audit_many",
    "bootstrap_gof",
    "derive_seed",
    "fit_alternatives",
    "fit_power_law",
    "heterogeneity_test",
    "paper_rule",
    "sample_power_law",
]
