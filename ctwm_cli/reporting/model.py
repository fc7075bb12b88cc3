"""What a report page shows, as result objects: cards, tables and figures grouped into sections.

The page (:mod:`.page`) and ``ctwm report --format json`` are two renderings of one :class:`Report`: the JSON is
:meth:`Report.to_dict` (every card, every table, every figure's finding), the page draws the same objects, so the
two cannot disagree. A figure's SVG is kept on the object but left out of ``to_dict()`` (it is a drawing, not a
number the page states).
"""

from __future__ import annotations

from typing import Any

from .._version import __version__
from ..common.results import ToDict, jsonable, result


@result
class Estimate(ToDict):
    """A table cell holding a number with its interval: the page writes ``+0.016 [+0.010, +0.023]`` (signed: a
    change), the JSON keeps the three numbers. ``low``/``high`` None: no interval was formed."""

    value: float | None
    low: float | None = None
    high: float | None = None
    signed: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"value": jsonable(self.value), "low": jsonable(self.low), "high": jsonable(self.high)}


@result
class Table(ToDict):
    """A table of the page: ``columns`` keys (the page shows each as its :mod:`.glossary` words, the key in a
    tooltip), one tuple of cells per row (raw values or :class:`Estimate`; the page formats them). ``summary``: a
    sentence read before the rows (what a long table holds); ``open_rows``: rows shown before the rest is folded
    into a closed ``<details>`` (0: all shown)."""

    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    summary: str = ""
    open_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = {"caption": self.caption, "columns": list(self.columns),
               "rows": [dict(zip(self.columns, jsonable(list(r)), strict=True)) for r in self.rows]}
        if self.summary:
            out["summary"] = self.summary
        return out


@result
class Figure(ToDict):
    """One inline SVG figure: ``alt`` states its finding (the page's aria-label and SVG <title>), ``table``
    holds the numbers behind it."""

    key: str  # unique on the page: the prefix of every id inside the SVG
    title: str
    alt: str
    table: Table
    svg: str = ""  # a drawing: left out of to_dict()

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "alt": self.alt, "table": self.table.to_dict()}


@result
class Card(ToDict):
    """The headline of a section: the verdict in words, its reason and rule, and the facts that go with it."""

    headline: str
    verdict: str | None
    fields: tuple[tuple[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"headline": self.headline, "verdict": self.verdict, "fields": {k: jsonable(v) for k, v in self.fields}}


@result
class Block(ToDict):
    """A titled part of a section: an optional lead paragraph, figures (each with its table), plain tables, and
    parts of its own (a heading one level down each; ``collapsed``: drawn as a closed ``<details>``, for long
    per-tenant lists a reader opens on purpose)."""

    title: str
    text: str = ""
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    parts: tuple[Block, ...] = ()
    collapsed: bool = False


@result
class Section(ToDict):
    """Everything the page shows about one source (a trace, a grid directory or a replay result)."""

    kind: str  # "trace", "grid" or "replay"
    source: str
    title: str
    card: Card | None
    blocks: tuple[Block, ...]
    notes: tuple[str, ...] = ()
    summary: str | None = None  # the lead paragraph (.summary), read first; None: a replay (no lead yet)
    seed: int | None = None  # the seed of the run the section shows (a replay: the replay's own, from its JSON)


@result
class Report(ToDict):
    """``ctwm report`` / :func:`ctwm_cli.report`: the sections of one page and the page itself."""

    title: str
    seed: int | None
    sections: tuple[Section, ...]
    html: str = ""  # the page: not part of its JSON
    version: str = __version__

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "seed": self.seed, "version": self.version,
                "sections": [s.to_dict() for s in self.sections]}

    def figures(self) -> list[Figure]:
        return [f for s in self.sections for b in s.blocks for f in b.figures]

    def _repr_html_(self) -> str:  # a notebook shows the page itself
        return self.html
