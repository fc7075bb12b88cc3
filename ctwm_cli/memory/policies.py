"""Memory policies over one episodic store: ``full``, ``flat``, ``graph`` and ``ctwm`` (paper Section 5.4),
and ``tiered`` (the second source document; in :mod:`ctwm_cli.memory.tiered`).

Every policy reads the same :class:`EpisodicMemory` — the transitions ``e_0 .. e_{t-1}`` written
so far (a :class:`~ctwm_cli.memory.store.TransitionStore` that never evicts, plus episodic
indexes) — and answers, for the current state ``s_t`` and action ``a_t``:

1. :meth:`MemoryPolicy.retrieve` — the deterministic retrieval map ρ: a ranked list of stored
   transition ids with scores. It does not depend on the encoding (paper Theorem A.7).
2. :meth:`MemoryPolicy.render` — the prompt under an encoding and the token budget: which
   retrieved items get a line, which are summarised, and the exact token count.

Policies:

``full`` (Full History)
    Every past step, oldest first, one line each. No retrieval and no budget.
``flat`` (Flat Retrieval)
    BM25 (k1 = 1.2, b = 0.75, Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``) over the stored
    distinct transitions, each a document of the words of its source place and entities, its
    action name and its destination place and entities; the query is the current state's place,
    entities and the action's name. Top ``k``; ties to the smaller transition id.
``graph`` (Graph Memory, AriGraph-style)
    A semantic graph of the observed states (an edge per stored transition) with episodic lookup:
    tier 3 = stored outcomes of ``(s_t, a_t)``, tier 2 = other stored transitions from ``s_t``,
    tier 1 = neighbourhood expansion, transitions from the observed neighbours of ``s_t``
    (successors and predecessors). Score = tier + half the Jaccard similarity of the words of the
    transition's destination and of the current state (semantic relevance). Top ``k``.
``ctwm`` (Core–Tail World Model)
    The same candidate pool, ranked by relevance and transition support, in a core–tail prompt under
    b(r; τ) (:mod:`ctwm_cli.memory.core_tail`).

``none`` (no memory)
    The prompt carries no memory: the header and the output contract only. The floor row of a
    comparison (beside the ``oracle`` and ``counts`` ceilings): a memory that does no better than
    ``none`` is not being used, and a run that cannot tell a policy from ``none`` cannot detect memory.

Rendering under the budget: ``flat`` and ``graph`` add lines in rank order and stop at the first
line that does not fit. A budget smaller than a prompt's fixed lines (header, output contract,
minimal tail line) raises :class:`~ctwm_cli.common.errors.UsageError`. Ties in every ranking go to the
smaller transition id.
"""

from __future__ import annotations

import heapq
from typing import Any

from ..allocation.rank import check_tau
from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.vocabulary import (
    DEFAULT_BUDGET,
    DEFAULT_CORE,
    DEFAULT_K,
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_TAU,
    MEMORY_POLICIES,
)
from .base import EpisodicMemory, MemoryPolicy, PooledPolicy, Prompt, Retrieval, candidate_pool, make_prompt, top_scored
from .bm25 import BM25, BM25_B, BM25_K1
from .core_tail import CoreTail
from .encodings import Encoding
from .tiered import TieredMemory
from .tokens import TokenCounter

__all__ = [
    "BM25_B", "BM25_K1", "DEFAULT_BUDGET", "DEFAULT_CORE", "DEFAULT_K", "DEFAULT_MAX_CANDIDATES", "DEFAULT_TAU",
    "MEMORY_POLICIES", "EpisodicMemory", "FlatRetrieval", "FullHistory", "GraphMemory", "MemoryPolicy",
    "NoMemory", "Prompt", "Retrieval", "check_policy_args", "make_policy",
]


class FullHistory(MemoryPolicy):
    name = "full"
    kind = "history"

    def __init__(self, memory: EpisodicMemory, **_: Any):
        super().__init__(memory, budget=None)
        self._lines: list[str] = []
        self._tokens: list[int] = []
        self._enc_name: str | None = None
        self._total = 0

    def retrieve(self, state: int, action: int) -> Retrieval:
        return Retrieval(tids=(), scores=())

    @property
    def line_tokens(self) -> list[int]:
        """Tokens of the history line of each step rendered so far (a line costs the same at every later step)."""
        return list(self._tokens)

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        mem = self.memory
        if self._enc_name != enc.name:
            self._lines, self._tokens, self._total, self._enc_name = [], [], 0, enc.name
        hist = mem.history
        for step in range(len(self._lines), len(hist)):  # history lines never change: extend
            line = enc.history(step, hist[step])
            n = counter.line(line)
            self._lines.append(line)
            self._tokens.append(n)
            self._total += n
        head = enc.header(state, action, self.kind)
        foot = enc.footer(self.kind)
        tokens = counter.lines(head) + self._total + counter.lines(foot)
        m = len(hist)
        return make_prompt(self, [*head, *self._lines, *foot], tokens, hist, range(1, m + 1), self._tokens, [], [], 0,
                       state, action)


class NoMemory(MemoryPolicy):
    """The prompt without memory (the floor of a comparison): header and output contract only."""

    name = "none"

    def retained(self) -> set[int]:
        return set()  # it keeps nothing

    def __init__(self, memory: EpisodicMemory, **_: Any):
        super().__init__(memory, budget=None)

    def retrieve(self, state: int, action: int) -> Retrieval:
        return Retrieval(tids=(), scores=())

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        head, foot = enc.header(state, action, self.kind), enc.footer(self.kind)
        tokens = counter.lines(head) + counter.lines(foot)
        return make_prompt(self, [*head, *foot], tokens, [], [], [], [], [], 0, state, action)


class FlatRetrieval(MemoryPolicy):
    name = "flat"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        w = memory.world
        self.vocab: dict[str, int] = {}
        self.state_words = [self._ids(w.places[v].split() + list(w.entities[v])) for v in range(w.size)]
        self.action_words = [self._ids(n.replace("->", " ").replace("-", " ").split()) for n in w.action_names]
        self.index = BM25(k1=BM25_K1, b=BM25_B)
        memory.listeners.append(self._index)

    def _ids(self, words: list[str]) -> list[int]:
        return [self.vocab.setdefault(x, len(self.vocab)) for x in words]

    def _index(self, tid: int) -> None:
        mem = self.memory
        self.index.add(tid, (*self.state_words[mem.src[tid]], *self.action_words[mem.gact[tid]],
                             *self.state_words[mem.dst[tid]]))

    def retrieve(self, state: int, action: int) -> Retrieval:
        g = self.memory.act_ptr[state] + action
        return self._top(set(self.state_words[state]) | set(self.action_words[g]))

    def retrieve_state(self, state: int) -> Retrieval:
        return self._top(set(self.state_words[state]))

    def _top(self, query: set[int]) -> Retrieval:
        scores = self.index.scores(query)
        top = heapq.nsmallest(self.k, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return Retrieval(tids=tuple(t for t, _ in top), scores=tuple(float(s) for _, s in top))


class GraphMemory(PooledPolicy):
    name = "graph"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 max_candidates: int = DEFAULT_MAX_CANDIDATES, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        self.max_candidates = max_candidates
        self.mask = memory.world.word_mask

    def rank_pool(self, state: int, g: int) -> Retrieval:
        mem = self.memory
        q = self.mask[state]
        mask, dst = self.mask, mem.dst
        scored = []
        for tier, tids in zip((3.0, 2.0, 1.0), candidate_pool(mem, state, g), strict=True):
            for t in tids:
                m = mask[dst[t]]
                union = (m | q).bit_count()
                sim = (m & q).bit_count() / union if union else 0.0
                scored.append((-(tier + 0.5 * sim), t))
        top = top_scored(scored, min(self.k, self.max_candidates))
        return Retrieval(tids=tuple(t for _, t in top), scores=tuple(-s for s, _ in top))


def make_policy(name: str, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                core: int = DEFAULT_CORE, tau: float = DEFAULT_TAU,
                max_candidates: int = DEFAULT_MAX_CANDIDATES, tiered: dict[str, Any] | None = None) -> MemoryPolicy:
    """The memory policy called ``name`` (one of :data:`MEMORY_POLICIES`) over ``memory``; ``tiered``
    overrides the parameters of the ``tiered`` policy (see :mod:`ctwm_cli.memory.tiered`)."""
    check_policy_args(budget=budget, k=k, core=core, tau=tau, max_candidates=max_candidates)
    if name == "full":
        return FullHistory(memory)
    if name == "flat":
        return FlatRetrieval(memory, budget=budget, k=k)
    if name == "graph":
        return GraphMemory(memory, budget=budget, k=k, max_candidates=max_candidates)
    if name == "ctwm":
        return CoreTail(memory, budget=budget, core=core, tau=tau, max_candidates=max_candidates)
    if name == "tiered":
        return TieredMemory(memory, budget=budget, k=k, params=tiered)
    if name == "none":
        return NoMemory(memory)
    raise UsageError(f"unknown memory policy {name!r} (choose from: {', '.join(MEMORY_POLICIES)})", params=("memory",))


def check_policy_args(*, budget: int, k: int, core: int, tau: float, max_candidates: int) -> None:
    """Shared parameter checks; errors name the parameters (``exc.params``)."""
    for n, v in (("budget", budget), ("k", k), ("core", core), ("max_candidates", max_candidates)):
        check_range(n, v, lo=1)
    check_tau(tau, "tau")
