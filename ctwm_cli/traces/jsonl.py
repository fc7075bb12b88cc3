"""JSONL, line by line: the hardening pass before DuckDB reads a file, and the precise re-parse that
names the file and line when DuckDB's own message is vaguer ("at byte 37 in line 3" of a record
that really broke on line 2)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import BinaryIO

from ..common.errors import InputError
from .guard import checked_blocks
from .schema import INTEGER_COLUMNS, ColumnMap, missing_column_message
from .sources import Layout


@dataclasses.dataclass(frozen=True, slots=True)
class Hardened:
    """What the hardening pass found: any content, which looked-for keys occur (in the order first
    met), and the files whose final line is torn (``(path, line number)``)."""

    content: bool
    keys: list[str]
    torn: list[tuple[str, int]]
    keys_by_file: dict[str, list[str]]


def harden(layout: Layout, names: Sequence[str] = ()) -> Hardened:
    """Check every line of every file (depth, length, UTF-8, decompression).

    DuckDB infers a JSONL schema from its first 20,480 rows, so a column that first appears later
    (25,000 rows without ``event``, then ``write`` rows) would be dropped; this pass already holds
    every byte, so it finds which of ``names`` are a top-level key of some line. A name is looked
    for with ``bytes.find`` only until first confirmed (``json.loads`` of the line holding it, so a
    nested key or a value does not count). A file whose last line, after complete ones, is an object
    without its newline that does not parse was cut off mid-write (a full disk, a killed writer): it
    is reported, not refused.
    """
    content = False
    wanted = {n: b'"' + json.dumps(n, ensure_ascii=False)[1:-1].encode() + b'"' for n in dict.fromkeys(names)}
    found: list[str] = []
    torn: list[tuple[str, int]] = []
    by_file: dict[str, list[str]] = {}
    for path in layout.files:
        stream = layout.open(path)
        last: tuple[int, bytes] = (0, b"")
        here = by_file.setdefault(path, [])
        try:
            for line_no, block in checked_blocks(stream, _name(layout, path)):
                content = content or bool(block.strip())
                for name in [n for n in wanted if n not in here]:
                    if _has_key(block, name, wanted[name]):
                        here.append(name)
                        if name not in found:
                            found.append(name)
                last = (line_no, block)
        finally:
            stream.close()
        line_no, block = last
        tail, last_line = block[block.rfind(b"\n") + 1:], line_no + block.count(b"\n")
        if last_line > 1 and tail.lstrip().startswith(b"{") and not _parses(tail):  # an object cut short
            torn.append((path, last_line))
    return Hardened(content, found, torn, by_file)


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def without_torn_line(layout: Layout, path: str, line_no: int, out: BinaryIO) -> None:
    """Copy ``path``'s complete lines (all before the torn line ``line_no``) to ``out``."""
    stream = layout.open(path)
    try:
        for _, block in checked_blocks(stream, _name(layout, path)):
            out.write(block[: block.rfind(b"\n") + 1])
    finally:
        stream.close()


def _has_key(block: bytes, name: str, needle: bytes) -> bool:
    """Whether some line of ``block`` is a JSON object with the top-level key ``name``."""
    at = block.find(needle)
    while at >= 0:
        start = block.rfind(b"\n", 0, at) + 1
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end
        try:
            obj = json.loads(block[start:end])
        except (ValueError, RecursionError):
            obj = None  # malformed: the reader names it later
        if isinstance(obj, dict) and name in obj:
            return True
        at = block.find(needle, end)
    return False


def _name(layout: Layout, path: str) -> str:
    return f"{layout.source}: {layout.relative(path)}" if layout.dataset else layout.source


def locate(layout: Layout, columns: ColumnMap, keep: Sequence[str], required: Sequence[str]) -> InputError | None:
    """The first line any reader rule rejects, as an error naming file and line (None: all lines pass)."""
    wanted = {src: canon for canon, src in columns.canonical().items()}
    for extra in keep:
        wanted.setdefault(extra, extra)
    found: list[str] = []
    for path in layout.files:
        name = _name(layout, path)
        stream = layout.open(path)
        try:
            for line_no, block in checked_blocks(stream, name):
                for i, raw in enumerate(block.split(b"\n")):
                    if raw.strip():
                        err = _check_line(raw, f"{name}: line {line_no + i}", wanted, columns, found, required, name)
                        if err is not None:
                            return err
        finally:
            stream.close()
    return None


def _check_line(raw: bytes, where: str, wanted: dict, columns: ColumnMap, found: list[str],
                required: Sequence[str], name: str) -> InputError | None:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        return InputError(f"{where}: malformed JSON ({msg})")
    if not isinstance(obj, dict):
        return InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    first_row = not found
    for k in obj:
        if k not in found:
            found.append(k)
    if obj.get(columns.item) is None:
        if first_row or columns.item not in found:
            missing = [c for c in (columns.item, *required) if c not in found]
            if missing:
                msg = missing_column_message(name, missing[0], found, item=missing[0] == columns.item)
                return InputError(msg, params=("item_col",))
        return InputError(f"{where}: missing value in column {columns.item!r}")
    if columns.count in found and columns.count not in obj:
        return InputError(f"{where}: no column {columns.count!r} where earlier lines have one: a counts table and "
                          "events mixed in one file; split them into a counts file and an events file")
    if columns.count in found and obj.get(columns.count) is None:
        return InputError(f"{where}: missing value in column {columns.count!r}")
    for src, canon in wanted.items():
        try:
            coerce(obj.get(src), canon, src)
        except ValueError as exc:
            return InputError(f"{where}: {exc}")
    return None


def coerce(value, canon: str, src: str):
    """A JSON value as the canonical column ``canon`` holds it (ValueError naming ``src`` if it cannot)."""
    if value is None:
        return None
    if canon in INTEGER_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"column {src!r} must be an integer, got {value!r}")
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise ValueError(f"column {src!r} must be an integer, got {value!r}")
            value = int(value)
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"column {src!r} is outside the 64-bit integer range")
        if canon == "count" and value < 1:
            raise ValueError(f"count must be a positive integer, got {value!r}")
        return value
    if canon == "score":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"column {src!r} must be a number, got {value!r}")
        return float(value)
    if isinstance(value, (dict, list)):
        raise ValueError(f"column {src!r} must be a scalar, got {type(value).__name__}")
    return value if isinstance(value, str) else json.dumps(value)
