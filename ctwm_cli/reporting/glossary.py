"""One glossary for every table of the report page: the JSON key a column is stored under -> the words a reader
sees in its header. The key itself stays on the page (the header's ``title`` tooltip) and in ``--format json``,
so the page and the machine output name the same column.

A column whose key is not here is shown as it is written (tables built for the page already use words).
"""

from __future__ import annotations

#: key -> header. Keys of nested values are dotted (``confidence_interval.low``).
GLOSSARY: dict[str, str] = {
    # replay arms and reference rows
    "arm": "Arm (memory/encoding)",
    "name": "Reference",
    "on": "Measured on",
    "tokens_mean": "Tokens per step",
    "tokens_p95": "Tokens p95",
    "tokens_median": "Tokens median",
    "state_coverage": "State coverage",
    "transition_coverage": "Transition coverage",
    "tail_error": "Tail error",
    "overall_error": "Overall error",
    "answerable_steps": "Answerable steps",
    "answerable_tail_error": "Answerable tail error",
    "answerable_overall_error": "Answerable overall error",
    "evidence_in_prompt": "Evidence in prompt",
    "majority_evidence_in_prompt": "Majority evidence in prompt",
    "decision_tokens_mean": "Decision tokens per step",
    "tasks_reached": "Tasks reached",
    "tasks_started": "Tasks started",
    "steps_per_task": "Steps per task",
    "user_tokens_mean": "User tokens per step",
    # paired deltas
    "treatment": "Treatment",
    "baseline": "Baseline",
    "comparison": "Treatment vs baseline",
    "metric": "Metric",
    "group": "Group",
    "treatment_value": "Treatment value",
    "baseline_value": "Baseline value",
    "delta": "Change",
    "delta_interval": "Change [interval]",
    "relative": "Relative change [interval]",
    "interval_status": "Interval",
    "mde": "Minimum detectable effect",
    "budget": "Budget",
    "tokens_interval": "Tokens per step [interval]",
    "answerable_tail_error_interval": "Answerable tail error [interval]",
    # the tail audit
    "source": "Trace",
    "xmin": "x_min",
    "n_tail": "Items in the tail",
    "alpha": "α",
    "alpha_se": "α standard error",
    "p_gof": "p (goodness of fit)",
    "z": "Vuong z",
    "verdict": "Verdict",
    "reason": "Reason",
    # concentration
    "trace": "Trace or group",
    "n_items": "Items",
    "n_events": "Accesses",
    "gini": "Gini",
    "skewness": "Skewness",
    "max_over_median": "Max / median",
    "top10_share": "Top-10% share",
    "sigma_top10": "σ_top10",
    "singleton_fraction": "Read once",
    # health and dead weight
    "field": "Quantity",
    "value": "Value",
    "definition": "Definition",
    "window_start": "Window start",
    "window_end": "Window end",
    "never_retrieved": "Never retrieved",
    "never_retrieved_tokens": "Tokens never retrieved",
    "never_retrieved_share": "Share never retrieved",
    "live": "Live memories",
    "live_tokens": "Live tokens",
    "dead_weight_share": "Share never retrieved",
    "dead_token_share": "Token share never retrieved",
    "item": "Memory item",
    # over-time and retrieval views
    "period": "Period",
    "rank": "Rank",
    "retrieved": "Retrieved",
    "injected": "Injected",
    "injection_rate": "Injection rate",
    "score_low": "Score from",
    "score_high": "Score to",
    "rows": "Rows",
    "steps": "Steps",
    "tokens": "Tokens",
    "tokens_per_step": "Tokens per step",
    "accesses": "Accesses",
    "items": "Items",
    "top10_share_period": "Top-10% share",
    "dead_share": "Share never read",
    # diff
    "subject": "Trace or group",
    "base": "Base",
    "head": "Head",
    "change": "Change",
    "change_interval": "Change [interval]",
    "pvalue": "p (permutation)",
    "tolerance": "Tolerance",
    "status": "Gate",
}


def header(key: str) -> str:
    """The words of a column's header (the key itself when the glossary has no entry)."""
    return GLOSSARY.get(key, key)
