"""Shared helpers for result objects: frozen dataclasses with a JSON-safe ``to_dict()``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

SCHEMA_VERSION = 1

#: Decorator used for every result class: immutable, slotted, keyword-only.
result = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)


def jsonable(value: Any) -> Any:
    """Convert ``value`` into JSON-safe built-ins (NaN and infinities become ``None``)."""
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


class ToDict:
    """Mixin giving dataclass results a recursive, JSON-safe ``to_dict()``."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
