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
    The same candidate pool, ranked by relevance and transition support: score = tier + the
    empirical outcome share ``n(e) / n(src(e), a(e))``; the best ``max_candidates`` are the M
    ranked items (ρ). The first
    ``core`` ranks are the core; the token budget left after the fixed lines and the minimal tail
    line is split by b(r; τ) with :func:`ctwm_cli.allocation.allocate` (core ranks and one tail
    group, largest remainder). A core item gets its line when its line fits in the slots of its
    rank plus those left unused by better ranks; a core item that does not fit joins the tail.
    Unused core slots are not spent (the prompt is shorter). The tail is always serialised as a
    summary: its item count, then dominant transitions (seen at least twice, most seen first) and
    rare exceptions (seen once, best rank first), listed while they fit in the tail's slots.
    Nothing is dropped silently: every candidate is either a core line or counted in the summary.

``none`` (no memory)
    The prompt carries no memory: the header and the output contract only. The floor row of a
    comparison (beside the ``oracle`` and ``counts`` ceilings): a memory that does no better than
    ``none`` is not being used, and a run that cannot tell a policy from ``none`` cannot detect memory.

Rendering under the budget: ``flat`` and ``graph`` add lines in rank order and stop at the first
line that does not fit. A budget smaller than a prompt's fixed lines (header, output contract,
minimal tail line) raises :class:`~ctwm_cli.errors.UsageError`. Ties in every ranking go to the
smaller transition id.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from ..allocation import allocate, largest_remainder, rank_shares
from ..allocation.rank import check_tau
from ..checks import check_range
from ..errors import UsageError
from ..vocabulary import DEFAULT_BUDGET, DEFAULT_CORE, DEFAULT_K, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU, MEMORY_POLICIES
from .base import EpisodicMemory, MemoryPolicy, Prompt, Retrieval, make_prompt
from .bm25 import BM25, BM25_B, BM25_K1
from .encodings import Encoding
from .tiered import TieredMemory
from .tokens import TokenCounter

__all__ = [
    "BM25_B", "BM25_K1", "DEFAULT_BUDGET", "DEFAULT_CORE", "DEFAULT_K", "DEFAULT_MAX_CANDIDATES", "DEFAULT_TAU",
    "MEMORY_POLICIES", "CoreTail", "EpisodicMemory", "FlatRetrieval", "FullHistory", "GraphMemory", "MemoryPolicy",
    "NoMemory", "Prompt", "Retrieval", "allocation_slots", "check_policy_args", "make_policy",
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


def _pool(mem: EpisodicMemory, state: int, g: int) -> tuple[list[int], list[int], list[int]]:
    """Candidates by tier: outcomes of (s, a) [3]; other transitions from s [2]; transitions from
    the observed neighbours of s (successors and predecessors) [1]. The tiers are disjoint."""
    gact, src, dst = mem.gact, mem.src, mem.dst
    own = mem.out[state]
    t3 = mem.by_action.get(g, [])
    t2 = [t for t in own if gact[t] != g] if len(t3) < len(own) else []
    neigh = {dst[t] for t in own}
    neigh.update(src[t] for t in mem.into[state])
    neigh.discard(state)
    out = mem.out
    t1 = [t for v in sorted(neigh) for t in out[v]]
    return t3, t2, t1


def _top(scored: list[tuple[float, int]], limit: int) -> list[tuple[float, int]]:
    """The ``limit`` smallest (-score, tid) pairs, sorted: best score first, ties to the smaller id."""
    return heapq.nsmallest(limit, scored) if len(scored) > limit else sorted(scored)


class GraphMemory(MemoryPolicy):
    name = "graph"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 max_candidates: int = DEFAULT_MAX_CANDIDATES, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        self.max_candidates = max_candidates
        self.mask = memory.world.word_mask

    def retrieve(self, state: int, action: int) -> Retrieval:
        return self._retrieve(state, self.memory.act_ptr[state] + action)

    def retrieve_state(self, state: int) -> Retrieval:
        return self._retrieve(state, -1)  # no action: every stored transition from the state is tier 2

    def _retrieve(self, state: int, g: int) -> Retrieval:
        mem = self.memory
        q = self.mask[state]
        mask, dst = self.mask, mem.dst
        scored = []
        for tier, tids in zip((3.0, 2.0, 1.0), _pool(mem, state, g), strict=True):
            for t in tids:
                m = mask[dst[t]]
                union = (m | q).bit_count()
                sim = (m & q).bit_count() / union if union else 0.0
                scored.append((-(tier + 0.5 * sim), t))
        top = _top(scored, min(self.k, self.max_candidates))
        return Retrieval(tids=tuple(t for _, t in top), scores=tuple(-s for s, _ in top))


class CoreTail(MemoryPolicy):
    name = "ctwm"
    kind = "core"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, core: int = DEFAULT_CORE,
                 tau: float = DEFAULT_TAU, max_candidates: int = DEFAULT_MAX_CANDIDATES, **_: Any):
        super().__init__(memory, budget=budget)
        self.core = core
        self.tau = tau
        self.max_candidates = max_candidates
        self._alloc: dict[tuple[int, int], tuple[list[int], int]] = {}

    def retrieve(self, state: int, action: int) -> Retrieval:
        return self._retrieve(state, self.memory.act_ptr[state] + action)

    def retrieve_state(self, state: int) -> Retrieval:
        return self._retrieve(state, -1)  # no action: every stored transition from the state is tier 2

    def _retrieve(self, state: int, g: int) -> Retrieval:
        mem = self.memory
        freq, gact, count = mem.freq, mem.gact, mem.action_count
        scored = []
        for tier, tids in zip((3.0, 2.0, 1.0), _pool(mem, state, g), strict=True):
            scored.extend((-(tier + freq[t] / count[gact[t]]), t) for t in tids)
        top = _top(scored, self.max_candidates)
        return Retrieval(tids=tuple(t for _, t in top), scores=tuple(-s for s, _ in top))

    def slots(self, m: int, room: int) -> tuple[list[int], int]:
        """Token slots of the core ranks and of the tail over ``m`` ranked items (cached)."""
        key = (m, room)
        got = self._alloc.get(key)
        if got is None:
            got = allocation_slots(m, self.tau, self.core, room)
            if len(self._alloc) > 100_000:
                self._alloc.clear()
            self._alloc[key] = got
        return got

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        tids = retrieval.tids
        m = len(tids)
        k = min(self.core, m)
        head = enc.header(state, action, self.kind)
        foot = enc.footer(self.kind)
        fixed = counter.lines(head) + counter.lines(foot)
        min_tail = counter.fragments(enc.tail_parts(m, [], [])) if m else 0  # the tail line is never left out
        if m > k:
            packed = self._pack(retrieval, enc, counter, self._room(fixed + min_tail))
        else:  # no tail by rank; if a core line does not fit, it spills and the tail line is needed
            packed = self._pack(retrieval, enc, counter, self._room(fixed))
            if packed[4]:
                packed = self._pack(retrieval, enc, counter, self._room(fixed + min_tail))
        lines_core, inj, ranks, toks, spilled, tail_slots, used = packed
        lines = [*head, *lines_core]
        summ: list[int] = []
        summ_rank: list[int] = []
        tail_tokens = 0
        tail_ranks = spilled + list(range(k, m))
        if tail_ranks:
            line, summ, summ_rank, tail_tokens = self._tail(tail_ranks, tids, enc, counter, min_tail + tail_slots)
            lines.append(line)
        lines.extend(foot)
        tokens = fixed + used + tail_tokens
        return make_prompt(self, lines, tokens, inj, ranks, toks, summ, summ_rank, len(tail_ranks), state, action)

    def min_tokens(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> int:
        """Tokens of the smallest prompt :meth:`render` can produce for ``retrieval`` (fixed lines and,
        when there are candidates, the minimal tail line): a smaller budget is refused."""
        m = len(retrieval.tids)
        fixed = counter.lines(enc.header(state, action, self.kind)) + counter.lines(enc.footer(self.kind))
        return fixed + (counter.fragments(enc.tail_parts(m, [], [])) if m else 0)

    def _room(self, fixed: int) -> int:
        room = self.budget - fixed
        if room < 0:
            raise UsageError(
                f"budget {self.budget} is smaller than the prompt's fixed lines ({fixed} tokens, with the minimal "
                "tail summary when there is a tail); raise the budget", params=("budget",)
            )
        return room

    def _pack(self, retrieval: Retrieval, enc: Encoding, counter: TokenCounter, room: int):
        """Core lines by cumulative slots: rank r's line goes in if it fits in the slots of ranks
        1..r not yet used; otherwise rank r spills to the tail."""
        mem = self.memory
        tids, scores = retrieval.tids, retrieval.scores
        m = len(tids)
        lines: list[str] = []
        inj, ranks, toks, spilled = [], [], [], []
        if not m:
            return lines, inj, ranks, toks, spilled, 0, 0
        core_slots, tail_slots = self.slots(m, room)
        freq, last, src = mem.freq, mem.last, mem.src
        avail = used = 0
        for r in range(len(core_slots)):
            avail += core_slots[r]
            tid = tids[r]
            parts = enc.item_parts(r + 1, tid, scores[r], freq[tid], mem.degree(src[tid]), last[tid])
            n = counter.fragments(parts)
            if n <= avail:
                avail -= n
                used += n
                lines.append("".join(parts))
                inj.append(tid)
                ranks.append(r + 1)
                toks.append(n)
            else:
                spilled.append(r)
        return lines, inj, ranks, toks, spilled, tail_slots, used

    def _tail(self, tail_ranks: list[int], tids, enc: Encoding, counter: TokenCounter, allowed: int):
        """The tail-summary line within ``allowed`` tokens: dominant transitions (seen >= 2 times,
        most seen first, ties by rank), then rare exceptions (seen once, by rank), while they fit.
        Costs are exact: the line's fragments meet at pre-tokeniser boundaries."""
        freq = self.memory.freq
        c = counter.fragments
        dominant = sorted((r for r in tail_ranks if freq[tids[r]] >= 2), key=lambda r: (-freq[tids[r]], r))
        rare = sorted(r for r in tail_ranks if freq[tids[r]] < 2)
        count = len(tail_ranks)
        empty = enc.tail_parts(count, [], [])
        spend = c(empty)
        groups: tuple[list[str], list[str]] = ([], [])
        listed: list[int] = []
        for gi, (group, term) in enumerate(((dominant, ";"), (rare, ""))):
            out = groups[gi]
            closing = c([f" {enc.NONE}{term}"])  # what the group's last fragment costs now
            full = False
            for r in group:
                entry = enc.tail_entry(tids[r], freq[tids[r]])
                # the previous last entry gets a comma; the new one closes the group
                delta = c([f" {out[-1]},", f" {entry}{term}"] if out else [f" {entry}{term}"]) - closing
                if spend + delta > allowed:
                    full = True
                    break
                spend += delta
                closing = c([f" {entry}{term}"])
                out.append(entry)
                listed.append(r)
            if full:
                break
        parts = enc.tail_parts(count, *groups)
        return "".join(parts), [tids[r] for r in listed], [r + 1 for r in listed], spend


def allocation_slots(m: int, tau: float, core: int, budget: int) -> tuple[list[int], int]:
    """Token slots of ranks 1..min(core, m) and of the tail group for ``m`` ranked items.

    ``m > core``: :func:`ctwm_cli.allocation.allocate` (b(r; τ) over m ranks, core K, the tail
    pooled, largest remainder). ``m <= core`` (no tail): the budget apportioned over the m ranks by
    b(r; τ) with :func:`ctwm_cli.allocation.largest_remainder`.
    """
    if budget <= 0:
        return [0] * min(core, m), 0
    if m > core:
        a = allocate(m, tau, core=core, budget=budget)
        return a.core_slots.tolist(), int(a.tail_slots)
    q = np.minimum.accumulate(budget * rank_shares(m, tau))
    return largest_remainder(q, budget).tolist(), 0


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
