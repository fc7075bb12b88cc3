"""Tables that fit the terminal: a table too wide for the console is split into panels of columns (each repeating
its first column) or stacked one record per block, never shrunk until Rich cuts its numbers."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def show(console: Console, renderable: Any) -> None:
    """Print a renderable; a table through :func:`fit` (also inside a ``Group``), so that no cell is cut at
    the console's width."""
    from rich.console import Group

    if isinstance(renderable, Group):
        for part in renderable.renderables:
            show(console, part)
        return
    for part in fit(renderable, console) if isinstance(renderable, Table) else [renderable]:
        console.print(part)


def _natural(console: Console, renderable: Any) -> int:
    """The width ``renderable`` takes when nothing limits it (Rich caps a measurement at the console's)."""
    return console.measure(renderable, options=console.options.update_width(10_000)).maximum


def _cell_width(console: Console, cell: Any) -> int:
    return _natural(console, cell) if cell is not None else 0


def fit(table: Table, console: Console) -> list[Any]:
    """``table`` as it is when it fits the console; else split into panels of columns, each repeating the
    first column (the subject) and each no wider than the console; else (a first column and any other
    too wide together) one record per block, ``column: value`` per line. Rich would otherwise shrink
    columns below their content and cut numbers ("0…", "38,3…") or fold them across lines."""
    width = console.width
    if _natural(console, table) <= width or not table.show_header:
        return [table]  # a field/value listing wraps its text at spaces, as prose does
    columns = table.columns
    # each column's natural width: its widest cell or header, plus padding (2) and its right border (1)
    need = [max([_cell_width(console, c.header) if table.show_header else 0,
                 *(_cell_width(console, cell) for cell in c.cells)]) + 3 for c in columns]
    # the first column is a label (a subject, a family), repeated whole in every panel (a folded label
    # would split the numbers in it, "seed=4" / "2]"); when it leaves no room, the records are stacked
    key = need[0]
    panels: list[list[int]] = []
    budget = width - 1 - key  # the left border and the repeated first column
    current: list[int] = []
    used = 0
    for i in range(1, len(columns)):
        if need[i] > budget:
            return [_stacked(table, console)]
        if used + need[i] > budget:
            panels.append(current)
            current, used = [], 0
        current.append(i)
        used += need[i]
    if current:
        panels.append(current)
    if len(columns) < 2 or not panels:
        return [_stacked(table, console)]
    out = []
    rows = [list(c.cells) for c in columns]
    for k, panel in enumerate(panels):
        title = table.title if k == 0 else Text(f"(continued, {k + 1} of {len(panels)})")
        part = Table(title=title, title_justify=table.title_justify, show_header=table.show_header, box=table.box,
                     caption=table.caption if k == len(panels) - 1 else None, caption_justify=table.caption_justify)
        for i in [0, *panel]:
            c = columns[i]
            part.add_column(c.header, justify=c.justify, style=c.style, no_wrap=True, min_width=need[i] - 3)
        for r in range(table.row_count):
            part.add_row(*(rows[i][r] for i in [0, *panel]))
        out.append(part)
    return out


def _plain(title: Any) -> str:
    return title.plain if isinstance(title, Text) else str(title)


def _stacked(table: Table, console: Console) -> Any:
    """One block per row: the first column's value as a heading, then ``column: value`` lines."""
    from rich.console import Group

    columns = table.columns
    rows = [list(c.cells) for c in columns]
    parts: list[Any] = []
    if table.title:
        parts.append(Text(_plain(table.title)))
    for r in range(table.row_count):
        block = Table(show_header=False, box=None, pad_edge=False, title=None)
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for i, c in enumerate(columns):
            name = _plain(c.header) if table.show_header else ""
            block.add_row(Text(name), rows[i][r])
        parts.append(block)
        parts.append(Text(""))
    if table.caption:
        parts.append(Text(_plain(table.caption)))
    return Group(*parts)
