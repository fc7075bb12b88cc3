"""Shared helpers for result objects: frozen dataclasses with a JSON-safe ``to_dict()``, and the
notebook views every result shares: a short ``repr``, ``summary()``, ``_repr_html_()``, ``to_frame()`` (pandas),
``to_arrow()`` (pyarrow) and ``to_polars()`` (Polars, when installed).

The views are built from :meth:`ToDict.frame_rows` (by default one row: the result's own
``summary_row()`` if it has one, else the scalar fields of ``to_dict()``), so a result's table, its
DataFrame and its JSON lines use one set of field names. The dataclass ``repr`` is switched off: an
audit's generated repr printed every bootstrap replicate (16 KB).
"""

from __future__ import annotations

import dataclasses
import html
import math
import sys
from collections.abc import Mapping
from typing import Any

#: 2: one vocabulary (issue 24): results lists, n_* counts, confidence_interval objects; 3: interval_status, an audit's
#: source and n_items (issue 43; a saved version-2 document is read through ctwm_cli.common.upgrade)
SCHEMA_VERSION = 3
REPR_CHARS = 600  # a result's repr is cut here (notebooks print it after every cell)
_TEXT_CHARS = 80  # a text value inside a repr

#: Decorator used for every result class: immutable, slotted, keyword-only; the repr comes from ToDict.
result = dataclasses.dataclass(frozen=True, slots=True, kw_only=True, repr=False)


def timing(default: Any = dataclasses.MISSING) -> Any:
    """A wall-clock field (seconds, steps per second): kept on the object, left out of ``to_dict()``.

    Machine output is a contract: the same input and seed give byte-identical JSON, so timings go
    to stderr only (the CLI prints them there).
    """
    return dataclasses.field(default=default, metadata={"timing": True})


class _NoNumpy:
    """Stands in for numpy before it is imported: no value can be a numpy object then, so no
    ``isinstance`` against these matches (a settings object's ``to_dict`` needs no numpy; ``--help`` loads none)."""

    ndarray = bool_ = integer = floating = type("_never", (), {})


def _np() -> Any:
    return sys.modules.get("numpy") or _NoNumpy


def jsonable(value: Any) -> Any:
    """Convert ``value`` into JSON-safe built-ins (NaN and infinities become ``None``)."""
    np = _np()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def flat_scalars(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The scalar leaves of a ``to_dict()`` as ``{"a.b": value}``; lists are left out."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(flat_scalars(v, f"{prefix}{k}."))
        elif not isinstance(v, (list, tuple)):
            out[f"{prefix}{k}"] = v
    return out


def short_value(value: Any) -> str:
    """A value as it appears inside a repr: numbers to 4 significant digits, long text cut."""
    np = _np()
    if isinstance(value, (bool, np.bool_)) or value is None:
        return repr(value if value is None else bool(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str):
        return repr(value if len(value) <= _TEXT_CHARS else value[: _TEXT_CHARS - 1] + "…")
    if isinstance(value, (list, tuple)) and len(value) <= 4 and all(isinstance(v, (str, int, float)) for v in value):
        return "[" + ", ".join(short_value(v) for v in value) + "]"
    return f"<{type(value).__name__}>"


def html_table(rows: list[dict[str, Any]], caption: str) -> str:
    """A compact HTML table (escaped): one result as field/value lines, several as one row each."""
    if len(rows) == 1:  # the verdict and its reason first
        first = [k for k in rows[0] if k.endswith("verdict") or k == "reason"]
        fields = [*first, *(k for k in rows[0] if k not in first)]
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{_html_cell(k, rows[0][k])}</td></tr>" for k in fields)
        return f"<table><caption style='text-align:left'>{html.escape(caption)}</caption><tbody>{body}</tbody></table>"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html_cell(c, r.get(c))}</td>" for c in cols) + "</tr>" for r in rows
    )
    return (f"<table><caption style='text-align:left'>{html.escape(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _html_cell(name: str, value: Any) -> str:
    text = "" if value is None else (short_value(value).strip("'") if not isinstance(value, str) else value)
    text = html.escape(text)
    return f"<b>{text}</b>" if name.endswith("verdict") else text


def records_frame(rows: list[dict[str, Any]]):
    """``rows`` as a pandas DataFrame (pandas is imported only here, when a frame is asked for)."""
    import pandas as pd

    columns = list(dict.fromkeys(k for r in rows for k in r))
    return pd.DataFrame.from_records([jsonable(r) for r in rows], columns=columns)


def records_table(rows: list[dict[str, Any]]):
    """``rows`` as a pyarrow Table, the columns of :func:`records_frame` (pyarrow imported when asked for)."""
    import pyarrow as pa

    values = [jsonable(r) for r in rows]
    columns = list(dict.fromkeys(k for r in values for k in r))
    return pa.table({c: [r.get(c) for r in values] for c in columns})


def polars_frame(table: Any):
    """A pyarrow Table as a Polars DataFrame; polars is optional (not a dependency of ctwm)."""
    try:
        import polars
    except ImportError:
        raise ImportError("to_polars() needs polars, which is not installed (pip install polars); "
                          "to_frame() gives pandas and to_arrow() a pyarrow Table") from None
    return polars.from_arrow(table)


class ToDict:
    """Mixin giving dataclass results a recursive, JSON-safe ``to_dict()`` and the notebook views."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if not f.metadata.get("timing")}

    def frame_rows(self) -> list[dict[str, Any]]:
        """The rows of :meth:`to_frame`: the result's ``summary_row()`` if it has one, else the scalar
        fields of ``to_dict()`` (nested ones as ``a.b``)."""
        row = getattr(self, "summary_row", None)
        return [row() if callable(row) else flat_scalars(self.to_dict())]

    def to_frame(self):
        """A pandas DataFrame, one row per result (per audit or group), with the JSON field names."""
        return records_frame(self.frame_rows())

    def to_arrow(self):
        """The rows of :meth:`to_frame` as a pyarrow Table."""
        return records_table(self.frame_rows())

    def to_polars(self):
        """The table of :meth:`to_arrow` as a Polars DataFrame (needs polars, an optional package)."""
        return polars_frame(self.to_arrow())

    def summary(self) -> str:
        """A few lines of text: the fields of each row of :meth:`frame_rows`."""
        rows = self.frame_rows()
        lines = [type(self).__name__]
        indent = "    " if len(rows) > 1 else "  "
        for i, row in enumerate(rows):
            if len(rows) > 1:
                lines.append(f"  [{i}]")
            lines += [f"{indent}{k}: {v if isinstance(v, str) else short_value(v)}" for k, v in row.items()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table([jsonable(r) for r in self.frame_rows()], type(self).__name__)

    def __repr__(self) -> str:
        rows = self.frame_rows()
        fields = rows[0] if len(rows) == 1 else {"rows": len(rows)}
        text = f"{type(self).__name__}(" + ", ".join(f"{k}={short_value(v)}" for k, v in fields.items()) + ")"
        return text if len(text) <= REPR_CHARS else text[: REPR_CHARS - 2] + "…)"
