"""Memory health (the second source document, section 8): context usage, maintenance share, churn,
retrieval hit rate, stale hits, failure attribution, store growth, the success-vs-volume curve and
contradiction chains of an agent's memory trace."""

from ..common.gates import Check, CheckOutcome, evaluate_checks, parse_check
from .chains import Contradictions, contradiction_chains
from .curve import SuccessCurve, success_volume_curve
from .growth import GrowthFit, classify_growth
from .report import METRICS, HealthReport, health_of_events
from .trace import health_of_trace

__all__ = [
    "METRICS",
    "Check",
    "CheckOutcome",
    "Contradictions",
    "GrowthFit",
    "HealthReport",
    "SuccessCurve",
    "classify_growth",
    "contradiction_chains",
    "evaluate_checks",
    "health_of_events",
    "health_of_trace",
    "parse_check",
    "success_volume_curve",
]
