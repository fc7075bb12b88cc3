"""Paired comparisons with bootstrap percentile intervals: the one mechanism and result type that
``ctwm replay`` (steps, moving blocks) and ``ctwm bench`` (questions or games, resampled one by one)
both use.

A metric is a ratio of sums over paired units, Σ num / Σ den (a mean when den is 1 per unit, an
error rate over the tail steps when den marks them). For treatment T and baseline B on the same
units: ``delta = T - B``, ``relative = T / B - 1``. A replicate resamples the units once for both
arms (so the pairing is kept) and recomputes both ratios from the resampled sums; the interval is
the percentile interval of the replicates at ``level``.

An interval is only reported when the resampling can vary: :class:`BlockResample` needs at least
two blocks in every episode (a block as long as the episode has one possible start, so every
replicate would equal the estimate and a zero-width "interval" would be printed),
:class:`IndexResample` needs at least two units and :class:`EpisodeResample` (the cluster bootstrap
over whole episodes) at least :data:`MIN_CLUSTERS`. When no unit differs between the arms every
replicate gives the same difference: the interval is "not formed: no <unit> differs", never a
[0, 0] called formed (such a run says nothing about the pooled difference). Otherwise ``interval_status``
says why and the bounds are ``None``.

**Power.** Beside each formed interval, ``mde`` is the minimum detectable effect at 80% power and
the interval's level, read off the bootstrap replicates of the resampling scheme that was run (see
:func:`simulated_mde`: a shift model, not the normal approximation ``(z_{1-α/2} + z_{0.8}) · SE``,
which over-promised on sparse differences), with its Monte Carlo error ``mde_mc_error``. An interval
that includes 0 says "no difference larger than ±MDE", not "no difference".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from scipy.stats import t as student_t

from ..common.results import ToDict, result
from .intervals import ConfidenceInterval, confidence_interval, contains

FORMED = "formed"
NOT_REQUESTED = "not requested (0 replicates)"
POWER = 0.8  # the power the minimum detectable effect is stated at
MIN_CLUSTERS = 5  # episodes a cluster bootstrap needs: with fewer the percentile interval under-covers badly


@result
class PairedDelta(ToDict):
    """Treatment minus baseline on one metric over paired units, with a bootstrap percentile CI."""

    treatment: str
    baseline: str
    metric: str
    group: str | None  # a subset of the units (e.g. a question type); None: all of them
    units: int  # paired units with data under both arms
    treatment_value: float | None
    baseline_value: float | None
    delta: float | None  # treatment - baseline
    confidence_interval: ConfidenceInterval | None  # of delta; None unless formed
    relative: float | None  # treatment / baseline - 1
    relative_confidence_interval: ConfidenceInterval | None  # of relative; None unless formed
    interval_status: str  # "formed", or why no interval is given
    mde: float | None = None  # minimum detectable effect at 80% power and the interval's level (formed only)
    block: int | None = None  # moving-block bootstrap: the block length used for this metric
    lag1_autocorrelation: float | None = None  # of the linearised per-step difference the block was chosen from
    block_capped: bool | None = None  # the block hit its cap: the dependence may outlast it (interval too narrow)
    resampling: str | None = None  # what was resampled: "steps" (blocks), "episodes" (clusters), "units"
    mde_mc_error: float | None = None  # Monte Carlo standard error of mde (from the finite number of replicates)


class Resample(Protocol):
    """How units are resampled: ``sums(x)`` is each replicate's sum of ``x`` over its resampled units."""

    replicates: int
    status: str

    def sums(self, x: np.ndarray) -> np.ndarray: ...


class BlockResample:
    """Circular block bootstrap over steps, stratified by episode (Politis & Romano 1992): each replicate
    rebuilds every episode of ``n`` steps from ``n // block`` blocks of ``block`` consecutive steps and,
    when ``block`` does not divide ``n``, one block of the ``n mod block`` left, each starting uniformly
    anywhere in the episode and wrapping from its last step to its first.

    Every step of an episode is then equally likely to be drawn, so a replicate's expected sum is the
    observed sum and the bootstrap distribution of a mean is centred on the estimate. The moving-block
    scheme this replaces drew starts in ``[0, n - block]``: an episode's first and last steps were
    under-sampled, and where a series trends over the episode (prompt tokens grow as the memory fills)
    the replicates were shifted off the estimate (``ctwm replay compare --preset artifact --walk
    uniform-neighbour --memory graph,ctwm --episodes 30 --seed 1``: CTWM − Graph tokens +56.192 with a
    "95% interval" [+56.243, +56.285])."""

    #: above this many block starts in all (replicates x blocks) they are drawn again, in chunks of
    #: replicates from one stored seed, at every ``sums`` (short blocks on long runs: 1,000 replicates of
    #: 40,000 one-step blocks would hold 160 MB)
    MAX_STORED = 8_000_000
    CHUNK = 1_000_000  # block starts gathered at once (bounds the temporaries of ``sums``)

    def __init__(self, lengths: Sequence[int], block: int, replicates: int, rng: np.random.Generator):
        self.replicates = int(replicates)
        self.size = int(block)
        self.lengths = [int(n) for n in lengths]
        self.starts: np.ndarray | None = None
        self._seed: int | None = None
        shortest = min(lengths)
        if not replicates:
            self.status = NOT_REQUESTED
        elif shortest < 2 * block:
            self.status = (f"not formable: block {block} leaves fewer than two blocks in an episode of {shortest} "
                           "steps (use a block <= half the steps)")
        else:
            self.status = FORMED
            # per drawn block: its length (full blocks, then the remainder block of each episode that has one)
            spans = [[self.size] * (n // self.size) + ([n % self.size] if n % self.size else []) for n in lengths]
            self.spans = np.array([b for sp in spans for b in sp], dtype=np.int64)
            self._counts = [len(sp) for sp in spans]
            self.per_replicate = int(self.spans.size)
            if replicates * self.per_replicate <= self.MAX_STORED:
                self.starts = self._draw(rng, replicates)
            else:
                self._seed = int(rng.integers(0, 2**63 - 1))

    def _draw(self, rng: np.random.Generator, replicates: int) -> np.ndarray:
        """Block starts as positions in the wrapped series (each episode followed by its first
        ``block - 1`` steps again), so a block is a contiguous slice of it."""
        starts, offset = [], 0
        for n, c in zip(self.lengths, self._counts, strict=True):
            starts.append(offset + rng.integers(0, n, size=(replicates, c), dtype=np.int64))
            offset += n + self.size - 1
        return np.concatenate(starts, axis=1)

    def _chunks(self):
        rows = max(1, self.CHUNK // self.per_replicate)
        if self.starts is not None:
            for lo in range(0, self.replicates, rows):
                yield self.starts[lo: lo + rows]
            return
        rng = np.random.default_rng(self._seed)  # the same starts at every call: the arms stay paired
        for lo in range(0, self.replicates, rows):
            yield self._draw(rng, min(rows, self.replicates - lo))

    def _wrapped(self, x: np.ndarray) -> np.ndarray:
        pieces, lo = [], 0
        for n in self.lengths:
            ep = x[lo: lo + n]
            pieces += [ep, ep[: self.size - 1]]
            lo += n
        return np.concatenate(pieces)

    def sums(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.size and x[0] == 1 and np.all(x == 1):  # a count of steps: every replicate has every episode's length
            return np.full(self.replicates, float(sum(self.lengths)))
        cs = np.concatenate([[0.0], np.cumsum(self._wrapped(x))])
        return np.concatenate([(cs[st + self.spans] - cs[st]).sum(axis=1) for st in self._chunks()])


class EpisodeResample:
    """The cluster bootstrap over episodes: each replicate draws ``E`` of the ``E`` episodes with
    replacement and sums whole episodes (the pairing of two arms is by episode: the same world and
    environment random numbers, whatever trajectories the arms drove).

    With a handful of clusters the percentile interval under-covers (a difference persisting 200
    steps, 95% intervals: 16% false positives at 5 episodes, 13.5% at 12; measured with
    ``benchmarks/power_replay.py --persist``), so the interval is Student-t:
    ``estimate ± t_{E−1} · √(E/(E−1)) · SE_boot`` (``df`` = E − 1), and the MDE uses the same t."""

    def __init__(self, lengths: Sequence[int], replicates: int, rng: np.random.Generator):
        self.replicates = int(replicates)
        self.bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        e = len(lengths)
        self.counts: np.ndarray | None = None
        self.df = e - 1
        if not replicates:
            self.status = NOT_REQUESTED
        elif e < MIN_CLUSTERS:
            self.status = (f"not formable: {e} episode(s); a cluster bootstrap over episodes needs at least "
                           f"{MIN_CLUSTERS} (use more episodes)")
        else:
            self.status = FORMED
            idx = rng.integers(0, e, size=(replicates, e))
            self.counts = np.stack([np.bincount(row, minlength=e) for row in idx]).astype(np.float64)

    def episode_sums(self, x: np.ndarray) -> np.ndarray:
        cs = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
        return cs[self.bounds[1:]] - cs[self.bounds[:-1]]

    def sums(self, x: np.ndarray) -> np.ndarray:
        return self.counts @ self.episode_sums(x)


class IndexResample:
    """The ordinary paired bootstrap: each replicate draws ``n`` of the ``n`` units with replacement."""

    def __init__(self, n: int, replicates: int, rng: np.random.Generator):
        self.replicates = int(replicates)
        self.idx: np.ndarray | None = None
        if not replicates:
            self.status = NOT_REQUESTED
        elif n < 2:
            self.status = f"not formable: {n} paired unit(s)"
        else:
            self.status = FORMED
            self.idx = rng.integers(0, n, size=(replicates, n))

    def sums(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)[self.idx].sum(axis=1)


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _interval(x: np.ndarray, level: float) -> tuple[float | None, float | None]:
    x = x[np.isfinite(x)]
    if not x.size:
        return None, None
    lo, hi = np.quantile(x, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


MDE_MC_RESAMPLES = 200  # resamples of the replicates behind mde_mc_error


def _mde_of(delta: float, ci: tuple[float, float], reps: np.ndarray, df: int | None, power: float) -> float:
    z = np.sort(reps - reps.mean()) * _inflation(df)
    lo_q, hi_q = np.quantile(z, [1 - power, power])
    return float(max((delta - ci[0]) - lo_q, (ci[1] - delta) + hi_q))


def simulated_mde(delta: float, ci: tuple[float, float], reps: np.ndarray, *, df: int | None = None,
                  power: float = POWER, level: float | None = None) -> tuple[float, float]:
    """The minimum detectable effect at ``power`` read off the replicates themselves, and its Monte Carlo error.

    Shift model: a true difference δ moves the sampling distribution of the estimate (the centred
    replicates, times √(E/(E−1)) for the cluster bootstrap) without changing its shape, and the test
    rejects when the interval, with the half-widths it has about the estimate, excludes 0. The power at
    δ > 0 is ``P(δ + Z > delta − low)``, so the MDE upward is ``(delta − low) − q_{1−power}(Z)``; downward
    ``(high − delta) + q_{power}(Z)``; the larger is reported. Unlike ``(z_{1−α/2} + z_{0.8}) · SE`` this
    holds for skewed and discrete replicate distributions (sparse differences), where the normal
    approximation over-promised at small effects. The error is the standard deviation of the MDE over
    :data:`MDE_MC_RESAMPLES` resamples of the replicates (seeded by their number: reproducible)."""
    mde = _mde_of(delta, ci, reps, df, power)
    rng = np.random.default_rng(reps.size)
    again = []
    pct = ci[0] != ci[1] and df is None and level is not None
    for _ in range(MDE_MC_RESAMPLES):
        r = reps[rng.integers(0, reps.size, reps.size)]
        c = tuple(np.quantile(r, [(1 - level) / 2, 1 - (1 - level) / 2])) if pct else ci
        again.append(_mde_of(delta, c, r, df, power))
    return mde, float(np.std(again, ddof=1))


def _inflation(df: int | None) -> float:
    """√(E/(E−1)): the cluster bootstrap's SE is the plug-in SE, short of the unbiased one by this."""
    return 1.0 if df is None else float(np.sqrt((df + 1) / df))


def _t_interval(estimate: float, reps: np.ndarray, level: float, df: int) -> tuple[float | None, float | None]:
    x = reps[np.isfinite(reps)]
    if x.size < 2:
        return None, None
    half = float(student_t(df).ppf(1 - (1 - level) / 2) * x.std(ddof=1) * _inflation(df))
    return estimate - half, estimate + half


def _differing(treat: tuple[np.ndarray, np.ndarray], base: tuple[np.ndarray, np.ndarray], resample: Resample) -> int:
    """How many resampled units differ between the arms (numerator or denominator): steps, or whole
    episodes when the resample draws episodes."""
    (tn, td), (bn, bd) = treat, base
    mask = (tn != bn) | (td != bd)
    by_episode = getattr(resample, "episode_sums", None)
    return int(np.count_nonzero(by_episode(mask) if by_episode is not None and mask.any() else mask))


def paired_delta(treat: tuple[np.ndarray, np.ndarray], base: tuple[np.ndarray, np.ndarray], resample: Resample, *,
                 level: float, treatment: str, baseline: str, metric: str, group: str | None = None,
                 units: int | None = None, unit: str = "unit", **extra) -> PairedDelta:
    """``treat`` and ``base`` are (numerator, denominator) per unit, aligned; see the module docstring.
    ``unit`` names the units in the "no ... differs" status; ``extra`` (``block``,
    ``lag1_autocorrelation``, ``resampling``) is recorded on the result."""
    (tn, td), (bn, bd) = treat, base
    va, vb = _ratio(tn.sum(), td.sum()), _ratio(bn.sum(), bd.sum())
    delta = None if va is None or vb is None else va - vb
    rel = None if delta is None or not vb else delta / vb
    ci = rci = (None, None)
    mde = mde_error = None
    status = resample.status
    if delta is None and status == FORMED:
        status = "not formable: no unit has data under both arms"
    differing = _differing(treat, base, resample) if status == FORMED else 0
    if status == FORMED and not differing:
        status = f"not formed: no {unit} differs"
    elif status == FORMED and differing == 1:  # every replicate holds that unit 0, 1, 2 ... times: not an interval
        status = f"not formed: only one {unit} differs"
    elif status == FORMED and not tn.any() and not bn.any():
        status = f"not formed: the numerator is 0 at every {unit} under both arms"
    if status == FORMED:
        df = getattr(resample, "df", None)
        with np.errstate(invalid="ignore", divide="ignore"):
            ra = resample.sums(tn) / resample.sums(td)
            rb = resample.sums(bn) / resample.sums(bd)
            diff = ra - rb
            ci = _interval(diff, level) if df is None else _t_interval(delta, diff, level, df)
            if rel is not None:
                rci = _interval(diff / rb, level) if df is None else _t_interval(rel, diff / rb, level, df)
        finite = diff[np.isfinite(diff)]
        if ci[0] is not None and ci[0] == ci[1]:  # every replicate the same: no interval, whatever differs
            status, ci, rci = "not formed: every replicate gave the same difference", (None, None), (None, None)
        elif ci[0] is not None and not contains(*ci, delta):  # a percentile interval off its estimate: not one
            status = (f"not formed: the bootstrap replicates [{ci[0]:.6g}, {ci[1]:.6g}] exclude the estimate "
                      f"{delta:.6g} (resample {unit}s otherwise)")
            ci, rci = (None, None), (None, None)
        elif finite.size > 1:
            mde, mde_error = simulated_mde(delta, ci, finite, df=df, level=level)
        if rci[0] is not None and not contains(*rci, rel):  # the relative change alone is off: drop its interval
            rci = (None, None)
    return PairedDelta(treatment=treatment, baseline=baseline, metric=metric, group=group,
                       units=int(td.size if units is None else units), treatment_value=va, baseline_value=vb,
                       delta=delta, confidence_interval=confidence_interval(*ci, level, estimate=delta), relative=rel,
                       relative_confidence_interval=confidence_interval(*rci, level, estimate=rel),
                       interval_status=status,
                       mde=mde, mde_mc_error=mde_error,
                       **extra)


def ratio_interval(num: np.ndarray, den: np.ndarray, resample: Resample, level: float
                   ) -> tuple[float | None, float | None, float | None]:
    """One arm's ratio Σ num / Σ den and its bootstrap percentile interval (``None`` bounds unless formed)."""
    value = _ratio(num.sum(), den.sum())
    if value is None or resample.status != FORMED:
        return value, None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = _interval(resample.sums(num) / resample.sums(den), level)
    return value, lo, hi
