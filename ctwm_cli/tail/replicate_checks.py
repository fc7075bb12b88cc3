"""The fit check of the verdict a user gets, applied to one simulated replicate (``--power``, issue 44).

``--power`` asks how often the audit would reach the right verdict on more data. The verdict a user gets
is the rule *and* :func:`~.verdict.fit_checked`: the preferred family passes its own bootstrap KS test,
beats its rivals (:func:`~.families.rivals`) by z*, and the two-power-law mixture does not beat it. Each
replicate therefore fits every family of the registry on its tail, runs the same comparisons as the audit
(:func:`~.matrix.compare_fits`) and asks :func:`~.verdict.fit_checked` itself whether a decisive verdict
for each family of the rule's pair would stand. Its own KS test is a plug-in: the replicate's KS distance
of the refitted family against the observed audit's null distribution of that distance, scaled by
1/sqrt(multiple) (the n^-1/2 law), as the replicate's p_gof already is; a fresh bootstrap per replicate
would cost B times more.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.results import result
from ..common.vocabulary import LOGNORMAL, TPL
from .families import ALTERNATIVES, RULE_PAIR, fit_all, ks_distance
from .family_base import Tail, TailFit
from .matrix import compare_fits, rival_z
from .powerlaw import PowerLawFit
from .verdict import Verdict, fit_checked

_WORD = {"truncated_power_law": TPL, "lognormal": LOGNORMAL}


@result
class CheckSpec:
    """What a replicate needs to apply the user's fit check (picklable)."""

    null_d: dict[str, np.ndarray]  # family -> the observed fit check's null D (scaled to the replicate's size)
    fit_level: float
    z_star: float


def checks_pass(tail: Tail, pl: PowerLawFit, fitted: dict[str, TailFit], starts: dict[str, dict[str, float]],
                spec: CheckSpec, z: float) -> tuple[bool, bool]:
    """Would a decisive verdict for the TPL, and for the log-normal, survive the user's fit check here?
    ``fitted``: the replicate's fits already made (the rule's pair); the other families are fitted here."""
    rest = tuple(n for n in ALTERNATIVES if n not in fitted)
    fits = {**fitted, **fit_all(tail, pl, starts=starts, names=rest, errors=False)}
    comparisons = compare_fits(tail, pl, fits, z_star=spec.z_star)
    mixture_z = {c.second: c.z for c in comparisons if c.first == "power_law_mixture"}
    pvalues = {}
    for name in RULE_PAIR:
        null = spec.null_d.get(name)
        f = fits[name]
        if null is None or not null.size or not math.isfinite(f.loglik):
            continue
        d = ks_distance(f, tail)
        pvalues[name] = float((1 + np.sum(null >= d)) / (null.size + 1))
    rivals = rival_z(fits, comparisons)
    out = []
    for name in RULE_PAIR:
        v = Verdict(verdict=_WORD[name], reason="", rule="replicate", assumption_3_3=True)
        checked = fit_checked(v, pvalues, spec.fit_level, z, mixture_z=mixture_z, z_star=spec.z_star,
                              rival_z=rivals)
        out.append(checked.verdict == _WORD[name])
    return out[0], out[1]
