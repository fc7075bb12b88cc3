"""Parameters of the ``tiered`` memory policy (:mod:`ctwm_cli.memory.tiered`): defaults, checks, the
``KEY=VALUE`` form the command line uses, and the hard budget split.

The switches are the article's section 7.1 ablations: ``write_filter`` (the three-question filter,
"state externalisation"), ``consolidation`` (offline consolidation), ``reconcile`` (conflict
resolution: ours, or the article's ``max(confidence, created_at)``), ``attribution`` (the attribute
step of replay -> attribute -> distill -> reconcile) and the budget split.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import UsageError

TIERED_DEFAULTS: dict[str, Any] = {
    # hard budget split (the article: working 60%, retrieved <= 25%, reserve >= 15%)
    "working": 0.60, "retrieved": 0.25, "reserve": 0.15,
    # consolidation triggers: periodic (every `period` steps), threshold (live episodes >= `max_episodes`;
    # 0 = off), idle (no new episode for `idle` steps while something is pending; 0 = off)
    "period": 100, "max_episodes": 150, "idle": 25,
    "min_support": 3, "margin": 0.10, "half_life": 2000.0, "trail": 2,
    # section 7.1 switches
    "write_filter": True, "consolidation": True, "attribution": True, "reconcile": "ours",
    # retrieval: "scored" (relevance x confidence x recency) or "hybrid" (structured filter + BM25 +
    # embedding similarity, fused, then x confidence x recency); embedding backend for hybrid
    "retrieval": "scored", "embedding": "auto",
    # metadata: episodic entries are valid for `episodic_ttl` steps (0 = no expiry)
    "episodic_ttl": 0,
    # layered loading: full lines only for entries about the current state, one summary line per other state
    "layered": False,
}
CHOICES: dict[str, tuple[str, ...]] = {
    "reconcile": ("ours", "article"), "retrieval": ("scored", "hybrid"), "embedding": ("auto", "onnx", "lexical"),
}
SWITCHES = ("write_filter", "consolidation", "attribution", "layered")
_ON = {"on": True, "true": True, "1": True, "yes": True, "off": False, "false": False, "0": False, "no": False}
_EPS = 1e-9


def parse_tiered(specs: Iterable[str] | None) -> dict[str, Any]:
    """``["write_filter=off", "retrieved=0.4"]`` -> typed overrides (checked by :func:`check_tiered_args`)."""
    out: dict[str, Any] = {}
    for spec in specs or ():
        key, sep, text = str(spec).partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key:
            raise UsageError(f"tiered expects KEY=VALUE, got {spec!r}", params=("tiered",))
        if key not in TIERED_DEFAULTS:
            raise UsageError(f"unknown tiered parameter {key!r} (known: {', '.join(TIERED_DEFAULTS)})",
                             params=("tiered",))
        default = TIERED_DEFAULTS[key]
        if isinstance(default, bool):
            if text.lower() not in _ON:
                raise UsageError(f"tiered {key} must be on or off, got {text!r}", params=("tiered",))
            out[key] = _ON[text.lower()]
        elif isinstance(default, str):
            out[key] = text
        else:
            try:
                out[key] = int(text) if isinstance(default, int) else float(text)
            except ValueError:
                kind = "an integer" if isinstance(default, int) else "a number"
                raise UsageError(f"tiered {key} must be {kind}, got {text!r}", params=("tiered",)) from None
    return check_tiered_args(out)


def check_tiered_args(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validated tiered parameters (:data:`TIERED_DEFAULTS` overridden by ``params``)."""
    p = dict(TIERED_DEFAULTS)
    for key, value in (params or {}).items():
        if key not in p:
            raise UsageError(f"unknown tiered parameter {key!r} (known: {', '.join(TIERED_DEFAULTS)})",
                             params=("tiered",))
        p[key] = value
    _check_shares(p)
    _check_numbers(p)
    for key in SWITCHES:
        if not isinstance(p[key], bool):
            raise UsageError(f"tiered {key} must be on or off (a bool), got {p[key]!r}", params=("tiered",))
    for key, allowed in CHOICES.items():
        if p[key] not in allowed:
            raise UsageError(f"tiered {key} must be one of {', '.join(allowed)}, got {p[key]!r}", params=("tiered",))
    return p


def _check_shares(p: Mapping[str, Any]) -> None:
    for key in ("working", "retrieved", "reserve"):
        v = p[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1 or math.isnan(v):
            raise UsageError(f"tiered {key} share must be in [0, 1], got {v!r}", params=("tiered",))
    if p["working"] <= 0:
        raise UsageError(f"tiered working share must be > 0, got {p['working']!r}", params=("tiered",))
    total = p["working"] + p["retrieved"] + p["reserve"]
    if total > 1 + _EPS:
        raise UsageError(f"tiered shares working + retrieved + reserve must be <= 1, got {total:g}", params=("tiered",))


def _check_numbers(p: Mapping[str, Any]) -> None:
    for key, low in (("period", 1), ("min_support", 1), ("trail", 0), ("max_episodes", 0), ("idle", 0),
                     ("episodic_ttl", 0)):
        v = p[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise UsageError(f"tiered {key} must be an integer >= {low}, got {v!r}", params=("tiered",))
    if not isinstance(p["margin"], (int, float)) or not p["margin"] >= 0:
        raise UsageError(f"tiered margin must be >= 0, got {p['margin']!r}", params=("tiered",))
    if not isinstance(p["half_life"], (int, float)) or not p["half_life"] > 0:
        raise UsageError(f"tiered half_life must be > 0, got {p['half_life']!r}", params=("tiered",))


def budget_split(budget: int, working: float, retrieved: float, reserve: float) -> tuple[int, int, int]:
    """``(working cap, retrieved cap, reserve floor)`` in tokens; caps + reserve never exceed ``budget``."""
    w = math.floor(working * budget + _EPS)
    r = math.floor(retrieved * budget + _EPS)
    res = math.ceil(reserve * budget - _EPS)
    w = min(w, budget - res)
    r = max(0, min(r, budget - res - w))
    return w, r, res
