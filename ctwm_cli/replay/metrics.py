"""Replay metrics and paired comparisons with block-bootstrap confidence intervals.

Per arm (pooled over the seeds' steps, and per seed):

* ``tokens_mean``, ``tokens_median``, ``tokens_p95``: exact prompt tokens per step (whole prompt,
  header and output contract included; p95 and the median by linear interpolation, numpy's default);
* ``state_coverage``: of the steps at which the memory held a transition from ``s_t``, the share
  whose prompt shows one (as a line or a tail-summary entry); ``transition_coverage``: the same for
  an outcome of ``(s_t, a_t)``. Full History has 1/1 by construction;
* ``tail_error``: the error rate over steps whose current state ``s_t`` is a **tail state**: the
  ⌊n/2⌋ least visited of the n states visited at ``s_0 .. s_{T-1}`` of the seed's episode (visit
  counts ascending, ties to the smaller state id) — the same set for every arm of a seed;
* ``overall_error``: the error rate over all steps. Loss ``1{ŝ_{t+1} != s_{t+1}}``.

**Paired comparisons** (treatment minus baseline) use the same episodes, so steps pair up. The
confidence interval is a percentile interval of a moving-block bootstrap over steps, stratified by
seed: each replicate draws ``T // L`` blocks of ``L`` consecutive steps (start uniform in
``[0, T - L]``) in each seed, the same blocks for both arms. Ratio metrics (error rates, coverage)
are recomputed as ratios of the resampled sums. Seeded: the same seed gives the same intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..results import ToDict, result

METRICS = ("tokens_mean", "tail_error", "overall_error", "state_coverage", "transition_coverage")


@result
class ArmMetrics(ToDict):
    """Metrics of one arm (one seed, or pooled over seeds when ``seed`` is None)."""

    arm: str
    memory: str
    encoding: str
    tau: float | None
    seed: int | None
    steps: int
    tokens_mean: float
    tokens_median: float
    tokens_p95: float
    state_coverage: float | None
    transition_coverage: float | None
    tail_error: float | None
    overall_error: float
    tail_steps: int
    items_injected: float  # lines of memory per step
    items_summarised: float  # tail-summary entries per step
    tail_items: float  # tail items per step (listed or counted)
    api_prompt_tokens: float | None  # endpoint predictor: API-reported prompt tokens per step


@result
class PairedDelta(ToDict):
    """Treatment minus baseline on one metric, with a block-bootstrap CI."""

    treatment: str
    baseline: str
    metric: str
    treatment_value: float | None
    baseline_value: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    relative: float | None  # delta / baseline
    relative_ci_low: float | None
    relative_ci_high: float | None


def tail_states(states: np.ndarray, n_states: int) -> np.ndarray:
    """Boolean mask over states: the ⌊n/2⌋ least visited of the n visited states (ties: smaller id)."""
    visits = np.bincount(np.asarray(states, dtype=np.int64), minlength=n_states)
    visited = np.flatnonzero(visits)
    order = visited[np.lexsort((visited, visits[visited]))]
    mask = np.zeros(n_states, dtype=bool)
    mask[order[: visited.size // 2]] = True
    return mask


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def arm_metrics(logs: Sequence, tails: Sequence[np.ndarray], *, seed: int | None = None) -> ArmMetrics:
    """Metrics of one arm over ``logs`` (one per seed) with the seeds' tail-step masks."""
    tok = np.concatenate([g.tokens for g in logs])
    correct = np.concatenate([g.correct for g in logs])
    tail = np.concatenate(tails)
    se = np.concatenate([g.state_evidence for g in logs])
    te = np.concatenate([g.transition_evidence for g in logs])
    sc = np.concatenate([g.state_covered for g in logs])
    tc = np.concatenate([g.transition_covered for g in logs])
    arm = logs[0].arm
    api = None
    if logs[0].api_prompt_tokens is not None:
        api = float(np.mean(np.concatenate([g.api_prompt_tokens for g in logs])))
    wrong = ~correct
    return ArmMetrics(
        arm=arm.name, memory=arm.memory, encoding=arm.encoding, tau=arm.tau, seed=seed, steps=int(tok.size),
        tokens_mean=float(tok.mean()), tokens_median=float(np.median(tok)), tokens_p95=float(np.percentile(tok, 95)),
        state_coverage=_ratio(sc.sum(), se.sum()), transition_coverage=_ratio(tc.sum(), te.sum()),
        tail_error=_ratio(wrong[tail].sum(), tail.sum()), overall_error=float(wrong.mean()),
        tail_steps=int(tail.sum()),
        items_injected=float(np.mean(np.concatenate([g.n_injected for g in logs])))
        if logs[0].history_tokens is None else float(np.mean(np.concatenate([np.arange(g.tokens.size) for g in logs]))),
        items_summarised=float(np.mean(np.concatenate([g.n_summarised for g in logs]))),
        tail_items=float(np.mean(np.concatenate([g.tail_count for g in logs]))),
        api_prompt_tokens=api,
    )


def _series(logs: Sequence, tails: Sequence[np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """metric -> (numerator, denominator) per step, seeds concatenated."""
    tok = np.concatenate([g.tokens for g in logs]).astype(np.float64)
    wrong = ~np.concatenate([g.correct for g in logs])
    tail = np.concatenate(tails)
    ones = np.ones(tok.size)
    return {
        "tokens_mean": (tok, ones),
        "tail_error": ((wrong & tail).astype(np.float64), tail.astype(np.float64)),
        "overall_error": (wrong.astype(np.float64), ones),
        "state_coverage": (np.concatenate([g.state_covered for g in logs]).astype(np.float64),
                           np.concatenate([g.state_evidence for g in logs]).astype(np.float64)),
        "transition_coverage": (np.concatenate([g.transition_covered for g in logs]).astype(np.float64),
                                np.concatenate([g.transition_evidence for g in logs]).astype(np.float64)),
    }


def block_starts(lengths: Sequence[int], block: int, replicates: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Block start offsets (into the concatenated steps), shape (replicates, blocks), and the block length."""
    starts = []
    offset = 0
    size = min([block, *lengths])
    for n in lengths:
        nb = n // size
        starts.append(offset + rng.integers(0, n - size + 1, size=(replicates, nb)))
        offset += n
    return np.concatenate(starts, axis=1), size


def _block_sums(x: np.ndarray, starts: np.ndarray, size: int) -> np.ndarray:
    cs = np.concatenate([[0.0], np.cumsum(x)])
    return (cs[starts + size] - cs[starts]).sum(axis=1)


def paired_deltas(treat: Sequence, base: Sequence, tails: Sequence[np.ndarray], *, replicates: int, block: int,
                  level: float, rng: np.random.Generator, metrics: Sequence[str] = METRICS) -> list[PairedDelta]:
    """Treatment minus baseline per metric, with percentile CIs from a paired block bootstrap."""
    a, b = _series(treat, tails), _series(base, tails)
    lengths = [g.tokens.size for g in treat]
    if [g.tokens.size for g in base] != lengths:
        raise ValueError("paired arms must replay the same episodes")
    starts, size = block_starts(lengths, block, replicates, rng) if replicates else (None, 0)
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    out = []
    for m in metrics:
        (an, ad), (bn, bd) = a[m], b[m]
        va = _ratio(an.sum(), ad.sum())
        vb = _ratio(bn.sum(), bd.sum())
        delta = None if va is None or vb is None else va - vb
        rel = None if delta is None or not vb else delta / vb
        ci = (None, None)
        rci = (None, None)
        if starts is not None and delta is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                ra = _block_sums(an, starts, size) / _block_sums(ad, starts, size)
                rb = _block_sums(bn, starts, size) / _block_sums(bd, starts, size)
                d = ra - rb
                ok = np.isfinite(d)
                if ok.any():
                    ci = tuple(float(v) for v in np.quantile(d[ok], [lo_q, hi_q]))
                r = d / rb
                okr = np.isfinite(r)
                if okr.any() and rel is not None:
                    rci = tuple(float(v) for v in np.quantile(r[okr], [lo_q, hi_q]))
        out.append(PairedDelta(treatment=treat[0].arm.name, baseline=base[0].arm.name, metric=m, treatment_value=va,
                               baseline_value=vb, delta=delta, ci_low=ci[0], ci_high=ci[1], relative=rel,
                               relative_ci_low=rci[0], relative_ci_high=rci[1]))
    return out
