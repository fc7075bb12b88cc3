"""Baselines: how a run's headline numbers moved against a saved one, and whether that is a regression.

Two kinds of input:

* two saved JSON results of the same command (``ctwm audit ... --json > base.json``): every headline
  number of every subject (trace or group, matched by label) is paired; the change is HEAD - BASE.
* two traces: per-item counts of each; the change in Gini, top-10% share and the power-law α, each
  with a permutation p-value and a percentile bootstrap interval (below).

A tolerance ``{"gini": 0.02}`` turns a change into a check. Saved results: it fails when
|change| > tolerance. Metrics without a tolerance are reported, never gated.

**Two traces: a gate is a test with a measured size (issue 26).** H0 is "both traces' items are draws
from one law". The percentile interval alone, read as a test, did not keep its level: under heavy tails
it undercovers (same-law Zipf(1.8) traces of 5,000 items failed ``--tol gini=0`` in 14.7% of pairs
against a nominal 5%), and a zero-width interval (all counts equal) failed every time. So:

- *changed at all*: a permutation test on the pooled items — the base and head items are pooled and
  re-split at random into traces of the two observed sizes, R times; T = |metric(head) - metric(base)|;
  p = (1 + #{T_b >= T})/(R + 1) (a re-split whose α fit fails counts as T_b >= T). Under H0 the items
  are exchangeable, so this is a level-(1 - ``level``) test whatever the tail, with no interval involved.
- *changed by more than the tolerance*: the change's percentile bootstrap interval (items resampled
  within each trace independently; α refitted with x_min re-selected, as the audit does) must lie wholly
  beyond ±tolerance on one side.
- A gate fails only when both hold (tolerance 0: only the first). An intersection of two tests rejects
  no more often than either, so same-law traces fail at most at the permutation test's level at tolerance 0
  and less often above it; the interval's coverage matters only where the laws do differ by about the
  tolerance. Its measured coverage, and the measured size and power, are in README "ctwm diff as a test"
  (``benchmarks/diff_calibration.py``).
- Identical or degenerate inputs: T = 0 and every T_b >= 0, so p = 1: "no change". An interval whose
  replicates all agree is *not formed* (reported as such, never read as a test, never a failure). A metric
  that neither side has (α of an all-equal trace, p_gof of audits without a bootstrap) is no change
  either, in both kinds of input; one missing on one side only fails its gate (issue 44).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .common.checks import check_range
from .common.errors import InputError, UsageError
from .common.gates import FAIL, NOT_AVAILABLE, PASS, CheckOutcome
from .common.labels import subject_label
from .common.results import ToDict, result
from .common.settings import MIN_TAIL
from .common.upgrade import READABLE_VERSIONS, renamed, upgrade
from .diagnostics.measures import concentration
from .stats.intervals import ConfidenceInterval
from .tail.families import RULE_PAIR
from .tail.powerlaw import Histogram, fit_power_law

#: headline numbers per command, read from each subject of a saved JSON result (dotted paths)
HEADLINES: dict[str, dict[str, str]] = {
    "audit": {"n_items": "n_items", "xmin": "power_law.xmin", "n_tail": "power_law.n_tail", "alpha": "power_law.alpha",
              "p_gof": "gof.pvalue", "z": f"comparisons[first={RULE_PAIR[0]},second={RULE_PAIR[1]}].z",
              "gini": "concentration.gini",
              "top10_share": "concentration.top10_share", "sigma_top10": "concentration.sigma_top10"},
    "concentration": {k: k for k in ("n_items", "n_events", "gini", "skewness", "max_over_median", "top10_share",
                                     "sigma_top10", "singleton_fraction")},
    "psd": {k: k for k in ("beta", "beta_se", "r2", "n_steps")},
}
#: where the subjects of each command's JSON sit, and the fields that name them: (source, group), joined as
#: ``source[group]`` (:func:`ctwm_cli.common.labels.subject_label`), the name every command prints (issue 24)
SUBJECTS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "audit": ("results", ("source", "group")),
    "concentration": ("results", ("source", "group")),
    "psd": (None, ("source", "run")),
}
TRACE_METRICS = ("gini", "top10_share", "alpha")


def check_saved_result(doc: Mapping[str, Any], source: str) -> None:
    """A saved result whose subjects are not where its command puts them (``rows`` not a list of
    objects, an audit that is not an object) is an :class:`InputError` naming ``source`` (issue 25)."""
    version = doc.get("schema_version")
    if version is not None and version not in READABLE_VERSIONS:
        raise InputError(f"{source}: saved with schema_version {version}; this ctwm reads "
                         f"{' and '.join(map(str, READABLE_VERSIONS))} (field names changed, README \"Vocabulary\"): "
                         "re-run its command with this ctwm")
    doc = upgrade(doc)  # a version-2 document is checked in this version's names
    command = doc.get("command")
    if command not in SUBJECTS:
        return  # diff_results names the command it cannot compare
    key, _ = SUBJECTS[command]
    items = doc.get(key, []) if key else [doc]
    if not isinstance(items, list):
        raise InputError(f"{source}: a {command!r} result whose {key!r} is a {type(items).__name__}, not a list")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(f"{source}: a {command!r} result whose {key!r}[{i}] is a {type(item).__name__}, "
                             "not an object")
    names = [_subject_name(item, command) for item in items]
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:  # pairing by name would keep one of them and hide the other's change
        raise InputError(f"{source}: two results are named {twice!r}; re-run its command with one --label per "
                         "trace")


@result
class Change(ToDict):
    subject: str
    metric: str
    base: float | None
    head: float | None
    change: float | None
    confidence_interval: ConfidenceInterval | None = None  # bootstrap interval of the change (traces only)
    tolerance: float | None = None
    regression: bool = False
    pvalue: float | None = None  # traces: permutation p-value of "no change" (None for saved results)


@result
class Diff(ToDict):
    compared: str  # the command whose results were compared ("traces" for two traces)
    kind: str  # "results" or "traces"
    changes: tuple[Change, ...]
    checks: tuple[CheckOutcome, ...]
    regressions: int
    replicates: int | None = None
    level: float | None = None
    seed: int | None = None


def _get(doc: Mapping[str, Any], path: str) -> float | None:
    """The number at ``path`` in ``doc``: dotted keys, and ``key[field=value,...]`` picks the object of a
    list whose fields match (an audit's ``comparisons`` list holds Vuong's z of each pair of families)."""
    cur: Any = doc
    for part in path.split("."):
        key, _, select = part.partition("[")
        if not isinstance(cur, Mapping) or key not in cur:
            return None
        cur = cur[key]
        if select:
            wanted = dict(pair.split("=", 1) for pair in select.rstrip("]").split(","))
            hits = [o for o in cur if isinstance(o, Mapping) and all(o.get(k) == v for k, v in wanted.items())] \
                if isinstance(cur, list) else []
            if len(hits) != 1:
                return None
            cur = hits[0]
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        return None
    return float(cur) if math.isfinite(cur) else None


def _subjects(doc: Mapping[str, Any], command: str) -> dict[str, Mapping[str, Any]]:
    key = SUBJECTS[command][0]
    items = doc.get(key, []) if key else [doc]
    return {_subject_name(item, command): item for item in items}


def _subject_name(item: Mapping[str, Any], command: str) -> str:
    """``source[group]`` of one saved subject."""
    source, *group = (item.get(f) for f in SUBJECTS[command][1])
    return subject_label(None if source is None else str(source), group[0] if group else None)


def check_tolerances(tolerances: Mapping[str, float], metrics: Sequence[str]) -> None:
    for name, tol in tolerances.items():
        if name not in metrics:
            close = renamed(name, metrics) or difflib.get_close_matches(name, list(metrics), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"tolerance for unknown metric {name!r} ({hint}known: {', '.join(metrics)})",
                             params=("tol",))
        if not (math.isfinite(tol) and tol >= 0):
            raise UsageError(f"tolerance {name}={tol}: must be a finite number >= 0", params=("tol",))


def _outcome(c: Change, level: float | None = None) -> CheckOutcome:
    """A tolerance as a gate. The check names what was compared, so a row cannot read as a contradiction
    (issue 24: "|Δgini|<=0.02 ... pass ... observed 0.03865" for two traces, where the gate is a test, not
    |Δ| against the allowance): saved results compare |Δ| with the allowance; two traces ask whether the
    change is *shown* beyond it (permutation test at 1 - ``level`` and the whole interval outside ±allowance)."""
    tol = c.tolerance
    if c.pvalue is None:
        check = f"|Δ{c.metric}| within {tol:g}"
    else:
        check = (f"Δ{c.metric} not shown beyond ±{tol:g}" if tol else f"Δ{c.metric} not shown to differ from 0")
    common = {"subject": c.subject, "check": check, "metric": f"Δ{c.metric}", "op": ">", "threshold": tol}
    if c.change is None and c.base is None and c.head is None:  # degenerate alike (an all-equal trace has no α)
        return CheckOutcome(**common, observed=None, status=PASS, failed=False,
                            note=f"{c.metric} not available in base nor head (both degenerate alike): no change")
    if c.change is None:
        return CheckOutcome(**common, observed=None, status=NOT_AVAILABLE, failed=True,
                            note=f"{c.metric} missing in base or head")
    moved = f"{c.metric} {c.base:.6g} -> {c.head:.6g}: Δ {c.change:+.6g}"
    if c.pvalue is None:
        note = f"{moved}, |Δ| {abs(c.change):.6g} {'>' if c.regression else '<='} allowance {tol:g}"
    else:
        alpha = 1 - (level if level is not None else 0.95)
        test = f"permutation p {c.pvalue:.4g} {'<=' if c.pvalue <= alpha else '>'} {alpha:g}"
        ci = c.confidence_interval
        if ci is None:
            where = "interval not formed: every replicate agrees"
        else:
            side = ("outside" if ci.low > tol or ci.high < -tol else "overlaps")
            where = f"{ci.level:.0%} interval [{ci.low:+.6g}, {ci.high:+.6g}] {side} ±{tol:g}"
        note = f"{moved}; {test}; {where}"
    return CheckOutcome(**common, observed=c.change, status=FAIL if c.regression else PASS, failed=c.regression,
                        note=note)


def diff_results(base: Mapping[str, Any], head: Mapping[str, Any], *, tolerances: Mapping[str, float] = ()) -> Diff:
    """Pair the headline numbers of two saved JSON results of the same command (a version-2 document in this
    version's names, :func:`ctwm_cli.common.upgrade.upgrade`)."""
    base, head = upgrade(base), upgrade(head)
    command = base.get("command")
    if command != head.get("command"):
        raise InputError(f"base is a {command!r} result, head a {head.get('command')!r} result: compare like with like")
    if command not in HEADLINES:
        raise InputError(f"cannot compare {command!r} results (comparable: {', '.join(HEADLINES)})")
    tolerances = dict(tolerances or {})
    check_tolerances(tolerances, list(HEADLINES[command]))
    b, h = _subjects(base, command), _subjects(head, command)
    if b and h and not set(b) & set(h):
        raise InputError(f"nothing to compare: no {command} result of base ({_names(b)}) is named as one of head "
                         f"({_names(h)}); name them alike with label", params=("label",))
    changes = []
    for subject in [s for s in b if s in h] + [s for s in h if s not in b] + [s for s in b if s not in h]:
        for metric, path in HEADLINES[command].items():
            bv = _get(b[subject], path) if subject in b else None
            hv = _get(h[subject], path) if subject in h else None
            ch = None if bv is None or hv is None else hv - bv
            tol = tolerances.get(metric)
            changes.append(Change(subject=subject, metric=metric, base=bv, head=hv, change=ch, tolerance=tol,
                                  regression=tol is not None and _moved(bv, hv, ch, tol)))
    checks = tuple(_outcome(c) for c in changes if c.tolerance is not None)
    return Diff(compared=command, kind="results", changes=tuple(changes), checks=checks,
                regressions=sum(c.failed for c in checks))


def _stats(counts: np.ndarray, min_tail: int) -> dict[str, float]:
    k = concentration(counts)
    fit = fit_power_law(Histogram.from_sample(counts), min_tail=min_tail)
    return {"gini": k.gini, "top10_share": k.top10_share, "alpha": fit.alpha if fit is not None else math.nan}


def diff_counts(
    base: np.ndarray, head: np.ndarray, *, subject: str = "trace", tolerances: Mapping[str, float] = (),
    replicates: int = 200, level: float = 0.95, seed: int | None = None, min_tail: int = MIN_TAIL,
) -> Diff:
    """Change in Gini, top-10% share and α between two count vectors: a permutation p-value of "no change"
    and a percentile bootstrap interval of each change, ``replicates`` of each; a tolerance gates a metric
    as the module docstring says (level 1 - ``level``). The bootstrap draws from ``seed``'s stream, the
    permutations from a stream of their own (spawn key 1)."""
    tolerances = dict(tolerances or {})
    check_tolerances(tolerances, list(TRACE_METRICS))
    if not (isinstance(replicates, int) and 2 <= replicates <= 100_000):
        raise UsageError(f"replicates must be an integer in [2, 100000], got {replicates!r}", params=("replicates",))
    check_range("level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    base, head = np.asarray(base, dtype=np.int64), np.asarray(head, dtype=np.int64)
    if base.size < 2 or head.size < 2:
        raise InputError("each trace needs at least two items to compare")
    ss = np.random.SeedSequence(seed)
    rng = np.random.default_rng(ss)
    b0, h0 = _stats(base, min_tail), _stats(head, min_tail)
    reps = {m: np.empty(replicates) for m in TRACE_METRICS}
    for i in range(replicates):
        bs = _stats(base[rng.integers(0, base.size, base.size)], min_tail)
        hs = _stats(head[rng.integers(0, head.size, head.size)], min_tail)
        for m in TRACE_METRICS:
            reps[m][i] = hs[m] - bs[m]
    pvalues = _permutation_pvalues(base, head, b0, h0, replicates, np.random.default_rng(
        np.random.SeedSequence(ss.entropy, spawn_key=(1,))), min_tail)
    a = (1 - level) / 2
    changes = []
    for m in TRACE_METRICS:
        ch = h0[m] - b0[m]
        finite = reps[m][np.isfinite(reps[m])]
        lo, hi = (np.quantile(finite, [a, 1 - a]) if finite.size >= 2 else (math.nan, math.nan))
        lo, hi = (None, None) if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi else (float(lo), float(hi))
        tol = tolerances.get(m)
        p = pvalues[m]
        changed = p <= 1 - level  # (k + 1)/(R + 1) <= a: a size-a test
        beyond = tol is not None and (tol == 0 or (lo is not None and (lo > tol or hi < -tol)))
        regression = tol is not None and (_moved(_num(b0[m]), _num(h0[m]), None, tol) if not math.isfinite(ch)
                                          else changed and beyond)
        changes.append(Change(subject=subject, metric=m, base=_num(b0[m]), head=_num(h0[m]), change=_num(ch),
                              confidence_interval=None if lo is None else ConfidenceInterval(
                                  low=lo, high=hi, level=level),
                              tolerance=tol, regression=regression, pvalue=_num(p)))
    checks = tuple(_outcome(c, level) for c in changes if c.tolerance is not None)
    return Diff(compared="traces", kind="traces", changes=tuple(changes), checks=checks,
                regressions=sum(c.failed for c in checks), replicates=replicates, level=level, seed=seed)


def _permutation_pvalues(base: np.ndarray, head: np.ndarray, b0: dict, h0: dict, replicates: int,
                         rng: np.random.Generator, min_tail: int) -> dict[str, float]:
    """p = (1 + #{T_b >= T})/(R + 1), T = |head - base| of each metric, over random re-splits of the pooled
    items; a re-split whose statistic is not finite counts as T_b >= T. NaN where T itself is not finite."""
    pooled = np.concatenate([base, head])
    observed = {m: abs(h0[m] - b0[m]) for m in TRACE_METRICS}
    exceed = dict.fromkeys(TRACE_METRICS, 0)
    for _ in range(replicates):
        perm = rng.permutation(pooled)
        bs, hs = _stats(perm[: base.size], min_tail), _stats(perm[base.size :], min_tail)
        for m in TRACE_METRICS:
            t = abs(hs[m] - bs[m])
            # a relative tolerance for ties: identical inputs give T = 0 = T_b up to rounding
            exceed[m] += int(not math.isfinite(t) or t >= observed[m] - 1e-12 * max(1.0, observed[m]))
    return {m: (1 + exceed[m]) / (replicates + 1) if math.isfinite(observed[m]) else math.nan for m in TRACE_METRICS}


def _moved(base: float | None, head: float | None, change: float | None, tol: float) -> bool:
    """A gated change: beyond the tolerance, or present on one side only. Missing on both sides (two
    identical degenerate inputs, e.g. all-equal traces with no α) is no change, as the docstring says."""
    if change is None:
        return not (base is None and head is None)
    return abs(change) > tol


def _names(subjects: Mapping[str, Any], shown: int = 3) -> str:
    names = list(subjects)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(repr(n) for n in names[:shown]) + more


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def saved_result(path: str) -> dict[str, Any] | None:
    """The document of a saved ``ctwm ... --json`` result, or None when ``path`` is a trace: a ``.json`` file whose
    envelope names the tool and a command (anything else is read as a trace, whose reader says what is wrong)."""
    p = Path(path)
    if p.suffix != ".json" or not p.is_file():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None
    if not (isinstance(doc, dict) and doc.get("tool") == "ctwm" and "command" in doc):
        return None
    check_saved_result(doc, path)
    return upgrade(doc)


def parse_tolerances(specs: Mapping[str, float] | Sequence[str] | None) -> dict[str, float]:
    """``METRIC=VALUE`` strings (``--tol``) or a mapping; the metric names are checked by the diff."""
    if isinstance(specs, Mapping):
        return {str(k): float(v) for k, v in specs.items()}
    out: dict[str, float] = {}
    for spec in specs or ():
        name, sep, raw = str(spec).partition("=")
        try:
            value = float(raw)
        except ValueError:
            value = None
        if not sep or value is None or not math.isfinite(value):
            raise UsageError(f"--tol expects METRIC=VALUE with a finite VALUE (e.g. gini=0.02), got {spec!r}",
                             params=("tol",))
        out[name.strip()] = value
    return out
