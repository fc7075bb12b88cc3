"""The retriever ladder of paper Fig. 3: which stored transitions enter the prompt at a step.

A retriever answers ``retrieve(store, state) -> [tid, ...]`` (rank 1 first, at most ``k``) for the
agent's current state. Each retriever is defined together with the store's eviction rule
(:data:`RETRIEVER_EVICTION`), so a ladder rung changes one mechanism at a time:

``uniform-frequency``
    Random-replacement store ("uniform reservoir"); the ``k`` globally most frequent items,
    whatever the state.
``state-frequency``
    LFU store; the ``k`` most frequent items touching the current state (as source or destination);
    if none is stored, the ``k`` globally most frequent.
``state-uniform``
    Random-replacement store; ``k`` items drawn uniformly without replacement among those touching
    the current state (rank = draw order); if none is stored, drawn uniformly from the whole store.
    State-aware but non-preferential.
``none``
    No retrieval (the store is still written).
``state-tau``
    LFU store; the ``pool`` (default 10) most frequent items touching the current state (if none,
    of the whole store), then ``k`` of them drawn without replacement with probability proportional
    to ``rank^-tau`` (rank 1 = most frequent; rank order of the result = draw order). This is the
    artifact's reading of the paper's tau sweep (its ``TauReservoirMemory``: 3 of the top 10
    state-mates), where tau acts on which items are retrieved, so on the trace; ctwm's own tau acts
    on the allocation vector only. Not a rung of the default ladder (:data:`RETRIEVERS`).

Frequency ties go to the smaller transition id. Retrieval happens **before** the step's write:
at step ``t`` the retriever sees the transitions ``e_0 .. e_{t-1}`` (what a predictor of
``s_{t+1}`` may use), never ``e_t`` itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.vocabulary import ALL_RETRIEVERS, DEFAULT_TAU
from ..common.vocabulary import RETRIEVERS as RETRIEVERS  # re-exported
from .store import TransitionStore, UniformStream

#: Every retriever, including those outside the default ladder.
DEFAULT_TAU_POOL = 10
RETRIEVER_EVICTION = {
    "state-tau": "lfu",
    "uniform-frequency": "random",
    "state-frequency": "lfu",
    "state-uniform": "random",
    "none": "random",
}


class Retriever(ABC):
    """Base class: ``name``, ``k`` and ``retrieve(store, state)``."""

    name = "none"

    def __init__(self, k: int = 3):
        check_range("k", k, lo=1)
        self.k = int(k)

    @property
    def eviction(self) -> str:
        return RETRIEVER_EVICTION[self.name]

    @abstractmethod
    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        ...


class NoRetriever(Retriever):
    name = "none"

    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        return []


class UniformFrequency(Retriever):
    name = "uniform-frequency"

    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        return store.top(self.k)


class StateFrequency(Retriever):
    name = "state-frequency"

    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        mates = store.by_state[state]
        if not mates:
            return store.top(self.k)
        if len(mates) == 1:
            return [mates[0]]
        freq = store.freq
        return sorted(mates, key=lambda t: (-freq[t], t))[: self.k]


class StateUniform(Retriever):
    name = "state-uniform"

    def __init__(self, k: int = 3, *, seed: int | None = None, rng: np.random.Generator | None = None):
        super().__init__(k)
        self.uniform = UniformStream(rng if rng is not None else np.random.default_rng(seed))

    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        pool = store.by_state[state] or store.items
        m = len(pool)
        if m == 0:
            return []
        nxt = self.uniform.next
        if m == 1:
            return [pool[0]]
        if m <= self.k:
            c = list(pool)
            for j in range(m - 1):  # Fisher-Yates: a uniformly random order
                r = j + int(nxt() * (m - j))
                c[j], c[r] = c[r], c[j]
            return c
        picked: list[int] = []
        taken: dict[int, int] = {}  # sparse partial Fisher-Yates over indices
        for j in range(self.k):
            r = j + int(nxt() * (m - j))
            picked.append(pool[taken.get(r, r)])
            taken[r] = taken.get(j, j)
        return picked


class StateTau(Retriever):
    name = "state-tau"

    def __init__(self, k: int = 3, *, tau: float = DEFAULT_TAU, pool: int = DEFAULT_TAU_POOL,
                 seed: int | None = None, rng: np.random.Generator | None = None):
        super().__init__(k)
        check_range("tau", tau, lo=0)
        check_range("pool", pool, lo=1)
        self.tau = float(tau)
        self.pool = int(pool)
        self.weights = [r ** -self.tau for r in range(1, self.pool + 1)]
        self.uniform = UniformStream(rng if rng is not None else np.random.default_rng(seed))

    def retrieve(self, store: TransitionStore, state: int) -> list[int]:
        mates = store.by_state[state]
        top = store.top_of(mates, self.pool) if mates else store.top(self.pool)
        m = len(top)
        if m <= 1:
            return list(top)
        left = list(range(m))
        w = self.weights[:m]
        total = sum(w)
        picked: list[int] = []
        nxt = self.uniform.next
        for _ in range(min(self.k, m)):  # sequential draws without replacement, weights rank^-tau
            u = nxt() * total
            j = 0
            acc = w[left[0]]
            while acc <= u and j < len(left) - 1:
                j += 1
                acc += w[left[j]]
            i = left.pop(j)
            total -= w[i]
            picked.append(top[i])
        return picked


def make_retriever(name: str, k: int = 3, *, seed: int | None = None,
                   rng: np.random.Generator | None = None, tau: float = DEFAULT_TAU) -> Retriever:
    """The retriever called ``name`` (one of :data:`ALL_RETRIEVERS`; ``tau`` for ``state-tau``)."""
    if name == "none":
        return NoRetriever(k)
    if name == "uniform-frequency":
        return UniformFrequency(k)
    if name == "state-frequency":
        return StateFrequency(k)
    if name == "state-uniform":
        return StateUniform(k, seed=seed, rng=rng)
    if name == "state-tau":
        return StateTau(k, tau=tau, seed=seed, rng=rng)
    raise UsageError(f"unknown retriever {name!r} (choose from: {', '.join(ALL_RETRIEVERS)})", params=("retriever",))


def make_store(retriever: Retriever, capacity: int, n_items: int, n_states: int, *,
               seed: int | None = None, rng: np.random.Generator | None = None,
               eviction: str | None = None) -> TransitionStore:
    """A store with the eviction rule ``retriever`` is defined with, or ``eviction`` when given (the
    ladder holds one rule for every rung that way, so a rung changes the retriever only)."""
    return TransitionStore(capacity, n_items, n_states, eviction=eviction or retriever.eviction, seed=seed, rng=rng)
