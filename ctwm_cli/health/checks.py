"""``--fail-on METRIC>VALUE`` checks (also <, >=, <=): parse once, evaluate on a report's metrics."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence

from ..errors import UsageError
from ..results import ToDict, result

_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|>|<)\s*([^\s]+)\s*$")


@result
class Check(ToDict):
    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


@result
class CheckOutcome(ToDict):
    check: str
    metric: str
    observed: float | None
    failed: bool
    note: str


def parse_check(spec: str, metrics: Sequence[str]) -> Check:
    """``"stale_hit_share>0.05"`` -> Check; the metric must be one of ``metrics``."""
    m = _SPEC.match(spec)
    if not m:
        raise UsageError(f"--fail-on expects METRIC>VALUE (or <, >=, <=), got {spec!r}")
    name, op, raw = m.groups()
    if name not in metrics:
        raise UsageError(f"--fail-on: unknown metric {name!r} (known: {', '.join(metrics)})")
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--fail-on: {spec!r}: {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"--fail-on: {spec!r}: the threshold must be finite")
    return Check(metric=name, op=op, value=value)


def evaluate_checks(checks: Sequence[Check], metrics: Mapping[str, float | None]) -> tuple[CheckOutcome, ...]:
    """A check *fails* when its condition holds (``--fail-on x>0.1`` fails if x > 0.1).

    A metric that could not be computed (null) never fails a check; the outcome says so.
    """
    out = []
    for c in checks:
        v = metrics.get(c.metric)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(CheckOutcome(check=str(c), metric=c.metric, observed=None, failed=False, note="metric not available"))
            continue
        hit = _OPS[c.op](float(v), c.value)
        note = f"{c.metric} = {float(v):.6g} {c.op} {c.value:g}" if hit else f"{c.metric} = {float(v):.6g}"
        out.append(CheckOutcome(check=str(c), metric=c.metric, observed=float(v), failed=hit, note=note))
    return tuple(out)
