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
* Vuong's σ (REL_PARAM, relative and absolute) and z (REL_PARAM·(1 + 1/σ)): first order in θ̂, σ by an absolute
  amount (see _vuong_rel_z). Their p-value 2Φ(-|z|) and the nested test's chi-squared
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


def _lr(record: dict, parent: dict, path: str = "") -> Tol:
    """A likelihood-ratio statistic: REL_OBJECTIVE of the two objectives' sizes, doubled for Wilks' 2Δℓ; the
    largest |ℓ| of the record's fits stands for both (a replicate's fits are of the same tail size)."""
    js = record.get("json", {})
    fits = [*(js.get("alternatives") or {}).values(), js.get("power_law") or {}]
    lls = [abs(ll) for f in fits if isinstance(ll := f.get("loglik"), float) and math.isfinite(ll)]
    return Tol(abs=REL_OBJECTIVE * 4 * max(lls, default=0.0))


def _vuong_rel_z(parent: dict) -> float:
    """Vuong's z = sqrt(n)·mean/σ, relative: σ is the spread of the per-point log-likelihood differences, and each
    point's difference moves by ∂ℓ/∂θ·δθ, of order REL_PARAM *absolute* however small σ is (two families that
    nearly agree on the tail, the log-normal and the stretched exponential on blackouts: σ = 0.062), so z moves by
    REL_PARAM·(1 + 1/σ) relative. Measured between an AVX-512 and an AVX2 machine: 1.3e-3 at σ = 0.062."""
    sigma = parent.get("sigma")
    return REL_PARAM * (1 + 1 / sigma) if isinstance(sigma, float) and sigma > 0 else REL_PARAM


def _comparison_pvalue(record: dict, parent: dict, path: str) -> Tol:
    """2Φ(-|z|) moves by 2φ(z)·δz <= 0.8·δz."""
    if parent.get("method") == "monte-carlo":
        return EXACT
    z = abs(parent.get("z") or 0.0)
    return Tol(abs=ABS_P + 0.8 * z * _vuong_rel_z(parent))


def _comparison_log_pvalue(record: dict, parent: dict, path: str) -> Tol:
    """log 2Φ(-|z|) moves by the Mills ratio φ(z)/Φ(-|z|) <= 1 + |z| times δz; for the nested Monte Carlo test it is
    the log of the asymptotic chi-squared p-value (tail/compare.py), which moves by ABS_P/p."""
    if parent.get("method") == "monte-carlo":
        pa = parent.get("pvalue_asymptotic")
        return Tol(abs=ABS_P / pa) if isinstance(pa, float) and pa > 0 else Tol(rel=REL_PARAM)
    z = abs(parent.get("z") or 0.0)
    return Tol(abs=ABS_P + (1 + z) * z * _vuong_rel_z(parent))


def _comparison_z(record: dict, parent: dict, path: str) -> Tol:
    return Tol(rel=_vuong_rel_z(parent))


def _identified(record: dict, path: str) -> tuple[float, float] | None:
    """(θ̂, its standard error) of the parameter at json/alternatives/FAMILY/{params,se}/NAME."""
    parts = path.split("/")
    fit = ((record.get("json") or {}).get("alternatives") or {}).get(parts[2]) or {}
    theta, se = (fit.get("params") or {}).get(parts[4]), (fit.get("se") or {}).get(parts[4])
    return (theta, se) if isinstance(theta, float) and isinstance(se, float) and math.isfinite(se) else None


def _param(record: dict, parent: dict, path: str) -> Tol:
    """REL_PARAM, or where the likelihood is flat along θ, the square-root law in absolute terms: an objective known
    to ε = REL_OBJECTIVE·|ℓ| locates θ to se·sqrt(2ε), se = sqrt((H⁻¹)_θθ) (the log-normal's μ on a power-law tail:
    μ = -64 ± 154, where the family tends to its power-law limit; moved by 7.8e-4 relative between CPUs)."""
    pair = _identified(record, path)
    ll = abs(((record["json"].get("alternatives") or {}).get(path.split("/")[2]) or {}).get("loglik") or 0.0)
    return Tol(rel=REL_PARAM, abs=pair[1] * math.sqrt(2 * REL_OBJECTIVE * ll) if pair else 0.0)


def _se(record: dict, parent: dict, path: str) -> Tol:
    """REL_SE; where a parameter's standard error exceeds its own size it is not identified (the μ = -64 ± 154
    above), and the fit's SEs, from the curvature of a flat valley, are compared to their order of magnitude only
    (rel 0.5; moved 16% between CPUs)."""
    parts = path.split("/")
    fit = ((record.get("json") or {}).get("alternatives") or {}).get(parts[2]) or {}
    pairs = [_identified(record, "/".join([*parts[:3], "se", name])) for name in fit.get("se") or {}]
    # one parameter not identified leaves H near-singular, so every SE of the fit moves (the TPL's α beside
    # λ = 2.9e-4 ± 6.1e-4 on the Pareto sample: 1.4% between numpy's SIMD and scalar kernels)
    flat = any(pair and pair[1] > abs(pair[0]) for pair in pairs)
    return Tol(rel=0.5) if flat else Tol(rel=REL_SE)


def _share_zero(record: dict, parent: dict, path: str) -> Tol:
    """The share of null LRs <= 1e-9 (tail/bootstrap.py): a replicate whose LR is within the LR's own precision
    (_lr) of that threshold may fall on either side, so each such replicate allows 1/B."""
    nulls = [v for v in (record.get("nulls") or {}).get("gof_lr") or [] if isinstance(v, float)]
    tol = _lr(record, parent).abs
    near = sum(1 for v in nulls if v != 0.0 and abs(v - 1e-9) <= tol)
    return Tol(abs=near / len(nulls)) if nulls else EXACT


# First match wins; paths are "json/..." and "nulls/..." (audits), "fit/...", "null/#" and "pvalue" (scans); a
# list index matches "#".
RULES: list[tuple[str, Tol | object]] = [
    ("json/comparisons/#/pvalue", _comparison_pvalue),
    ("json/comparisons/#/pvalue_asymptotic", Tol(abs=ABS_P)),
    ("json/comparisons/#/statistic", _lr),
    ("json/comparisons/#/log_pvalue", _comparison_log_pvalue),
    ("json/comparisons/#/sigma", Tol(rel=REL_PARAM, abs=REL_PARAM)),
    ("json/comparisons/#/z", _comparison_z),
    ("json/gof/null_lr/q95", _lr),
    ("nulls/gof_lr/#", _lr),
    *[(f"json/alternatives/{f}/loglik", Tol(rel=REL_OBJECTIVE)) for f in LBFGSB_FAMILIES],
    *[(f"json/alternatives/{f}/params/*", _param) for f in LBFGSB_FAMILIES],
    *[(f"json/alternatives/{f}/se/*", _se) for f in LBFGSB_FAMILIES],
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
    ("json/gof/null_lr/share_zero", _share_zero),
    ("*share_zero", EXACT),
    ("*pvalue", EXACT),
    ("*", Tol(rel=REL_MLE)),
]


def tolerance(path: str, record: dict, parent: dict) -> Tol:
    path = re.sub(r"/\d+(?=/|$)", "/#", path)
    for pattern, rule in RULES:
        if fnmatchcase(path, pattern):
            return rule if isinstance(rule, Tol) else rule(record, parent, path)
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
