"""The store under the ``tiered`` memory policy (:mod:`ctwm_cli.memory.tiered`): its memory objects, the
indexes the write path, consolidation and retrieval all read, and the primitives that keep them in step
(write an entry, link and unlink it, retire it with its trace event).

**Confidence** is driven only by verification, never by hit counts: every later observation of an
entry's action verifies it (same outcome) or refutes it; confidence = (wins + 1) / (trials + 2).

**Metadata** on every entry (the article's memory object): ``subject`` (the action, e.g. ``s12 a2``),
``source`` (step and evidence: the observed transition, or the episodes a conclusion was distilled
from), ``created_at``, ``last_hit_at``, ``hit_count``, ``confidence``, ``decay`` (``episodic:<ttl>
steps`` or the recency half-life), ``valid_until`` (episodes: ``created_at + episodic_ttl`` when
``episodic_ttl`` > 0), ``supersedes`` and ``scope`` (the world and the source state).
:meth:`TieredStore.objects` returns them in the object-table form ``ctwm health --objects`` reads.

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

from .base import EpisodicMemory
from .hybrid import HybridIndex, make_embedder

__all__ = ["PREFIX", "TIERS", "TRIGGERS", "MemoryEntry", "TieredStore", "UndoRecord"]

TIERS = ("working", "episodic", "semantic", "procedural")
PREFIX = {"episodic": "epi", "semantic": "sem", "procedural": "proc"}
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
class UndoRecord:
    step: int
    subject: int  # global action
    loser: int
    winner: int



class TieredStore:
    """The entries of the ``tiered`` policy, their indexes and statistics (see the module docstring).

    ``params`` are the checked parameters (:func:`~ctwm_cli.memory.tiered_params.check_tiered_args`)."""

    def __init__(self, memory: EpisodicMemory, params: Mapping[str, Any]):
        p = params
        self.memory = memory
        self.params = p
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

