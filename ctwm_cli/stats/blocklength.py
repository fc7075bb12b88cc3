"""Data-driven block length for the moving-block bootstrap: the Politis–White (2004) automatic rule
with the Patton–Politis–White (2009) correction, on one or several episodes of a series.

A fixed block (the old default of 50 steps) under-covers when a difference persists longer than the
block: a loss difference that holds for 200 steps gave 34–44% false positives at the nominal 5% with
blocks of 50. The rule reads the persistence off the data:

1. ``m̂``: the smallest lag after which ``K_N = max(5, ⌈√log10 N⌉)`` consecutive sample
   autocorrelations all lie inside ``±2 √(log10 N / N)``; bandwidth ``M = 2 m̂`` (at most
   ``⌈√N⌉ + K_N``).
2. With the flat-top lag window ``λ(t) = 1`` for ``|t| ≤ 1/2``, ``2(1 − |t|)`` up to ``|t| = 1``:
   ``ĝ = Σ_{|k|≤M} λ(k/M) R̂(k)`` and ``Ĝ = Σ_{|k|≤M} λ(k/M) |k| R̂(k)``.
3. Moving/circular block bootstrap: ``b = (2 Ĝ² / D)^{1/3} n^{1/3}`` with ``D = (4/3) ĝ²``, rounded
   up, at least 1 and at most ``min(3 √n, n / 3)`` (so every episode holds at least three blocks).

With several episodes (the replay's seeds) the autocovariances are pooled within episodes (each
episode centred on the pooled mean, products never cross an episode boundary) and ``n`` is the
shortest episode, since the bootstrap draws its blocks inside each episode. For an AR(1) series with
coefficient φ the rule's target is ``(6 φ² / (1 − φ²)²)^{1/3} n^{1/3}`` (``tests/test_blocklength.py``
checks it). The lag-1 autocorrelation is reported beside the block so a reader can see why, and
``capped`` says when the dependence outlasts what the rule can see (the block hit its cap, or the
correlations had not died out at the last lag looked at): then the block interval is too narrow (a
difference persisting 200 steps: 16–20% false positives at the nominal 5%, against 33–37% with a
fixed 50-step block) and the cluster bootstrap over episodes is the remedy (5–6%).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..common.results import ToDict, result

__all__ = ["BlockLength", "politis_white_block"]


@result
class BlockLength(ToDict):
    """The block length the rule chose and what it read from the series."""

    block: int
    lag1_autocorrelation: float | None  # None when the series does not vary
    m_hat: int
    bandwidth: int
    n: int  # the episode length the block is for (the shortest episode)
    # the block cannot be trusted: the rule wanted a longer block than the cap, the correlations never died out, or
    # sums over a long horizon vary more than the block implies (variance_ratio > VR_LIMIT)
    capped: bool = False
    variance_ratio: float | None = None  # var of horizon sums / (horizon/block * var of block sums); ~1 when it holds


def _acov(pieces: Sequence[np.ndarray], max_lag: int) -> np.ndarray:
    """Autocovariances R̂(0..max_lag) pooled within episodes, divided by the total length."""
    total = sum(p.size for p in pieces)
    mean = sum(float(p.sum()) for p in pieces) / total
    out = np.zeros(max_lag + 1)
    for p in pieces:
        d = p - mean
        n = d.size
        for k in range(min(max_lag, n - 1) + 1):
            out[k] += float(d[: n - k] @ d[k:])
    return out / total


#: a variance ratio above this says the dependence outlasts the block (see :func:`variance_ratio`)
VR_LIMIT = 2.0


def _batch_sums(pieces: Sequence[np.ndarray], size: int) -> np.ndarray:
    """Sums of consecutive non-overlapping batches of ``size`` steps within each episode, centred per batch size."""
    out = [p[: p.size // size * size].reshape(-1, size).sum(axis=1) for p in pieces if p.size >= size]
    return np.concatenate(out) if out else np.zeros(0)


def variance_ratio(pieces: Sequence[np.ndarray], block: int) -> float | None:
    """How much more a long horizon's sums vary than ``block``-step sums imply: ``var(S_H) / ((H / block)
    var(S_block))`` with ``H`` the longest horizon leaving at least 8 batches in all (and at least 4
    blocks). Near 1 when the dependence dies out within the block; a difference that keeps its sign for
    hundreds of steps at a few sparse steps has a small lag-1 autocorrelation, a short automatic block,
    and a ratio well above 1 (it is what the block bootstrap then misses). ``None`` when there is too
    little data to compare."""
    horizon = max(p.size for p in pieces)
    while horizon >= 4 * block and sum(p.size // horizon for p in pieces) < 8:
        horizon = int(horizon * 0.9)
    if horizon < 4 * block:
        return None
    short, long_ = _batch_sums(pieces, block), _batch_sums(pieces, horizon)
    if short.size < 8 or long_.size < 8:
        return None
    v_short = float(np.var(short, ddof=1))
    if v_short <= 0:
        return None
    return float(np.var(long_, ddof=1) / (horizon / block * v_short))


def _flat_top(t: np.ndarray) -> np.ndarray:
    a = np.abs(t)
    return np.where(a <= 0.5, 1.0, np.where(a <= 1.0, 2.0 * (1.0 - a), 0.0))


def politis_white_block(pieces: Sequence[np.ndarray] | np.ndarray) -> BlockLength:
    """The moving-block bootstrap's block length for ``pieces`` (one array per episode, or one array)."""
    if isinstance(pieces, np.ndarray):
        pieces = [pieces]
    pieces = [np.asarray(p, dtype=np.float64) for p in pieces]
    n_min = min(p.size for p in pieces)
    total = sum(p.size for p in pieces)
    cap = max(1, math.floor(min(3 * math.sqrt(n_min), n_min / 3)))
    k_n = max(5, math.ceil(math.sqrt(math.log10(max(total, 10)))))
    m_max = math.ceil(math.sqrt(total)) + k_n
    r = _acov(pieces, min(m_max + k_n, n_min - 1))
    if r[0] <= 1e-300 * max(1.0, float(np.max(np.abs(np.concatenate(pieces))))) or r.size < 2:
        return BlockLength(block=1, lag1_autocorrelation=None, m_hat=0, bandwidth=0, n=n_min)
    rho = r / r[0]
    bound = 2.0 * math.sqrt(math.log10(total) / total)
    lags = rho.size - 1
    m_hat = None
    for m in range(lags - k_n + 1):
        if np.all(np.abs(rho[m + 1: m + 1 + k_n]) < bound):
            m_hat = m
            break
    unresolved = m_hat is None
    if m_hat is None:  # the correlations never die out inside the lags looked at
        m_hat = max(1, lags - k_n)
    bandwidth = min(2 * max(m_hat, 1), m_max, lags)
    k = np.arange(-bandwidth, bandwidth + 1)
    lam = _flat_top(k / bandwidth)
    rk = r[np.abs(k)]
    g = float(np.sum(lam * rk))
    big_g = float(np.sum(lam * np.abs(k) * rk))
    if g <= 0:
        block = 1
    else:
        d_cb = (4.0 / 3.0) * g * g
        block = math.ceil((2.0 * big_g * big_g / d_cb) ** (1.0 / 3.0) * n_min ** (1.0 / 3.0))
    chosen = int(min(max(block, 1), cap))
    vr = variance_ratio(pieces, chosen)
    return BlockLength(block=chosen, lag1_autocorrelation=float(rho[1]), m_hat=int(m_hat), bandwidth=int(bandwidth),
                       n=n_min, capped=bool(unresolved or block > cap or (vr is not None and vr > VR_LIMIT)),
                       variance_ratio=vr)
