"""A finite memory store of transitions, with O(1) writes and O(k) frequency queries.

Items are integer transition ids (``tid``). Each item touches two states (its source and its
destination); the store indexes items by both, so a state-aware retriever finds the items of a
state without a scan.

**Writes.** ``write(tid, src, dst)`` increments the item's frequency if it is stored. Otherwise,
when the store is full, one item is evicted first, then the item enters with frequency 1. The
frequency counts writes since the item last entered the store (an evicted item starts again at 1).

**Eviction rule** (fixed per store, recorded in manifests):

* ``"lfu"``: the victim is drawn uniformly among the items of least frequency (least frequently
  written; ties random). The state-aware frequency retriever uses it.
* ``"random"``: the victim is drawn uniformly among all stored items (random replacement, the
  "uniform reservoir": every new transition enters, each stored item is equally likely to go).
* ``"reservoir"``: Algorithm R (Vitter 1985) over the stream of *arrivals* (writes of an item not
  currently stored): the ``i``-th arrival is admitted with probability ``capacity / i`` (always
  while the store is not full), replacing a uniformly chosen stored item; otherwise it is dropped.
  For a stream of ``n`` distinct items each one is stored at the end with probability
  ``capacity / n``: the store is a uniform sample of the history, which random replacement (biased
  to the recent) is not. Hits on a stored item do not count as arrivals.

Random draws come from the store's own generator, in blocks, so a run repeats exactly.

**Frequency order.** :meth:`top` and :meth:`top_of` rank by frequency, highest first; ties go to
the smaller transition id.
"""

from __future__ import annotations

import bisect
import heapq

import numpy as np

from ..common.checks import check_choice, check_range
from ..common.errors import UsageError
from ..common.vocabulary import EVICTION_RULES


class UniformStream:
    """Uniform [0, 1) numbers drawn from a generator in blocks (fast to consume one at a time)."""

    __slots__ = ("_block", "_gen", "_pos", "_u")

    def __init__(self, gen: np.random.Generator, block: int = 1 << 14):
        self._gen = gen
        self._block = block
        self._u: list[float] = []
        self._pos = 0

    def next(self) -> float:
        if self._pos >= len(self._u):
            self._u, self._pos = self._gen.random(self._block).tolist(), 0
        u = self._u[self._pos]
        self._pos += 1
        return u


class TransitionStore:
    """Finite store of transition ids (see the module docstring for the write and eviction rules)."""

    def __init__(self, capacity: int, n_items: int, n_states: int, *, eviction: str = "lfu",
                 seed: int | None = None, rng: np.random.Generator | None = None):
        check_range("capacity", capacity, lo=1)
        check_choice("eviction", eviction, EVICTION_RULES)
        self.capacity = int(capacity)
        self.eviction = eviction
        self.uniform = UniformStream(rng if rng is not None else np.random.default_rng(seed))
        self.freq = [0] * n_items  # 0 = not stored
        self.items: list[int] = []  # stored tids, any order
        self._pos = [-1] * n_items  # index in items
        self._src = [0] * n_items
        self._dst = [0] * n_items
        self.by_state: list[list[int]] = [[] for _ in range(n_states)]  # stored tids touching a state
        self._pos_src = [0] * n_items
        self._pos_dst = [0] * n_items
        self._bucket: dict[int, list[int]] = {}  # frequency -> tids with that frequency
        self._pos_b = [0] * n_items
        self._levels: list[int] = []  # sorted frequencies with a non-empty bucket
        self.writes = 0
        self.evictions = 0
        self.arrivals = 0  # writes of an item not stored (the stream Algorithm R samples)
        self.rejected = 0  # arrivals the reservoir dropped

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, tid: int) -> bool:
        return self.freq[tid] > 0

    # ------------------------------------------------------------------ bucket helpers
    def _bucket_add(self, tid: int, f: int) -> None:
        b = self._bucket.get(f)
        if b is None:
            b = self._bucket[f] = []
            bisect.insort(self._levels, f)
        self._pos_b[tid] = len(b)
        b.append(tid)

    def _bucket_remove(self, tid: int, f: int) -> None:
        b = self._bucket[f]
        i = self._pos_b[tid]
        last = b.pop()
        if last != tid:
            b[i] = last
            self._pos_b[last] = i
        if not b:
            del self._bucket[f]
            del self._levels[bisect.bisect_left(self._levels, f)]

    # ------------------------------------------------------------------ write / evict
    def write(self, tid: int, src: int, dst: int) -> int:
        """Store transition ``tid`` (``src -> dst``); return the evicted tid, or -1 (none evicted, or the
        reservoir dropped the arrival)."""
        self.writes += 1
        f = self.freq[tid]
        if f:
            self._bucket_remove(tid, f)
            self.freq[tid] = f + 1
            self._bucket_add(tid, f + 1)
            return -1
        victim = -1
        self.arrivals += 1
        if len(self.items) >= self.capacity:
            if self.eviction == "reservoir":
                j = int(self.uniform.next() * self.arrivals)
                if j >= self.capacity:
                    self.rejected += 1
                    return -1
                victim = self.items[j]
            else:
                victim = self._victim()
            self.evict(victim)
        self.freq[tid] = 1
        self._bucket_add(tid, 1)
        self._pos[tid] = len(self.items)
        self.items.append(tid)
        self._src[tid], self._dst[tid] = src, dst
        lst = self.by_state[src]
        self._pos_src[tid] = len(lst)
        lst.append(tid)
        if dst != src:
            lst = self.by_state[dst]
            self._pos_dst[tid] = len(lst)
            lst.append(tid)
        return victim

    def _victim(self) -> int:
        u = self.uniform.next()
        if self.eviction == "random":
            return self.items[int(u * len(self.items))]
        b = self._bucket[self._levels[0]]
        return b[int(u * len(b))]

    def evict(self, tid: int) -> None:
        """Remove ``tid`` from the store."""
        f = self.freq[tid]
        if not f:
            raise UsageError(f"transition {tid} is not stored", params=())
        self.evictions += 1
        self._bucket_remove(tid, f)
        self.freq[tid] = 0
        i = self._pos[tid]
        last = self.items.pop()
        if last != tid:
            self.items[i] = last
            self._pos[last] = i
        self._pos[tid] = -1
        s, d = self._src[tid], self._dst[tid]
        self._unlink(self.by_state[s], self._pos_src[tid])
        if d != s:
            self._unlink(self.by_state[d], self._pos_dst[tid])

    def _unlink(self, lst: list[int], i: int) -> None:
        last = lst.pop()
        if i < len(lst):
            lst[i] = last
            # ``last`` sits in this list as its source's or its destination's entry.
            if self.by_state[self._src[last]] is lst:
                self._pos_src[last] = i
            else:
                self._pos_dst[last] = i

    # ------------------------------------------------------------------ queries
    def of_state(self, state: int) -> list[int]:
        """Stored transitions whose source or destination is ``state`` (a live list: do not modify)."""
        return self.by_state[state]

    def top(self, k: int) -> list[int]:
        """The ``k`` most frequent stored items (ties: smaller tid first)."""
        out: list[int] = []
        levels = self._levels
        i = len(levels) - 1
        while i >= 0 and len(out) < k:
            b = self._bucket[levels[i]]
            need = k - len(out)
            out.extend(sorted(b) if len(b) <= need else heapq.nsmallest(need, b))
            i -= 1
        return out

    def top_of(self, tids: list[int], k: int) -> list[int]:
        """The ``k`` most frequent of ``tids`` (ties: smaller tid first)."""
        freq = self.freq
        if len(tids) <= 1:
            return list(tids)
        return sorted(tids, key=lambda t: (-freq[t], t))[:k]

    def frequencies(self) -> dict[int, int]:
        """``{tid: frequency}`` of the stored items."""
        return {t: self.freq[t] for t in self.items}
