"""Dead weight: live memories that nothing read.

Definitions (the report's ``dead_weight``):

* The **window** is the whole trace, or its last ``500steps`` (agent steps; on a trace timed by ``ts``,
  from the first row of those steps) or ``36h`` / ``7d`` (a duration; a trace timed by ``ts`` only):
  ``[end - window, end]``, ``end`` = the time of the trace's last row. A bare number is refused.
* A memory is **live** at the window's end when it was written (a ``write`` row, or any first row
  that is not a write: it was in the store when the trace began) at or before the end, was not
  removed afterwards (``supersede``, ``invalidate``, ``archive`` or ``evict``; a later ``write`` or
  ``restore`` puts it back: the transitions of :mod:`.lifecycle`) and is not past its ``valid_until``
  or superseded by an object of the memory-object table at the end.
* It is **never retrieved** when no ``retrieve``, ``inject`` or ``read`` row (a key read, ``get()``) for it
  falls inside the window: a memory read by key every turn is used, not dead weight.
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

from ..common.errors import UsageError
from ..common.results import ToDict, result
from .lifecycle import USES

OLDEST = 10
_SIZE_EVENTS = frozenset({"write", "update"})


@result
class StaleEntry(ToDict):
    item: str
    written: float | None  # time of its write (steps, or seconds since the epoch); None: before the trace
    age: float | None  # window end - written
    tokens: int | None


@result
class DeadWeight(ToDict):
    window: float | None  # None: the whole trace
    window_unit: str | None  # "step" or "second"
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
    dead: tuple[str, ...] = ()  # every live memory never retrieved in the window, by id

    def to_dict(self) -> dict:
        d = ToDict.to_dict(self)
        del d["dead"]  # the cold list carries them (HealthReport.hot)
        return d


#: duration units of a window on a trace timed by ``ts``, in seconds
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_STEP_UNITS = ("steps", "step")


@result
class Window(ToDict):
    """The last ``amount`` steps (``unit`` "step") or seconds (``unit`` "second") of a trace."""

    amount: float
    unit: str


def parse_window(window: float | str | Window | None, time_kind: str, *, has_step: bool = True) -> Window | None:
    """A window: ``500steps`` (the last 500 agent steps), or a duration ``90s`` / ``30m`` / ``36h`` / ``7d``
    (a trace timed by ``ts`` only). A bare number is refused: on a trace timed by ``ts`` it could mean
    either, and it meant seconds there before."""
    if window is None or isinstance(window, Window):
        return window
    text = str(window).strip().lower()
    unit, scale = None, 1.0
    for suffix in _STEP_UNITS:
        if text.endswith(suffix):
            unit, text = "step", text[: -len(suffix)].strip()
            break
    else:
        if text[-1:] in _UNITS:
            unit, scale, text = "second", _UNITS[text[-1]], text[:-1].strip()
    try:
        value = float(text) * scale
    except ValueError:
        value = math.nan
    if isinstance(window, bool) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"window must be a positive number of steps (500steps) or a duration such as 7d, "
                         f"got {window!r}", params=("window",))
    if unit is None:
        raise UsageError(f"window {window!r} needs a unit: {text}steps (the last {text} agent steps) or {text}s "
                         f"(the last {text} seconds; also m, h, d)", params=("window",))
    if unit == "second" and time_kind != "timestamp":
        raise UsageError(f"window {window!r} is a duration, but the trace is timed by {time_kind} (no ts on every "
                         f"row): give a number of steps ({text}steps)", params=("window",))
    if unit == "step" and not has_step:
        raise UsageError(f"window {window!r} counts steps, but not every row of the trace has a step: give a "
                         "duration such as 7d", params=("window",))
    return Window(amount=value, unit=unit)


def window_start(window: Window | None, times: list[float], steps: list[int | None], time_kind: str,
                 end: float) -> float | None:
    """The time (on the trace's own axis) the window starts at: ``end - amount`` on the axis it counts in;
    for a steps window on a trace timed by ``ts``, the time of the first row of the last ``amount`` steps."""
    if window is None:
        return None
    if window.unit == "second" or time_kind == "step":
        return end - window.amount
    last = max(s for s in steps if s is not None)
    inside = [t for t, s in zip(times, steps, strict=True) if s is not None and s >= last - window.amount]
    return min(inside) if inside else end


DEFINITION = ("live: written, not superseded/invalidated/archived/evicted, not past valid_until at the window's "
              "end; never retrieved: no retrieve, inject or read row inside the window")


class DeadWeightAcc:
    """Fed every item row in time order: each item's last use and size. :meth:`finish` takes the live
    items from the store's :class:`~ctwm_cli.health.lifecycle.Lifecycle` and applies the window."""

    def __init__(self) -> None:
        self.last_use: dict[str, float] = {}
        self.size: dict[str, int] = {}
        self.use_size: dict[str, int] = {}

    def feed(self, item: str, event: str, t: float, tokens: int | None) -> None:
        if event in USES:
            self.last_use[item] = t
            if tokens is not None and event != "read":
                self.use_size[item] = tokens
        elif event in _SIZE_EVENTS and tokens is not None:
            self.size[item] = tokens

    def finish(self, live_since: Mapping[str, float | None], t_end: float | None, window: Window | None,
               start: float | None, time_unit: str, notes: list[str], *, reads_logged: bool = True) -> DeadWeight:
        """``live_since``: the items live at ``t_end`` and when each became live (None: before the trace);
        ``reads_logged``: the trace has search, retrieve, inject or read rows (else nothing is known about reads)."""
        live = sorted(live_since)
        dead = [it for it in live if it not in self.last_use or (start is not None and self.last_use[it] < start)]
        sizes = {it: self.size.get(it, self.use_size.get(it)) for it in live}
        known = all(v is not None for v in sizes.values()) and bool(live)
        live_tok = sum(sizes.values()) if known else None
        dead_tok = sum(sizes[it] for it in dead) if known else None
        if not reads_logged:
            notes.append("dead weight: the trace records no reads (no search, retrieve, inject or read rows), so it "
                         "is not computed")
            dead, known = [], False
        elif live and not known:
            notes.append("dead weight: not every live memory has a token count (tokens on its write, update or "
                         "retrieve rows), so the token share is not computed")
        order = sorted(dead, key=lambda it: (-math.inf if live_since[it] is None else live_since[it], it))
        oldest = tuple(
            StaleEntry(item=it, written=live_since[it], tokens=sizes[it],
                       age=None if live_since[it] is None or t_end is None else t_end - live_since[it])
            for it in order[:OLDEST]
        )
        return DeadWeight(
            window=None if window is None else window.amount, window_unit=None if window is None else window.unit,
            window_start=start, window_end=t_end, time_unit=time_unit, live=len(live),
            never_retrieved=len(dead),
            dead_weight_share=len(dead) / len(live) if live and reads_logged else math.nan,
            live_tokens=live_tok, never_retrieved_tokens=dead_tok,
            dead_token_share=(dead_tok / live_tok) if known and live_tok else None, oldest=oldest,
            definition=DEFINITION, dead=tuple(order) if reads_logged else (),
        )
