"""Consolidation and reconciliation of the ``tiered`` memory policy (:mod:`ctwm_cli.memory.tiered`): the
passes that turn its episodic log into semantic and procedural entries, the attribution that invalidates
misleading ones, and the reconciliation of a new conclusion with the live one, with its undo chain.

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
     archived (``archive`` with ``by``). :meth:`ConsolidatingStore.undo` does the same on demand.
   * ``article`` (the article's ``reconcile``): the winner is ``max((confidence, created_at))`` over
     the live entry and the candidate; a loser with another outcome is superseded by the winner
     (the article archives it "with reason superseded"), one with the same outcome is merged; the
     pair goes on the undo chain, but nothing is reverted automatically.
"""

from __future__ import annotations

from ..common.errors import UsageError
from .tiered_store import MemoryEntry, TieredStore, UndoRecord

__all__ = ["ConsolidatingStore"]


class ConsolidatingStore(TieredStore):
    """A :class:`~ctwm_cli.memory.tiered_store.TieredStore` that consolidates itself (see the module
    docstring); the write path (:class:`~ctwm_cli.memory.tiered.TieredMemory`) calls :meth:`_trigger`
    after every observation."""

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
