"""The ``tiered`` memory policy: four memory tiers, a write filter, consolidation (replay, attribute,
distill, reconcile) on periodic, threshold and idle triggers, reconciliation with an undo chain,
memory objects with the article's metadata, and scored or hybrid retrieval under a hard budget split
(the second source document, sections 3-7). One class on purpose: the write path, consolidation and
retrieval share its indexes (hence over 400 lines).

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

**Confidence** is driven only by verification, never by hit counts: every later observation of an
entry's action verifies it (same outcome) or refutes it; confidence = (wins + 1) / (trials + 2).

**Consolidation** (``maintain``), the article's replay -> attribute -> distill -> reconcile, started
by any of three triggers (counted per trigger in the statistics): *periodic* every ``period`` steps,
*threshold* when the live episodes reach ``max_episodes``, *idle* when no new episode was written for
``idle`` steps while observations are pending (the agent is re-walking known ground: a quiet window
that competes with no write). ``consolidation=off`` never consolidates.

1. *Replay*: the steps since the last pass, in order, with the entries each step injected.
2. *Attribute* (``attribution=on``): an injected entry about the step's action is credited when its
   conclusion held (the observed outcome) and blamed when it did not. A semantic entry with at
   least ``2·min_support`` attributed uses whose credited share is more than ``margin`` below the
   share p it claims misled the decisions it was used for: it is invalidated (``invalidate`` row;
   health counts it as a revocation).
3. *Distill*: for every action observed since the last pass, the dominant outcome over the whole
   episodic log (ties to the smaller transition id) becomes a semantic candidate when it was seen
   at least ``min_support`` times; then the action's live episodes are archived. Two-step routes
   seen at least ``min_support`` times become procedural entries (their support refreshed later).
   An entry's *content* (support, p) is what consolidation last wrote; its *confidence* is its
   verification record since then.
4. *Reconcile* the candidate with the action's live semantic entry, by ``reconcile``:

   * ``ours`` (recency-first, confidence-weighted, with an undo chain): a candidate with the same
     outcome merges into the live entry (``update`` when its support or its p, to two decimals,
     changed); with another outcome it wins when its confidence is at least the live entry's minus
     ``margin`` (ties go to the newer) and the loser is superseded (``supersede`` with ``by``), the
     pair pushed on the undo chain; otherwise it is rejected. When the new conclusion is the one
     the live entry superseded (the last record of the chain for that action), the chain is undone
     instead: the superseded entry is restored (``write``) and the entry that replaced it is
     archived (``archive`` with ``by``). :meth:`TieredMemory.undo` does the same on demand.
   * ``article`` (the article's ``reconcile``): the winner is ``max((confidence, created_at))`` over
     the live entry and the candidate; a loser with another outcome is superseded by the winner
     (the article archives it "with reason superseded"), one with the same outcome is merged; the
     pair goes on the undo chain, but nothing is reverted automatically.

**Metadata** on every entry (the article's memory object): ``subject`` (the action, e.g. ``s12 a2``),
``source`` (step and evidence: the observed transition, or the episodes a conclusion was distilled
from), ``created_at``, ``last_hit_at``, ``hit_count``, ``confidence``, ``decay`` (``episodic:<ttl>
steps`` or the recency half-life), ``valid_until`` (episodes: ``created_at + episodic_ttl`` when
``episodic_ttl`` > 0), ``supersedes`` and ``scope`` (the world and the source state).
:meth:`TieredMemory.objects` returns them in the object-table form ``ctwm health --objects`` reads.

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
contract raises :class:`~ctwm_cli.errors.UsageError`.

**Events** (the trace rows a replay writes for this policy): ``write`` (new episode, semantic or
procedural entry; a restored entry), ``update`` (a merge changed an entry's content), ``supersede``
(with ``by``), ``invalidate`` (attribution found the entry misleading), ``archive`` (consolidated
episodes; an undone winner, with ``by``) and one ``maintain`` row per consolidation pass that
changed the store (its item is the first entry the pass touched). Entry names are
``<tier><id>:<content>``, e.g. ``sem17:s12-a2->s40``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from .encodings import Encoding
from .base import DEFAULT_BUDGET, DEFAULT_K, EpisodicMemory, MemoryPolicy, Prompt, Retrieval
from .hybrid import HybridIndex, make_embedder
from .tiered_params import TIERED_DEFAULTS, budget_split, check_tiered_args
from .tokens import TokenCounter

__all__ = [
    "TIERED_DEFAULTS", "TIERS", "Candidate", "MemoryEntry", "TieredMemory", "budget_split", "check_tiered_args",
]

TIERS = ("working", "episodic", "semantic", "procedural")
PREFIX = {"episodic": "epi", "semantic": "sem", "procedural": "proc"}
RELEVANCE = (1.0, 0.3, 0.1)  # current action, other action of the current state, a neighbour's entry
TRIGGERS = ("periodic", "threshold", "idle")


@dataclasses.dataclass(slots=True)
class MemoryEntry:
    """A memory object (the source document's metadata, for the graph world)."""

    id: int
    tier: str
    tid: int  # the transition (first hop for a route)
    src: int
    gact: int  # global action id
    dst: int
    created_at: int
    last_seen: int
    wins: int
    trials: int
    tid2: int = -1  # procedural: second hop
    support: int = 0  # content (semantic, procedural): observations behind the conclusion when last written
    p: float = 0.0  # content: the conclusion's empirical share when last written
    hit_count: int = 0
    status: str = "live"  # live | superseded | invalidated | archived
    supersedes: list[int] = dataclasses.field(default_factory=list)
    superseded_by: int | None = None
    # the article's metadata (see the module docstring)
    subject: str = ""
    source: dict[str, Any] = dataclasses.field(default_factory=dict)
    decay: str = ""
    valid_until: int | None = None
    scope: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def confidence(self) -> float:
        return (self.wins + 1) / (self.trials + 2)


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """Something a step could write: ``state`` (a payload), ``step`` (the step's own prediction
    record) or ``transition`` (an observed outcome ``tid``)."""

    kind: str
    tid: int = -1
    state: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class UndoRecord:
    step: int
    subject: int  # global action
    loser: int
    winner: int


class TieredMemory(MemoryPolicy):
    """The ``tiered`` policy (see the module docstring)."""

    name = "tiered"
    kind = "ranked"

    def __init__(self, memory: EpisodicMemory, *, budget: int = DEFAULT_BUDGET, k: int = DEFAULT_K,
                 params: Mapping[str, Any] | None = None, **_: Any):
        super().__init__(memory, budget=budget, k=k)
        p = check_tiered_args(params)
        self.params = p
        self.working_cap, self.retrieved_cap, self.reserve_min = budget_split(
            budget, p["working"], p["retrieved"], p["reserve"])
        self.period, self.min_support, self.margin = p["period"], p["min_support"], float(p["margin"])
        self.half_life, self.trail = float(p["half_life"]), p["trail"]
        self.max_episodes, self.idle, self.ttl = p["max_episodes"], p["idle"], p["episodic_ttl"]
        w = memory.world
        self._scope_world = f"{w.graph.family}/{w.size}"
        self.hybrid = HybridIndex(make_embedder(p["embedding"])) if p["retrieval"] == "hybrid" else None
        self.entries: list[MemoryEntry] = []
        self.events: list[tuple[int, str, int, int]] = []  # (step, kind, entry id, by id or -1)
        self.undo_chain: list[UndoRecord] = []
        self.stats = {"steps": 0, "externalised": 0, "single_step_dropped": 0, "bumped": 0, "episodes_written": 0,
                      "semantic_written": 0, "procedural_written": 0, "merged": 0, "superseded": 0, "rejected": 0,
                      "undone": 0, "archived": 0, "consolidations": 0, "invalidated": 0, "attributed_credit": 0,
                      "attributed_blame": 0, "by_trigger": dict.fromkeys(TRIGGERS, 0)}
        self.now = 0
        self._recent: list[tuple[int, int]] = []  # (step, tid), newest last
        self._dirty: set[int] = set()  # actions observed since the last consolidation
        self._dirty_pairs: set[tuple[int, int]] = set()
        self._prev = -1
        self._n_out: dict[int, dict[int, int]] = {}  # global action -> {tid: observations}
        self._n_act: dict[int, int] = {}
        self._pairs: dict[tuple[int, int], int] = {}
        self._by_src: list[set[int]] = [set() for _ in range(w.size)]  # live entries by source state
        self._nbr: list[set[int]] = [set() for _ in range(w.size)]  # observed neighbours
        self._episode: dict[int, int] = {}  # tid -> live episode
        self._episodes_of: dict[int, list[int]] = {}  # global action -> live episodes
        self._semantic: dict[int, int] = {}  # global action -> live semantic entry
        self._routes: dict[tuple[int, int], int] = {}  # (tid1, tid2) -> live procedural entry
        self._routes_from: dict[int, list[int]] = {}  # tid1 -> live procedural entries
        self._of_action: dict[int, list[int]] = {}  # global action -> live entries (any tier) for verification
        self._live_episodes = 0
        self._episodes_after_pass = 0
        self._since_write = 0  # steps since the last new episode (idle trigger)
        self._injected: tuple[int, ...] = ()  # entries the last rendered prompt injected
        self._replay_log: list[tuple[int, tuple[int, ...], int]] = []  # (step, injected, observed tid)

    # ------------------------------------------------------------------ store primitives
    def item_name(self, eid: int) -> str:
        e = self.entries[eid]
        act = self.memory.world.tid_local
        head = f"{PREFIX[e.tier]}{e.id}:s{e.src}-a{int(act[e.tid])}->s{e.dst}"
        if e.tid2 >= 0:
            head += f"-a{int(act[e.tid2])}->s{self.memory.dst[e.tid2]}"
        return head

    @property
    def item_names(self) -> list[str]:
        return [self.item_name(i) for i in range(len(self.entries))]

    def live(self, tier: str | None = None) -> list[MemoryEntry]:
        return [e for e in self.entries if e.status == "live" and (tier is None or e.tier == tier)]

    def _event(self, step: int, kind: str, eid: int, by: int = -1) -> None:
        self.events.append((step, kind, eid, by))

    def _new(self, tier: str, tid: int, step: int, wins: int, trials: int, tid2: int = -1) -> MemoryEntry:
        mem = self.memory
        src = mem.src[tid]
        local = int(mem.world.tid_local[tid])
        if tier == "episodic":
            source = {"step": step, "evidence": "observed transition"}
            decay = f"episodic:{self.ttl} steps" if self.ttl else "episodic:none"
        else:
            source = {"step": step, "evidence": f"consolidation of {trials} observations of the action"}
            decay = f"{tier}:recency half-life {self.half_life:g} steps"
        e = MemoryEntry(id=len(self.entries), tier=tier, tid=tid, src=src, gact=mem.gact[tid], dst=mem.dst[tid],
                        created_at=step, last_seen=step, wins=wins, trials=trials, tid2=tid2, support=wins,
                        p=wins / trials if trials else 0.0, subject=f"s{src} a{local}", source=source, decay=decay,
                        valid_until=step + self.ttl if tier == "episodic" and self.ttl else None,
                        scope={"world": self._scope_world, "state": src})
        self.entries.append(e)
        self._link(e)
        if self.hybrid is not None:
            self.hybrid.add(e.id, self._text(e))
        self._event(step, "write", e.id)
        return e

    def _text(self, e: MemoryEntry) -> str:
        """The entry's words for keyword and vector retrieval: places and action names."""
        w = self.memory.world
        text = f"{w.places[e.src]} {w.action_names[e.gact]} {w.places[e.dst]}"
        if e.tid2 >= 0:
            text += f" then {w.action_names[int(w.tid_action[e.tid2])]} {w.places[self.memory.dst[e.tid2]]}"
        return text

    def _link(self, e: MemoryEntry) -> None:
        self._by_src[e.src].add(e.id)
        self._of_action.setdefault(e.gact, []).append(e.id)
        if e.tier == "episodic":
            self._episode[e.tid] = e.id
            self._episodes_of.setdefault(e.gact, []).append(e.id)
            self._live_episodes += 1
        elif e.tier == "semantic":
            self._semantic[e.gact] = e.id
        elif e.tier == "procedural":
            self._routes[(e.tid, e.tid2)] = e.id
            self._routes_from.setdefault(e.tid, []).append(e.id)

    def _unlink(self, e: MemoryEntry) -> None:
        self._by_src[e.src].discard(e.id)
        self._of_action[e.gact].remove(e.id)
        if e.tier == "episodic":
            if self._episode.get(e.tid) == e.id:
                del self._episode[e.tid]
            self._episodes_of[e.gact].remove(e.id)
            self._live_episodes -= 1
        elif e.tier == "semantic":
            if self._semantic.get(e.gact) == e.id:
                del self._semantic[e.gact]
        elif e.tier == "procedural":
            del self._routes[(e.tid, e.tid2)]
            self._routes_from[e.tid].remove(e.id)

    def _retire(self, e: MemoryEntry, status: str, step: int, by: int = -1) -> None:
        self._unlink(e)
        e.status = status
        if status == "superseded":
            e.superseded_by = by
        kind = {"superseded": "supersede", "invalidated": "invalidate"}.get(status, "archive")
        self._event(step, kind, e.id, by)

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

    def _trigger(self, step: int) -> str | None:
        """Which consolidation trigger fires after ``step`` (periodic first), if any."""
        if not self.params["consolidation"]:
            return None
        if (step + 1) % self.period == 0:
            return "periodic"
        if self.max_episodes and self._live_episodes >= self.max_episodes and (
                self._live_episodes - self._episodes_after_pass >= max(1, self.max_episodes // 10)):
            return "threshold"  # batched: at least a tenth of the threshold written since the last pass
        if self.idle and self._since_write >= self.idle and self._dirty:
            return "idle"
        return None

    # ------------------------------------------------------------------ consolidation and reconciliation
    def consolidate(self, step: int, trigger: str = "periodic") -> list[int]:
        """One consolidation pass at ``step`` (replay, attribute, distill, reconcile); return the ids of
        the entries it touched."""
        first = len(self.events)
        self.stats["consolidations"] += 1
        self.stats["by_trigger"][trigger] += 1
        self._since_write = 0
        replayed, self._replay_log = self._replay_log, []
        if self.params["attribution"]:
            self.attribute(replayed, step)
        ms = self.min_support
        dirty, self._dirty = sorted(self._dirty), set()
        for g in dirty:  # actions observed since the last pass
            out = self._n_out[g]
            tid, n = min(out.items(), key=lambda kv: (-kv[1], kv[0]))
            if n < ms:
                continue
            self.reconcile(tid, n, self._n_act[g], step)
            for eid in list(self._episodes_of.get(g, ())):
                self._retire(self.entries[eid], "archived", step)
                self.stats["archived"] += 1
        pairs, self._dirty_pairs = sorted(self._dirty_pairs), set()
        for t1, t2 in pairs:
            n = self._pairs[(t1, t2)]
            if n < ms:
                continue
            trials = self._n_out[self.memory.gact[t1]][t1]
            rid = self._routes.get((t1, t2))
            if rid is None:
                self._new("procedural", t1, step, n, trials, tid2=t2)
                self.stats["procedural_written"] += 1
            else:
                self._refresh(self.entries[rid], n, trials, step)
        self._episodes_after_pass = self._live_episodes
        touched = [eid for _, _, eid, _ in self.events[first:]]
        if touched:
            self._event(step, "maintain", touched[0])
        return touched

    def attribute(self, replayed: list[tuple[int, tuple[int, ...], int]], step: int) -> list[int]:
        """Credit or blame the entries each replayed step injected (see the module docstring);
        invalidate semantic entries whose credited share falls more than ``margin`` below their p.
        Return the invalidated ids."""
        credit: dict[int, int] = {}
        blame: dict[int, int] = {}
        gact, dst = self.memory.gact, self.memory.dst
        for _, injected, tid in replayed:
            g, d = gact[tid], dst[tid]
            for eid in injected:
                e = self.entries[eid]
                if e.tier == "procedural" or e.gact != g:
                    continue
                if e.dst == d:
                    credit[eid] = credit.get(eid, 0) + 1
                else:
                    blame[eid] = blame.get(eid, 0) + 1
        self.stats["attributed_credit"] += sum(credit.values())
        self.stats["attributed_blame"] += sum(blame.values())
        out = []
        for eid in sorted(set(credit) | set(blame)):
            e = self.entries[eid]
            c, n = credit.get(eid, 0), credit.get(eid, 0) + blame.get(eid, 0)
            if e.tier == "semantic" and e.status == "live" and n >= 2 * self.min_support and c / n + self.margin < e.p:
                self._retire(e, "invalidated", step)
                self.stats["invalidated"] += 1
                self._dirty.add(e.gact)  # distil the action again from the episodic log
                out.append(eid)
        return out

    def reconcile(self, tid: int, wins: int, trials: int, step: int) -> MemoryEntry | None:
        """Reconcile the semantic candidate "``tid`` is the dominant outcome of its action, seen
        ``wins`` of ``trials`` times" with the action's live semantic entry; return the live winner
        (``None`` if the candidate was rejected and nothing is live)."""
        g, d = self.memory.gact[tid], self.memory.dst[tid]
        sid = self._semantic.get(g)
        if sid is None:
            e = self._new("semantic", tid, step, wins, trials)
            self.stats["semantic_written"] += 1
            return e
        cur = self.entries[sid]
        if cur.dst == d:  # the same conclusion: merge
            self._refresh(cur, wins, trials, step)
            return cur
        new_conf = (wins + 1) / (trials + 2)
        if self.params["reconcile"] == "article":  # winner = max((confidence, created_at)); the candidate is newer
            if (new_conf, step) < (cur.confidence, cur.created_at):
                self.stats["rejected"] += 1
                return cur
            return self._replace(cur, tid, wins, trials, step)
        last = next((r for r in reversed(self.undo_chain) if r.subject == g), None)
        if last is not None and last.winner == cur.id and self.entries[last.loser].dst == d:
            restored = self.undo(last.loser, step)
            restored.wins, restored.trials = wins, trials
            restored.support, restored.p = wins, wins / trials
            return restored
        if new_conf < cur.confidence - self.margin:  # recency first, unless clearly less confident
            self.stats["rejected"] += 1
            return cur
        return self._replace(cur, tid, wins, trials, step)

    def _replace(self, cur: MemoryEntry, tid: int, wins: int, trials: int, step: int) -> MemoryEntry:
        """Write the candidate as a new semantic entry superseding ``cur``, on the undo chain."""
        g = cur.gact
        e = self._new("semantic", tid, step, wins, trials)
        e.supersedes.append(cur.id)
        self._retire(cur, "superseded", step, by=e.id)
        self.undo_chain.append(UndoRecord(step=step, subject=g, loser=cur.id, winner=e.id))
        self.stats["semantic_written"] += 1
        self.stats["superseded"] += 1
        return e

    def _refresh(self, e: MemoryEntry, support: int, trials: int, step: int) -> None:
        """Merge a candidate with the same conclusion: new content (support, p) -> an ``update``."""
        p = support / trials if trials else 0.0
        if support == e.support and round(p, 2) == round(e.p, 2):
            return
        e.support, e.p = support, p
        e.hit_count += 1
        e.last_seen = step
        self._event(step, "update", e.id)
        self.stats["merged"] += 1

    def undo(self, entry: int | None = None, step: int | None = None) -> MemoryEntry:
        """Undo the supersede of ``entry`` (default: the most recent one on the chain): restore it
        and archive the entry that replaced it, if that one is still live."""
        step = self.now if step is None else step
        idx = len(self.undo_chain) - 1 if entry is None else next(
            (i for i in range(len(self.undo_chain) - 1, -1, -1) if self.undo_chain[i].loser == entry), -1)
        if idx < 0:
            raise UsageError("nothing to undo" if entry is None else f"entry {entry} is not on the undo chain",
                             params=())
        rec = self.undo_chain.pop(idx)
        old, win = self.entries[rec.loser], self.entries[rec.winner]
        if win.status == "live":
            self._retire(win, "archived", step, by=old.id)
        if old.tier == "semantic" and old.gact in self._semantic:  # another conclusion is live now
            cur = self.entries[self._semantic[old.gact]]
            self._retire(cur, "archived", step, by=old.id)
        old.status, old.superseded_by = "live", None
        old.last_seen = step
        self._link(old)
        self._event(step, "write", old.id)
        self.stats["undone"] += 1
        return old

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

    def objects(self) -> list[dict[str, Any]]:
        """Every entry as a memory object (the article's metadata), in the form of the object table
        ``ctwm health --objects`` reads (times are steps)."""
        names = self.item_names
        out = []
        for e in self.entries:
            out.append({
                "id": names[e.id], "type": e.tier, "subject": e.subject, "content": names[e.id].split(":", 1)[1],
                "source": dict(e.source), "created_at": e.created_at, "last_hit_at": e.last_seen,
                "hit_count": e.hit_count, "confidence": e.confidence, "decay": e.decay, "valid_until": e.valid_until,
                "supersedes": [names[i] for i in e.supersedes], "scope": dict(e.scope), "status": e.status,
            })
        return out

