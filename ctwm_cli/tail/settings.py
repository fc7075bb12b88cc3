"""The audit's settings and their checks (separate from the computation, as scipy's ``_bootstrap_iv``)."""

from __future__ import annotations

import math

from ..checks import check_choice, check_range
from ..errors import UsageError
from ..results import ToDict, result
from ..seeds import new_seed
from .crosscheck import PACKAGES as CROSS_CHECK_PACKAGES

#: default floor of the x_min scan: candidates leaving fewer tail points are not considered. Separate
#: from ``min_tail`` (Assumption 3.3): a KS-optimal cutoff with a shorter tail is found and reported.
SCAN_FLOOR = 10
#: level of each preferred family's own fit check (issue 26): p_gof_F below it turns a decisive verdict
#: into ``inconclusive``. Its cost under a correctly specified family is exactly this share of the
#: decisive verdicts; see README "Fit checks" for the level chosen and the rates measured.
FIT_LEVEL = 0.05


@result
class AuditSettings(ToDict):
    discrete: bool
    xmin: float | None
    bootstrap: int
    min_tail: int
    p_star: float
    z_star: float
    seed: int
    scan_floor: int = SCAN_FLOOR
    xmin_range: tuple[float, float] | None = None
    uncertainty: int = 0
    cross_check: str | None = None
    power: int = 0
    xmax: float | None = None
    fit_check: bool = True  # False: Definition 3.4 as published (and the calibrated rule without the check)
    fit_level: float = FIT_LEVEL
    check_all: bool = False  # True: every alternative family's own fit check, not only the rule pair's

    @classmethod
    def checked(cls, *, discrete: bool = True, xmin: float | None = None, bootstrap: int = 1000, min_tail: int = 100,
                p_star: float = 0.10, z_star: float = 1.96, seed: int | None = None, scan_floor: int = SCAN_FLOOR,
                xmin_range: tuple[float, float] | None = None, uncertainty: int = 0, cross_check: str | None = None,
                power: int = 0, xmax: float | None = None, fit_check: bool = True, fit_level: float = FIT_LEVEL,
                check_all: bool = False, calibrate: int = 0, level: float = 0.05,
                jobs: int | None = None) -> AuditSettings:
        """Every audit option checked once (:func:`validate`, including the run's ``calibrate``, ``level`` and
        ``jobs``, which are not settings) and normalised: a seed drawn when ``None``, ``xmin_range`` a tuple.
        :func:`~ctwm_cli.tail.audit.audit_many` given these settings re-checks nothing."""
        validate(bootstrap=bootstrap, min_tail=min_tail, p_star=p_star, z_star=z_star, jobs=jobs, xmin=xmin,
                 discrete=discrete, seed=seed, calibrate=calibrate, level=level, scan_floor=scan_floor,
                 xmin_range=xmin_range, uncertainty=uncertainty, cross_check=cross_check, power=power, xmax=xmax,
                 fit_level=fit_level)
        return cls(discrete=bool(discrete), xmin=xmin, bootstrap=bootstrap, min_tail=min_tail, p_star=p_star,
                   z_star=z_star, seed=new_seed() if seed is None else int(seed), scan_floor=scan_floor,
                   xmin_range=tuple(xmin_range) if xmin_range is not None else None, uncertainty=uncertainty,
                   cross_check=cross_check, power=power, xmax=xmax, fit_check=bool(fit_check),
                   fit_level=fit_level, check_all=bool(check_all))

    @property
    def floor(self) -> int:
        """The scan's floor: candidate cutoffs leave at least this many points (never above min_tail)."""
        return min(self.scan_floor, self.min_tail)


def validate(*, bootstrap: int = 0, min_tail: int = 100, p_star: float = 0.10, z_star: float = 1.96,
             jobs: int | None = None, xmin: float | None = None, discrete: bool = True, seed: int | None = None,
             calibrate: int = 0, level: float = 0.05, scan_floor: int = SCAN_FLOOR,
             xmin_range: tuple[float, float] | None = None, uncertainty: int = 0,
             cross_check: str | None = None, power: int = 0, xmax: float | None = None,
             fit_level: float = FIT_LEVEL) -> None:
    """Check the audit's parameters (the CLI calls this before reading any trace)."""
    _validate(bootstrap, min_tail, p_star, z_star, jobs, xmin)
    check_range("fit_level", fit_level, lo=0, hi=1, lo_open=True, hi_open=True)
    if discrete and xmin is not None and xmin != math.floor(xmin):
        raise UsageError(f"xmin must be an integer for a discrete fit, got {xmin} "
                         "(set discrete=False, a continuous fit, for real-valued cutoffs)", params=("xmin", "discrete"))
    if seed is not None:
        check_range("seed", seed, lo=0)
    check_range("calibrate", calibrate, lo=0)
    check_range("level", level, lo=0, hi=0.5, lo_open=True, hi_open=True)
    if cross_check is not None:
        check_choice("cross_check", cross_check, CROSS_CHECK_PACKAGES)
    if xmax is not None:
        _check_xmax(xmax, xmin, calibrate=calibrate, uncertainty=uncertainty, power=power, cross_check=cross_check)
    check_range("power", power, lo=0)
    check_range("uncertainty", uncertainty, lo=0)
    check_range("scan_floor", scan_floor, lo=2)
    if xmin_range is not None:
        lo, hi = xmin_range
        if not (0 < lo <= hi):
            raise UsageError(f"xmin_range must be (lo, hi) with 0 < lo <= hi, got ({lo:g}, {hi:g})",
                             params=("xmin_range",))
        if xmin is not None:
            raise UsageError("xmin_range restricts the scan; it cannot be combined with a fixed xmin",
                             params=("xmin_range", "xmin"))


def _validate(bootstrap: int, min_tail: int, p_star: float, z_star: float, jobs: int | None,
              xmin: float | None) -> None:
    check_range("bootstrap", bootstrap, lo=0)
    check_range("min_tail", min_tail, lo=1)
    check_range("p_star", p_star, lo=0, hi=1, lo_open=True, hi_open=True)
    check_range("z_star", z_star, lo=0, lo_open=True)
    if jobs is not None:
        check_range("jobs", jobs, lo=1)
    if xmin is not None:
        check_range("xmin", xmin, lo=0, lo_open=True)


def _check_xmax(xmax: float, xmin: float | None, **unsupported) -> None:
    if not xmax > 0 or (xmin is not None and not xmax > xmin):
        raise UsageError(f"xmax must be > 0 and > xmin, got {xmax:g}", params=("xmax", "xmin"))
    used = [k for k, v in unsupported.items() if v]
    if used:
        raise UsageError(f"xmax supports only the doubly truncated power-law fit, not {', '.join(used)}",
                         params=("xmax",))
