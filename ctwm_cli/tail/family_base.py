"""What a tail family is: the :class:`Family` protocol every entry of
:data:`~ctwm_cli.tail.families.REGISTRY` implements, the :class:`Tail` it is fitted on and the
:class:`TailFit` it returns.

Every family is a proper distribution on the same support (the integers >= x_min, or x >= x_min for
densities), so log-likelihood ratios between them are meaningful. A family knows its ``name``, its
``parameters``, how to ``fit`` a :class:`Tail` (maximum likelihood), its ``logpmf`` (mass or
density), how to ``sample`` exactly, its ``sf`` and the ``bounds`` of its parameters.

**Bounds are never silent.** A fit that ends on a box edge reports ``at_bound`` (parameter -> the
bound reached) and ``converged = False``; ``converged`` is true only for an interior optimum the
optimiser accepted. Where a limit is a model of its own it is reachable and named in ``limit``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from ..common.results import ToDict, result
from .powerlaw import Histogram, PowerLawFit

__all__ = ["Family", "Tail", "TailFit"]


@result
class Tail:
    """The tail of one sample: distinct values >= x_min (ascending) and their multiplicities."""

    values: np.ndarray
    counts: np.ndarray  # float64
    xmin: float
    discrete: bool

    @classmethod
    def of(cls, hist: Histogram, xmin: float, discrete: bool) -> Tail:
        i = int(np.searchsorted(hist.values, xmin))
        return cls(values=hist.values[i:], counts=hist.counts[i:].astype(np.float64), xmin=float(xmin),
                   discrete=discrete)

    @property
    def n(self) -> float:
        return float(self.counts.sum())

    @property
    def identifies(self) -> bool:
        """Three distinct values at least: on two, every two-parameter family reaches the same
        supremum (the observed two-point masses), usually only in a limit — no optimum to report."""
        return self.values.size >= 3


@result
class TailFit(ToDict):
    """One family fitted on the tail. ``params`` are named; ``loglik`` is summed over the tail;
    ``se`` holds Hessian-based standard errors where the family provides them (NaN at a bound)."""

    family: str
    discrete: bool
    xmin: float
    n_tail: int
    params: dict[str, float]
    loglik: float
    converged: bool
    at_bound: dict[str, float]
    limit: str | None = None  # the model a bound stands for (e.g. "power_law"), else None
    se: dict[str, float] | None = None


class Family(ABC):
    """A tail family. Subclasses set ``name`` and ``parameters`` and implement the verbs."""

    name: ClassVar[str]
    parameters: ClassVar[tuple[str, ...]]
    compare_with: ClassVar[tuple[str, ...]] = ()  # the Vuong tests this family is the first of
    nests: ClassVar[str | None] = None  # the family it contains as a boundary case (nested LR test)
    contains: ClassVar[tuple[str, ...]] = ()  # the families it reaches as a special case or limit (not rivals)
    uses_reference: ClassVar[bool] = False  # whether fit() reads its reference power-law fit (else none is made)

    @abstractmethod
    def fit(self, tail: Tail, *, reference: PowerLawFit | None = None, start: dict[str, float] | None = None,
            errors: bool = True):
        """Maximum-likelihood fit on ``tail``. ``reference``: the power law on the same tail (starts,
        nesting); ``start``: a warm start (e.g. the observed fit, in a simulation replicate);
        ``errors=False``: no standard errors (NaN), for re-fits that read only the parameters and the likelihood."""

    @abstractmethod
    def logpmf(self, x: np.ndarray, params: dict[str, float], xmin: float, discrete: bool) -> np.ndarray:
        """Pointwise log-probability (mass or density) of tail values."""

    @abstractmethod
    def sample(self, params: dict[str, float], xmin: float, size: int, rng: np.random.Generator,
               discrete: bool) -> np.ndarray:
        """Exact draws from the fitted tail."""

    @abstractmethod
    def sf(self, x: np.ndarray, params: dict[str, float], xmin: float, discrete: bool) -> np.ndarray:
        """P(X >= x) of the fitted tail, to absolute accuracy (what a KS distance needs)."""

    def bounds(self, tail: Tail, reference: PowerLawFit | None = None) -> dict[str, tuple[float, float]]:
        """The parameter box of the fit, on the natural scale (the default: unbounded)."""
        return {p: (-math.inf, math.inf) for p in self.parameters}
