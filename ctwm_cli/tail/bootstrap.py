"""Goodness of fit of the power-law tail: the semi-parametric bootstrap of Clauset et al. (2009, §4.1).

Each replicate: n_tail* ~ Binomial(n, n_tail/n); n - n_tail* values resampled (with replacement)
from the observations below x_min; n_tail* values drawn exactly from the fitted power law; then
the whole fit is redone — x_min re-scanned (or kept, when the user fixed it) and α re-estimated —
and its KS distance D_b recorded. p = (1 + #{D_b >= D}) / (B + 1); a replicate whose re-fit finds
no admissible x_min counts as D_b >= D.

Replicate b draws from its own generator, spawned from the seed's SeedSequence, so the result is
the same whatever the number of worker processes.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.results import ToDict, result
from ..runtime.parallel import INLINE_BUDGET, run_tasks
from ..runtime.progress import ProgressCallback
from .families import REGISTRY, Tail
from .powerlaw import (
    Histogram,
    PowerLawFit,
    candidate_range,
    finish_fit,
    power_law_table,
    sample_power_law,
    sample_power_law_hist,
    scan_cutoffs,
)


@result
class GofResult(ToDict):
    statistic: float  # observed KS distance D
    pvalue: float
    replicates: int
    failed: int  # replicates whose re-fit found no admissible x_min (counted as D_b >= D)
    null_distribution: np.ndarray
    # LR_b = 2(ℓ_TPL - ℓ_PL) of every replicate (the nested test's Monte Carlo null); None when not run
    null_lr: np.ndarray | None = None

    def nested_pvalue(self, lr: float) -> float:
        """Monte Carlo p-value (1 + #{LR_b >= LR})/(B + 1); a failed replicate counts as LR_b >= LR."""
        if self.null_lr is None:
            return math.nan
        ok = np.isfinite(self.null_lr)
        exceed = int(np.sum(self.null_lr[ok] >= lr - 1e-9 * max(1.0, abs(lr)))) + int((~ok).sum())
        return (1 + exceed) / (self.null_lr.size + 1)

    def to_dict(self) -> dict:
        d = self.null_distribution[np.isfinite(self.null_distribution)]
        q = np.quantile(d, [0.5, 0.9, 0.99]).tolist() if d.size else [None] * 3
        out = {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "replicates": self.replicates,
            "failed": self.failed,
            "null_quantiles": {"q50": q[0], "q90": q[1], "q99": q[2]},
        }
        if self.null_lr is not None:
            lr = self.null_lr[np.isfinite(self.null_lr)]
            out["null_lr"] = {"share_zero": float(np.mean(lr <= 1e-9)) if lr.size else None,
                              "q95": float(np.quantile(lr, 0.95)) if lr.size else None}
        return out


@result
class GofTask:
    """One chunk of replicates (picklable): the child seeds and everything a replicate needs."""

    seeds: list[np.random.SeedSequence]
    body_values: np.ndarray
    body_counts: np.ndarray
    n: int
    n_tail: int
    alpha: float
    xmin: float
    discrete: bool
    min_tail: int
    xmin_fixed: bool
    xmin_range: tuple[float, float] | None = None
    tpl_start: dict[str, float] | None = None  # set: also fit the TPL on each replicate's tail (nested null)


def _resample(t: GofTask, rng: np.random.Generator, p_body: np.ndarray, table) -> tuple[np.ndarray, np.ndarray]:
    """One semi-parametric replicate as a histogram: body resampled, tail drawn from the fitted law."""
    nt = int(rng.binomial(t.n, t.n_tail / t.n))
    hb = rng.multinomial(t.n - nt, p_body) if t.body_values.size and nt < t.n else np.zeros(0, dtype=np.int64)
    if t.discrete:
        tv, tc = sample_power_law_hist(t.alpha, t.xmin, nt, rng, table)
    else:
        tv, tc = np.unique(sample_power_law(t.alpha, t.xmin, nt, rng, False), return_counts=True)
    keep = hb > 0
    values = np.concatenate([t.body_values[keep] if hb.size else t.body_values[:0], tv])
    counts = np.concatenate([hb[keep] if hb.size else hb, tc]).astype(np.float64)
    return values, counts


def replicate_ks(task: GofTask) -> np.ndarray:
    """Rows (D_b, LR_b) of every replicate in one chunk: the re-fitted KS distance and, when
    ``task.tpl_start`` is set, 2(ℓ_TPL - ℓ_PL) on the replicate's tail (NaN where the re-fit found no
    admissible x_min, or where LR was not asked for)."""
    t = task
    p_body = t.body_counts / t.body_counts.sum() if t.body_counts.size else t.body_counts
    table = power_law_table(t.alpha, t.xmin) if t.discrete else None
    tpl = REGISTRY["truncated_power_law"]
    out = np.full((len(t.seeds), 2), np.nan)
    for k, ss in enumerate(t.seeds):
        values, counts = _resample(t, np.random.default_rng(ss), p_body, table)
        if t.xmin_fixed:
            # re-fit α at the fixed cutoff only
            if values.size == 0 or values[values >= t.xmin].size == 0:
                continue
            i = int(np.searchsorted(values, t.xmin))
            if values[i] != t.xmin:
                values = np.insert(values, i, t.xmin)
                counts = np.insert(counts, i, 0.0)
            best, alpha, d, nc = scan_cutoffs(values, counts, 0.0, t.discrete, i, i + 1)
        else:
            first, last = candidate_range(values, t.xmin_range)
            best, alpha, d, nc = scan_cutoffs(values, counts, float(t.min_tail), t.discrete, first, last)
        if best < 0:
            continue
        out[k, 0] = d
        if t.tpl_start is not None:
            pl = finish_fit(values, counts, best, alpha, d, t.discrete, nc)
            tail = Tail(values=values[best:], counts=counts[best:], xmin=pl.xmin, discrete=t.discrete)
            refit = tpl.fit(tail, reference=pl, start=t.tpl_start, errors=False)
            out[k, 1] = max(2.0 * (refit.loglik - pl.loglik), 0.0)
    return out


CHUNK = 50  # replicates per task; each replicate has its own child seed, so chunking never changes results


def gof_tasks(
    hist: Histogram,
    fit: PowerLawFit,
    *,
    replicates: int,
    seed: np.random.SeedSequence,
    min_tail: int,
    xmin_fixed: bool,
    xmin_range: tuple[float, float] | None = None,
    tpl_start: dict[str, float] | None = None,
) -> list[GofTask]:
    """The bootstrap's work, as picklable tasks for :func:`replicate_ks`."""
    children = seed.spawn(replicates)
    below = hist.values < fit.xmin
    body_values, body_counts = hist.values[below], hist.counts[below].astype(np.float64)
    return [
        GofTask(seeds=children[i : i + CHUNK], body_values=body_values, body_counts=body_counts, n=hist.n,
                n_tail=fit.n_tail, alpha=fit.alpha, xmin=fit.xmin, discrete=fit.discrete, min_tail=min_tail,
                xmin_fixed=xmin_fixed, xmin_range=xmin_range, tpl_start=tpl_start)
        for i in range(0, replicates, CHUNK)
    ]


def gof_result(fit: PowerLawFit, chunks: list[np.ndarray], replicates: int, *, nested: bool = False) -> GofResult:
    rows = np.concatenate(chunks) if chunks else np.zeros((0, 2))
    null, lr = rows[:, 0], rows[:, 1]
    ok = np.isfinite(null)
    # a replicate whose re-fit found no admissible x_min counts as D_b >= D (conservative)
    exceed = int(np.sum(null[ok] >= fit.ks)) + int((~ok).sum())
    p = (1 + exceed) / (null.size + 1)
    return GofResult(statistic=fit.ks, pvalue=p, replicates=replicates, failed=int((~ok).sum()), null_distribution=null,
                     null_lr=lr if nested else None)


def bootstrap_gof(
    hist: Histogram,
    fit: PowerLawFit,
    *,
    replicates: int = 1000,
    seed: int | np.random.SeedSequence | None = None,
    jobs: int | None = None,
    min_tail: int = 100,
    xmin_fixed: bool = False,
    progress: ProgressCallback | None = None,
) -> GofResult:
    """Bootstrap p-value of the KS distance of the fitted power-law tail."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    tasks = gof_tasks(hist, fit, replicates=replicates, seed=ss, min_tail=min_tail, xmin_fixed=xmin_fixed)
    chunks = run_tasks(replicate_ks, tasks, jobs=jobs, sizes=[len(t.seeds) for t in tasks], progress=progress,
                       inline_budget=INLINE_BUDGET)
    return gof_result(fit, chunks, replicates)
