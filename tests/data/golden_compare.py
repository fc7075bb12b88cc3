"""Compare a recomputed audit or scan with its golden record: what is decided exactly, floats to the precision
the method that computed them actually has.

Why not bit for bit: numpy's exp/log kernels differ by CPU (AVX-512 SIMD on one machine, glibc's scalar code on
another; ``NPY_DISABLE_CPU_FEATURES`` picks between them on one machine), and every fit follows them in its last
digits. The goldens in this directory were written on a machine with AVX-512; on an AVX2-only AMD EPYC the same
code gives the same x_min, n_tail, p-values, verdicts and reasons, while the L-BFGS-B fits move by up to 3e-5
relative, their standard errors and the fit checks' null distributions by up to 5e-4 (the spread measured between
the two machines is quoted beside each tolerance below). Bit-for-bit determinism is still tested, within one
machine (tests/test_audit_golden.py::test_same_seed_gives_the_same_bytes).

.ci/run repeats these tests with ``NPY_DISABLE_CPU_FEATURES`` set to every target in numpy's
``__cpu_dispatch__`` that ``__cpu_features__`` finds on the CPU. numpy 2.4 takes its dispatch targets' names there
(X86_V3, X86_V4, AVX512_ICL, AVX512_SPR on x86-64): a target the CPU lacks is accepted and changes nothing; a name
that is not a dispatch target (numpy 1.x's AVX2, AVX512F) is ignored with an ImportWarning that Python hides by
default; a baseline feature (X86_V2) makes ``import numpy`` raise RuntimeError. On the AVX2-only EPYC, disabling
X86_V3 leaves every output of these goldens bit-identical, as expected if float64 exp/log have SIMD kernels only
for AVX-512 there.

Every tolerance below is derived from the stopping rule of the code that computed the number:

* Decided (EXACT): every non-float (verdicts, reasons, flags, family names, counts, ``preferred``) and the floats
  that are data values or ratios of counts: x_min (a data value picked by the KS scan), x_max, n_tail, the
  bounds a fit sits on, the settings, and Monte Carlo p-values ((k+1)/(B+1): a count of replicates).
* The power law's MLE (REL_MLE = 1e-9): α̂ is closed-form (continuous) or Newton's root of the score equation
  converged to within 3e-15 (discrete; tests/test_tail_fits.py against a 40-digit root); its KS distance, loglik,
  standard error and the bootstrap's null KS values are explicit sums of exp/log of data. Only the rounding of
  exp/log moves them, by at most ~n·eps ≈ 2e-11 for n = 10^5 tail points (measured: 2.2e-14). Each bootstrap
  replicate's null value is taken at that replicate's own scanned x_min; a different x_min would be a different
  decision and moves the value by orders of magnitude more than this, so it fails as it should.
* L-BFGS-B's objective (REL_OBJECTIVE = 100·FTOL ≈ 2.2e-7): the optimiser (ctwm_cli/tail/lbfgsb.py, scipy's
  defaults) stops once one iteration lowers the negative log-likelihood by less than FTOL = 2.2e-9 of its size;
  with linear convergence at rate r the gap left is FTOL·r/(1-r), under 100·FTOL for r <= 0.99 (measured: 1.6e-12).
* L-BFGS-B's parameters (REL_PARAM = sqrt(REL_OBJECTIVE) ≈ 4.7e-4): near a minimum f - f* ≈ h·δθ²/2, so an
  objective known to a relative ε locates its argument only to ~sqrt(ε) (the square-root law of minimisation);
  the projected-gradient stop (GTOL = 1e-5) is no tighter where the gradient is taken by forward differences
  (stretched exponential). Measured: 2.9e-5 (stretched exponential's λ).
* Standard errors from the Hessian at θ̂ (REL_SE = 10·REL_PARAM): sqrt(diag H⁻¹) moves with θ̂, amplified by up
  to half H's condition number; this allows κ(H) <= 20 (correlated parameters: the (μ, σ) of a log-normal on a
  short tail, whose μ is barely identified). Measured: 4.5e-4 (the log-normal on the Pareto sample).
* KS distances of a family fitted by L-BFGS-B, their bootstrap null values and quantiles (ABS_KS = REL_PARAM,
  absolute): D = sup|F_n - F_θ̂| is a probability; it moves by sup|∂F/∂θ·δθ|, of the order of δθ/θ for these
  families' parameters, and each replicate re-fits data sampled with θ̂. Measured: 2.7e-5 (log-normal's nulls).
* Likelihood-ratio statistics (ABS = 4·REL_OBJECTIVE·max|ℓ| over the record's fits): a difference of two
  objectives (doubled in Wilks' 2Δℓ), each pinned to REL_OBJECTIVE of its size; θ̂ moves them only at second
  order since the gradient vanishes at both optima. Measured: 3.4e-8 absolute.
* Vuong's σ and z (REL_PARAM): first order in θ̂. Their p-value 2Φ(-|z|) and the nested test's chi-squared
  p-value (ABS_P = REL_PARAM/2, absolute): |dp/dz|·|z| = 2φ(z)|z| <= 0.49, so δp <= 0.49·δz/z. Measured: 2.3e-6.

So a verdict, x_min, count or Monte Carlo p-value that changes fails the comparison, and so does a fit that moves
by more than its method's precision; the 8th significant digit of an L-BFGS-B fit (1e-7 relative at most) moving
does not. The power law's own α̂ and KS, precise to ~1e-14 across CPUs, are held to 1e-9: their 8th digit moving
is a change of method, and fails (tests/test_golden_compare.py shows each on mutated copies of the goldens).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ctwm_cli.tail.lbfgsb import FTOL

REL_MLE = 1e-9
REL_OBJECTIVE = 100 * FTOL
REL_PARAM = math.sqrt(REL_OBJECTIVE)
REL_SE = 10 * REL_PARAM
ABS_KS = REL_PARAM
ABS_P = REL_PARAM / 2

# The families fitted by L-BFGS-B; the exponential is closed-form (REL_MLE).
LBFGSB_FAMILIES = ("truncated_power_law", "lognormal", "stretched_exponential", "power_law_mixture")

_HEX = re.compile(r"^-?0x[0-9a-f.]+p[-+]?\d+$")


@dataclass(frozen=True, slots=True)
class Tol:
    rel: float = 0.0
    abs: float = 0.0

    def holds(self, want: float, got: float) -> bool:
        if want == got or (math.isnan(want) and math.isnan(got)):
            return True
        return abs(want - got) <= max(self.rel * max(abs(want), abs(got)), self.abs)


EXACT = Tol()


def _lr(record: dict, parent: dict) -> Tol:
    """A likelihood-ratio statistic: REL_OBJECTIVE of the two objectives' sizes, doubled for Wilks' 2Δℓ; the
    largest |ℓ| of the record's fits stands for both (a replicate's fits are of the same tail size)."""
    js = record.get("json", {})
    fits = [*(js.get("alternatives") or {}).values(), js.get("power_law") or {}]
    lls = [abs(ll) for f in fits if isinstance(ll := f.get("loglik"), float) and math.isfinite(ll)]
    return Tol(abs=REL_OBJECTIVE * 4 * max(lls, default=0.0))


def _comparison_pvalue(record: dict, parent: dict) -> Tol:
    return EXACT if parent.get("method") == "monte-carlo" else Tol(abs=ABS_P)


# First match wins; paths are "json/..." and "nulls/..." (audits), "fit/...", "null/#" and "pvalue" (scans); a
# list index matches "#".
RULES: list[tuple[str, Tol | object]] = [
    ("json/comparisons/#/pvalue", _comparison_pvalue),
    ("json/comparisons/#/pvalue_asymptotic", Tol(abs=ABS_P)),
    ("json/comparisons/#/statistic", _lr),
    ("json/comparisons/#/sigma", Tol(rel=REL_PARAM)),
    ("json/comparisons/#/z", Tol(rel=REL_PARAM)),
    ("json/gof/null_lr/q95", _lr),
    ("nulls/gof_lr/#", _lr),
    *[(f"json/alternatives/{f}/loglik", Tol(rel=REL_OBJECTIVE)) for f in LBFGSB_FAMILIES],
    *[(f"json/alternatives/{f}/params/*", Tol(rel=REL_PARAM)) for f in LBFGSB_FAMILIES],
    *[(f"json/alternatives/{f}/se/*", Tol(rel=REL_SE)) for f in LBFGSB_FAMILIES],
    *[(f"json/fit_checks/{f}/statistic", Tol(abs=ABS_KS)) for f in LBFGSB_FAMILIES],
    *[(f"json/fit_checks/{f}/null_quantiles/*", Tol(abs=ABS_KS)) for f in LBFGSB_FAMILIES],
    *[(f"nulls/{f}/#", Tol(abs=ABS_KS)) for f in LBFGSB_FAMILIES],
    ("json/uncertainty/se/*", Tol(rel=REL_MLE)),  # spreads of the resampled fits (of decided x_min, n_tail)
    ("*xmin*", EXACT),
    ("*xmax", EXACT),
    ("*n_tail", EXACT),
    ("*/at_bound/*", EXACT),
    ("json/settings/*", EXACT),
    ("*level", EXACT),
    ("*share_zero", EXACT),
    ("*pvalue", EXACT),
    ("*", Tol(rel=REL_MLE)),
]


def tolerance(path: str, record: dict, parent: dict) -> Tol:
    path = re.sub(r"/\d+(?=/|$)", "/#", path)
    for pattern, rule in RULES:
        if fnmatchcase(path, pattern):
            return rule if isinstance(rule, Tol) else rule(record, parent)
    raise AssertionError(f"no rule for {path}")  # unreachable: the last rule matches everything


def unhex(obj):
    """A golden record with its hex floats (``float.hex()``) read back as floats."""
    if isinstance(obj, dict):
        return {k: unhex(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unhex(v) for v in obj]
    if isinstance(obj, str) and _HEX.match(obj):
        return float.fromhex(obj)
    return obj


def mismatches(want: dict, got: dict) -> list[str]:
    """Every difference between a golden record and a recomputed one that its tolerance does not allow, one
    line each (path, golden value, new value, and the relative change for floats); [] when they agree."""
    want, got = unhex(want), unhex(got)
    out: list[str] = []
    _walk(want, got, "", want, {}, out)
    return out


def _walk(want, got, path: str, record: dict, parent: dict, out: list[str]) -> None:
    where = path.lstrip("/") or "<record>"
    if isinstance(want, dict) and isinstance(got, dict):
        if want.keys() != got.keys():
            out.append(f"{where}: keys {sorted(want.keys() ^ got.keys())} only on one side")
        for k in sorted(want.keys() & got.keys()):
            _walk(want[k], got[k], f"{path}/{k}", record, want, out)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{where}: {len(want)} items in the golden, {len(got)} now")
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            _walk(w, g, f"{path}/{i}", record, parent, out)
    elif type(want) is float and type(got) is float:
        if not tolerance(where, record, parent).holds(want, got):
            rel = abs(want - got) / max(abs(want), abs(got)) if math.isfinite(want - got) else math.inf
            out.append(f"{where}: {want!r} -> {got!r} (relative {rel:.1e})")
    elif type(want) is not type(got) or want != got:
        out.append(f"{where}: {want!r} -> {got!r}")
