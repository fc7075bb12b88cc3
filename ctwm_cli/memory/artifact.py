"""The paper's code's Flat, Graph and CTWM policies, as variants of ``flat``, ``graph`` and ``ctwm``.

The paper's public code compares its memories with a check of the top-1 hint (``--predictor
top1``) on ``s_{t+1}``'s tail (``--tail-on next``); what it retrieves differs from ctwm's policies in
ways that move those numbers, so each is a named variant (``ctwm replay --flat-retrieval``,
``--graph-retrieval``, ``--ctwm-store``; all three set by ``--preset artifact``). All three retrieve
for the **state alone**: the code fetches its hints before the action is chosen, so no variant reads
``a_t``. Each keeps the ctwm encodings and budget rule (its lines are ctwm's, not the code's strings).

``flat_retrieval="uniform"`` (the code's ``B3_FlatRetrieval``)
    ``k`` distinct stored transitions drawn uniformly without replacement from all stored ones (no
    query). Seeded by the episode, so a frozen replay draws the same.
``graph_retrieval="recency"`` (the code's ``B7_GraphMemory``)
    The last ``k`` writes out of ``s_t``, newest first (a transition written twice counts twice and
    is listed once), then, to fill ``k``, stored transitions out of the ``2k`` observed states that
    share the most entities with ``s_t`` (most written first; ties to the smaller id).
``ctwm_store="five-feature"`` (the code's ``B8_CTWM``)
    A store of ``capacity`` (200) distinct transitions. Each entry has the score c = Σ w_j z(x_j),
    z the z-score over the store, weights (0.3, 0.2, 0.2, 0.15, 0.15) on: writes since it entered,
    1 / (1 + mean 0-based rank it was retrieved at) (0 if never), distinct successors of its source
    / writes out of its source, an uncertainty fixed at 0.5 (so it contributes 0), and 1 / visits of
    its destination (a visit: a write into or out of the state). A new transition in a full store
    evicts the lowest score. The top ``core_share`` (30%, at least 1) by score is the core: the
    prompt's core lines are up to ``core`` (3) core entries out of ``s_t``, filled with other core
    entries, best score first; then ``tail_items`` (2) of the rest are drawn without replacement
    with weights r^-τ over their score rank r, and one per source state is kept (the code's
    clusters). Core lines come first, the tail entries go to the tail summary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.checks import check_choice
from ..common.vocabulary import (
    CTWM_STORES,
    DEFAULT_BUDGET,
    DEFAULT_CORE,
    DEFAULT_K,
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_TAU,
    FLAT_RETRIEVALS,
    GRAPH_RETRIEVALS,
)
from .base import EpisodicMemory, MemoryPolicy, Prompt, Retrieval
from .core_tail import CoreTail, allocation_slots
from .encodings import Encoding
from .plugins import is_policy_spec, make_user_policy
from .policies import check_policy_args, make_policy
from .tokens import TokenCounter

FIVE_FEATURE_WEIGHTS = (0.3, 0.2, 0.2, 0.15, 0.15)
CAPACITY = 200
CORE_SHARE = 0.30
TAIL_ITEMS = 2
_STREAMS = {"flat": 3, "ctwm": 8}  # the code's seed offsets, as spawn keys


def _rng(seed: int, memory: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), _STREAMS[memory]]))


class UniformFlat(MemoryPolicy):
    """``flat`` with ``flat_retrieval="uniform"`` (see the module docstring)."""

    name = "flat"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 rng: np.random.Generator, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        self.rng = rng
        self.stored: list[int] = []
        memory.listeners.append(self.stored.append)

    def retrieve(self, state: int, action: int) -> Retrieval:
        n = len(self.stored)
        if not n:
            return Retrieval(tids=(), scores=())
        picked = self.rng.choice(n, size=min(self.k, n), replace=False)
        tids = tuple(self.stored[i] for i in picked.tolist())
        return Retrieval(tids=tids, scores=(1.0,) * len(tids))

    def retrieve_state(self, state: int) -> Retrieval:
        return self.retrieve(state, 0)


class RecencyGraph(MemoryPolicy):
    """``graph`` with ``graph_retrieval="recency"`` (see the module docstring)."""

    name = "graph"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        w = memory.world
        self.writes_out: list[list[int]] = [[] for _ in range(w.size)]
        self.entities = [tuple(w.entities[v]) for v in range(w.size)]
        self.observed: dict[str, set[int]] = {}  # entity -> observed states carrying it
        self.seen = [False] * w.size
        memory.writers.append(self._write)

    def _write(self, tid: int, step: int) -> None:
        mem = self.memory
        s, d = mem.src[tid], mem.dst[tid]
        self.writes_out[s].append(tid)
        for v in (s, d):
            if not self.seen[v]:
                self.seen[v] = True
                for e in self.entities[v]:
                    self.observed.setdefault(e, set()).add(v)

    def retrieve(self, state: int, action: int) -> Retrieval:
        k = self.k
        recent = self.writes_out[state][-k:][::-1]
        picks = list(dict.fromkeys(recent))
        if len(picks) < k:
            picks += [t for t in self._semantic(state) if t not in picks][:k - len(picks)]
        return Retrieval(tids=tuple(picks), scores=tuple(float(k - r) for r in range(len(picks))))

    def retrieve_state(self, state: int) -> Retrieval:
        return self.retrieve(state, 0)

    def _semantic(self, state: int) -> list[int]:
        if not self.seen[state]:
            return []
        shared: dict[int, int] = {}
        for e in self.entities[state]:
            for v in self.observed.get(e, ()):
                if v != state:
                    shared[v] = shared.get(v, 0) + 1
        near = sorted(shared, key=lambda v: (-shared[v], v))[:2 * self.k]
        mem = self.memory
        cands = [t for v in near for t in mem.out[v]]
        return sorted(cands, key=lambda t: (-mem.freq[t], t))[:self.k]


class FiveFeatureCoreTail(CoreTail):
    """``ctwm`` with ``ctwm_store="five-feature"`` (see the module docstring)."""

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, core: int = DEFAULT_CORE,
                 tau: float = DEFAULT_TAU, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                 rng: np.random.Generator, capacity: int = CAPACITY, core_share: float = CORE_SHARE,
                 tail_items: int = TAIL_ITEMS, weights: tuple[float, ...] = FIVE_FEATURE_WEIGHTS, **_: Any):
        super().__init__(memory, budget=budget, core=core, tau=tau, max_candidates=max_candidates)
        self.core_slots = core
        self.rng = rng
        self.capacity = capacity
        self.core_share = core_share
        self.tail_items = tail_items
        self.weights = np.asarray(weights, dtype=np.float64)
        n = memory.world.size
        self.ids: list[int] = []  # stored tids in insertion order
        self.f: dict[int, int] = {}
        self.q: dict[int, list[int]] = {}  # [sum of 0-based ranks, times retrieved]
        self.successors: list[set[int]] = [set() for _ in range(n)]
        self.out_writes = [0] * n
        self.visits = [0] * n
        self._k = 0
        self._slots: dict[tuple[int, int, int], tuple[list[int], int]] = {}
        self.evictions = 0
        memory.writers.append(self._write)

    def _write(self, tid: int, step: int) -> None:
        mem = self.memory
        s, d = mem.src[tid], mem.dst[tid]
        if tid in self.f:
            self.f[tid] += 1
        else:
            if len(self.ids) >= self.capacity:
                out = self.ids.pop(int(np.argmin(self.scores())))  # first of the lowest, as min() over the dict
                del self.f[out], self.q[out]
                self.evictions += 1
            self.ids.append(tid)
            self.f[tid] = 1
            self.q[tid] = [0, 0]
        self.successors[s].add(d)
        self.out_writes[s] += 1
        self.visits[s] += 1
        self.visits[d] += 1

    def retained(self) -> set[int]:
        return set(self.ids)  # the 200-entry store, after its evictions

    def scores(self) -> np.ndarray:
        """c over the stored entries (in insertion order)."""
        mem = self.memory
        src, dst = mem.src, mem.dst
        ids = self.ids
        f = np.fromiter((self.f[t] for t in ids), np.float64, len(ids))
        q = np.fromiter(((1.0 / (1.0 + self.q[t][0] / self.q[t][1])) if self.q[t][1] else 0.0 for t in ids),
                        np.float64, len(ids))
        d = np.fromiter((len(self.successors[src[t]]) / max(1, self.out_writes[src[t]]) for t in ids),
                        np.float64, len(ids))
        v = np.fromiter((1.0 / max(1, self.visits[dst[t]]) for t in ids), np.float64, len(ids))
        w = self.weights
        return w[0] * _z(f) + w[1] * _z(q) + w[2] * _z(d) + w[4] * _z(v)  # u is constant: its z is 0

    def retrieve(self, state: int, action: int) -> Retrieval:
        if not self.ids:
            self._k = 0
            return Retrieval(tids=(), scores=())
        c = self.scores()
        ids = self.ids
        order = sorted(range(len(ids)), key=lambda i: (-c[i], ids[i]))
        n_core = max(1, int(len(order) * self.core_share))
        core, tail = order[:n_core], order[n_core:]
        src = self.memory.src
        pick = [i for i in core if src[ids[i]] == state][:self.core_slots]
        if len(pick) < self.core_slots:
            chosen = set(pick)
            pick += [i for i in core if i not in chosen][:self.core_slots - len(pick)]
        heads: list[int] = []
        if tail:
            by_src: dict[int, int] = {}
            for r in draw_ranks(len(tail), self.tail_items, self.tau, self.rng):
                by_src.setdefault(src[ids[tail[r]]], tail[r])
            heads = list(by_src.values())
        chosen_ids = [ids[i] for i in (*pick, *heads)]
        for r, t in enumerate(chosen_ids):
            self.q[t][0] += r
            self.q[t][1] += 1
        self._k = len(pick)
        return Retrieval(tids=tuple(chosen_ids), scores=tuple(float(c[i]) for i in (*pick, *heads)))

    def retrieve_state(self, state: int) -> Retrieval:
        return self.retrieve(state, 0)

    def slots(self, m: int, room: int) -> tuple[list[int], int]:
        """As :meth:`CoreTail.slots`, cached per core size too (it changes from step to step here)."""
        key = (m, room, self.core)
        got = self._slots.get(key)
        if got is None:
            got = self._slots[key] = allocation_slots(m, self.tau, self.core, room)
        return got

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        self.core = max(1, self._k)  # this retrieval's core lines; the drawn tail entries go to the summary
        return super().render(retrieval, state, action, enc, counter)


def draw_ranks(n: int, draws: int, tau: float, rng: np.random.Generator) -> list[int]:
    """``min(draws, n)`` of the ranks 0..n-1 without replacement, one at a time, each with probability
    ∝ (rank + 1)^-τ among those left (successive sampling, as the paper's code draws its tail)."""
    w = np.arange(1, n + 1, dtype=np.float64) ** -tau
    left = list(range(n))
    out = []
    for _ in range(min(draws, n)):
        cum = np.cumsum(w[left])
        i = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(left) - 1)
        out.append(left.pop(i))
    return out


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return x - x.mean() if sd < 1e-9 else (x - x.mean()) / sd


def make_variant_policy(name: str, memory: EpisodicMemory, *, seed: int = 0, flat_retrieval: str = "bm25",
                        graph_retrieval: str = "tiers", ctwm_store: str = "ranked", **kw: Any) -> MemoryPolicy:
    """:func:`~ctwm_cli.memory.policies.make_policy`, with the paper's code's variants where asked for;
    ``seed`` seeds the variants that draw (uniform flat, five-feature ctwm)."""
    if is_policy_spec(name):  # the user's own class (ctwm_cli.memory.plugins)
        return make_user_policy(name, memory, seed=seed, **kw)
    check_choice("flat_retrieval", flat_retrieval, FLAT_RETRIEVALS)
    check_choice("graph_retrieval", graph_retrieval, GRAPH_RETRIEVALS)
    check_choice("ctwm_store", ctwm_store, CTWM_STORES)
    variant = {"flat": flat_retrieval == "uniform", "graph": graph_retrieval == "recency",
               "ctwm": ctwm_store == "five-feature"}.get(name, False)
    if not variant:
        return make_policy(name, memory, **kw)
    args = {k: kw[k] for k in ("budget", "k", "core", "tau", "max_candidates") if k in kw}
    check_policy_args(**{"budget": DEFAULT_BUDGET, "k": DEFAULT_K, "core": DEFAULT_CORE, "tau": DEFAULT_TAU,
                         "max_candidates": DEFAULT_MAX_CANDIDATES, **args})
    if name == "flat":
        return UniformFlat(memory, rng=_rng(seed, "flat"), **args)
    if name == "graph":
        return RecencyGraph(memory, **args)
    return FiveFeatureCoreTail(memory, rng=_rng(seed, "ctwm"), **args)
