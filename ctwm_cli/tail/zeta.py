"""Hurwitz zeta ζ(s, q) = Σ_{k≥0} (q + k)^-s and its first two s-derivatives, compiled with numba.

Euler–Maclaurin summation: the first N terms are summed directly so that a = q + N >= s + 10,
then the remainder is a^{1-s}/(s-1) + a^{-s}/2 + Σ_{j=1..8} B_2j/(2j)! (s)_{2j-1} a^{-s-2j+1}.
The ratio of successive correction terms is about ((s + 2j)/(2πa))^2 < 0.02, so eight terms give
full double precision. Checked against ``scipy.special.zeta`` in the tests.

For large a the later terms are far below rounding: at a = 5·10^4 only the first changes the sum. The
loops stop at the first term j whose bound on itself and on every later term is below 2^-56 of each
sum it would be added to. Adding a number below a quarter of a sum's unit in the last place returns
the sum unchanged (round to nearest), so stopping there gives the bits all eight terms give; the
bounds decrease in j (below), so no later term can be larger. ``tests/test_tail_zeta_bits.py``
compares both functions with the eight-term sums bit for bit.

* ``hurwitz_zeta_scaled``: |term j+1 / term j| = |B_{2j+2}/(2j+2)! · (2j)!/B_2j|·(s+2j+1)(s+2j+2)/a^2
  <= (1/39.4)·((s+14)/(s+10))^2 < 0.05 for j <= 6, since a >= s + 10 and the Bernoulli ratio is
  at most 1/39.4 (1/60, 1/42, 1/40, then 1/39.5 towards 1/(4π^2)).
* ``hurwitz_zeta_d``: with P = (s)_{2j+1} and H = Σ_{m<=2j} 1/(s+m) <= 2j + 1 (s > 1), P' = P·H and
  0 <= P'' <= P·H^2, so each increment of the three sums is at most |c|·P·(1 + ln a + H)^2 <=
  |c|·P·(ln a + 2j + 2)^2. That bound's ratio in j is at most 0.05·((ln a + 4)/(ln a + 2))^2 < 0.11
  (ln a >= ln 11).
"""

from __future__ import annotations

import math

import numpy as np

from .kernels import kernel

# B_2j / (2j)! for j = 1..8
_EM = np.array(
    [
        1.0 / 6.0 / 2.0,
        -1.0 / 30.0 / 24.0,
        1.0 / 42.0 / 720.0,
        -1.0 / 30.0 / 40320.0,
        5.0 / 66.0 / 3628800.0,
        -691.0 / 2730.0 / 479001600.0,
        7.0 / 6.0 / 87178291200.0,
        -3617.0 / 510.0 / 20922789888000.0,
    ]
)
_NEGLIGIBLE = 2.0**-56  # below a quarter ulp of the sum, with room for the bound's own rounding



@kernel(fastmath=False)
def _shift(s: float, q: float) -> int:
    need = s + 10.0 - q
    return math.ceil(need) if need > 0 else 0


@kernel(fastmath=False)
def hurwitz_zeta_scaled(s: float, q: float) -> float:
    """ζ(s, q)·q^s for s > 1, q > 0 (the leading term is 1, so it never under- or overflows)."""
    n = _shift(s, q)
    total = 0.0
    for k in range(n):
        t = (1.0 + k / q) ** (-s)
        total += t
        if t < 1e-17 * total:  # s >> q: terms fall like e^{-ks/q}; the rest is below rounding
            return total
    a = q + n
    apow = (a / q) ** (-s) if n > 0 else 1.0  # pow(1, y) = 1 exactly (C99)
    total += a * apow / (s - 1.0) + 0.5 * apow
    rising = s  # (s)_{2j-1}
    term_pow = apow / a  # a^{-s-1}
    for j in range(8):
        term = _EM[j] * rising * term_pow
        if s > 1.0 and abs(term) < _NEGLIGIBLE * total:  # this and every later term: see the docstring
            return total
        total += term
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        term_pow /= a * a
    return total


@kernel(fastmath=False)
def log_hurwitz_zeta(s: float, q: float) -> float:
    """ln ζ(s, q)."""
    return math.log(hurwitz_zeta_scaled(s, q)) - s * math.log(q)


@kernel(fastmath=False)
def hurwitz_zeta_d(s: float, q: float):
    """(ζ, ∂ζ/∂s, ∂²ζ/∂s²)·q^s at (s, q), s > 1, q > 0: all three share the scale q^s, so ratios
    such as ∂ ln ζ/∂s = ζ'/ζ come out exact without overflow."""
    n = _shift(s, q)
    z0 = 0.0
    z1 = 0.0
    z2 = 0.0
    for k in range(n):
        x = q + k
        lx = math.log(x)
        t = (x / q) ** (-s)
        z0 += t
        z1 -= lx * t
        z2 += lx * lx * t
        if t < 1e-17 * z0:  # see hurwitz_zeta_scaled
            return z0, z1, z2
    a = q + n
    la = math.log(a)
    apow = (a / q) ** (-s) if n > 0 else 1.0  # pow(1, y) = 1 exactly (C99)
    # a^{1-s}/(s-1)
    sm1 = s - 1.0
    t = a * apow
    z0 += t / sm1
    z1 += t * (-la / sm1 - 1.0 / (sm1 * sm1))
    z2 += t * (la * la / sm1 + 2.0 * la / (sm1 * sm1) + 2.0 / (sm1 * sm1 * sm1))
    # a^{-s}/2
    z0 += 0.5 * apow
    z1 -= 0.5 * la * apow
    z2 += 0.5 * la * la * apow
    # Σ c_j P_j(s) a^{-s-2j+1}, P_j = (s)_{2j-1}
    p0 = s
    p1 = 1.0
    p2 = 0.0
    term_pow = apow / a
    for j in range(8):
        c = _EM[j] * term_pow
        if s > 1.0:  # stop once this and every later increment is negligible: see the docstring
            h = la + 2.0 * j + 2.0
            if abs(c) * p0 * h * h < _NEGLIGIBLE * min(z0, -z1, z2):
                return z0, z1, z2
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


@kernel(fastmath=False)
def log_hurwitz_zeta_vec(s: float, q: np.ndarray) -> np.ndarray:
    out = np.empty(q.size)
    for i in range(q.size):
        out[i] = log_hurwitz_zeta(s, q[i])
    return out
