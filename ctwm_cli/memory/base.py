"""What every memory policy shares: the episodic memory it reads, the retrieval map ρ and the prompt it
renders (see :mod:`ctwm_cli.memory.policies` for the policies themselves).

This module is the base of :mod:`ctwm_cli.memory.policies`, :mod:`ctwm_cli.memory.core_tail` and
:mod:`ctwm_cli.memory.tiered`, so none imports another's internals; it holds the candidate pool that
``graph`` and ``ctwm`` share.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from typing import Any

from ..common.errors import UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import DEFAULT_BUDGET, DEFAULT_K
from .encodings import Encoding
from .store import TransitionStore
from .tokens import TokenCounter


@result
class Retrieval(ToDict):
    """ρ at one step: ranked transition ids (rank 1 first) and their scores."""

    tids: tuple[int, ...]
    scores: tuple[float, ...]


@result
class Prompt(ToDict):
    """A rendered prompt and where each retrieved item went."""

    lines: tuple[str, ...]
    tokens: int  # exact count of the whole prompt, header and output contract included
    injected: tuple[int, ...]  # tids with their own line, in prompt order
    injected_rank: tuple[int, ...]  # their retrieval rank (history: line number)
    injected_tokens: tuple[int, ...]
    summarised: tuple[int, ...]  # tids listed in the tail summary
    summarised_rank: tuple[int, ...]
    tail_count: int  # items in the tail (listed or only counted)
    mentions_state: bool  # some line or summary entry is a transition from s_t
    mentions_transition: bool  # some line or summary entry is an outcome of (s_t, a_t)

    @property
    def text(self) -> str:
        return "".join(self.lines)


class EpisodicMemory:
    """The transitions written so far, with the indexes every policy reads."""

    def __init__(self, world):
        n = world.n_transitions
        self.world = world
        self.store = TransitionStore(max(n, 1), n, world.size, eviction="lfu")  # never evicts
        self.freq = self.store.freq
        self.src = world.tid_src.tolist()
        self.dst = world.tid_dst.tolist()
        self.gact = world.tid_action.tolist()  # global action id
        self.act_ptr = world.act_ptr.tolist()
        self.last = [-1] * n
        self.out: list[list[int]] = [[] for _ in range(world.size)]  # stored tids with src == v
        self.into: list[list[int]] = [[] for _ in range(world.size)]  # stored tids with dst == v
        self.by_action: dict[int, list[int]] = {}  # global action -> stored outcome tids
        self.action_count: dict[int, int] = {}
        self.history: list[int] = []
        self.listeners: list[Any] = []  # called with each new tid
        self.writers: list[Any] = []  # called with (tid, step) at every write

    def write(self, tid: int, step: int) -> None:
        s, d = self.src[tid], self.dst[tid]
        new = self.freq[tid] == 0
        self.store.write(tid, s, d)
        self.last[tid] = step
        self.history.append(tid)
        g = self.gact[tid]
        self.action_count[g] = self.action_count.get(g, 0) + 1
        if new:
            self.out[s].append(tid)
            self.into[d].append(tid)
            self.by_action.setdefault(g, []).append(tid)
            for fn in self.listeners:
                fn(tid)
        for fn in self.writers:
            fn(tid, step)

    def degree(self, v: int) -> int:
        """Distinct stored transitions touching state ``v`` (its degree in the memory graph)."""
        return len(self.store.by_state[v])

    def has_state(self, v: int) -> bool:
        return bool(self.out[v])


class MemoryPolicy(ABC):
    """The memory-policy protocol: ``retrieve`` (ρ, encoding-free) and ``render`` (the prompt under an
    encoding and ``budget``). Every built-in policy is one; so is a user's own class loaded with
    ``ctwm replay compare --memory package.module:ClassName`` (:mod:`ctwm_cli.memory.plugins` says how
    it is constructed and called, and which attributes of :class:`EpisodicMemory` it may rely on). A
    subclass needs only :meth:`retrieve`; :meth:`render` lists the ranked items while they fit.
    ``kind`` picks the encoding's header and footer (``ranked``; ``core`` for a core-tail prompt)."""

    name = "policy"
    kind = "ranked"

    def __init__(self, memory: EpisodicMemory, *, budget: int | None = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 **_: Any):
        self.memory = memory
        self.budget = budget
        self.k = k

    @abstractmethod
    def retrieve(self, state: int, action: int) -> Retrieval:
        """ρ at a step: the ranked stored transition ids (rank 1 first) and their scores, for the current
        state and the action taken (its index within the state)."""

    def retained(self) -> set[int] | None:
        """The transition ids the policy's store holds now (what the paper's code calls its retained
        entries, from which its coverage is computed). Default: every id written, since the episodic
        store never evicts; a policy with a bounded store returns its entries; ``None``: its entries are
        not transitions."""
        return set(self.memory.history)

    def retrieve_state(self, state: int) -> Retrieval:
        """ρ for the state alone (a closed-loop agent deciding which action to take). Default: the
        retrieval for the state's action 0, whose candidates include the state's other actions."""
        return self.retrieve(state, 0)

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        """Ranked lines in order while they fit (``flat``, ``graph``)."""
        mem = self.memory
        head = enc.header(state, action, self.kind)
        foot = enc.footer(self.kind)
        fixed = counter.lines(head) + counter.lines(foot)
        room = self.budget - fixed
        if room < 0:
            raise UsageError(f"budget {self.budget} is smaller than the prompt's fixed lines ({fixed} tokens); "
                             "raise the budget", params=("budget",))
        lines = list(head)
        inj, ranks, toks = [], [], []
        freq, last = mem.freq, mem.last
        for r, (tid, score) in enumerate(zip(retrieval.tids, retrieval.scores, strict=True), 1):
            parts = enc.item_parts(r, tid, score, freq[tid], mem.degree(mem.src[tid]), last[tid])
            n = counter.fragments(parts)
            if n > room:
                break
            room -= n
            lines.append("".join(parts))
            inj.append(tid)
            ranks.append(r)
            toks.append(n)
        lines.extend(foot)
        return make_prompt(self, lines, self.budget - room, inj, ranks, toks, [], [], 0, state, action)


class PooledPolicy(MemoryPolicy):
    """A policy that ranks the candidate pool (:func:`candidate_pool`; ``graph`` and ``ctwm``): for the
    action taken, or for the state alone (no action: every stored transition from the state is tier 2)."""

    def retrieve(self, state: int, action: int) -> Retrieval:
        return self.rank_pool(state, self.memory.act_ptr[state] + action)

    def retrieve_state(self, state: int) -> Retrieval:
        return self.rank_pool(state, -1)

    @abstractmethod
    def rank_pool(self, state: int, g: int) -> Retrieval:
        """ρ over the candidate pool of ``state`` and global action ``g`` (-1: none)."""


def make_prompt(policy, lines, tokens, inj, ranks, toks, summ, summ_rank, tail_count, state, action) -> Prompt:
    mem = policy.memory
    g = mem.act_ptr[state] + action
    src, gact = mem.src, mem.gact
    ms = mt = False
    for t in (*inj, *summ):
        if src[t] == state:
            ms = True
            if gact[t] == g:
                mt = True
                break
    return Prompt(lines=tuple(lines), tokens=int(tokens), injected=tuple(inj), injected_rank=tuple(ranks),
                  injected_tokens=tuple(toks), summarised=tuple(summ), summarised_rank=tuple(summ_rank),
                  tail_count=int(tail_count), mentions_state=ms, mentions_transition=mt)


def candidate_pool(mem: EpisodicMemory, state: int, g: int) -> tuple[list[int], list[int], list[int]]:
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


def top_scored(scored: list[tuple[float, int]], limit: int) -> list[tuple[float, int]]:
    """The ``limit`` smallest (-score, tid) pairs, sorted: best score first, ties to the smaller id."""
    return heapq.nsmallest(limit, scored) if len(scored) > limit else sorted(scored)
