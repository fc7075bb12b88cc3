"""Which event kinds a count counts: the caller's, else ``retrieve`` if the trace has any, else ``inject``."""

from __future__ import annotations

from collections.abc import Sequence

from ..common.errors import InputError, UsageError
from .schema import MEM0_NOTE

#: Event kinds counted when the caller names none: ``retrieve`` if the trace has any, else ``inject``.
DEFAULT_COUNTED = ("retrieve", "inject")


def event_kinds(events: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The event kinds to count, checked the same way by every reader and counter: ``None`` or empty (the
    default: ``retrieve`` if present, else ``inject``), one kind as a string, or a sequence of kinds."""
    if events is None:
        return None
    kinds = (events,) if isinstance(events, str) else tuple(events)
    if any(not isinstance(k, str) or not k for k in kinds):
        raise UsageError(f"events must be event kinds (a string or a sequence of non-empty strings), got {events!r}",
                         params=("events",))
    return kinds or None


def choose_events(source: str, fmt: str, present: dict[str, int], events: Sequence[str] | None) -> tuple[str, ...]:
    """The event kinds to count among those ``present``: the caller's, else ``retrieve``, else ``inject``."""
    if events:
        unknown = [e for e in events if e not in present]
        if len(unknown) == len(events):
            have = ", ".join(present) or "none"
            raise InputError(f"{source}: no events of kind {', '.join(events)} (kinds found: {have})")
        return tuple(events)
    for kind in DEFAULT_COUNTED:
        if kind in present:
            return (kind,)
    have = ", ".join(present)
    if fmt == "mem0":
        raise InputError(f"{source}: no retrieve or inject events to count (kinds found: {have}): {MEM0_NOTE}")
    if "search" in present:
        raise InputError(f"{source}: no retrieve or inject events to count (kinds found: {have}): the search rows "
                         f"carry no record ids, so no retrieved item is known")
    raise InputError(
        f"{source}: no retrieve or inject events to count (kinds found: {have}); choose with events",
        params=("events",),
    )
