"""The comparison matrix: every family of the registry fitted on one tail, every pair the audit compares
(Vuong's test for separate families, the nested test where one contains the other), and what a
verdict reads off it — the preferred family against each rival (:func:`~.families.rivals`)."""

from __future__ import annotations

import math

from ..runtime.parallel import single_blas_thread
from . import families as fam
from . import special
from .compare import Comparison, nested_power_law, vuong
from .family_base import TailFit
from .powerlaw import Histogram, PowerLawFit


def fit_alternatives(hist: Histogram, pl: PowerLawFit, *, z_star: float) -> tuple[dict[str, TailFit], list[Comparison]]:
    """Fit every alternative family of the registry on the power law's tail and run the likelihood-ratio
    tests it lists. The first comparison returned is TPL vs log-normal (the rule's Λ, σ)."""
    with single_blas_thread():  # 2-parameter optimisers: BLAS threads only spin (see ctwm_cli.runtime.parallel)
        tail = fam.Tail.of(hist, pl.xmin, pl.discrete)
        fits = fam.fit_all(tail, pl)
        return fits, compare_fits(tail, pl, fits, z_star=z_star)


def compare_fits(tail: fam.Tail, pl: PowerLawFit, fits: dict[str, TailFit], *, z_star: float) -> list[Comparison]:
    """The registry's Vuong tests (rule pair first) and its nested tests, on one tail."""
    every: dict[str, TailFit | PowerLawFit] = {"power_law": pl, **fits}
    logs = {name: fam.logpmf(f, tail.values) for name, f in every.items()}
    comparisons = [vuong(a, b, logs[a] - logs[b], tail.counts, z_star) for a, b in fam.vuong_pairs()]
    level = float(2 * special.ndtr(-z_star))
    comparisons += [nested_power_law(every[inner].loglik, every[outer].loglik, level)
                    for outer, inner in fam.nested_pairs()]
    return comparisons


def rival_z(fits: dict[str, TailFit], comparisons: list[Comparison]) -> dict[str, dict[str, float]]:
    """For each family a verdict can prefer: rival -> Vuong z in its favour (NaN: not compared). A rival
    whose fit stopped at a limit the preferred family contains (the stretched exponential at β = 0 is a
    power law, which the TPL and the log-normal both contain) is no separate family there and is left out,
    and so is the other family of the rule's pair: the rule itself decides between those two (the paper's
    by z*, the calibrated one by its simulated thresholds, which z* must not override)."""
    by_pair = {(c.first, c.second): c for c in comparisons if not c.nested}
    out: dict[str, dict[str, float]] = {}
    for name in fam.RULE_PAIR:
        zs = {}
        for r in fam.rivals(name):
            f = fits.get(r)
            if r in fam.RULE_PAIR or f is None or (f.limit is not None and f.limit in fam.REGISTRY[name].contains):
                continue
            c, sign = (by_pair[(name, r)], 1.0) if (name, r) in by_pair else (by_pair.get((r, name)), -1.0)
            zs[r] = sign * c.z if c is not None and math.isfinite(c.z) else math.nan
        out[name] = zs
    return out
