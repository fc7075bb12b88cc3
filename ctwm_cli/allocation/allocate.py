"""``allocate``: the CTWM allocation over M ranked items, its core/tail split and a slot budget."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..common.results import ToDict, jsonable, result
from .apportion import largest_remainder_of_shares
from .rank import (
    check_budget,
    check_core,
    check_items,
    check_tau,
    concentration,
    core_tail_log_mass,
    log_weights,
    logsumexp,
    shares_from_log,
)

#: Ranks listed by ``Allocation.to_dict()`` unless told otherwise.
DEFAULT_HEAD = 20


class RenamedConcentration:
    """Deprecated spellings of the concentration fields (``skew``, ``max_median``), kept for callers
    of the public API; every result now spells them ``skewness`` and ``max_over_median``."""

    __slots__ = ()

    def _renamed(self, old: str, new: str) -> float:
        warnings.warn(f"{type(self).__name__}.{old} is deprecated; use .{new}", DeprecationWarning, stacklevel=3)
        return getattr(self, new)

    @property
    def skew(self) -> float:
        return self._renamed("skew", "skewness")

    @property
    def max_median(self) -> float:
        return self._renamed("max_median", "max_over_median")

    @property
    def log_max_median(self) -> float:
        return self._renamed("log_max_median", "log_max_over_median")


@result
class Allocation(RenamedConcentration, ToDict):
    """b(r; τ) over ``n_items`` ranks, core mass C(K, τ), and B slots apportioned to the K core
    ranks plus one tail-summary group (ranks > K pooled).

    ``shares`` (length M) and ``core_slots`` (length K) are numpy arrays; ``to_dict()`` lists only
    the first ``head`` ranks of each, plus the summary numbers.
    """

    n_items: int
    tau: float
    core: int
    budget: int
    log_z: float
    shares: np.ndarray  # b(r; τ), r = 1..M
    core_mass: float  # C(K, τ)
    tail_share: float  # 1 - C(K, τ)
    log_tail_share: float  # summed in log space over the tail ranks: resolvable when C rounds to 1
    core_quotas: np.ndarray  # B·b(r; τ) for r <= K
    tail_quota: float  # B·(1 - C)
    core_slots: np.ndarray  # int64, non-increasing in rank, length K
    tail_slots: int  # slots of the tail summary
    gini: float
    skewness: float
    max_over_median: float
    log_max_over_median: float

    @property
    def items_in_prompt(self) -> int:
        """Core ranks given at least one slot (tail items appear only through the summary)."""
        return int(np.count_nonzero(self.core_slots))

    @property
    def tail_items(self) -> int:
        return self.n_items - self.core

    def to_dict(self, head: int = DEFAULT_HEAD) -> dict[str, Any]:
        h = max(0, min(int(head), self.core))
        return jsonable({
            "n_items": self.n_items,
            "tau": self.tau,
            "core": self.core,
            "budget": self.budget,
            "core_mass": self.core_mass,
            "tail_share": self.tail_share,
            "log_tail_share": self.log_tail_share,
            "tail_items": self.tail_items,
            "tail_slots": self.tail_slots,
            "core_slots_total": int(self.core_slots.sum()),
            "items_in_prompt": self.items_in_prompt,
            "gini": self.gini,
            "skewness": self.skewness,
            "max_over_median": self.max_over_median,
            "log_max_over_median": self.log_max_over_median,
            "log_z": self.log_z,
            "ranks_listed": h,
            "ranks": [
                {"rank": r + 1, "share": self.shares[r], "quota": self.core_quotas[r],
                 "slots": int(self.core_slots[r])}
                for r in range(h)
            ],
            "tail": {"ranks": f"{self.core + 1}-{self.n_items}", "items": self.tail_items,
                     "share": self.tail_share, "quota": self.tail_quota,
                     "slots": self.tail_slots},
        })


def allocate(n_items: int, tau: float, *, core: int, budget: int) -> Allocation:
    """The CTWM allocation of paper Definition A.1 with a budget of ``budget`` slots.

    b(r; τ) = r^-τ / Σ_j j^-τ for r = 1..M; the core is ranks 1..K (1 <= K < M), the tail the
    rest. The B slots are apportioned by largest remainder between the K core ranks (quota
    B·b(r; τ) each) and one tail-summary group (quota B·(1 - C(K, τ))); ties go to the better
    rank, the tail counting as rank K + 1. The slots sum to B and never increase with rank.
    """
    m = check_items(n_items)
    t = check_tau(tau)
    k = check_core(core, m)
    b = check_budget(budget)
    return allocate_unchecked(m, t, k, b)


def allocate_unchecked(m: int, tau: float, k: int, budget: int) -> Allocation:
    """No argument checks (callers check); also accepts k == m (no tail), used for per-step lists shorter than K."""
    logw = log_weights(m, tau)
    log_z = logsumexp(logw)
    shares = shares_from_log(logw, log_z)
    log_core, log_tail = core_tail_log_mass(logw, log_z, k)
    # each of C and 1 - C from the smaller of the two log masses, so both stay in [0, 1] and accurate
    if log_core <= log_tail:
        core_mass = math.exp(log_core)
        tail_share = -math.expm1(log_core)
    else:
        tail_share = math.exp(log_tail) if k < m else 0.0
        core_mass = -math.expm1(log_tail) if k < m else 1.0
    core_w = np.minimum.accumulate(shares[:k])  # exact weak monotonicity, see apportion.py
    core_q = budget * core_w
    tail_q = budget * tail_share
    slots = largest_remainder_of_shares(np.append(core_w, tail_share), budget)
    conc = concentration(logw, log_z)
    return Allocation(
        n_items=m,
        tau=tau,
        core=k,
        budget=budget,
        log_z=log_z,
        shares=shares,
        core_mass=core_mass,
        tail_share=tail_share,
        log_tail_share=log_tail,
        core_quotas=core_q,
        tail_quota=tail_q,
        core_slots=slots[:k],
        tail_slots=int(slots[k]),
        **conc,
    )

