"""The finite-regime Clauset audit (paper Definitions 3.1–3.5, Assumption 3.3)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.errors import InputError, UsageError
from ..common.results import result
from ..common.seeds import new_seed as new_seed  # re-exported (the notebook API, ctwm diff)
from ..runtime.parallel import INLINE_BUDGET, run_tasks, single_blas_thread
from ..runtime.progress import ProgressCallback, group_counter
from . import families as fam
from . import special
from .bootstrap import GofResult, gof_result, gof_tasks
from .calibrate import calibrate as run_calibration
from .compare import Comparison, calibrated_nested
from .crosscheck import cross_check as run_cross_check
from .families import TailFit
from .fitcheck import check_result, check_tasks, checkable, run_replicates
from .kernels import INTERPRETED_MAX_DISTINCT, interpreted
from .matrix import fit_alternatives, rival_z
from .power import power_analysis
from .powerlaw import Histogram, PowerLawFit, fit_power_law
from .settings import FIT_LEVEL, SCAN_FLOOR, AuditSettings
from .truncated import fit_doubly_truncated
from .uncertainty import replicate_fits, summarise, uncertainty_tasks
from .verdict import INCONCLUSIVE, Verdict, fit_checked, paper_rule
from .audit_result import AuditResult as AuditResult  # re-exported: the audit's result type

FAMILIES = fam.ALTERNATIVES
def as_values(counts: Any, discrete: bool) -> np.ndarray:
    raw = getattr(counts, "counts", counts)
    x = np.asarray(raw, dtype=np.float64).ravel()
    if x.size == 0:
        raise InputError("no counts to audit (empty trace or no events of the chosen kind)")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise InputError("counts must be finite and positive")
    if discrete and np.any(x != np.floor(x)):
        raise UsageError("discrete=True needs integer counts; set discrete=False (a continuous fit) "
                         "for real-valued data", params=("discrete",))
    return x


def derive_seed(seed: int, label: str | None) -> int:
    """The seed of one group of a multi-trace or grouped audit: a function of the top-level seed and
    the group's label only, so a group's result does not depend on which other groups are present."""
    key = zlib.crc32((label or "").encode("utf-8"))
    return int(np.random.SeedSequence([seed, key]).generate_state(1, dtype=np.uint32)[0])


def audit(counts: Any, *, label: str | None = None, progress: ProgressCallback | None = None,
          **options: Any) -> AuditResult:
    """Audit per-item counts (an array or :class:`~ctwm_cli.traces.ItemCounts`).

    Fits the power-law tail (x_min by KS minimisation, exact discrete MLE), bootstraps p_gof,
    fits the alternatives on the same tail, runs the likelihood-ratio tests and applies the
    paper's rule. ``seed=None`` draws a seed, stored in ``settings.seed``. ``options`` are those of
    :func:`audit_many`.
    """
    return audit_many([counts], labels=[label], progress=progress, **options)[0]


#: the keywords of :func:`audit_many` that :class:`AuditSettings` holds (``settings=`` excludes them)
_SETTINGS_OPTIONS = ("discrete", "xmin", "bootstrap", "seed", "min_tail", "p_star", "z_star", "scan_floor",
                     "xmin_range", "uncertainty", "cross_check", "power", "xmax", "fit_check", "fit_level",
                     "check_all_families")


def audit_many(
    counts_list: Sequence[Any],
    *,
    labels: Sequence[str | None] | None = None,
    discrete: bool = True,
    xmin: float | None = None,
    bootstrap: int = 1000,
    seed: int | None = None,
    jobs: int | None = None,
    min_tail: int = 100,
    p_star: float = 0.10,
    z_star: float = 1.96,
    calibrate: int = 0,
    level: float = 0.05,
    scan_floor: int = SCAN_FLOOR,
    xmin_range: tuple[float, float] | None = None,
    uncertainty: int = 0,
    cross_check: str | None = None,
    power: int = 0,
    xmax: float | None = None,
    fit_check: bool = True,
    fit_level: float = FIT_LEVEL,
    check_all_families: bool = False,
    settings: AuditSettings | None = None,
    progress: ProgressCallback | None = None,
    calibration_progress: ProgressCallback | None = None,
) -> list[AuditResult]:
    """Audit several count vectors (traces, or groups of one trace). The fits run in this process;
    the bootstrap replicates of every audit share one pool of ``jobs`` worker processes.

    With one vector its seed is ``seed`` itself; with several, each gets
    :func:`derive_seed` (seed, label), recorded in its ``settings.seed``. ``calibrate=R`` adds the
    parametric-bootstrap calibration of the verdict (:mod:`ctwm_cli.tail.calibrate`) at ``level``.
    ``scan_floor``: the x_min scan considers cutoffs leaving at least this many points (Assumption 3.3's
    ``min_tail`` is checked on the result, not used to hide a shorter KS-optimal tail);
    ``xmin_range`` (lo, hi): only candidates lo <= x_min <= hi. ``uncertainty=B``: standard errors and
    percentile intervals of x_min, α and n_tail from B nonparametric bootstrap re-fits
    (:mod:`ctwm_cli.tail.uncertainty`). ``cross_check="powerlaw"``: the same data through the ``powerlaw``
    package, every disagreement flagged with its cause (:mod:`ctwm_cli.tail.crosscheck`). ``power=R``: for an
    inconclusive verdict, the power of the rule(s) at 1x-16x the observed size from R replicates per
    cell and family (:mod:`ctwm_cli.tail.power`). ``xmax``: fit a doubly truncated power law on
    [x_min, x_max] only (:mod:`ctwm_cli.tail.truncated` says what it supports). The families a verdict can
    prefer (TPL, log-normal) get their own bootstrap goodness of fit on the tail (``bootstrap`` replicates
    each, :mod:`ctwm_cli.tail.fitcheck`), every alternative family with ``check_all_families`` (each costs
    2-5 ms of CPU per replicate, measured, about what a p_gof replicate costs);
    ``fit_check`` (default): a decisive verdict also needs the family it prefers to pass that check at
    ``fit_level``; ``fit_check=False`` is Definition 3.4 as published, and the checks' bootstraps, which no
    decision then reads, are not run (``fit_checks`` None; ``check_all_families`` still runs them all).
    ``settings``: an :meth:`AuditSettings.checked` result, used as is (no option is checked twice); the
    options it holds are then not given as keywords.
    """
    options = (discrete, xmin, bootstrap, seed, min_tail, p_star, z_star, scan_floor, xmin_range, uncertainty,
               cross_check, power, xmax, fit_check, fit_level, check_all_families)
    if settings is None:
        settings = AuditSettings.checked(
            discrete=discrete, xmin=xmin, bootstrap=bootstrap, min_tail=min_tail, p_star=p_star, z_star=z_star,
            seed=seed, scan_floor=scan_floor, xmin_range=xmin_range, uncertainty=uncertainty, cross_check=cross_check,
            power=power, xmax=xmax, fit_check=fit_check, fit_level=fit_level, check_all=check_all_families,
            calibrate=calibrate, level=level, jobs=jobs)
    elif options != _DEFAULT_OPTIONS:
        raise UsageError("give the audit options either as settings or as keywords, not both", params=("settings",))
    labels = list(labels) if labels is not None else [None] * len(counts_list)
    base = settings
    # nothing replicated: a small histogram is fitted without loading numba (tail/kernels.py says why)
    lean = base.bootstrap == 0 and calibrate == 0 and base.uncertainty == 0 and base.power == 0
    with single_blas_thread():
        prepared = [_prepare(counts, label, i, len(counts_list), base, lean)
                    for i, (counts, label) in enumerate(zip(counts_list, labels, strict=True))]
    return _run(prepared, jobs=jobs, calibrate=calibrate, level=level, progress=progress,
                calibration_progress=calibration_progress)


_DEFAULT_OPTIONS = tuple(inspect.signature(audit_many).parameters[n].default for n in _SETTINGS_OPTIONS)


@result
class _Prepared:
    """One count vector fitted, before its bootstrap."""

    source: str | None  # the trace's name, or the caller's label
    group: str | None  # the group of the trace (None: ungrouped, or named by the caller's label)
    settings: AuditSettings
    hist: Histogram
    power_law: PowerLawFit | None
    constrained: PowerLawFit | None
    fits: dict[str, TailFit]
    comparisons: list[Comparison]
    calibrate: bool = False  # the calibration will re-decide on simulated data (it reads the fit checks)


def _prepare(counts, label, index, n_audits, base: AuditSettings, lean: bool = False) -> _Prepared:
    """Fit one count vector (everything but the bootstrap)."""
    x = as_values(counts, base.discrete)
    source, group = label, None
    if label is None and getattr(counts, "source", None) is not None:
        source, group = counts.source, getattr(counts, "group", None)
        group = None if group is None else str(group)
        label = source if group is None else f"{source}[{group}]"
    # unlabelled vectors get their position as label, so their random streams differ
    own_seed = base.seed if n_audits == 1 else derive_seed(base.seed, label if label is not None else f"#{index}")
    s = dataclasses.replace(base, seed=own_seed)
    hist = Histogram.from_sample(x)
    with interpreted(lean and hist.values.size <= INTERPRETED_MAX_DISTINCT):
        return _fit(hist, source, group, s)


def _fit(hist: Histogram, source: str | None, group: str | None, s: AuditSettings) -> _Prepared:
    fit = fit_power_law if s.xmax is None else functools.partial(fit_doubly_truncated, xmax=s.xmax)
    pl = fit(hist, discrete=s.discrete, xmin=s.xmin, min_tail=s.floor, xmin_range=s.xmin_range)
    constrained = None
    if pl is not None and s.xmin is None and pl.n_tail < s.min_tail:
        constrained = fit(hist, discrete=s.discrete, min_tail=s.min_tail, xmin_range=s.xmin_range)
    fits, comparisons = ({}, []) if pl is None or s.xmax is not None else fit_alternatives(hist, pl, z_star=s.z_star)
    return _Prepared(source=source, group=group, settings=s, hist=hist, power_law=pl, constrained=constrained,
                     fits=fits, comparisons=comparisons)


def _run(prepared: list[_Prepared], *, jobs, calibrate, level, progress, calibration_progress) -> list[AuditResult]:
    prepared = [dataclasses.replace(p, calibrate=calibrate > 0) for p in prepared]
    # every bootstrap's tasks in one pool: p_gof's (owner family None) and each family's fit check
    tasks, owner = [], []
    for k, p in enumerate(prepared):
        s = p.settings
        if p.power_law is None or s.bootstrap == 0 or s.xmax is not None:
            continue
        tpl = p.fits.get("truncated_power_law")
        t = gof_tasks(p.hist, p.power_law, replicates=s.bootstrap, seed=np.random.SeedSequence(s.seed),
                      min_tail=s.floor, xmin_fixed=s.xmin is not None, xmin_range=s.xmin_range,
                      tpl_start=tpl.params if tpl is not None else None)
        tasks += t
        owner += [(k, None)] * len(t)
        tail = fam.Tail.of(p.hist, p.power_law.xmin, p.power_law.discrete)
        for name, f in _checked(p):
            if checkable(f):
                t = check_tasks(tail, f, replicates=s.bootstrap, seed=s.seed)
                tasks += t
                owner += [(k, name)] * len(t)
    # one pool for every group's (replicate chunk) tasks; progress counts replicates, and groups as they finish
    chunks = run_tasks(run_replicates, tasks, jobs=jobs, sizes=[len(t.seeds) for t in tasks], progress=progress,
                       on_result=group_counter(progress, [k for k, _ in owner]), inline_budget=INLINE_BUDGET)
    results = []
    for k, p in enumerate(prepared):
        mine = [c for c, o in zip(chunks, owner, strict=True) if o == (k, None)]
        gof = gof_result(p.power_law, mine, p.settings.bootstrap, nested=True) if mine else None
        checks = None
        if gof is not None:
            tail = fam.Tail.of(p.hist, p.power_law.xmin, p.power_law.discrete)
            checks = {name: check_result(f, tail, [c for c, o in zip(chunks, owner, strict=True) if o == (k, name)],
                                         p.settings.bootstrap) for name, f in _checked(p) if checkable(f)}
            checks = checks if _checked(p) else None
        r = _assemble(p, gof, checks)
        skipped = _skip_checks(p) if gof is not None else None
        results.append(dataclasses.replace(r, fit_checks_skipped=skipped) if skipped else r)
    results = _with_uncertainty(prepared, results, jobs=jobs, progress=calibration_progress)
    results = [r if p.settings.cross_check is None else dataclasses.replace(
        r, cross_check=run_cross_check(np.repeat(p.hist.values, p.hist.counts), r, package=p.settings.cross_check))
        for r, p in zip(results, prepared, strict=True)]
    if calibrate:
        results = [_checked_calibration(
            dataclasses.replace(r, calibration=run_calibration(p.hist, r, replicates=calibrate, level=level,
                                                               jobs=jobs, progress=calibration_progress)))
            for r, p in zip(results, prepared, strict=True)]
    return [r if p.settings.power == 0 else dataclasses.replace(r, power=power_analysis(
        p.hist, r, replicates=p.settings.power, calibrated=calibrate > 0, level=level, jobs=jobs,
        progress=calibration_progress)) for r, p in zip(results, prepared, strict=True)]


def _checked(p: _Prepared) -> list[tuple[str, TailFit]]:
    """The fits whose own goodness of fit is bootstrapped: the rule pair's, or every one (``check_all``);
    none without the fit check (``fit_check=False``: no verdict reads them, and they cost about two thirds
    of the replicates' CPU, issue 48) unless ``check_all`` asks for them."""
    s = p.settings
    if _skip_checks(p) is not None:
        return []
    return [(n, f) for n, f in p.fits.items() if s.check_all or n in fam.RULE_PAIR]


def _skip_checks(p: _Prepared) -> str | None:
    """Why no decision can read the fit checks, or None. ``fit_check=False``: the rule does not use them. A tail
    shorter than ``min_tail``: Assumption 3.3 fails, so the verdict is inconclusive whatever any bootstrap says
    (issue 48: 40 small tenants spent two thirds of their CPU on checks nothing read) - unless the calibration
    or ``--power`` (which re-decide on other data and read the checks' nulls) or ``check_all`` asks for them."""
    s = p.settings
    if s.check_all:
        return None
    if not s.fit_check:
        return "--no-fit-check: the verdict does not use them"
    pl = p.power_law
    if (pl is not None and pl.n_tail < s.min_tail and s.power == 0 and not p.calibrate):
        return (f"tail of {pl.n_tail} points < {s.min_tail} (Assumption 3.3 fails): no verdict can read them "
                "(--check-all-families runs them)")
    return None


def _checked_calibration(r: AuditResult) -> AuditResult:
    """The calibrated verdict under the same fit check as the main one (when the audit uses it)."""
    c = r.calibration
    if c is None or not r.settings.fit_check:
        return r
    v = _apply_fit_check(c.verdict, r.fit_checks, r.settings, c.observed_z, r.comparisons, r.alternatives)
    return dataclasses.replace(r, calibration=dataclasses.replace(c, verdict=v))


def _apply_fit_check(v: Verdict, checks: dict[str, GofResult] | None, s: AuditSettings, z: float,
                     comparisons: list[Comparison], fits: dict[str, TailFit]) -> Verdict:
    mixture_z = {c.second: c.z for c in comparisons if c.first == "power_law_mixture"}
    return fit_checked(v, {name: g.pvalue for name, g in (checks or {}).items()}, s.fit_level, z,
                       mixture_z=mixture_z, z_star=s.z_star, rival_z=rival_z(fits, comparisons))


def _with_uncertainty(prepared: list[_Prepared], results: list[AuditResult], *, jobs, progress) -> list[AuditResult]:
    """Every audit's nonparametric bootstrap re-fits in one pool."""
    tasks, owner = [], []
    for k, p in enumerate(prepared):
        s = p.settings
        if p.power_law is None or s.uncertainty == 0:
            continue
        t = uncertainty_tasks(p.hist, replicates=s.uncertainty, seed=s.seed, discrete=s.discrete, floor=s.floor,
                              xmin=s.xmin, xmin_range=s.xmin_range)
        tasks += t
        owner += [k] * len(t)
    if not tasks:
        return results
    rows = run_tasks(replicate_fits, tasks, jobs=jobs, sizes=[len(t.seeds) for t in tasks], progress=progress,
                     inline_budget=INLINE_BUDGET)
    out = list(results)
    for k, p in enumerate(prepared):
        mine = [r for r, o in zip(rows, owner, strict=True) if o == k]
        if mine:
            s = p.settings
            u = summarise(p.power_law, mine, replicates=s.uncertainty, seed=s.seed, hist=p.hist, min_tail=s.min_tail,
                          fixed_xmin=s.xmin is not None)
            out[k] = dataclasses.replace(out[k], uncertainty=u)
    return out


def _no_fit_verdict(p: _Prepared) -> Verdict:
    s, hist = p.settings, p.hist
    if hist.values.size < 2:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                       reason="all counts are equal: no tail to fit")
    if s.xmin is not None:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                       reason=f"no observations, or only one distinct value, at or above xmin = {s.xmin:g}")
    return paper_rule(n_tail=None, lam=math.nan, sigma=math.nan, p_gof=math.nan,
                      min_tail=s.floor, p_star=s.p_star, z_star=s.z_star)


def _fit_problem(fits: dict[str, TailFit]) -> str | None:
    """Why Λ of the rule's pair would not compare two maxima, or None."""
    for name in fam.RULE_PAIR:
        f = fits.get(name)
        if f is None:
            continue
        if not math.isfinite(f.loglik):
            return f"the {name} fit failed on the tail (no finite likelihood)"
        if f.at_bound and f.limit is None:
            where = ", ".join(f"{k} = {v:g}" for k, v in f.at_bound.items())
            return f"the {name} fit stops at its bound {where}: Λ does not compare two maxima"
    return None


def _assemble(p: _Prepared, gof: GofResult | None, checks: dict[str, GofResult] | None = None) -> AuditResult:
    s, hist, pl = p.settings, p.hist, p.power_law
    common = dict(source=p.source, group=p.group, n_items=hist.n, distinct_values=int(hist.values.size), settings=s,
                  constrained=p.constrained)
    if pl is None:
        return AuditResult(**common, power_law=None, gof=None, alternatives={}, comparisons=[],
                           verdict=_no_fit_verdict(p), power_law_pass=None)
    if s.xmax is not None:
        above = int(hist.counts[hist.values > s.xmax].sum())
        reason = (f"x_max = {s.xmax:g}: only the doubly truncated power-law fit is supported (no alternatives, "
                  f"likelihood-ratio tests or p_gof); {above} observations above x_max are outside the model")
        if pl.n_tail < s.min_tail:
            reason = f"tail of {pl.n_tail} points < {s.min_tail} (Assumption 3.3 fails); " + reason
        verdict = Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=pl.n_tail >= s.min_tail,
                          decidable=False, reason=reason)
        return AuditResult(**common, power_law=pl, gof=None, alternatives={}, comparisons=[], verdict=verdict,
                           power_law_pass=None)
    p_gof = gof.pvalue if gof is not None else math.nan
    comparisons = list(p.comparisons)
    k = next(i for i, c in enumerate(comparisons) if c.nested)
    if gof is not None and gof.null_lr is not None:
        lr = 2.0 * max(comparisons[k].statistic, 0.0)
        comparisons[k] = calibrated_nested(comparisons[k], gof.nested_pvalue(lr), float(2 * special.ndtr(-s.z_star)))
    main = comparisons[0]
    distinct = int(np.sum(hist.values >= pl.xmin))
    verdict = paper_rule(n_tail=pl.n_tail, lam=main.statistic, sigma=main.sigma, p_gof=p_gof,
                         min_tail=s.min_tail, p_star=s.p_star, z_star=s.z_star, distinct=distinct,
                         fit_problem=_fit_problem(p.fits))
    if pl.n_tail < s.min_tail and s.xmin is None:
        verdict = dataclasses.replace(verdict, reason=verdict.reason + _constrained_note(p.constrained, s.min_tail))
    if s.fit_check:
        verdict = _apply_fit_check(verdict, checks, s, main.z, comparisons, p.fits)
    pl_pass = None if gof is None else bool(p_gof >= s.p_star and comparisons[k].preferred is None)
    return AuditResult(**common, power_law=pl, gof=gof, alternatives=p.fits, comparisons=comparisons,
                       verdict=verdict, power_law_pass=pl_pass, fit_checks=checks)


def _constrained_note(c: PowerLawFit | None, min_tail: int) -> str:
    if c is None:
        return f"; no x_min leaves {min_tail} observations with two distinct values in the tail"
    return (f"; the KS-optimal cutoff leaves too short a tail — the best cutoff leaving {min_tail} points "
            f"(constrained) is x_min = {c.xmin:g} with n_tail = {c.n_tail}, α = {c.alpha:.3f}, D = {c.ks:.4f}")
