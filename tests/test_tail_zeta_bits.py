"""The Hurwitz ζ kernels stop their Euler–Maclaurin sums once every later term is below rounding
(tail/zeta.py): the bits must be those of all eight terms. The reference here is the eight-term
summation as the kernels computed it before, written out in Python (the same IEEE operations in the
same order; Python's float ** and numba's both call the C library's pow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctwm_cli.tail import zeta

EM = [float(c) for c in zeta._EM]


def _shift(s, q):
    need = s + 10.0 - q
    return math.ceil(need) if need > 0 else 0


def scaled_eight_terms(s, q):
    n = _shift(s, q)
    total = 0.0
    for k in range(n):
        t = (1.0 + k / q) ** (-s)
        total += t
        if t < 1e-17 * total:
            return total
    a = q + n
    apow = (a / q) ** (-s)
    total += a * apow / (s - 1.0) + 0.5 * apow
    rising = s
    term_pow = apow / a
    for j in range(8):
        total += EM[j] * rising * term_pow
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        term_pow /= a * a
    return total


def d_eight_terms(s, q):
    n = _shift(s, q)
    z0 = z1 = z2 = 0.0
    for k in range(n):
        x = q + k
        lx = math.log(x)
        t = (x / q) ** (-s)
        z0 += t
        z1 -= lx * t
        z2 += lx * lx * t
        if t < 1e-17 * z0:
            return z0, z1, z2
    a = q + n
    la = math.log(a)
    apow = (a / q) ** (-s)
    sm1 = s - 1.0
    t = a * apow
    z0 += t / sm1
    z1 += t * (-la / sm1 - 1.0 / (sm1 * sm1))
    z2 += t * (la * la / sm1 + 2.0 * la / (sm1 * sm1) + 2.0 / (sm1 * sm1 * sm1))
    z0 += 0.5 * apow
    z1 -= 0.5 * la * apow
    z2 += 0.5 * la * la * apow
    p0, p1, p2 = s, 1.0, 0.0
    term_pow = apow / a
    for j in range(8):
        c = EM[j] * term_pow
        z0 += c * p0
        z1 += c * (p1 - la * p0)
        z2 += c * (p2 - 2.0 * la * p1 + la * la * p0)
        for m in (2 * j + 1, 2 * j + 2):
            f = s + m
            p2 = p2 * f + 2.0 * p1
            p1 = p1 * f + p0
            p0 = p0 * f
        term_pow /= a * a
    return z0, z1, z2


def _pairs():
    rng = np.random.default_rng(29)
    s = np.concatenate([1.0 + rng.lognormal(-1.0, 1.2, 3000), rng.uniform(1.0001, 1.01, 300),
                        rng.uniform(8.0, 40.0, 300)])
    # q: integers (every discrete use), log-uniform up to 1e8, and reals close to the direct sum's edge s + 10
    q_int = np.floor(np.exp(rng.uniform(0.0, np.log(1e8), s.size)))
    q_real = np.exp(rng.uniform(np.log(0.3), np.log(1e6), s.size))
    q_edge = s + 10.0 + rng.uniform(-2.0, 30.0, s.size)
    return [(float(a), float(b)) for q in (q_int, q_real, q_edge) for a, b in zip(s, q, strict=True)]


PAIRS = _pairs()


def test_scaled_zeta_has_the_bits_of_all_eight_terms():
    got = [zeta.hurwitz_zeta_scaled(s, q) for s, q in PAIRS]
    want = [scaled_eight_terms(s, q) for s, q in PAIRS]
    bad = [(p, g.hex(), w.hex()) for p, g, w in zip(PAIRS, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} of {len(PAIRS)} differ, e.g. {bad[:3]}"


def test_zeta_derivatives_have_the_bits_of_all_eight_terms():
    bad = []
    for s, q in PAIRS:
        got, want = zeta.hurwitz_zeta_d(s, q), d_eight_terms(s, q)
        if tuple(got) != want:
            bad.append(((s, q), got, want))
    assert not bad, f"{len(bad)} of {len(PAIRS)} differ, e.g. {bad[:3]}"


def test_the_reference_is_the_function_it_claims():
    # the eight-term sums against scipy (so the bit-for-bit comparison above compares with a right answer)
    from scipy.special import zeta as scipy_zeta

    for s, q in PAIRS[::97]:
        assert scaled_eight_terms(s, q) * q**-s == pytest.approx(float(scipy_zeta(s, q)), rel=1e-13)


def _python(kernel):
    return kernel.py_func  # a Kernel before compilation, numba's dispatcher after: both keep it


def test_the_early_stop_happens():
    # at large q the sums stop after the first correction term; if the stop never fired, the bit tests
    # above would pass trivially. Count the correction terms the kernel's Python reads at q = 5e4.
    py = _python(zeta.hurwitz_zeta_scaled)
    read = []

    class Counting(list):
        def __getitem__(self, j):
            read.append(j)
            return EM[j]

    glob = py.__globals__
    saved = glob["_EM"]
    glob["_EM"] = Counting(EM)
    try:
        assert py(2.3, 5e4) == scaled_eight_terms(2.3, 5e4)
    finally:
        glob["_EM"] = saved
    assert read and max(read) <= 2, read


@pytest.mark.parametrize("kernel", ["hurwitz_zeta_scaled", "hurwitz_zeta_d"])
def test_a_stop_too_early_is_caught(kernel):
    # the comparison can fail: with a threshold of 2^-30 instead of 2^-56 the sums lose bits
    py = _python(getattr(zeta, kernel))
    ref = scaled_eight_terms if kernel == "hurwitz_zeta_scaled" else d_eight_terms
    glob = py.__globals__
    saved = glob["_NEGLIGIBLE"]
    glob["_NEGLIGIBLE"] = 2.0**-30
    try:
        differ = sum(py(s, q) != ref(s, q) for s, q in PAIRS[::7])
    finally:
        glob["_NEGLIGIBLE"] = saved
    assert differ > 0
