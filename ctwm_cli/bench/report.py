"""``ctwm bench report``: paired CTWM-vs-Graph-Memory comparisons collected into one table (paper Table 5).

Sources, each giving one or more rows (configuration, token reduction with its CI, a parity metric):

* **Synthetic Graph World** replications, run here with :func:`ctwm_cli.replay.replay_compare`
  (``graph`` and ``ctwm`` on the same episodes; one replication per seed, labelled A, B, C, ...):
  reduction = −relative change of prompt tokens per step, with its block-bootstrap CI; parity:
  transition coverage (ctwm − graph).
* JSON documents saved from ``ctwm bench longmemeval --json`` (one row per CTWM arm: reduction
  with the paired bootstrap CI; parity: accuracy when measured, else ``session_all`` evidence
  recall), ``ctwm bench textworld --json`` (parity: successes) and ``ctwm replay compare --json``
  (every ``ctwm`` arm against ``graph``).

Token reduction is always 1 − tokens(CTWM) / tokens(Graph Memory) over the paired units (steps or
questions); a negative value means CTWM spent more. A saving is only worth what it costs, so every row
also carries the **quality difference** CTWM − Graph with its interval, from the same paired
comparison: tail error (its regret in closed loop) for the synthetic and replay rows,
the parity metric (accuracy, else session recall) for LongMemEval; text games have none.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.checks import check_range
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..common.upgrade import upgrade
from ..memory.tokens import USER_MESSAGE, WHOLE_REQUEST
from ..replay import ReplayConfig, replay_compare
from ..runtime.progress import ProgressCallback
from ..stats.intervals import ConfidenceInterval

#: the quality comparison of a replay row: tail error, or (closed loop) its regret (older runs: against counts)
QUALITY_METRICS = ("tail_error", "tail_error_oracle_regret", "tail_error_regret")

@result
class ReportRow(ToDict):
    configuration: str
    source: str
    units: str  # what is paired: steps or questions
    n: int
    baseline: str
    treatment: str
    baseline_tokens: float | None
    treatment_tokens: float | None
    reduction: float | None
    reduction_confidence_interval: ConfidenceInterval | None  # None unless formed
    parity_metric: str | None
    baseline_parity: float | None
    treatment_parity: float | None
    parity_delta: float | None
    quality_metric: str | None = None  # the quality difference beside the reduction (ctwm - graph)
    quality_delta: float | None = None
    quality_confidence_interval: ConfidenceInterval | None = None
    quality_mde: float | None = None  # its minimum detectable effect at 80% power
    quality_interval_status: str | None = None  # "formed", or why the quality difference has no interval
    # what the token figures count: "whole_request" (replay: system + user + chat template) or "user_message"
    # (bench longmemeval/textworld: the prompt alone); rows that count differently are not comparable
    tokens_counted: str | None = None


#: the flat interval keys of results saved before issue 24 named them ``confidence_interval: {low, high, level}``
OLD_INTERVAL_KEYS = ("ci_low", "relative_ci_low")


def _interval(d: dict[str, Any], key: str, source: str, *, negate: bool = False) -> ConfidenceInterval | None:
    """The saved ``{low, high, level}`` under ``key`` (null: not formed); negated for a reduction."""
    value = d.get(key)
    if value is None:
        if any(k in d for k in OLD_INTERVAL_KEYS):
            raise InputError(f"{source}: saved by an older ctwm (flat ci_low/ci_high intervals); run the command "
                             "again to save it with confidence_interval: {low, high, level}")
        return None
    try:
        ci = ConfidenceInterval(**{k: float(value[k]) for k in ("low", "high", "level")})
    except (TypeError, KeyError, ValueError):
        raise InputError(f"{source}: {key} is not an interval {{low, high, level}} of numbers") from None
    return ci.negated() if negate else ci


def _quality(d: dict[str, Any], source: str) -> dict[str, Any]:
    if not d:
        return {}
    return {"quality_metric": d.get("metric"), "quality_delta": d.get("delta"),
            "quality_confidence_interval": _interval(d, "confidence_interval", source), "quality_mde": d.get("mde"),
            "quality_interval_status": d.get("interval_status")}


@result
class BenchReport(ToDict):
    results: tuple[ReportRow, ...]
    notes: tuple[str, ...]


def _neg(v: float | None) -> float | None:
    return None if v is None else -v


#: ``tokens_counted`` as results saved before issue 45 wrote it
OLD_TOKENS_COUNTED = {"request": WHOLE_REQUEST, "user": USER_MESSAGE}


def _counted(doc: dict[str, Any], default: str) -> str:
    """What a saved result's token figures count (replay: from its arms; older results: ``default``)."""
    got = doc.get("tokens_counted") or next((a.get("tokens_counted") for a in doc.get("arms", [])
                                              if isinstance(a, dict) and a.get("tokens_counted")), None)
    return OLD_TOKENS_COUNTED.get(got, got) if got else default


def _replay_rows(doc: dict[str, Any], label: str, source: str) -> list[ReportRow]:
    rows = []
    steps = sum(a.get("steps", 0) for a in doc.get("arms", []) if a.get("memory") == "graph")
    comps = doc.get("comparisons", [])
    for c in comps:
        if c.get("metric") != "tokens_mean" or not str(c.get("treatment", "")).startswith("ctwm") \
                or not str(c.get("baseline", "")).startswith("graph"):
            continue
        cov = next((d for d in comps if d.get("metric") == "transition_coverage"
                    and d.get("treatment") == c["treatment"]
                    and d.get("baseline") == c["baseline"]), {})
        quality = next((d for d in comps if d.get("metric") in QUALITY_METRICS
                        and d.get("treatment") == c["treatment"] and d.get("baseline") == c["baseline"]), {})
        rows.append(ReportRow(
            configuration=label, source=source, units="steps", n=int(steps), baseline=c["baseline"],
            treatment=c["treatment"], baseline_tokens=c.get("baseline_value"),
            treatment_tokens=c.get("treatment_value"),
            reduction=_neg(c.get("relative")),
            reduction_confidence_interval=_interval(c, "relative_confidence_interval", source, negate=True),
            parity_metric="transition coverage",
            baseline_parity=cov.get("baseline_value"), treatment_parity=cov.get("treatment_value"),
            parity_delta=cov.get("delta"), tokens_counted=_counted(doc, WHOLE_REQUEST), **_quality(quality, source)))
    return rows


def _lme_rows(doc: dict[str, Any], label: str, source: str) -> list[ReportRow]:
    rows = []
    measured = bool(doc.get("accuracy_measured"))
    parity = "accuracy" if measured else "session_all"
    for c in doc.get("comparisons", []):
        if c.get("metric") != "tokens" or c.get("group") != "all":
            continue
        p = next((d for d in doc["comparisons"] if d.get("metric") == parity and d.get("group") == "all"
                  and d.get("treatment") == c["treatment"]), {})
        name = label if c["treatment"] == "ctwm" else f"{label} ({c['treatment']})"
        rows.append(ReportRow(
            configuration=name, source=source, units="questions", n=int(c.get("units", 0)),
            baseline=c["baseline"], treatment=c["treatment"], baseline_tokens=c.get("baseline_value"),
            treatment_tokens=c.get("treatment_value"), reduction=_neg(c.get("relative")),
            reduction_confidence_interval=_interval(c, "relative_confidence_interval", source, negate=True),
            parity_metric=parity if measured else "session recall (all)",
            baseline_parity=p.get("baseline_value"), treatment_parity=p.get("treatment_value"),
            parity_delta=p.get("delta"), tokens_counted=_counted(doc, USER_MESSAGE), **_quality(p, source)))
    return rows


def _tw_rows(doc: dict[str, Any], label: str, source: str) -> list[ReportRow]:
    n_games = len(doc.get("games", []))
    return [ReportRow(
        configuration=label, source=source, units="steps", n=int(doc.get("steps", 0)), baseline="graph",
        treatment="ctwm", baseline_tokens=doc.get("graph_tokens_mean"), treatment_tokens=doc.get("ctwm_tokens_mean"),
        reduction=doc.get("reduction"),
        reduction_confidence_interval=_interval(doc, "reduction_confidence_interval", source),
        parity_metric=f"success (of {n_games} games)", baseline_parity=doc.get("success_graph"),
        treatment_parity=doc.get("success_ctwm"),
        parity_delta=None if doc.get("success_graph") is None else doc["success_ctwm"] - doc["success_graph"],
        tokens_counted=_counted(doc, USER_MESSAGE))]


def rows_from_document(doc: Any, source: str, label: str | None = None) -> list[ReportRow]:
    """Report rows from one saved JSON document (see the module docstring)."""
    if not isinstance(doc, dict) or "command" not in doc:
        raise InputError(f"{source}: not a ctwm JSON result (no 'command' field); "
                         "save one with the command's JSON output")
    cmd = doc["command"]
    if cmd == "bench longmemeval":
        return _lme_rows(doc, label or "LongMemEval", source)
    if cmd == "bench textworld":
        return _tw_rows(doc, label or doc.get("label") or "TextWorld", source)
    if cmd == "replay compare":
        return _replay_rows(doc, label or "Synthetic graph", source)
    raise InputError(f"{source}: cannot report a {cmd!r} result (expected bench longmemeval, bench textworld or "
                     "replay compare)")


def _label(spec: str) -> tuple[str, str | None]:
    """``LABEL=FILE`` or ``FILE``."""
    if "=" in spec and not Path(spec).exists():
        label, _, path = spec.partition("=")
        return path, label or None
    return spec, None


def bench_report(inputs: Sequence[str] = (), *, synthetic: int = 0, synthetic_size: int = 100,
                 synthetic_steps: int = 1000, synthetic_family: str = "scale-free", budget: int = 512,
                 bootstrap: int = 1000, seed: int | None = None,
                 progress: ProgressCallback | None = None) -> BenchReport:
    """Collect paired comparisons: ``synthetic`` Synthetic Graph World replications run here (seeds
    ``seed``, ``seed + 1``, ...) plus the rows of every saved JSON in ``inputs`` (``FILE`` or
    ``LABEL=FILE``)."""
    check_range("synthetic", synthetic, lo=0)
    check_range("synthetic", synthetic, hi=len(string.ascii_uppercase))
    if not inputs and not synthetic:
        raise UsageError("nothing to report: give saved JSON results and/or synthetic N", params=("synthetic",))
    rows: list[ReportRow] = []
    base = 0 if seed is None else seed
    for i in range(synthetic):
        cfg = ReplayConfig(family=synthetic_family, size=synthetic_size, steps=synthetic_steps, seeds=(base + i,),
                           budget=budget, bootstrap=bootstrap)
        res = replay_compare(cfg, memories=("graph", "ctwm"), baseline="graph", seed=base + i, match_tokens="graph")
        label = f"Synthetic graph {string.ascii_uppercase[i]} (ctwm at graph's tokens)"
        rows += _replay_rows(res.to_dict(), label,
                             f"replay compare --family {synthetic_family} --size {synthetic_size} "
                             f"--steps {synthetic_steps} --budget {budget} --seed {base + i} --episodes 1 "
                             "--memory graph,ctwm --match-tokens graph")
        if progress is not None:
            progress(i + 1, synthetic + len(inputs))
    for j, spec in enumerate(inputs):
        path, label = _label(spec)
        try:
            doc = upgrade(json.loads(Path(path).read_text(encoding="utf-8")))  # version 2: in version 3's names
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
        except RecursionError:
            raise InputError(f"{path}: JSON nested too deeply to be a bench result") from None
        got = rows_from_document(doc, path, label)
        if not got:
            raise InputError(f"{path}: holds no CTWM-vs-graph comparison (run it with both graph and ctwm)")
        rows += got
        if progress is not None:
            progress(synthetic + j + 1, synthetic + len(inputs))
    notes = ("reduction = 1 - tokens(CTWM) / tokens(Graph Memory) over paired units; negative: CTWM spent more",
             "synthetic rows: CTWM under the matched budget rule (--match-tokens graph: at every step its budget is "
             "what Graph Memory spent, or its minimal prompt if larger), so they compare at equal cost",
             "CI: the interval of each source (synthetic: its replay's resampling, episodes or blocks of steps; "
             "LongMemEval: paired bootstrap over questions; text games: paired bootstrap over games)",
             "tokens counted: whole request (system prompt + user message + chat template) or user message (the "
             "prompt alone); rows that count differently are not comparable")
    return BenchReport(results=tuple(rows), notes=notes)
