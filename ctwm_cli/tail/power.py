"""How much more data would decide? (``ctwm audit --power R``)

For an ``inconclusive`` verdict: R data sets are drawn from the fitted log-normal and R from the fitted
truncated power law at 1x, 2x, 4x, 8x and 16x the observed size (body resampled from the data below
x_min, tail drawn exactly from the fitted family — the calibration's simulation at other sizes), the
whole pipeline is re-run on each (x_min re-selected, fits, Vuong's z, the rule), and the power of a
rule at a multiple is the share of replicates where it reaches the *right* decisive verdict
(``lognormal-compatible`` on log-normal data, ``tpl-compatible`` on TPL data) — the verdict the user
gets: with the fit check (the default) a replicate's decisive call counts only if it survives
:func:`~.verdict.fit_checked` on that replicate (its own KS test as a plug-in, its rivals, the mixture;
:mod:`.replicate_checks`), and the calibrated rule's log-normal call also needs z below the a quantile
of z under the fitted mixture of two power laws when the audit's calibration has that null (issue 44:
the power before left both out and overstated what the user would get).

- paper rule: Definition 3.4. Its TPL call needs p_gof >= p*; a replicate's p_gof is read off the
  observed bootstrap null of D scaled by 1/sqrt(multiple) (the KS statistic's n^-1/2 law; an
  approximation). Without a bootstrap (B = 0) the paper rule cannot call TPL at any size.
- calibrated rule (with ``--calibrate``): the thresholds at each multiple are the (1 - a) quantile of
  z over the log-normal replicates and the a quantile over the TPL replicates *of that multiple*, so
  no extra simulation is needed; using the same replicates for threshold and power biases the power
  slightly upwards at small R. Its TPL call also needs the fast double bootstrap's p <= a, as the audit's
  (``calibrate.fast_double_bootstrap``): each log-normal replicate draws one second-level data set from its
  own refit, so the log-normal cells cost twice as much (the power left that out before and overstated the
  calibrated TPL call's power).

Each cell carries a Monte Carlo 95% interval (``interval``): Wilson's for the paper rule (a binomial
share); for the calibrated rule a bootstrap over the cell's replicates of every generator, since its
thresholds are estimated from the same replicates and add their own noise. ``falls`` names the
multiples where a curve drops below the previous one beyond Monte Carlo error (:func:`_falls`). The paper
rule's TPL curve can fall for a real reason: its TPL call needs the *pure* power law to pass p_gof,
and the more data a truncated power law gives, the surer that test rejects it (Definition 3.4 as
written). The calibrated rule has no such condition; measured at R = 200 its curves rise within
Monte Carlo error (README "How much more data?").

A curve's ``needed`` is the smallest multiple from which on its power stays >= ``target`` (0.8); the
analysis's ``needed`` asks that of *both* generators — whichever family is true, the audit would then
decide it — or is ``None`` (beyond the largest multiple). R = 100 per cell (the suggested value) gives
each power a Monte Carlo standard error of at most 0.05 and a usable 5% quantile for the calibrated
thresholds; at R = 40 one lognormal sample (n = 2e4) read 55% power at 16x where R = 100 read 35% and
30 fresh 16x audits gave 23% [12%, 41%] (``benchmarks/power_check.py``).
Each (generator, multiple) cell has its own child seeds (stream 3 of the audit's seed).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..common.results import ToDict, result
from ..runtime.parallel import run_tasks
from ..runtime.progress import ProgressCallback
from ..stats.intervals import wilson_interval
from .calibrate import GENERATORS, MIXTURE, replicate_rows, simulation_tasks
from .families import RULE_PAIR
from .powerlaw import Histogram
from .replicate_checks import CheckSpec
from .verdict import INCONCLUSIVE, LOGNORMAL, TPL, VERDICTS

MULTIPLES = (1, 2, 4, 8, 16)
MC_RESAMPLES = 200  # bootstrap resamples of a calibrated cell's Monte Carlo interval
TARGET = 0.8
STREAM = 3
RIGHT = {"lognormal": LOGNORMAL, "truncated_power_law": TPL}


@result
class PowerCurve(ToDict):
    generator: str  # the family the data were drawn from
    rule: str  # "paper" or "calibrated"
    power: dict[int, float]  # multiple of the observed n -> share of right decisive verdicts
    needed: int | None  # smallest multiple with power >= target, None beyond the largest
    interval: dict[int, tuple[float, float]] | None = None  # Monte Carlo 95% interval of each cell's power
    falls: tuple[int, ...] = ()  # multiples where the power drops beyond both cells' intervals


@result
class PowerAnalysis(ToDict):
    replicates: int
    multiples: tuple[int, ...]
    target: float
    seed: int
    curves: list[PowerCurve]
    needed: dict[str, int | None]  # rule -> smallest multiple where both generators reach the target
    fit_check: bool = True  # the powers are those of the fit-checked verdict (the audit's), not the bare rule


def _needed(power: dict[int, float], target: float) -> int | None:
    """The smallest multiple from which on the power stays >= target (robust to one noisy cell)."""
    ms = sorted(power)
    return next((m for i, m in enumerate(ms) if all(power[k] >= target for k in ms[i:])), None)


def power_analysis(hist: Histogram, audit_result, *, replicates: int = 100, multiples: tuple[int, ...] = MULTIPLES,
                   target: float = TARGET, calibrated: bool = False, level: float = 0.05, jobs: int | None = None,
                   progress: ProgressCallback | None = None) -> PowerAnalysis | None:
    """Power of the paper's (and, with ``calibrated``, the calibrated) rule at larger sizes. ``None``
    when the verdict is decisive already, or there is no tail (or no Assumption 3.3) to simulate from."""
    r = audit_result
    pl, s = r.power_law, r.settings
    if (r.verdict.verdict != INCONCLUSIVE or pl is None or pl.n_tail < s.min_tail
            or not all(g in r.alternatives for g in GENERATORS)):
        return None
    mix = r.alternatives.get(MIXTURE)
    # the calibrated rule's second null of a log-normal call (calibrate.py), simulated when the user's has it
    gens = (*GENERATORS, MIXTURE) if calibrated and mix is not None and mix.limit is None and math.isfinite(
        mix.loglik) else GENERATORS
    streams = np.random.SeedSequence(s.seed, spawn_key=(STREAM,)).spawn(len(gens) * len(multiples))
    tasks, owner = [], []
    for k, (g, m) in enumerate((g, m) for g in gens for m in multiples):
        # the log-normal null's second level: the calibrated TPL call needs its fast double bootstrap p too
        t = simulation_tasks(hist, r, g, streams[k].spawn(replicates), multiple=m, checks=_check_spec(r, m),
                             second_level=calibrated and g == "lognormal")
        tasks += t
        owner += [(g, m)] * len(t)
    sizes = [len(t.seeds) * (2 if t.second_level else 1) for t in tasks]
    rows = run_tasks(replicate_rows, tasks, jobs=jobs, sizes=sizes, progress=progress)
    cell = {key: np.concatenate([x for x, o in zip(rows, owner, strict=True) if o == key])
            for key in {o for o in owner}}
    curves = []
    for g in GENERATORS:
        hits = {m: int(np.sum((cell[(g, m)][:, 2] == VERDICTS.index(RIGHT[g])) & _passes(cell[(g, m)], g)))
                for m in multiples}
        paper = {m: hits[m] / len(cell[(g, m)]) for m in multiples}
        iv = {m: wilson_interval(hits[m], len(cell[(g, m)])) for m in multiples}
        curves.append(PowerCurve(generator=g, rule="paper", power=paper, needed=_needed(paper, target), interval=iv,
                                 falls=_falls(paper, iv, multiples)))
    if calibrated:
        rng = np.random.default_rng(np.random.SeedSequence(s.seed, spawn_key=(STREAM, 1)))
        for g in GENERATORS:
            cal = {m: _calibrated_power(cell, g, m, level) for m in multiples}
            iv = {m: _calibrated_interval(cell, g, m, level, rng) for m in multiples}
            curves.append(PowerCurve(generator=g, rule="calibrated", power=cal, needed=_needed(cal, target),
                                     interval=iv, falls=_falls(cal, iv, multiples)))
    needed = {}
    for rule in ("paper", "calibrated") if calibrated else ("paper",):
        both = [c for c in curves if c.rule == rule]
        worst = {m: min(c.power[m] for c in both) for m in multiples}
        needed[rule] = _needed(worst, target)
    return PowerAnalysis(replicates=replicates, multiples=tuple(multiples), target=target, seed=s.seed,
                         curves=curves, needed=needed, fit_check=r.settings.fit_check)


def _check_spec(r, m: int) -> CheckSpec | None:
    """The user's fit check at multiple m (None: the audit runs without it, ``fit_check=False``). Without
    a bootstrap the check has no null: no decisive verdict survives it, at any size, as in the audit."""
    if not r.settings.fit_check:
        return None
    null = {}
    for name, g in (r.fit_checks or {}).items():
        d = g.null_distribution[np.isfinite(g.null_distribution)]
        null[name] = d / math.sqrt(m)
    return CheckSpec(null_d=null, fit_level=r.settings.fit_level, z_star=r.settings.z_star)


def _passes(rows: np.ndarray, generator: str) -> np.ndarray:
    """Replicates where a decisive verdict for ``generator``'s family survives the user's fit check
    (every replicate when the audit has none: NaN columns)."""
    col = rows[:, 3 + RULE_PAIR.index(generator)]
    return np.ones(len(col), dtype=bool) if np.all(np.isnan(col)) else col == 1.0


def _falls(power: dict[int, float], interval: dict[int, tuple[float, float]],
           multiples: tuple[int, ...]) -> tuple[int, ...]:
    """The multiples whose power is below the previous multiple's beyond Monte Carlo error: the 95% interval
    of the difference (MOVER, Zou & Donner 2008: each cell's own interval half-widths on the side they
    bound, which is Newcombe's interval for two Wilson intervals) lies above 0. Non-overlap of the two cells'
    intervals, the test before, is a test at about 0.5%: it missed 0.90 [0.70, 0.97] -> 0.50 [0.35, 0.70]."""
    out = []
    for a, m in itertools.pairwise(sorted(multiples)):
        pa, pm, (la, _), (_, hm) = power[a], power[m], interval[a], interval[m]
        if all(math.isfinite(v) for v in (pa, pm, la, hm)) and pa - pm - math.hypot(pa - la, hm - pm) > 0:
            out.append(m)
    return tuple(out)


def _calibrated_interval(cell, generator: str, m: int, level: float,
                         rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of the calibrated power at m over resamples of both generators' replicates."""
    keys = [k for k in cell if k[1] == m]
    draws = []
    for _ in range(MC_RESAMPLES):
        boot = {k: cell[k][rng.integers(0, len(cell[k]), len(cell[k]))] for k in keys}
        draws.append(_calibrated_power(boot, generator, m, level))
    draws = np.asarray(draws)
    draws = draws[np.isfinite(draws)]
    if not draws.size:
        return math.nan, math.nan
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return float(lo), float(hi)


def _calibrated_power(cell, generator: str, m: int, level: float) -> float:
    """Share of ``generator``'s replicates at multiple m that the calibrated rule calls right, with the
    thresholds taken from both generators' replicates at m."""
    z_ln = cell[("lognormal", m)][:, 0]
    z_tpl = cell[("truncated_power_law", m)][:, 0]
    z_ln, z_tpl = z_ln[np.isfinite(z_ln)], z_tpl[np.isfinite(z_tpl)]
    if not (z_ln.size and z_tpl.size):
        return math.nan
    hi, lo = float(np.quantile(z_ln, 1 - level)), float(np.quantile(z_tpl, level))
    rows = cell[(generator, m)]
    z = rows[:, 0]  # a failed replicate (NaN z) is never a right call
    tpl, ln = z > hi, z < lo
    z2 = cell[("lognormal", m)][:, 5]
    if np.isfinite(z2).any():  # as the audit's calibrated rule: a TPL call needs the adjusted p <= level too
        tpl &= _adjusted_p(z_ln, z2[np.isfinite(z2)], z) <= level
    if (MIXTURE, m) in cell:  # a log-normal call also needs z below the mixture null's a quantile
        z_mix = cell[(MIXTURE, m)][:, 0]
        z_mix = z_mix[np.isfinite(z_mix)]
        ln &= z < float(np.quantile(z_mix, level)) if z_mix.size else False
    right = (tpl & ~ln) if generator == "truncated_power_law" else (ln & ~tpl)
    return float(np.mean(right & _passes(rows, generator)))


def _adjusted_p(z1: np.ndarray, z2: np.ndarray, z: np.ndarray) -> np.ndarray:
    """:func:`~.calibrate.fast_double_bootstrap` of every z at once (NaN z: NaN)."""
    p = np.mean(z1[None, :] >= z[:, None], axis=1)
    q = np.quantile(z2, 1.0 - p)
    out = np.mean(z1[None, :] >= q[:, None], axis=1)
    return np.where(np.isfinite(z), out, np.nan)
