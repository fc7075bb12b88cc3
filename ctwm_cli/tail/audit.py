"""The finite-regime Clauset audit (paper Definitions 3.1–3.5, Assumption 3.3)."""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from .._version import __version__
from ..diagnostics import Concentration, concentration
from ..errors import InputError, UsageError
from ..progress import ProgressCallback
from ..results import ToDict, result
from . import families as fam
from .bootstrap import GofResult, gof_result, gof_tasks, replicate_ks
from .calibrate import Calibration
from .calibrate import calibrate as run_calibration
from .compare import Comparison, nested_power_law, vuong
from .families import TailFit
from .powerlaw import Histogram, PowerLawFit, fit_power_law
from ..parallel import run_tasks, single_blas_thread
from .verdict import INCONCLUSIVE, Verdict, paper_rule

FAMILIES = fam.ALTERNATIVES


@result
class AuditSettings(ToDict):
    discrete: bool
    xmin: float | None
    bootstrap: int
    min_tail: int
    p_star: float
    z_star: float
    seed: int


@result
class AuditResult(ToDict):
    """Everything the audit found: fits, p_gof, likelihood-ratio tests and the verdict."""

    label: str | None
    n: int
    distinct_values: int
    settings: AuditSettings
    power_law: PowerLawFit | None
    gof: GofResult | None
    alternatives: dict[str, TailFit]
    comparisons: list[Comparison]
    verdict: Verdict
    power_law_pass: bool | None
    concentration: Concentration | None
    calibration: Calibration | None = None
    version: str = __version__

    # Shortcuts for the paper's Definition 3.2 tuple (x_min, α, p_gof, Λ, σ).
    @property
    def tpl_vs_lognormal(self) -> Comparison | None:
        return next((c for c in self.comparisons if (c.first, c.second) == fam.RULE_PAIR), None)

    @property
    def p_gof(self) -> float:
        return self.gof.pvalue if self.gof is not None else math.nan

    def summary_row(self) -> dict[str, Any]:
        """One flat row for tables, CSV and JSON lines."""
        pl, c = self.power_law, self.tpl_vs_lognormal
        row = {
            "trace": self.label,
            "n": self.n,
            "distinct": self.distinct_values,
            "xmin": pl.xmin if pl else None,
            "n_tail": pl.n_tail if pl else None,
            "alpha": pl.alpha if pl else None,
            "alpha_se": pl.alpha_se if pl else None,
            "p_gof": self.p_gof,
            "Lambda": c.statistic if c else None,
            "sigma": c.sigma if c else None,
            "z": c.z if c else None,
            "verdict": self.verdict.verdict,
            "reason": self.verdict.reason,
            "power_law_pass": self.power_law_pass,
        }
        if self.calibration is not None:
            row["calibrated_verdict"] = self.calibration.verdict.verdict
        return row


def validate(*, bootstrap: int = 0, min_tail: int = 100, p_star: float = 0.10, z_star: float = 1.96,
             jobs: int | None = None, xmin: float | None = None, discrete: bool = True, seed: int | None = None,
             calibrate: int = 0, level: float = 0.05) -> None:
    """Check the audit's parameters (the CLI calls this before reading any trace)."""
    _validate(bootstrap, min_tail, p_star, z_star, jobs, xmin)
    if discrete and xmin is not None and xmin != math.floor(xmin):
        raise UsageError(f"xmin must be an integer for a discrete fit, got {xmin} "
                         "(set discrete=False, a continuous fit, for real-valued cutoffs)")
    if seed is not None and seed < 0:
        raise UsageError(f"seed must be >= 0, got {seed}")
    if calibrate < 0:
        raise UsageError(f"calibrate must be >= 0, got {calibrate}")
    if not 0 < level < 0.5:
        raise UsageError(f"calibration level must be in (0, 0.5), got {level}")


def _validate(bootstrap: int, min_tail: int, p_star: float, z_star: float, jobs: int | None,
              xmin: float | None) -> None:
    if bootstrap < 0:
        raise UsageError(f"bootstrap must be >= 0, got {bootstrap}")
    if min_tail < 1:
        raise UsageError(f"min_tail must be >= 1, got {min_tail}")
    if not 0 < p_star < 1:
        raise UsageError(f"p_star must be in (0, 1), got {p_star}")
    if not z_star > 0:
        raise UsageError(f"z_star must be > 0, got {z_star}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"jobs must be >= 1, got {jobs}")
    if xmin is not None and not xmin > 0:
        raise UsageError(f"xmin must be > 0, got {xmin}")


def _as_values(counts: Any, discrete: bool) -> np.ndarray:
    raw = getattr(counts, "counts", counts)
    x = np.asarray(raw, dtype=np.float64).ravel()
    if x.size == 0:
        raise InputError("no counts to audit (empty trace or no events of the chosen kind)")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise InputError("counts must be finite and positive")
    if discrete and np.any(x != np.floor(x)):
        raise UsageError("discrete=True needs integer counts; set discrete=False (continuous) for real-valued data")
    return x


def new_seed() -> int:
    """A fresh seed (printed and stored, so the run can be repeated)."""
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])


def derive_seed(seed: int, label: str | None) -> int:
    """The seed of one group of a multi-trace or grouped audit: a function of the top-level seed and
    the group's label only, so a group's result does not depend on which other groups are present."""
    key = zlib.crc32((label or "").encode("utf-8"))
    return int(np.random.SeedSequence([seed, key]).generate_state(1, dtype=np.uint32)[0])


def audit(
    counts: Any,
    *,
    discrete: bool = True,
    xmin: float | None = None,
    bootstrap: int = 1000,
    seed: int | None = None,
    jobs: int | None = None,
    min_tail: int = 100,
    p_star: float = 0.10,
    z_star: float = 1.96,
    diagnostics: bool = True,
    calibrate: int = 0,
    level: float = 0.05,
    label: str | None = None,
    progress: ProgressCallback | None = None,
) -> AuditResult:
    """Audit per-item counts (an array or :class:`~ctwm_cli.traces.ItemCounts`).

    Fits the power-law tail (x_min by KS minimisation, exact discrete MLE), bootstraps p_gof,
    fits the alternatives on the same tail, runs the likelihood-ratio tests and applies the
    paper's rule. ``seed=None`` draws a seed, stored in ``settings.seed``.
    """
    return audit_many(
        [counts], labels=[label], discrete=discrete, xmin=xmin, bootstrap=bootstrap, seed=seed, jobs=jobs,
        min_tail=min_tail, p_star=p_star, z_star=z_star, diagnostics=diagnostics, calibrate=calibrate,
        level=level, progress=progress,
    )[0]


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
    diagnostics: bool = True,
    calibrate: int = 0,
    level: float = 0.05,
    progress: ProgressCallback | None = None,
    calibration_progress: ProgressCallback | None = None,
) -> list[AuditResult]:
    """Audit several count vectors (traces, or groups of one trace). The fits run in this process;
    the bootstrap replicates of every audit share one pool of ``jobs`` worker processes.

    With one vector its seed is ``seed`` itself; with several, each gets
    :func:`derive_seed` (seed, label), recorded in its ``settings.seed``. ``calibrate=R`` adds the
    parametric-bootstrap calibration of the verdict (:mod:`ctwm_cli.tail.calibrate`) at ``level``.
    """
    validate(bootstrap=bootstrap, min_tail=min_tail, p_star=p_star, z_star=z_star, jobs=jobs, xmin=xmin,
             discrete=discrete, seed=seed, calibrate=calibrate, level=level)
    labels = list(labels) if labels is not None else [None] * len(counts_list)
    seed = new_seed() if seed is None else int(seed)
    with single_blas_thread():
        prepared = [_prepare(counts, label, i, len(counts_list), seed, discrete, xmin, bootstrap, min_tail, p_star,
                             z_star, diagnostics)
                    for i, (counts, label) in enumerate(zip(counts_list, labels, strict=True))]
    return _run(prepared, jobs=jobs, calibrate=calibrate, level=level, progress=progress,
                calibration_progress=calibration_progress)


@result
class _Prepared:
    """One count vector fitted, before its bootstrap."""

    label: str | None
    settings: AuditSettings
    concentration: Concentration | None
    hist: Histogram
    power_law: PowerLawFit | None
    fits: dict[str, TailFit]
    comparisons: list[Comparison]


def _prepare(counts, label, index, n_audits, seed, discrete, xmin, bootstrap, min_tail, p_star, z_star,
             diagnostics) -> _Prepared:
    """Fit one count vector (everything but the bootstrap)."""
    x = _as_values(counts, discrete)
    if label is None and getattr(counts, "source", None) is not None:
        group = getattr(counts, "group", None)
        label = counts.source if group is None else f"{counts.source}[{group}]"
    # unlabelled vectors get their position as label, so their random streams differ
    own_seed = seed if n_audits == 1 else derive_seed(seed, label if label is not None else f"#{index}")
    settings = AuditSettings(discrete=discrete, xmin=xmin, bootstrap=bootstrap, min_tail=min_tail,
                             p_star=p_star, z_star=z_star, seed=own_seed)
    hist = Histogram.from_sample(x)
    pl = fit_power_law(hist, discrete=discrete, xmin=xmin, min_tail=min_tail)
    fits, comparisons = fit_alternatives(hist, pl, z_star=z_star) if pl is not None else ({}, [])
    return _Prepared(label=label, settings=settings, concentration=concentration(x) if diagnostics else None,
                     hist=hist, power_law=pl, fits=fits, comparisons=comparisons)


def _run(prepared: list[_Prepared], *, jobs, calibrate, level, progress, calibration_progress) -> list[AuditResult]:
    # every bootstrap's tasks in one pool
    tasks, owner = [], []
    for k, p in enumerate(prepared):
        s = p.settings
        if p.power_law is None or s.bootstrap == 0:
            continue
        t = gof_tasks(p.hist, p.power_law, replicates=s.bootstrap, seed=np.random.SeedSequence(s.seed),
                      min_tail=s.min_tail, xmin_fixed=s.xmin is not None)
        tasks += t
        owner += [k] * len(t)
    chunks = run_tasks(replicate_ks, tasks, jobs=jobs, sizes=[len(t.seeds) for t in tasks], progress=progress)
    results = []
    for k, p in enumerate(prepared):
        mine = [c for c, o in zip(chunks, owner, strict=True) if o == k]
        gof = gof_result(p.power_law, mine, p.settings.bootstrap) if mine else None
        results.append(_assemble(p, gof))
    if calibrate:
        results = [
            dataclasses.replace(r, calibration=run_calibration(p.hist, r, replicates=calibrate, level=level,
                                                               jobs=jobs, progress=calibration_progress))
            for r, p in zip(results, prepared, strict=True)
        ]
    return results


def _assemble(p: _Prepared, gof: GofResult | None) -> AuditResult:
    s, hist, pl = p.settings, p.hist, p.power_law
    common = dict(label=p.label, n=hist.n, distinct_values=int(hist.values.size), settings=s,
                  concentration=p.concentration)
    if pl is None:
        if hist.values.size < 2:
            verdict = Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                              reason="all counts are equal: no tail to fit")
        elif s.xmin is not None:
            verdict = Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                              reason=f"no observations, or only one distinct value, at or above --xmin {s.xmin:g}")
        else:
            verdict = paper_rule(n_tail=None, lam=math.nan, sigma=math.nan, p_gof=math.nan,
                                 min_tail=s.min_tail, p_star=s.p_star, z_star=s.z_star)
        return AuditResult(**common, power_law=None, gof=None, alternatives={}, comparisons=[], verdict=verdict,
                           power_law_pass=None)
    p_gof = gof.pvalue if gof is not None else math.nan
    main = p.comparisons[0]
    verdict = paper_rule(n_tail=pl.n_tail, lam=main.statistic, sigma=main.sigma, p_gof=p_gof,
                         min_tail=s.min_tail, p_star=s.p_star, z_star=s.z_star)
    nested = next(c for c in p.comparisons if c.nested)
    pl_pass = None if gof is None else bool(p_gof >= s.p_star and nested.preferred is None)
    return AuditResult(**common, power_law=pl, gof=gof, alternatives=p.fits, comparisons=p.comparisons,
                       verdict=verdict, power_law_pass=pl_pass)


def fit_alternatives(hist: Histogram, pl: PowerLawFit, *, z_star: float) -> tuple[dict[str, TailFit], list[Comparison]]:
    """Fit every alternative family of the registry on the power law's tail and run the likelihood-ratio
    tests it lists. The first comparison returned is TPL vs log-normal (the rule's Λ, σ)."""
    with single_blas_thread():  # 2-parameter optimisers: BLAS threads only spin (see ctwm_cli.parallel)
        tail = fam.Tail.of(hist, pl.xmin, pl.discrete)
        fits = fam.fit_all(tail, pl)
        return fits, compare_fits(tail, pl, fits, z_star=z_star)


def compare_fits(tail: fam.Tail, pl: PowerLawFit, fits: dict[str, TailFit], *, z_star: float) -> list[Comparison]:
    """The registry's Vuong tests (rule pair first) and its nested tests, on one tail."""
    every: dict[str, TailFit | PowerLawFit] = {"power_law": pl, **fits}
    logs = {name: fam.logpmf(f, tail.values) for name, f in every.items()}
    comparisons = [vuong(a, b, logs[a] - logs[b], tail.counts, z_star) for a, b in fam.vuong_pairs()]
    level = float(2 * stats.norm.sf(z_star))
    comparisons += [nested_power_law(every[inner].loglik, every[outer].loglik, level)
                    for outer, inner in fam.nested_pairs()]
    return comparisons
