"""The audit's decision rule (paper Definition 3.4 under Assumption 3.3; DESIGN "The audit")."""

from __future__ import annotations

import math

from ..common.results import ToDict, result
from ..common.vocabulary import INCONCLUSIVE, LOGNORMAL, TPL
from ..common.vocabulary import VERDICTS as VERDICTS  # re-exported


@result
class Verdict(ToDict):
    verdict: str
    reason: str
    rule: str  # "paper" (Definition 3.4) or "calibrated"
    assumption_3_3: bool
    decidable: bool = True  # False: the tail cannot tell the families apart (too few values, a fit at a bound)

    # In a notebook ``r.verdict == "inconclusive"`` reads as the word it prints; two Verdicts compare field
    # by field. Equal objects share the word, so hashing the word keeps hash and == consistent.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.verdict == other
        if isinstance(other, Verdict):
            return (self.verdict, self.reason, self.rule, self.assumption_3_3, self.decidable) == (
                other.verdict, other.reason, other.rule, other.assumption_3_3, other.decidable)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.verdict)

    def __str__(self) -> str:
        return self.verdict


def paper_rule(
    *,
    n_tail: int | None,
    lam: float,
    sigma: float,
    p_gof: float,
    min_tail: int,
    p_star: float,
    z_star: float,
    distinct: int | None = None,
    fit_problem: str | None = None,
) -> Verdict:
    """Definition 3.4: ``tpl-compatible`` iff p_gof >= p*, Λ > 0 and |Λ/σ| >= z*;
    ``lognormal-compatible`` iff Λ < 0 and |Λ/σ| >= z*; otherwise ``inconclusive``.
    Assumption 3.3 (n_tail >= min_tail, 0 < σ < ∞) must hold, else ``inconclusive``.

    Two more conditions make Λ meaningless and the verdict ``inconclusive`` (``decidable = False``):
    a tail with fewer than three ``distinct`` values (any two-parameter family can put the observed
    mass on two points, so both reach the same maximum), and a ``fit_problem`` — the TPL or the
    log-normal fit stopped at an artificial bound, so Λ does not compare two maxima."""
    if n_tail is None:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                       reason=f"no x_min leaves {min_tail} observations with two distinct values in the tail")
    if n_tail < min_tail:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                       reason=f"tail of {n_tail} points < {min_tail} (Assumption 3.3 fails)")
    if distinct is not None and distinct < 3:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=True, decidable=False,
                       reason=f"the tail has {distinct} distinct values: fewer than 3 cannot tell the families apart")
    if fit_problem is not None:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=True, decidable=False, reason=fit_problem)
    if not (sigma > 0 and math.isfinite(sigma)):
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=False,
                       reason="Assumption 3.3 fails: sigma_LR is not in (0, inf)")
    z = lam / sigma
    if abs(z) < z_star:
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=True,
                       reason=f"no significant preference between TPL and log-normal (|z| = {abs(z):.2f} < {z_star:g})")
    if lam < 0:
        return Verdict(verdict=LOGNORMAL, rule="paper", assumption_3_3=True,
                       reason=f"log-normal preferred (z = {z:.2f})")
    if math.isnan(p_gof):
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=True,
                       reason=f"TPL preferred (z = {z:.2f}) but p_gof was not computed (bootstrap of 0 replicates)")
    if not (p_gof >= p_star):
        return Verdict(verdict=INCONCLUSIVE, rule="paper", assumption_3_3=True,
                       reason=f"TPL preferred (z = {z:.2f}) but the power-law tail is rejected by the bootstrap "
                              f"(p_gof = {p_gof:.3f} < {p_star:g})")
    return Verdict(verdict=TPL, rule="paper", assumption_3_3=True,
                   reason=f"TPL preferred (z = {z:.2f}) and the tail passes the bootstrap (p_gof = {p_gof:.3f})")


#: the family a decisive verdict says fits
PREFERRED = {TPL: "truncated_power_law", LOGNORMAL: "lognormal"}
_SHORT = {"truncated_power_law": "TPL", "lognormal": "log-normal"}


def fit_checked(verdict: Verdict, pvalues: dict[str, float], level: float, z: float, *,
                mixture_z: dict[str, float] | None = None, z_star: float = 1.96,
                rival_z: dict[str, dict[str, float]] | None = None) -> Verdict:
    """A decisive ``verdict`` stands only if the family it prefers passes its own bootstrap goodness of
    fit (:mod:`~ctwm_cli.tail.fitcheck`) at ``level``, the two-power-law mixture does not beat it
    (``mixture_z``: family -> Vuong z of the mixture against it; >= ``z_star`` beats it), and it beats
    every rival of as many or fewer parameters (``rival_z``: family -> rival -> Vuong z in the preferred
    family's favour, NaN when the two could not be compared) by z >= ``z_star`` — the TPL the stretched
    exponential as well as the log-normal (issue 44: ceil(5·Weibull(0.3)) was called tpl-compatible with
    its own fit passing, while the stretched exponential fitted it better); else ``inconclusive`` with the
    reason, naming each family it could not exclude. The rule's name gains ``+fit-check`` either way, so the
    result says which rule decided. A check that was not run (no bootstrap, an unfittable family) leaves no
    decisive verdict: nothing says the family fits."""
    rule = verdict.rule + "+fit-check"
    name = PREFERRED.get(verdict.verdict)
    if name is None:
        return Verdict(verdict=verdict.verdict, reason=verdict.reason, rule=rule,
                       assumption_3_3=verdict.assumption_3_3, decidable=verdict.decidable)
    other = _SHORT[PREFERRED[LOGNORMAL if verdict.verdict == TPL else TPL]]
    p = pvalues.get(name, math.nan)
    head = f"{_SHORT[name]} preferred over {other} (z = {z:.2f})"
    if math.isnan(p):
        return Verdict(verdict=INCONCLUSIVE, rule=rule, assumption_3_3=verdict.assumption_3_3,
                       reason=f"{head} but its own fit was not checked (bootstrap of 0 replicates)")
    if p < level:
        return Verdict(verdict=INCONCLUSIVE, rule=rule, assumption_3_3=verdict.assumption_3_3,
                       reason=f"{head} but rejected itself: p_gof_{name} = {p:.3f} < {level:g}")
    zm = (mixture_z or {}).get(name, math.nan)
    if zm >= z_star:
        return Verdict(verdict=INCONCLUSIVE, rule=rule, assumption_3_3=verdict.assumption_3_3,
                       reason=f"{head} but a mixture of two power laws fits better than either (z = {zm:.2f} against "
                              f"the {_SHORT[name]})")
    open_ = unexcluded((rival_z or {}).get(name, {}), z_star)
    if open_:
        return Verdict(verdict=INCONCLUSIVE, rule=rule, assumption_3_3=verdict.assumption_3_3,
                       reason=f"{head} but does not exclude the {open_}")
    return Verdict(verdict=verdict.verdict, rule=rule, assumption_3_3=verdict.assumption_3_3,
                   reason=f"{verdict.reason}; its own fit passes (p_gof_{name} = {p:.3f})"
                          + (f" and it beats the {', '.join(rival_z[name])} too" if (rival_z or {}).get(name) else ""))


def unexcluded(zs: dict[str, float], z_star: float) -> str:
    """The rivals whose Vuong z (in the preferred family's favour) falls short of ``z_star``, as text
    (``"stretched_exponential (z = 0.41 < 1.96)"``), or ``""``."""
    out = [f"{r} (z = {z:.2f} < {z_star:g})" if z == z else f"{r} (not compared: a fit failed on the tail)"
           for r, z in zs.items() if not z >= z_star]
    return ", ".join(out)
