"""The hot list and the cold list: which memories every query returns, and which nothing reads.

* **hot**: the :data:`TOP` memories with the most hits (``retrieve`` rows; ``inject`` when there are
  none), most first (ties by id), each with its key reads (``read`` rows), its state at the end of
  the trace (:mod:`.lifecycle`) and its text when the memory-object table has ``content``.
* **cold**: live memories with no hit or read in the dead-weight window (:mod:`.deadweight`), oldest
  first, with their text.

Texts come from a trace or a dump, so they are data, not markup: the table output shows control
characters as escapes (:mod:`ctwm_cli.common.inert`), and each text is cut to :data:`TEXT_CHARS` characters.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..common.results import ToDict, result
from .lifecycle import Lifecycle

TOP = 10
TEXT_CHARS = 200


@result
class HotEntry(ToDict):
    item: str
    hits: int
    reads: int
    state: str | None  # live / expired / deleted / superseded at the end, None: never seen in a row
    text: str | None


@result
class HotList(ToDict):
    hot: tuple[HotEntry, ...]
    cold: tuple[HotEntry, ...]
    hit_event: str | None
    cold_definition: str = "live at the end, no retrieve, inject or read row in the dead-weight window; oldest first"


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_CHARS:
        return text
    return text[: TEXT_CHARS - 1] + "…"


def hot_list(hits: Mapping[str, int], reads: Mapping[str, int], cold: tuple[str, ...], lifecycle: Lifecycle,
             content: Mapping[str, str | None], hit_event: str | None, *, top: int = TOP) -> HotList:
    """The hot list (``hits``: item -> hit rows) and the cold list (``cold``: dead items, oldest first)."""

    def entry(item: str) -> HotEntry:
        return HotEntry(item=item, hits=int(hits.get(item, 0)), reads=int(reads.get(item, 0)),
                        state=lifecycle.state(item), text=_cut(content.get(item)))

    ranked = sorted((it for it, n in hits.items() if n > 0), key=lambda it: (-hits[it], it))[:top]
    return HotList(hot=tuple(entry(it) for it in ranked), cold=tuple(entry(it) for it in cold[:top]),
                   hit_event=hit_event)
