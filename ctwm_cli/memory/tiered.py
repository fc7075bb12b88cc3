"""The ``tiered`` memory policy: four memory tiers, a write filter, consolidation (replay, attribute,
distill, reconcile) on periodic, threshold and idle triggers, reconciliation with an undo chain,
memory objects with the article's metadata, and scored or hybrid retrieval under a hard budget split
(the second source document, sections 3-7). The policy is three layers over shared indexes: the store
and its memory objects (:mod:`ctwm_cli.memory.tiered_store`), consolidation and reconciliation
(:mod:`ctwm_cli.memory.tiered_consolidation`), and here the write path, retrieval and rendering.

**Tiers.**

* *working* — the prompt's own lines: the header (task, current state with its payload, action),
  the output contract and a short trail of the most recent steps (``step t: s -> a -> s'``). It
  lives only in the prompt and is rebuilt every step.
* *episodic* — one entry per observed transition ``s -a-> s'`` that no live entry covers (an
  append-only log of outcomes with an index by source state); archived in batches by consolidation.
* *semantic* — distilled conclusions ``s -a-> s' (p≈...)``: the dominant outcome of the action
  ``(s, a)`` and its empirical share, one live entry per action.
* *procedural* — two-step routes ``s -a-> s' then a' -> s''`` seen at least ``min_support`` times
  (reusable operation sequences), versioned by their support.

**Write filter** ("record only what cannot be re-derived"), applied to the candidates of every
observed step (:meth:`TieredMemory.write_decision`):

1. *queryable state* — the payload of the state the agent is in (place, entities, relations,
   constraints) and its position: the environment shows them at every visit, so they are
   externalised (counted, never stored);
2. *single-step facts* — the step's own working outputs (its prediction and whether it was right):
   their reuse scope is the step, so they are not kept (counted);
3. *equivalents* — a transition already held by a live episode, or covered by a live semantic
   entry with the same outcome and a confidence at least the candidate's, only bumps that entry's
   ``hit_count`` (no new entry);
4. anything else is written as an episode.

``write_filter=off`` writes every observed transition as a new episode (no equivalence check), the
"record everything" baseline of the article's ablation.

**Retrieval** (ρ, encoding-free). Structured filter: live entries whose source is the current state
or an observed neighbour of it, not past ``valid_until``. ``retrieval=scored``: score = relevance x
confidence x recency with relevance 1 (the current action), 0.3 (another action of the current
state), 0.1 (a neighbour's entry) and recency ``0.5 ** (age / half_life)`` (age = steps since the
entry was last written, bumped or verified; ``half_life`` 2000 steps by default).
``retrieval=hybrid``: the article's structured + keyword + vector retrieval
(:mod:`ctwm_cli.memory.hybrid`) — the relevance fused with BM25 and embedding similarity of the
entry's text (place names and action) to the query (the state's place and the action), then x
confidence x recency. Top ``k``, ties to the smaller entry id.

**Budget split** (hard): with budget ``B`` the working lines take at most ``floor(working·B)``
tokens, the retrieved lines at most ``floor(retrieved·B)`` (lines in score order until the first
that does not fit: truncation by score), and at least ``ceil(reserve·B)`` tokens stay free
(defaults 60% / 25% / 15%). A budget whose working share cannot hold the header and output
contract raises :class:`~ctwm_cli.common.errors.UsageError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..common.errors import UsageError
from .base import DEFAULT_BUDGET, DEFAULT_K, EpisodicMemory, MemoryPolicy, Prompt, Retrieval
from .encodings import Encoding
from .tiered_consolidation import ConsolidatingStore
from .tiered_params import budget_split, check_tiered_args
from .tiered_store import TIERS, MemoryEntry
from .tokens import TokenCounter

__all__ = ["Candidate", "TieredMemory"]

RELEVANCE = (1.0, 0.3, 0.1)  # current action, other action of the current state, a neighbour's entry


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """Something a step could write: ``state`` (a payload), ``step`` (the step's own prediction
    record) or ``transition`` (an observed outcome ``tid``)."""

    kind: str
    tid: int = -1
    state: int = -1



class TieredMemory(ConsolidatingStore, MemoryPolicy):
    """The ``tiered`` policy (see the module docstring)."""

    name = "tiered"
    kind = "ranked"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 params: Mapping[str, Any] | None = None, **_: Any):
        MemoryPolicy.__init__(self, memory, budget=budget, k=k)
        p = check_tiered_args(params)
        ConsolidatingStore.__init__(self, memory, p)
        self.working_cap, self.retrieved_cap, self.reserve_min = budget_split(
            budget, p["working"], p["retrieved"], p["reserve"])

    # ------------------------------------------------------------------ write path
    def write_decision(self, cand: Candidate) -> str:
        """``externalise`` (queryable state), ``drop`` (single-step fact), ``bump`` (an equivalent is
        live) or ``write`` (a new episode); see the module docstring."""
        if cand.kind == "state":
            return "externalise"
        if cand.kind == "step":
            return "drop"
        if cand.kind != "transition":
            raise UsageError(f"unknown candidate kind {cand.kind!r} (state, step, transition)", params=())
        if not self.params["write_filter"]:
            return "write"
        if cand.tid in self._episode:
            return "bump"
        sid = self._semantic.get(self.memory.gact[cand.tid])
        if sid is not None:
            sem = self.entries[sid]
            if sem.dst == self.memory.dst[cand.tid] and sem.confidence >= (1 + 1) / (1 + 2):  # one observation
                return "bump"
        return "write"

    def offer(self, cand: Candidate, step: int) -> str:
        """Apply the write filter to ``cand`` at ``step``; return the decision taken."""
        decision = self.write_decision(cand)
        if decision == "externalise":
            self.stats["externalised"] += 1
        elif decision == "drop":
            self.stats["single_step_dropped"] += 1
        elif decision == "bump":
            eid = self._episode.get(cand.tid)
            if eid is None:
                eid = self._semantic[self.memory.gact[cand.tid]]
            e = self.entries[eid]
            e.hit_count += 1
            e.last_seen = step
            self.stats["bumped"] += 1
        else:
            self._new("episodic", cand.tid, step, 1, 1)
            self.stats["episodes_written"] += 1
            self._since_write = -1  # observe() counts this step
        return decision

    def observe(self, tid: int, step: int) -> None:
        """The step's observed transition ``tid``: verify live entries, run the write filter on the
        step's candidates, index the episodic log, and consolidate when a trigger fires."""
        mem = self.memory
        g, s, d = mem.gact[tid], mem.src[tid], mem.dst[tid]
        for eid in self._of_action.get(g, ()):  # verification of entries about this action
            e = self.entries[eid]
            if e.tier == "procedural":
                continue
            e.trials += 1
            if e.dst == d:
                e.wins += 1
                e.last_seen = step
        if self._prev >= 0:
            for eid in self._routes_from.get(self._prev, ()):
                e = self.entries[eid]
                e.trials += 1
                if e.tid2 == tid:
                    e.wins += 1
                    e.last_seen = step
        self.offer(Candidate("state", state=d), step)  # the new state's payload: queryable
        self.offer(Candidate("step"), step)  # this step's prediction record: single-step
        self.offer(Candidate("transition", tid=tid), step)
        out = self._n_out.setdefault(g, {})
        out[tid] = out.get(tid, 0) + 1
        self._n_act[g] = self._n_act.get(g, 0) + 1
        self._dirty.add(g)
        if self._prev >= 0:
            key = (self._prev, tid)
            self._pairs[key] = self._pairs.get(key, 0) + 1
            self._dirty_pairs.add(key)
        self._nbr[s].add(d)
        self._nbr[d].add(s)
        self._recent.append((step, tid))
        if len(self._recent) > max(self.trail, 1):
            del self._recent[0]
        self._prev = tid
        self.now = step + 1
        self.stats["steps"] += 1
        self._since_write += 1
        self._replay_log.append((step, self._injected, tid))
        self._injected = ()
        trigger = self._trigger(step)
        if trigger is not None:
            self.consolidate(step, trigger=trigger)

    # ------------------------------------------------------------------ retrieval and rendering
    def retained(self) -> None:
        return None  # its entries are facts and episodes, not transitions

    def retrieve(self, state: int, action: int) -> Retrieval:
        mem = self.memory
        g = mem.act_ptr[state] + action
        entries, now, hl = self.entries, self.now, self.half_life
        cands: list[int] = []
        rels: list[float] = []

        def add(ids, rel_same_state: bool) -> None:  # the structured filter: scope and validity
            for eid in ids:
                e = entries[eid]
                if e.valid_until is not None and now > e.valid_until:
                    continue
                cands.append(eid)
                rels.append((RELEVANCE[0] if e.gact == g else RELEVANCE[1]) if rel_same_state else RELEVANCE[2])

        add(self._by_src[state], True)
        for v in sorted(self._nbr[state]):
            add(self._by_src[v], False)
        if self.hybrid is not None and cands:
            w = mem.world
            rels = self.hybrid.scores(f"{w.places[state]} {w.action_names[g]}", cands, rels)
        scored = [(-(rel * entries[eid].confidence * 0.5 ** ((now - entries[eid].last_seen) / hl)), eid)
                  for eid, rel in zip(cands, rels, strict=True)]
        top = sorted(scored)[: self.k]
        return Retrieval(tids=tuple(eid for _, eid in top), scores=tuple(-s for s, _ in top))

    def _parts(self, enc: Encoding, rank: int, e: MemoryEntry, score: float) -> list[str]:
        deg = len(self._by_src[e.src])
        # count hint: episodes show how often the episodic log saw the transition; conclusions their wins
        count = self._n_out[e.gact][e.tid] if e.tier == "episodic" else e.support
        parts = enc.item_parts(rank, e.tid, score, count, deg, e.last_seen)
        tag: list[str] = []
        if e.tier == "semantic":
            tag = [f" p≈{e.p:.2f}"]
        elif e.tier == "procedural":
            tag = [" then", f" a{int(self.memory.world.tid_local[e.tid2])} -> s{self.memory.dst[e.tid2]}"]
        return parts[:-1] + tag + parts[-1:]

    def render(self, retrieval: Retrieval, state: int, action: int, enc: Encoding, counter: TokenCounter) -> Prompt:
        head = enc.header(state, action, self.kind)
        foot = enc.footer(self.kind)
        fixed = counter.lines(head) + counter.lines(foot)
        if fixed > self.working_cap:
            raise UsageError(
                f"budget {self.budget}: the working share ({self.working_cap} tokens) is smaller than the prompt's "
                f"fixed lines ({fixed} tokens); raise budget or the working share", params=("budget",)
            )
        work = fixed
        trail: list[str] = []
        for step, tid in reversed(self._recent[-self.trail:] if self.trail else []):  # newest first
            line = enc.history(step, tid)
            n = counter.line(line)
            if work + n > self.working_cap:
                break
            work += n
            trail.append(line)
        room = self.retrieved_cap
        lines = list(head)
        inj, ranks, toks = [], [], []
        later: dict[int, list[tuple[int, int]]] = {}  # layered: other states' entries, summarised per state
        for r, (eid, score) in enumerate(zip(retrieval.tids, retrieval.scores, strict=True), 1):
            e = self.entries[eid]
            if self.params["layered"] and e.src != state:
                later.setdefault(e.src, []).append((r, eid))
                continue
            parts = self._parts(enc, r, e, score)
            n = counter.fragments(parts)
            if n > room:
                break
            room -= n
            lines.append("".join(parts))
            inj.append(eid)
            ranks.append(r)
            toks.append(n)
        summarised, summarised_rank = [], []
        for v, group in later.items():  # one summary line per other state, best entry named, in rank order
            r, eid = group[0]
            e = self.entries[eid]
            count = self._n_out[e.gact][e.tid] if e.tier == "episodic" else e.support
            noun = "entry" if len(group) == 1 else "entries"
            line = f"summary of s{v}: {len(group)} {noun}; top {enc.tail_entry(e.tid, count)}\n"
            n = counter.line(line)
            if n > room:
                break
            room -= n
            lines.append(line)
            summarised += [x for _, x in group]
            summarised_rank += [x for x, _ in group]
        lines.extend(reversed(trail))
        lines.extend(foot)
        self._injected = tuple(inj)  # replayed by the next consolidation's attribution step
        tokens = work + self.retrieved_cap - room
        g = self.memory.act_ptr[state] + action
        ms = mt = False
        for eid in inj:
            e = self.entries[eid]
            if e.src == state:
                ms = True
                if e.gact == g:
                    mt = True
        return Prompt(lines=tuple(lines), tokens=int(tokens), injected=tuple(inj), injected_rank=tuple(ranks),
                      injected_tokens=tuple(toks), summarised=tuple(summarised),
                      summarised_rank=tuple(summarised_rank), tail_count=len(summarised),
                      mentions_state=ms, mentions_transition=mt)

    def memory_stats(self) -> dict[str, Any]:
        """Counters of the write filter, consolidation and reconciliation, and the live store by tier."""
        live = {t: 0 for t in TIERS[1:]}
        for e in self.entries:
            if e.status == "live":
                live[e.tier] += 1
        return {**self.stats, "by_trigger": dict(self.stats["by_trigger"]), "entries": len(self.entries), "live": live,
                "undo_chain": len(self.undo_chain),
                "embedding": self.hybrid.embedder.name if self.hybrid is not None else None,
                "budget_split": {"working": self.working_cap, "retrieved": self.retrieved_cap,
                                 "reserve": self.reserve_min}, "params": dict(self.params)}
