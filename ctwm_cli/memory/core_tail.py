"""The ``ctwm`` memory policy (Core–Tail World Model, paper Section 5.4; the other policies are in
:mod:`ctwm_cli.memory.policies`).

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

A budget smaller than the prompt's fixed lines (header, output contract, minimal tail line) raises
:class:`~ctwm_cli.common.errors.UsageError`. Ties in the ranking go to the smaller transition id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..allocation import allocate, largest_remainder, rank_shares
from ..common.errors import UsageError
from ..common.vocabulary import DEFAULT_BUDGET, DEFAULT_CORE, DEFAULT_MAX_CANDIDATES, DEFAULT_TAU
from .base import EpisodicMemory, PooledPolicy, Prompt, Retrieval, candidate_pool, make_prompt, top_scored
from .encodings import Encoding
from .tokens import TokenCounter

__all__ = ["CoreTail", "allocation_slots"]


class CoreTail(PooledPolicy):
    name = "ctwm"
    kind = "core"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, core: int = DEFAULT_CORE,
                 tau: float = DEFAULT_TAU, max_candidates: int = DEFAULT_MAX_CANDIDATES, **_: Any):
        super().__init__(memory, budget=budget)
        self.core = core
        self.tau = tau
        self.max_candidates = max_candidates
        self._alloc: dict[tuple[int, int], tuple[list[int], int]] = {}

    def rank_pool(self, state: int, g: int) -> Retrieval:
        mem = self.memory
        freq, gact, count = mem.freq, mem.gact, mem.action_count
        scored = []
        for tier, tids in zip((3.0, 2.0, 1.0), candidate_pool(mem, state, g), strict=True):
            scored.extend((-(tier + freq[t] / count[gact[t]]), t) for t in tids)
        top = top_scored(scored, self.max_candidates)
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
