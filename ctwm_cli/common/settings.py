"""Options declared once (issue 43; ruff's ``#[option(default, value_type, example)]`` fields).

An option is one field of a settings dataclass: :func:`option` gives it its default and an
:class:`OptionSpec` (flag name(s), help, choices from :mod:`ctwm_cli.common.vocabulary`, its check, whether a
config file may set it). Everything else is generated from the fields: :meth:`Declared.checked` (every
option checked and normalised, errors naming the parameter as the library spells it), the CLI's options
(:mod:`ctwm_cli.cli.declared`), the ``ctwm.toml`` keys (:mod:`ctwm_cli.cli.check_config`, from the flags)
and the docs' option tables. Light on purpose (no numpy): ``ctwm audit --help`` builds its options here.

    >>> from ctwm_cli.common.settings import AuditSettings
    >>> AuditSettings.checked(seed=1).bootstrap
    1000
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from collections.abc import Callable
from typing import Any

from .checks import check_choice, check_range
from .errors import UsageError
from .results import ToDict, result
from .seeds import new_seed
from .vocabulary import CROSS_CHECK_PACKAGES

#: default floor of the x_min scan: candidates leaving fewer tail points are not considered. Separate
#: from ``min_tail`` (Assumption 3.3): a KS-optimal cutoff with a shorter tail is found and reported.
SCAN_FLOOR = 10
#: level of each preferred family's own fit check (issue 26): p_gof_F below it turns a decisive verdict
#: into ``inconclusive``. Its cost under a correctly specified family is exactly this share of the
#: decisive verdicts; see README "Fit checks" for the level chosen and the rates measured.
FIT_LEVEL = 0.05


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OptionSpec:
    """What one option field declares besides its default (see the module docstring).

    ``flags``: the CLI's spellings, the first long one the option's name (``"--discrete/--continuous"``
    for a boolean pair); none: a library-only parameter. ``check(name, value)`` raises a
    :class:`UsageError` naming ``name``; ``convert`` normalises a checked value (a seed drawn for
    ``None``); ``parse`` reads the flag's text (``LO:HI``) into the value. ``config``: whether a
    ``ctwm.toml`` entry may set it, ``reason`` why not. ``limit``: bounded by :mod:`ctwm_cli.common.limits`.
    ``deprecated``: old flag spellings, accepted with a warning; ``envvar``: an environment variable that
    sets it on the command line. ``minimum``: the least value, checked here and shown by ``--help`` as a
    range; ``limit`` may name the :mod:`ctwm_cli.common.limits` entry when it is not the option's own name;
    ``path``: a file the command reads (a config's value is admitted like its traces); ``hidden`` and
    ``show_default``: how ``--help`` shows it."""

    flags: tuple[str, ...] = ()
    help: str = ""
    choices: tuple[str, ...] | None = None
    check: Callable[[str, Any], Any] | None = None
    convert: Callable[[Any], Any] | None = None
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    config: bool = True
    reason: str = ""
    limit: bool | str = False
    deprecated: tuple[str, ...] = ()
    envvar: str | None = None
    minimum: float | None = None
    path: bool = False
    hidden: bool = False
    show_default: bool = True


#: the default of an option that must be given (``--out`` of ``ctwm world run``): Typer's ``...``
REQUIRED: Any = ...


def option(default: Any, **spec: Any) -> Any:
    """A settings field with ``default`` (:data:`REQUIRED`: none) and its :class:`OptionSpec` (``flags``,
    ``help``, ``choices`` ...)."""
    return dataclasses.field(default=default, metadata={"option": OptionSpec(**spec)})


@dataclasses.dataclass(frozen=True, slots=True)
class Declaration:
    """One declared option as generators read it: its field name, default, type and spec."""

    name: str
    default: Any
    type: Any
    spec: OptionSpec

    @property
    def flag(self) -> str | None:
        """The option's flag as errors and configs name it (its first long spelling), None if library-only."""
        longs = [f.split("/")[0] for f in self.spec.flags if f.startswith("--")]
        return longs[0] if longs else None


def in_range(**bounds: Any) -> Callable[[str, Any], Any]:
    """A ``check`` for :func:`option`: :func:`~ctwm_cli.common.checks.check_range` with these bounds."""
    return lambda name, value: check_range(name, value, **bounds)


def _close(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Declared:
    """Mixin of a settings dataclass whose fields are :func:`option` declarations."""

    __slots__ = ()
    #: how errors name the options' owner ("unknown audit option 'x'")
    WHAT: typing.ClassVar[str] = "option"

    @classmethod
    def declarations(cls) -> list[Declaration]:
        hints = typing.get_type_hints(cls)
        return [Declaration(f.name, f.default, hints[f.name], f.metadata["option"])
                for f in dataclasses.fields(cls) if "option" in f.metadata]  # type: ignore[arg-type]

    @classmethod
    def checked(cls, **values: Any) -> Any:
        """The settings from ``values`` (defaults for the rest), each checked by its declaration and
        normalised; then :meth:`related` checks the options that depend on each other."""
        decls = cls.declarations()
        names = [d.name for d in decls]
        for key in values:
            if key not in names:
                raise UsageError(f"unknown {cls.WHAT} {key!r}{_close(key, names)}", params=(key,))
        made = _checked_fields(cls, decls, values)
        made.related()
        return made

    def related(self) -> None:
        """Checks across options (none by default)."""


def xmin_range_text(text: str) -> tuple[float, float]:
    """``LO:HI`` (either side may be empty) as ``(lo, hi)``; how ``--xmin-range`` is written."""
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError(text)
        return (float(lo) if lo.strip() else 1e-300, float(hi) if hi.strip() else math.inf)
    except ValueError:
        raise UsageError(f"xmin_range must be LO:HI (numbers; either side may be empty), got {text!r}",
                         params=("xmin_range",)) from None


def _seed(value: Any) -> int:
    return new_seed() if value is None else int(value)


def _pair(value: Any) -> tuple[float, float] | None:
    return None if value is None else tuple(value)  # type: ignore[return-value]


MIN_TAIL_HELP = ("Minimum tail size n_tail (Assumption 3.3). A KS-optimal cutoff leaving fewer points makes the "
                 "verdict inconclusive; the best cutoff leaving --min-tail points is shown beside it, labelled "
                 "constrained.")
SEED_HELP = ("Seed of every random draw; printed on stderr and stored in JSON so a run can be repeated. "
             "Default: drawn at random.")


@result
class AuditSettings(Declared, ToDict):
    """The audit's settings: what an :class:`~ctwm_cli.tail.AuditResult` records it ran with."""

    WHAT = "audit option"

    discrete: bool = option(True, flags=("--discrete/--continuous",),
                            help="Discrete fits (counts are integers; default) or continuous densities.",
                            convert=bool)
    xmin: float | None = option(None, flags=("--xmin",), check=in_range(lo=0, lo_open=True),
                                help="Fix the tail cutoff instead of choosing it by KS minimisation.")
    bootstrap: int = option(1000, flags=("--bootstrap", "-b"), check=in_range(lo=0), limit=True,
                            deprecated=("-B",),
                            help="Bootstrap replicates for p_gof (0 skips it; then no TPL verdict is possible).")
    min_tail: int = option(100, flags=("--min-tail",), check=in_range(lo=1), help=MIN_TAIL_HELP)
    p_star: float = option(0.10, flags=("--p-star",), check=in_range(lo=0, hi=1, lo_open=True, hi_open=True),
                           help="p_gof threshold p* of Definition 3.4.")
    z_star: float = option(1.96, flags=("--z-star",), check=in_range(lo=0, lo_open=True),
                           help="|Λ/σ| threshold z* of Definition 3.4.")
    seed: int | None = option(None, flags=("--seed",), check=in_range(lo=0), convert=_seed, help=SEED_HELP)
    scan_floor: int = option(SCAN_FLOOR, flags=("--scan-floor",), check=in_range(lo=2),
                             help="The x_min scan considers every cutoff leaving at least this many points "
                             "(separate from --min-tail).")
    xmin_range: tuple[float, float] | None = option(
        None, flags=("--xmin-range",), metavar="LO:HI", parse=xmin_range_text, convert=_pair,
        help="Only candidate cutoffs LO <= x_min <= HI (either side may be empty).")
    uncertainty: int = option(0, flags=("--uncertainty",), metavar="B", check=in_range(lo=0), limit=True,
                              help="Nonparametric bootstrap of the whole fit (x_min re-selected): standard errors "
                              "and 95% percentile intervals of x_min, α and n_tail (0: off; e.g. 500).")
    cross_check: str | None = option(None, flags=("--cross-check",), choices=CROSS_CHECK_PACKAGES,
                                     help="Run the powerlaw package (Alstott et al.) on the same data and show its "
                                     "x_min, α, R and p beside ours, each disagreement with its known cause.")
    power: int = option(0, flags=("--power",), metavar="R", check=in_range(lo=0), limit=True,
                        help="For an inconclusive verdict: simulate R data sets per family (fitted log-normal, "
                        "fitted TPL) at 1x-16x the observed size and report how often the verdict (fit check "
                        "included) is right, and the smallest multiple with power >= 0.8 (0: off; e.g. 100).")
    xmax: float | None = option(None, flags=("--xmax",),
                                help="Fit a doubly truncated power law on [x_min, x_max] (values above are outside "
                                "the model). Supports the power-law fit, its x_min scan and KS only: no "
                                "alternatives, LR tests or p_gof.")
    fit_check: bool = option(True, flags=("--fit-check/--no-fit-check",), convert=bool,
                             help="A decisive verdict also needs the family it prefers to pass its own bootstrap KS "
                             "test on the tail (default); --no-fit-check: Definition 3.4 as published, without the "
                             "checks' bootstraps (their cost) unless --check-all-families asks for them.")
    fit_level: float = option(FIT_LEVEL, flags=("--fit-level",),
                              check=in_range(lo=0, hi=1, lo_open=True, hi_open=True),
                              help="Level of the preferred family's own fit check (p_gof of that family below it: "
                              "inconclusive).")
    check_all: bool = option(False, flags=("--check-all-families",), convert=bool,
                             help="Bootstrap every alternative family's own fit, not only the TPL's and the "
                             "log-normal's (the ones a verdict can prefer); costs B refits per family.")

    @classmethod
    def checked(cls, **values: Any) -> AuditSettings:
        """Every audit option checked once, including the run's (:class:`AuditRun`: ``calibrate``, ``level``,
        ``jobs``, which are not settings), and normalised: a seed drawn when ``None``, ``xmin_range`` a tuple.
        :func:`~ctwm_cli.tail.audit.audit_many` given these settings re-checks nothing."""
        return checked_audit(**values)[0]

    def related(self, run: AuditRun | None = None) -> None:
        xmin = self.xmin
        if self.discrete and xmin is not None and xmin != math.floor(xmin):
            raise UsageError(f"xmin must be an integer for a discrete fit, got {xmin:g} (a continuous fit takes "
                             "real-valued cutoffs: discrete=False)", params=("xmin", "discrete=False"))
        if self.xmax is not None:
            if not self.xmax > 0 or (xmin is not None and not self.xmax > xmin):
                raise UsageError(f"xmax must be > 0 and > xmin, got {self.xmax:g}", params=("xmax", "xmin"))
            used = [k for k, v in (("calibrate", run.calibrate if run else 0), ("uncertainty", self.uncertainty),
                                   ("power", self.power), ("cross_check", self.cross_check)) if v]
            if used:
                raise UsageError(f"xmax supports only the doubly truncated power-law fit, not {', '.join(used)}",
                                 params=("xmax", *used))
        if self.xmin_range is not None:
            lo, hi = self.xmin_range
            if not (0 < lo <= hi):
                raise UsageError(f"xmin_range needs 0 < low <= high, got low {lo:g} and high {hi:g}",
                                 params=("xmin_range",))
            if xmin is not None:
                raise UsageError("xmin_range restricts the scan; it cannot be combined with a fixed xmin",
                                 params=("xmin_range", "xmin"))

    @property
    def floor(self) -> int:
        """The scan's floor: candidate cutoffs leave at least this many points (never above min_tail)."""
        return min(self.scan_floor, self.min_tail)


@result
class AuditRun(Declared, ToDict):
    """How an audit runs, beside its settings: calibration, its significance level, workers, diagnostics."""

    WHAT = "audit option"

    calibrate: int = option(0, flags=("--calibrate",), check=in_range(lo=0), limit=True,
                            help="Calibrate the verdict with R replicates simulated from the fitted log-normal (each "
                            "with one more drawn from its own refit: a fast double bootstrap) and R from the fitted "
                            "TPL, each re-audited in full (0: off).")
    level: float = option(0.05, flags=("--significance",), deprecated=("--level",),
                          check=in_range(lo=0, hi=0.5, lo_open=True, hi_open=True),
                          help="Significance level a of the calibrated verdict: TPL only when z exceeds the (1-a) "
                          "quantile of z under the fitted log-normal and its double-bootstrap p-value is <= a.")
    jobs: int | None = option(None, flags=("--jobs", "-j"), check=in_range(lo=1),
                              help="Worker processes (default: all cores). Results do not depend on it.")
    diagnostics: bool = option(True, flags=("--diagnostics/--no-diagnostics",), convert=bool,
                               help="Show concentration numbers (Gini, skew, max/median, σ_top10) beside the "
                               "verdict.")


#: :func:`checked_audit`'s keyword for ``AuditSettings.check_all`` as :func:`~ctwm_cli.tail.audit_many` spells it
_KEYWORDS = {"check_all_families": "check_all"}


def checked_audit(**values: Any) -> tuple[AuditSettings, AuditRun]:
    """The audit's settings and run options from one set of keywords, each checked by its declaration."""
    values = {_KEYWORDS.get(k, k): v for k, v in values.items()}
    run_names = {d.name for d in AuditRun.declarations()}
    settings_names = {d.name for d in AuditSettings.declarations()}
    for key in values:
        if key not in run_names | settings_names:
            raise UsageError(f"unknown audit option {key!r}{_close(key, sorted(run_names | settings_names))}",
                             params=(key,))
    run = AuditRun.checked(**{k: v for k, v in values.items() if k in run_names})
    decls = AuditSettings.declarations()
    own = {k: v for k, v in values.items() if k in settings_names}
    settings = _checked_fields(AuditSettings, decls, own)
    settings.related(run)
    return settings, run


def _checked_fields(cls: Any, decls: list[Declaration], values: dict[str, Any]) -> Any:
    """``cls`` from ``values`` checked field by field (:meth:`Declared.checked` without :meth:`related`)."""
    out = {}
    for d in decls:
        value = values.get(d.name, d.default)
        if value is REQUIRED:
            raise UsageError(f"{d.name} is required", params=(d.name,))
        if value is not None:
            if d.spec.choices is not None:
                check_choice(d.name, value, d.spec.choices)
            if d.spec.minimum is not None:
                check_range(d.name, value, lo=d.spec.minimum)
            if d.spec.check is not None:
                d.spec.check(d.name, value)
        out[d.name] = d.spec.convert(value) if d.spec.convert is not None else value
    return cls(**out)


def default(cls: Any, name: str) -> Any:
    """The declared default of option ``name`` of ``cls`` (so no other literal of it is written)."""
    return next(d.default for d in cls.declarations() if d.name == name)


#: The audit's defaults as declared (read by every library function that has an audit keyword).
BOOTSTRAP = default(AuditSettings, "bootstrap")
MIN_TAIL = default(AuditSettings, "min_tail")
