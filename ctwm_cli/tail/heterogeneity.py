"""Do the groups of a trace share one power law? (issue 26: a pooled verdict can mix laws)

Real traces pool agents, users and runs. A pool of power laws with different exponents is not a power
law, and the pooled audit may call it log-normal; this test says when the groups disagree.

At one common cutoff x_min (the pooled fit's, chosen on the pooled data, so it does not depend on how
the points are split), each group's tail gets its own α̂_g and the pooled tail one common α̂. The
statistic is the likelihood ratio

    LR = 2 · (Σ_g ℓ_g(α̂_g) − Σ_g ℓ_g(α̂)),

the gain from letting each group have its own exponent. Its p-value is a permutation test: under
"the groups share one law" the group labels of the pooled tail points are exchangeable, so shuffling
them (the group sizes kept) gives LR's null distribution exactly, whatever the law is, power law or
not. The χ²(G − 1) p-value is reported beside it, the asymptotic answer when the tail is a power law.

Groups leaving fewer than ``min_group_tail`` points at the cutoff are left out and named. A group
whose tail points all equal x_min has no finite discrete MLE; its log-likelihood is its supremum, 0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..common.checks import check_range
from ..common.errors import UsageError
from ..common.results import ToDict, result
from .powerlaw import power_law_mle
from .special import chdtrc
from .zeta import log_hurwitz_zeta

MIN_GROUP_TAIL = 10
PERMUTATIONS = 999
STREAM = 7  # spawn key of the permutation test's stream


@result
class Heterogeneity(ToDict):
    """The test of one law across groups, at the pooled cutoff ``xmin``."""

    xmin: float
    discrete: bool
    groups: tuple[str, ...]
    n_tail: tuple[int, ...]
    alpha: tuple[float, ...]  # each group's own α̂ at xmin
    common_alpha: float
    statistic: float  # LR = 2 (Σ ℓ_g(α̂_g) − Σ ℓ_g(α̂))
    pvalue: float  # permutation p-value, (1 + #{LR* >= LR}) / (1 + permutations)
    chi2_pvalue: float  # χ²(G − 1), asymptotic
    permutations: int
    seed: int
    level: float
    excluded: tuple[str, ...]  # groups with fewer than min_group_tail tail points
    heterogeneous: bool  # pvalue < level

    def summary(self) -> str:
        """One line for a table or a verdict's reason."""
        k = len(self.groups)
        word = "heterogeneous: the pooled verdict mixes laws" if self.heterogeneous else "consistent with one law"
        lo, hi = min(self.alpha), max(self.alpha)
        return (f"{word} ({k} groups at x_min {self.xmin:g}: α̂ {lo:.3g}–{hi:.3g}, LR {self.statistic:.3g}, "
                f"permutation p = {self.pvalue:.3g}, {self.permutations} permutations)")


def _loglik(alpha: float, n: float, logsum: float, xmin: float, discrete: bool) -> float:
    if discrete:
        return -alpha * logsum - n * log_hurwitz_zeta(alpha, xmin)
    return n * math.log((alpha - 1.0) / xmin) - alpha * (logsum - n * math.log(xmin))


def _own_loglik(n: float, logsum: float, xmin: float, discrete: bool) -> float:
    a = power_law_mle(xmin, n, logsum, discrete)
    if math.isnan(a):  # every point at x_min: the likelihood rises to 1 as α grows
        return 0.0
    return _loglik(a, n, logsum, xmin, discrete)


def _statistic(sizes: np.ndarray, sums: np.ndarray, xmin: float, discrete: bool, pooled: float) -> float:
    own = sum(_own_loglik(float(n), float(s), xmin, discrete) for n, s in zip(sizes, sums, strict=True))
    return max(2.0 * (own - pooled), 0.0)


def heterogeneity_test(
    samples: Sequence[np.ndarray], labels: Sequence[str], *, xmin: float, discrete: bool = True,
    permutations: int = PERMUTATIONS, seed: int = 0, level: float = 0.05, min_group_tail: int = MIN_GROUP_TAIL,
) -> Heterogeneity | None:
    """Test whether the groups ``samples`` (one array of values each, named by ``labels``) share one
    power law above ``xmin``. ``None`` when fewer than two groups leave ``min_group_tail`` points."""
    if len(samples) != len(labels):
        raise UsageError("samples and labels must have the same length", params=("labels",))
    check_range("permutations", permutations, lo=1)
    check_range("level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    check_range("xmin", xmin, lo=0, lo_open=True)
    tails, kept, excluded = [], [], []
    for x, name in zip(samples, labels, strict=True):
        t = np.asarray(x, dtype=np.float64)
        t = t[t >= xmin]
        if t.size >= min_group_tail:
            tails.append(t)
            kept.append(str(name))
        else:
            excluded.append(str(name))
    if len(tails) < 2:
        return None
    sizes = np.array([t.size for t in tails], dtype=np.float64)
    logs = np.log(np.concatenate(tails))
    starts = np.concatenate(([0], np.cumsum(sizes[:-1]).astype(np.int64)))
    sums = np.add.reduceat(logs, starts)
    n, total = float(sizes.sum()), float(logs.sum())
    common = power_law_mle(xmin, n, total, discrete)
    if math.isnan(common):
        return None  # every tail point at x_min: no exponent to compare
    pooled = _loglik(common, n, total, xmin, discrete)
    observed = _statistic(sizes, sums, xmin, discrete, pooled)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(STREAM,)))
    tol = 1e-9 * max(1.0, abs(observed))  # ties within rounding count as "as large"
    exceed = 0
    for _ in range(permutations):
        s = np.add.reduceat(rng.permutation(logs), starts)
        exceed += _statistic(sizes, s, xmin, discrete, pooled) >= observed - tol
    alphas = tuple(float(power_law_mle(xmin, float(k), float(s), discrete)) for k, s in zip(sizes, sums, strict=True))
    return Heterogeneity(xmin=float(xmin), discrete=discrete, groups=tuple(kept), n_tail=tuple(int(k) for k in sizes),
                         alpha=alphas, common_alpha=float(common), statistic=float(observed),
                         pvalue=(1 + exceed) / (1 + permutations),
                         chi2_pvalue=float(chdtrc(len(tails) - 1, observed)), permutations=permutations, seed=seed,
                         level=level, excluded=tuple(excluded), heterogeneous=(1 + exceed) / (1 + permutations) < level)


def across_groups(result: Any, groups: Sequence[Any], *, labels: Sequence[str] | None = None,
                  permutations: int = PERMUTATIONS, level: float = 0.05) -> Any:
    """``result``, a pooled :class:`~ctwm_cli.tail.AuditResult`, with ``heterogeneity`` set: the test of
    whether ``groups`` (the count vectors, or :class:`~ctwm_cli.traces.ItemCounts`, of the pooled
    trace's groups) share one law above the pooled x_min. Its seed is the audit's. Unchanged when the
    pooled fit found no cutoff."""
    if result.power_law is None:
        return result
    if labels is None:
        labels = [str(getattr(g, "group", i)) for i, g in enumerate(groups)]
    samples = [np.asarray(getattr(g, "counts", g), dtype=np.float64) for g in groups]
    h = heterogeneity_test(samples, labels, xmin=result.power_law.xmin, discrete=result.settings.discrete,
                           permutations=permutations, seed=result.settings.seed, level=level)
    return dataclasses.replace(result, heterogeneity=h)
