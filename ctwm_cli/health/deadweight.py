"""Dead weight: live memories that nothing read.

Definitions (the report's ``dead_weight``):

* The **window** is the whole trace, or its last ``window`` time units (steps, or seconds when the
  trace is timed by ``ts``): ``[end - window, end]``, ``end`` = the time of the trace's last row.
* A memory is **live** at the window's end when it was written (a ``write`` row, or any first row
  that is not a write: it was in the store when the trace began) at or before the end, was not
  removed afterwards (``supersede``, ``invalidate``, ``archive`` or ``evict``; a later ``write`` puts
  it back) and is not past its ``valid_until`` (memory-object table) at the end.
* It is **never retrieved** when no ``retrieve`` or ``inject`` row for it falls inside the window.
* ``dead_weight_share`` = live memories never retrieved / live memories (undefined with none live, and
  when the trace records no reads at all — no ``search``, ``retrieve`` or ``inject`` row — as a Mem0
  history does: it cannot say whether anything was read).
* ``dead_token_share`` = their tokens / the tokens of all live memories, where a memory's tokens are
  those of its last ``write``/``update`` row that has ``tokens`` (else its last retrieve/inject row
  with ``tokens``); only when every live memory's size is known, else undefined with a note.
* ``oldest``: up to :data:`OLDEST` never-retrieved live memories, oldest write first (age = end − the
  time it was written; ``None`` for memories in the store before the trace began, listed first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import UsageError
from ..results import ToDict, result

OLDEST = 10
_SIZE_EVENTS = frozenset({"write", "update"})
_USES = frozenset({"retrieve", "inject"})
_REMOVING = frozenset({"supersede", "invalidate", "archive", "evict"})


@result
class StaleEntry(ToDict):
    item: str
    written: float | None  # time of its write (steps, or seconds since the epoch); None: before the trace
    age: float | None  # window end - written
    tokens: int | None


@result
class DeadWeight(ToDict):
    window: float | None  # None: the whole trace
    window_start: float | None
    window_end: float | None
    time_unit: str
    live: int
    never_retrieved: int
    dead_weight_share: float
    live_tokens: int | None
    never_retrieved_tokens: int | None
    dead_token_share: float | None
    oldest: tuple[StaleEntry, ...]
    definition: str


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_window(window: float | str | None, time_kind: str) -> float | None:
    """A window in the trace's time unit: a number (steps, or seconds for a trace timed by ``ts``), or a
    duration ``90s`` / ``30m`` / ``24h`` / ``7d`` (a trace timed by ``ts`` only)."""
    if window is None:
        return None
    text = str(window).strip().lower()
    scale = 1.0
    if text[-1:] in _UNITS:
        if time_kind != "timestamp":
            raise UsageError(f"window {window!r} is a duration, but the trace is timed by {time_kind} (no ts on every "
                             "row): give a number of steps", params=("window",))
        scale, text = _UNITS[text[-1]], text[:-1]
    try:
        value = float(text) * scale
    except ValueError:
        value = math.nan
    if isinstance(window, bool) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"window must be a positive number of steps or a duration such as 7d, got {window!r}",
                         params=("window",))
    return value


DEFINITION = ("live: written, not superseded/invalidated/archived/evicted, not past valid_until at the window's "
              "end; never retrieved: no retrieve or inject row inside the window")


class DeadWeightAcc:
    """Fed every item row in time order; :meth:`finish` applies the window."""

    def __init__(self) -> None:
        self.live: dict[str, float | None] = {}  # item -> time written (None: in the store at the start)
        self.seen: set[str] = set()
        self.last_use: dict[str, float] = {}
        self.size: dict[str, int] = {}
        self.use_size: dict[str, int] = {}

    def feed(self, item: str, event: str, t: float, tokens: int | None) -> None:
        first = item not in self.seen
        self.seen.add(item)
        if event == "write":
            if item not in self.live:
                self.live[item] = t
        elif event in _REMOVING:
            self.live.pop(item, None)
        elif first:
            self.live[item] = None  # already in the store when the trace began
        if event in _USES:
            self.last_use[item] = t
            if tokens is not None:
                self.use_size[item] = tokens
        elif event in _SIZE_EVENTS and tokens is not None:
            self.size[item] = tokens

    def finish(self, t_end: float | None, window: float | None, valid_until: Mapping[str, float | None],
               time_unit: str, notes: list[str], *, reads_logged: bool = True) -> DeadWeight:
        """``reads_logged``: the trace has search, retrieve or inject rows (else nothing is known about reads)."""
        start = None if window is None or t_end is None else t_end - window
        live = [it for it in self.live
                if t_end is None or (vu := valid_until.get(it)) is None or not vu <= t_end]
        dead = [it for it in live if it not in self.last_use or (start is not None and self.last_use[it] < start)]
        sizes = {it: self.size.get(it, self.use_size.get(it)) for it in live}
        known = all(v is not None for v in sizes.values()) and bool(live)
        live_tok = sum(sizes.values()) if known else None
        dead_tok = sum(sizes[it] for it in dead) if known else None
        if not reads_logged:
            notes.append("dead weight: the trace records no reads (no search, retrieve or inject rows), so it is "
                         "not computed")
            dead, known = [], False
        elif live and not known:
            notes.append("dead weight: not every live memory has a token count (tokens on its write, update or "
                         "retrieve rows), so the token share is not computed")
        order = sorted(dead, key=lambda it: (-math.inf if self.live[it] is None else self.live[it], it))
        oldest = tuple(
            StaleEntry(item=it, written=self.live[it], tokens=sizes[it],
                       age=None if self.live[it] is None or t_end is None else t_end - self.live[it])
            for it in order[:OLDEST]
        )
        return DeadWeight(
            window=window, window_start=start, window_end=t_end, time_unit=time_unit, live=len(live),
            never_retrieved=len(dead),
            dead_weight_share=len(dead) / len(live) if live and reads_logged else math.nan,
            live_tokens=live_tok, never_retrieved_tokens=dead_tok,
            dead_token_share=(dead_tok / live_tok) if known and live_tok else None, oldest=oldest,
            definition=DEFINITION,
        )
