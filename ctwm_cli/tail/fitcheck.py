"""Each family's own goodness of fit on the audit's tail: a parametric bootstrap KS test for any family
of the registry, run beside p_gof (issue 26).

Why: a likelihood ratio only says which of two families is *less wrong*. On a pool of agents with
different exponents (0.2·Zipf(2.0) + 0.8·Zipf(3.5), n = 20,000) the log-normal beats the TPL by
Λ ≈ −75 (z ≈ −3.5) because it can put extra mass at 1, yet neither fits; the paper's rule then says
``lognormal-compatible``, which the paper reads as the random-walk artefact. A decisive verdict
therefore also requires the preferred family to pass a test of its own fit (:mod:`.verdict`).

What, for family F fitted on the n_tail observations above the audit's x_min, with KS distance D_F
(:func:`~.families.ks_distance`, the distance the x_min scan minimises for the power law): each replicate
draws n_tail values exactly from the fitted F, re-fits F on them (warm-started at the observed fit) and
records its KS distance D_b. p = (1 + #{D_b >= D_F}) / (B + 1); a replicate whose fit has no finite
likelihood counts as D_b >= D_F (conservative). For F = power law the audit's p_gof is the check.

**Conditional on x_min, unlike p_gof — a decision, measured.** p_gof re-selects x_min in every replicate
because D_PL is *minimised* over x_min, which biases it down; D_F is not minimised over x_min, so no such
correction is owed, and re-selecting mixes KS distances of tails of very different sizes (a replicate
whose scan lands at a higher cutoff has a shorter tail and a larger D by the n^-1/2 law). Tried first, the
re-selecting version had no power where it matters: on the mixture above (seed 1) it gave
p_gof_lognormal = 0.14 against 0.005 conditionally, with D_LN = 0.0107 on 20,000 points. So this is the
classical parametric bootstrap KS test of "F fits this tail" (Stute, González Manteiga & Presedo
Quindimil 1993: valid with estimated parameters). What conditioning leaves out — x_min was chosen where
the *power law* fits best — is measured by its size on log-normal data (README "Fit checks").

Streams: family k of the registry draws from SeedSequence(seed, spawn_key=(STREAM, k)), one child per
replicate, so a check's p-value does not depend on the jobs, the chunking or which other families are
checked, and p_gof's stream (spawn key 0) is untouched.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.results import result
from .bootstrap import CHUNK, GofResult, GofTask, replicate_ks
from .families import REGISTRY, Tail, TailFit, ks_distance
from .powerlaw import Histogram, PowerLawFit, fit_power_law

STREAM = 4  # spawn key of the fit checks (0: p_gof, 1: calibration, 2: uncertainty, 3: power)


@result
class FitCheckTask:
    """One chunk of replicates of one family's check (picklable)."""

    seeds: list[np.random.SeedSequence]
    family: str
    params: dict[str, float]
    n_tail: int
    xmin: float
    discrete: bool


def replicate_family_ks(task: FitCheckTask) -> np.ndarray:
    """Rows (D_b, NaN) of every replicate in one chunk (NaN D_b: the refit failed); two columns, as
    :func:`~.bootstrap.replicate_ks`, so one pool runs both."""
    t = task
    fam = REGISTRY[t.family]
    out = np.full((len(t.seeds), 2), np.nan)
    for k, ss in enumerate(t.seeds):
        rng = np.random.default_rng(ss)
        draws = fam.sample(t.params, t.xmin, t.n_tail, rng, t.discrete)
        if not np.all(np.isfinite(draws)):  # a fit far out at its bound (sampler underflow): a failed replicate
            continue
        values, counts = _histogram(draws, t.xmin, t.discrete)
        if t.discrete and values[0] != t.xmin:  # the support starts at x_min, observed or not
            values, counts = np.concatenate([[t.xmin], values]), np.concatenate([[0], counts])
        tail = Tail(values=values, counts=counts.astype(np.float64), xmin=t.xmin, discrete=t.discrete)
        if values.size < 2:
            continue
        # the power-law reference only for a family that reads it (the log-normal's check made one per replicate for
        # nothing: 0.11 s of 2.0 on terrorism at B = 200, issue 48)
        ref = fit_power_law(Histogram(values=values, counts=counts), discrete=t.discrete,
                            xmin=t.xmin) if fam.uses_reference else None
        refit = fam.fit(tail, reference=ref, start=t.params, errors=False)
        if math.isfinite(refit.loglik):
            out[k, 0] = ks_distance(refit, tail)
    return out


def _histogram(draws: np.ndarray, xmin: float, discrete: bool) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(draws, return_counts=True)``, the same arrays; integer draws over a short range by
    ``bincount`` instead of a sort (a Zipf tail of 1e5 draws: the sort was a fifth of a replicate, issue 48)."""
    if discrete and draws.size and draws.max() - xmin < 8 * draws.size:
        c = np.bincount((draws - xmin).astype(np.int64))
        nz = np.flatnonzero(c)
        return xmin + nz.astype(np.float64), c[nz]
    return np.unique(draws, return_counts=True)


def run_replicates(task: GofTask | FitCheckTask) -> np.ndarray:
    """The audit's one pool runs both kinds of bootstrap task (p_gof and the fit checks)."""
    return replicate_family_ks(task) if isinstance(task, FitCheckTask) else replicate_ks(task)


def check_tasks(tail: Tail, fit: TailFit, *, replicates: int, seed: int) -> list[FitCheckTask]:
    """The check of one fitted family as picklable tasks for :func:`replicate_family_ks`."""
    k = list(REGISTRY).index(fit.family)
    children = np.random.SeedSequence(seed, spawn_key=(STREAM, k)).spawn(replicates)
    return [FitCheckTask(seeds=children[i : i + CHUNK], family=fit.family, params=dict(fit.params),
                         n_tail=int(tail.n), xmin=fit.xmin, discrete=fit.discrete)
            for i in range(0, replicates, CHUNK)]


def checkable(fit: TailFit) -> bool:
    """A fit can be checked when it has a finite likelihood and finite parameters (an exponential
    fitted on a single value has λ = ∞: nothing to draw from)."""
    return math.isfinite(fit.loglik) and all(math.isfinite(fit.params[p]) for p in REGISTRY[fit.family].parameters)


def check_result(fit: TailFit | PowerLawFit, tail: Tail, chunks: list[np.ndarray], replicates: int) -> GofResult:
    """p = (1 + #{D_b >= D_F}) / (B + 1) from the replicates' rows, D_F the observed fit's KS distance."""
    observed = ks_distance(fit, tail)
    rows = np.concatenate(chunks) if chunks else np.zeros((0, 2))
    null = rows[:, 0]
    ok = np.isfinite(null)
    exceed = int(np.sum(null[ok] >= observed)) + int((~ok).sum())
    return GofResult(statistic=observed, pvalue=(1 + exceed) / (null.size + 1), replicates=replicates,
                     failed=int((~ok).sum()), null_distribution=null)
