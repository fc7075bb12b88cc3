"""One lifecycle of a memory item, for every store and every metric (the table is ``docs/lifecycle.md``).

A memory item is in one of four states: **live**, **expired** (its expiry date or TTL has passed, or
it was invalidated), **deleted** (archived or evicted) or **superseded**. Trace rows move it:

==============  ==========================================================================
row             transition
==============  ==========================================================================
``write``       any state -> live (a key put again after a delete or an expiry is live again,
                and its earlier revocation no longer makes its uses stale)
``restore``     expired -> live (an expiry cleared or moved later after it took effect; a
                refreshing read of an expired key the store had not swept yet)
``update``      none: an edit keeps a live item live and a hidden one hidden
``invalidate``  live -> expired (an expiry took effect, or the entry was found wrong)
``supersede``   live -> superseded
``archive``     any -> deleted (a revocation before it is kept: an item that expired, then was
                deleted, was still invalidated)
``evict``       any -> deleted (capacity: its later uses are not stale)
reads           none (``retrieve``, ``inject``, ``read``): uses
==============  ==========================================================================

A use is *stale* when the item is not live at that moment, or when the memory-object table says it
is superseded (a superseding object created before the use) or past its ``valid_until``. Store
size, growth, live, revoked and dead weight all read the same :class:`Lifecycle`.

:class:`ExpiryClock` is the store side, shared by the Mem0 and LangGraph wrappers: when each key's
expiry takes effect, as the store set it, and which ``invalidate`` / ``restore`` rows follow.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Mapping

LIVE, EXPIRED, DELETED, SUPERSEDED = "live", "expired", "deleted", "superseded"
STATES = (LIVE, EXPIRED, DELETED, SUPERSEDED)
#: row kind -> the state it moves an item to (kinds not named leave the state as it is)
TRANSITIONS: dict[str, str] = {
    "write": LIVE, "restore": LIVE, "invalidate": EXPIRED, "supersede": SUPERSEDED,
    "archive": DELETED, "evict": DELETED,
}
#: rows that read an item: ``retrieve`` and ``inject`` are hits; ``read`` is a key read (``get``)
USES = frozenset({"retrieve", "inject", "read"})
#: revocations (the entry was found wrong or ran out) and how a stale use names them
REVOKING = {"supersede": "superseded", "invalidate": "invalidated"}
RETIRING = {"archive": "archived", "evict": "evicted"}


@dataclasses.dataclass(slots=True)
class _Item:
    state: str
    since: float | None  # when it last became live (None: in the store before the trace began)
    left_by: str | None = None  # the row kind that last moved it out of live
    revoked: str | None = None  # "superseded"/"invalidated" until a write or restore makes it live again


class Lifecycle:
    """Every item's state, updated row by row in time order.

    ``valid_until`` (item -> time) and ``superseded_from`` (item -> time its superseder exists, from a
    memory-object table) add the object table's view: past either, a live item's use is stale."""

    def __init__(self, valid_until: Mapping[str, float | None] | None = None) -> None:
        self.valid_until: Mapping[str, float | None] = valid_until or {}
        self.items: dict[str, _Item] = {}
        self.initial = 0  # items in the store before the trace began
        self.size = 0  # live items, relative to the initial store

    def apply(self, item: str, event: str, t: float) -> int:
        """Move ``item`` by one row at time ``t``; return the change of the live size."""
        rec = self.items.get(item)
        if rec is None:
            if event == "write":
                rec = self.items[item] = _Item(state=DELETED, since=t)  # absent until written
            else:  # its first row is not a write: it was in the store when the trace began
                rec = self.items[item] = _Item(state=LIVE, since=None)
                self.initial += 1
        target = TRANSITIONS.get(event)
        if target is None or (event == "restore" and rec.state != EXPIRED):
            return 0
        before = rec.state == LIVE
        if target == LIVE:
            rec.revoked = None
            rec.left_by = None
            if not before:
                rec.since = t
        else:
            rec.left_by = event
            if event in REVOKING and rec.revoked is None:
                rec.revoked = REVOKING[event]
        rec.state = target
        delta = int(target == LIVE) - int(before)
        self.size += delta
        return delta

    def state(self, item: str) -> str | None:
        rec = self.items.get(item)
        return None if rec is None else rec.state

    def is_live(self, item: str, t: float, superseded_from: float = math.inf) -> bool:
        """Live by its rows, not past ``valid_until`` and not superseded by an object before ``t``."""
        rec = self.items.get(item)
        if rec is None or rec.state != LIVE:
            return False
        vu = self.valid_until.get(item)
        return not (vu is not None and t > vu) and not superseded_from <= t

    def stale_reason(self, item: str, t: float, superseded_from: float = math.inf) -> str | None:
        """Why a use of ``item`` at ``t`` is stale (superseded / invalidated / archived / expired), else None.
        An evicted item's use is not stale: eviction says nothing about its content."""
        rec = self.items.get(item)
        if rec is not None and rec.state != LIVE:
            if rec.revoked is not None:
                return rec.revoked
            if rec.left_by == "archive":
                return "archived"
            if rec.left_by == "evict":
                return None
        if superseded_from <= t:
            return "superseded"
        vu = self.valid_until.get(item)
        if vu is not None and t > vu:
            return "expired"
        return None

    def revoked_items(self) -> set[str]:
        """Items superseded or invalidated and not made live again since (a delete keeps the mark)."""
        return {it for it, rec in self.items.items() if rec.revoked is not None}

    def retired(self, event: str) -> set[str]:
        """Items whose last removal was ``event`` (``archive`` / ``evict``) and that are not live."""
        return {it for it, rec in self.items.items() if rec.state == DELETED and rec.left_by == event}

    def live_items(self, t: float) -> dict[str, float | None]:
        """item -> when it last became live, for the items live at ``t`` (rows and ``valid_until``)."""
        return {it: rec.since for it, rec in self.items.items() if self.is_live(it, t)}


class ExpiryClock:
    """When each key's expiry takes effect (as the store set it), and the rows that follow.

    The wrappers tell it what the store did — an expiry set, moved or cleared; a TTL refreshed by a
    read; a key deleted or put again — and ask :meth:`due` for the expiries that have taken effect by
    now (each one an ``invalidate`` row timed when it took effect). Setting or refreshing the expiry
    of a key whose expiry had already taken effect returns True when that makes it live again (a
    ``restore`` row): the store shows it again."""

    def __init__(self) -> None:
        self._deadline: dict[Hashable, float] = {}
        self._expired: set[Hashable] = set()

    def expired(self, key: Hashable) -> bool:
        return key in self._expired

    def deadline(self, key: Hashable) -> float | None:
        return self._deadline.get(key)

    def due(self, now: float) -> list[tuple[float, Hashable]]:
        """The expiries that took effect at or before ``now``, oldest first; their keys are expired."""
        hits = sorted(((t, k) for k, t in self._deadline.items() if t <= now), key=lambda p: (p[0], repr(p[1])))
        for _, k in hits:
            del self._deadline[k]
            self._expired.add(k)
        return hits

    def set(self, key: Hashable, deadline: float | None, now: float) -> bool:
        """The store now expires ``key`` at ``deadline`` (None: never). True: it was expired and is live again."""
        revived = key in self._expired and (deadline is None or deadline > now)
        if revived:
            self._expired.discard(key)
        if deadline is None:
            self._deadline.pop(key, None)
        elif key not in self._expired:
            self._deadline[key] = deadline
        return revived

    def forget(self, key: Hashable) -> None:
        """The key is gone (deleted) or put again as a new item: no expiry, not expired."""
        self._deadline.pop(key, None)
        self._expired.discard(key)
