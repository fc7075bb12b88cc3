"""Gates: ``METRIC OP VALUE`` conditions that fail a run, one grammar for every command.

A gate *fails* when its condition holds: ``p_gof<0.1`` fails an audit whose p_gof is below 0.1 (the
spelling of ``--fail-on``). Grammar::

    gate   := metric ["?"] op number          e.g.  p_gof<0.1   gini>0.9   context_usage?>0.5
    op     := "<" | "<=" | ">" | ">=" | "==" | "!="

A metric that could not be computed (null, NaN, missing) FAILS the gate: a gate that passes without
data is an instrument that cannot fail. Writing ``?`` after the metric allows it to be missing (the
outcome is then ``skipped``). An unknown metric is a usage error that names the closest known one.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import UsageError
from .results import ToDict, result
from .upgrade import renamed

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt,
}
_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(\?)?\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$")

PASS, FAIL, NOT_AVAILABLE, SKIPPED = "pass", "fail", "not-available", "skipped"
#: The status of a ``ctwm check`` entry that could not run (its gates were never evaluated): a failure.
ERROR = "error"


@result
class Check(ToDict):
    """One parsed gate."""

    metric: str
    op: str
    value: float
    optional: bool = False

    def __str__(self) -> str:
        return f"{self.metric}{'?' if self.optional else ''}{self.op}{self.value:g}"


@result
class CheckOutcome(ToDict):
    """A gate evaluated on one subject (a trace, a group, a report)."""

    subject: str
    check: str
    metric: str
    op: str
    threshold: float | str
    observed: float | str | None
    status: str  # pass | fail | not-available | skipped | error
    failed: bool
    note: str
    needs: str | None = None  # the parameter that would make a missing metric available


def parse_check(spec: str, metrics: Sequence[str], *, parameter: str = "fail_on") -> Check:
    """``"p_gof<0.1"`` -> :class:`Check`; the metric must be one of ``metrics``."""
    m = _SPEC.match(spec)
    if not m:
        raise UsageError(
            f"{parameter}: expects METRIC>VALUE (or <, >=, <=, ==, !=; METRIC? allows a missing metric), got {spec!r}",
            params=(parameter,)
        )
    name, optional, op, raw = m.groups()
    if name not in metrics:
        close = renamed(name, metrics) or difflib.get_close_matches(name, list(metrics), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(f"{parameter}: unknown metric {name!r} ({hint}known: {', '.join(metrics)})",
                         params=(parameter,))
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{parameter}: {spec!r}: {raw!r} is not a number", params=(parameter,)) from None
    if not math.isfinite(value):
        raise UsageError(f"{parameter}: {spec!r}: the threshold must be finite", params=(parameter,))
    return Check(metric=name, op=op, value=value, optional=bool(optional))


def parse_checks(
    specs: Sequence[str] | None, metrics: Sequence[str], *, parameter: str = "fail_on"
) -> tuple[Check, ...]:
    return tuple(parse_check(s, metrics, parameter=parameter) for s in specs or ())


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, str):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def evaluate_checks(
    checks: Sequence[Check], metrics: Mapping[str, Any], *, subject: str = "", needs: Mapping[str, str] | None = None
) -> tuple[CheckOutcome, ...]:
    """Evaluate every gate on one subject's metrics. ``needs`` maps a metric to the parameter whose
    absence made it unavailable (e.g. ``{"context_usage": "budget"}``); it is carried in the outcome."""
    out = []
    for c in checks:
        v = _number(metrics.get(c.metric))
        common = {"subject": subject, "check": str(c), "metric": c.metric, "op": c.op, "threshold": c.value}
        if v is None:
            need = (needs or {}).get(c.metric)
            why = f"{c.metric} not available" + (f" (needs {need})" if need else "")
            if c.optional:
                out.append(CheckOutcome(**common, observed=None, status=SKIPPED, failed=False,
                                        note=f"{why}; allowed by '?'", needs=need))
            else:
                out.append(CheckOutcome(**common, observed=None, status=NOT_AVAILABLE, failed=True, note=why,
                                        needs=need))
            continue
        hit = OPS[c.op](v, c.value)
        note = f"{c.metric} = {v:.6g} {c.op} {c.value:g}" if hit else f"{c.metric} = {v:.6g}"
        out.append(CheckOutcome(**common, observed=v, status=FAIL if hit else PASS, failed=hit, note=note))
    return tuple(out)



def expect_outcome(subject: str, metric: str, observed: str, expected: str) -> CheckOutcome:
    """An expectation (``expect="tpl-compatible"``) as a gate outcome: it fails when the value differs."""
    ok = observed == expected
    note = f"{metric} = {observed}" + ("" if ok else f", expected {expected}")
    return CheckOutcome(subject=subject, check=f"{metric}=={expected}", metric=metric, op="==", threshold=expected,
                        observed=observed, status=PASS if ok else FAIL, failed=not ok, note=note)
