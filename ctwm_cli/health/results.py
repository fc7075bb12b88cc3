"""Result types of the memory-health metrics (definitions in :mod:`.report`)."""

from __future__ import annotations

from ..common.results import ToDict, result
from ..stats.intervals import ConfidenceInterval


@result
class ContextUsage(ToDict):
    budget: int | None
    steps: int
    memory_event: str | None  # "inject" or "retrieve": whose tokens count as injected memory
    memory_tokens_mean: float
    memory_tokens_max: float
    context_steps: int
    context_tokens_mean: float
    context_usage: float
    memory_token_share: float
    memory_share_of_context: float
    steps_over_budget: float


@result
class Maintenance(ToDict):
    steps: int
    maintenance_steps: int
    maintenance_ratio: float
    warn_above: float


@result
class StoreChurn(ToDict):
    tasks: int
    net_new_per_task: float
    net_new_median: float
    writes: int
    removals: int
    initial_size: int
    final_size: int


@result
class RetrievalHealth(ToDict):
    queries: int
    queries_with_hits: int
    retrieval_hit_rate: float
    #: "used": a query hits when one of its retrieved items is injected at the same step (the trace
    #: says what was used); "returned": when it retrieved anything (no inject rows beside the
    #: retrieve rows); None: not computed.
    hit_definition: str | None
    retrieved_results: int  # retrieve rows at steps with a query
    used_results: int  # of those, the ones injected at the same step ("used" definition only)
    used_result_share: float
    hit_event: str | None
    hits: int
    stale_hits: int
    stale_hit_share: float
    stale_by_reason: dict[str, int]


ATTRIBUTION_SCOPE = (
    "Failed tasks' share of using an entry that was superseded or invalidated (at any time) or expired "
    "when used, minus the same share among successful tasks, with a Newcombe hybrid-score 95% interval. "
    "It can show that failures go with such use more often than successes do. It cannot show that an "
    "entry caused a failure: harder tasks, or tasks that read more memory, can differ in both; the "
    "interval covers sampling noise between tasks only, treating tasks as independent."
)


@result
class FailureAttribution(ToDict):
    tasks_with_outcome: int
    failed_tasks: int
    succeeded_tasks: int
    failures_attributed: int  # failed tasks that used a revoked or expired entry
    successes_with_revoked_use: int
    failed_revoked_use: float  # failures_attributed / failed_tasks
    succeeded_revoked_use: float
    failure_attribution: float  # failed_revoked_use - succeeded_revoked_use
    failure_attribution_confidence_interval: ConfidenceInterval | None  # Newcombe, at 0.95; None: not formed
    ci_note: str  # how the interval was formed, or why it could not be
    scope: str  # what the number can and cannot show
    revoked_items: int  # superseded or invalidated by the end of the trace
    archived_items: int  # retired by archive (not revocations)
    evicted_items: int  # retired by evict (not revocations)
    expired_items: int  # past valid_until at the end of the trace
    memory_items: int
    revoked_share: float  # revoked_items / memory_items (the article's revoked entries / total entries)
    attributed_tasks: tuple[str, ...]

    @property
    def failure_attribution_ci(self) -> tuple[float, float] | None:
        """``(low, high)`` of :attr:`failure_attribution_confidence_interval` (the name before schema version 3)."""
        ci = self.failure_attribution_confidence_interval
        return None if ci is None else (ci.low, ci.high)
