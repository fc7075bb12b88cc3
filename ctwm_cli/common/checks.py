"""Shared parameter checks: one message shape for "one of" and range errors.

Each helper raises :class:`~ctwm_cli.common.errors.UsageError` naming the parameter as the library spells it
(``params=(name,)``), so the CLI can show its flag instead; on success it returns the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import TypeVar

from .errors import UsageError

T = TypeVar("T")


def check_choice(name: str, value: T, choices: Iterable[T]) -> T:
    """``value`` if it is one of ``choices``; else ``UsageError("NAME must be one of a, b, got 'x'")``."""
    options = list(choices)
    if value not in options:
        raise UsageError(f"{name} must be one of {', '.join(map(str, options))}, got {value!r}", params=(name,))
    return value


def _num(x: float) -> str:
    """A bound as written: integers in full, floats short (``0.5``, ``1e-12``) unless that loses digits."""
    if isinstance(x, Integral):
        return str(int(x))
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def _bound(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    """The accepted range in words: ``>= 1``, ``> 0``, ``<= 26``, ``in (0, 1)``, ``in [0, 0.5)``."""
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_num(lo)}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {_num(hi)}"
    return "a finite number"


def check_range(name: str, value: T, *, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False, integer: bool = False) -> T:
    """``value`` if it lies in the range (NaN never does); else ``UsageError("NAME must be >= 1, got 0")``.

    ``lo``/``hi`` are inclusive unless ``lo_open``/``hi_open``; ``integer`` also demands an integer
    (``bool`` is not one). With neither bound the value must be finite.
    """
    bound = _bound(lo, hi, lo_open, hi_open)
    if integer and (isinstance(value, bool) or not isinstance(value, Integral)):
        raise UsageError(f"{name} must be an integer {bound}, got {value!r}", params=(name,))
    if isinstance(value, bool) or not isinstance(value, Real):
        raise UsageError(f"{name} must be a number {bound}, got {value!r}", params=(name,))
    x = float(value)
    ok = not math.isnan(x)
    if lo is None and hi is None:
        ok = ok and math.isfinite(x)
    if lo is not None:
        ok = ok and (x > lo if lo_open else x >= lo)
    if hi is not None:
        ok = ok and (x < hi if hi_open else x <= hi)
    if not ok:
        raise UsageError(f"{name} must be {bound}, got {value}", params=(name,))
    return value
