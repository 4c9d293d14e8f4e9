"""Common ground of numeric mechanisms: the public range, ε bounds, report-grid checks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import exp_at_least
from deniable.shared._rr import Estimand, check_estimand
from deniable.shared._validate import as_count, as_real, check_finite

__all__ = [
    "MAX_EPSILON",
    "MIN_EPSILON",
    "NumericBase",
    "as_reports",
    "check_epsilon",
    "check_int",
    "first_invalid",
    "on_grid",
]

MIN_EPSILON = 2.0**-20
"""Smallest ε a numeric mechanism accepts: below it reports would need astronomic values."""
MAX_EPSILON = 50.0
"""Largest ε a numeric mechanism accepts (e^50 ≈ 5·10^21: no privacy left to speak of)."""


def check_epsilon(epsilon: object) -> float:
    """Return ``epsilon`` as a float in [MIN_EPSILON, MAX_EPSILON], else raise naming it."""
    eps = as_real("epsilon", epsilon)
    if not (MIN_EPSILON <= eps <= MAX_EPSILON):  # also rejects NaN
        raise ValueError(
            f"epsilon must be in [2^-20, {MAX_EPSILON:g}] for a numeric mechanism, got {eps!r}"
        )
    return eps


def check_int(name: str, value: object, low: int, high: int) -> int:
    """Return ``value`` as an int in [low, high], else raise naming it."""
    number = as_count(name, value, minimum=low)
    if number > high:
        raise ValueError(f"{name} must be <= {high}, got {number}")
    return number


def as_reports(reports: ArrayLike) -> NDArray[np.float64]:
    """Reports as a flat float64 array (validation works on the flattened order)."""
    array = np.asarray(reports)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"reports must be real numbers, got dtype {array.dtype}")
    return np.ravel(array).astype(np.float64, copy=False)


def on_grid(y: NDArray[np.float64], bits: int) -> NDArray[np.bool_]:
    """Finite entries of ``y`` that are integer multiples of 2^-bits (NaN and inf are not)."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.ldexp(y, bits)
        return np.asarray(np.isfinite(scaled) & (scaled == np.floor(scaled)))


def first_invalid(valid: NDArray[np.bool_]) -> int | None:
    """Index of the first False entry, or None when every entry is valid."""
    bad = np.flatnonzero(~valid)
    return int(bad[0]) if bad.size else None


def _check_range(lo: object, hi: object) -> tuple[float, float]:
    low = check_finite("lo", as_real("lo", lo))
    high = check_finite("hi", as_real("hi", hi))
    if not low < high:
        raise ValueError(f"lo must be < hi, got lo={low!r}, hi={high!r}")
    if not math.isfinite(high - low):
        raise ValueError(f"hi - lo must be a finite float, got lo={low!r}, hi={high!r}")
    return low, high


@dataclass(frozen=True)
class NumericBase:
    """A mechanism for a value x on the public range [lo, hi] (DESIGN §4.3).

    Every numeric mechanism works on the normalized value t = 2(x − lo)/(hi − lo) − 1 in
    [−1, 1] and sends one report y on that scale with E[y | t] = t exactly. The report is
    a float on a documented dyadic grid; ``validate_report`` recognises exactly that grid.

    Attributes:
        lo: lower end of the public range (finite).
        hi: upper end of the public range (finite, > lo).
    """

    kind: ClassVar[str]

    lo: float
    hi: float

    def __post_init__(self) -> None:
        lo, hi = _check_range(self.lo, self.hi)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    # --- what every mechanism defines -----------------------------------------------------

    @property
    def worst_variance(self) -> float:
        """Largest Var(y | t) over t on the [−1, 1] scale: the DESIGN §4.3 table's figure."""
        raise NotImplementedError

    @property
    def worst_second_moment(self) -> float:
        """Largest E[y² | t] over t: the worst population variance of one report."""
        raise NotImplementedError

    def variance(self, t: float) -> float:
        """Var(y | t) of one report for a normalized true value t in [−1, 1]."""
        raise NotImplementedError

    @property
    def unit_bits(self) -> int:
        """G such that every report is an integer multiple of 2^-G (exact tallies)."""
        raise NotImplementedError

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Elementwise: is y a report this mechanism can output?"""
        raise NotImplementedError

    # --- shared behaviour -----------------------------------------------------------------

    def validate_report(self, reports: ArrayLike) -> int | None:
        """Index (flattened order) of the first report off the output grid, NaN or inf; or None.

        Example:
            >>> from deniable.shared._numeric import DuchiSpec
            >>> DuchiSpec(0.0, 1.0, bound=3.0).validate_report([3.0, -3.0, 2.5])
            2
        """
        return first_invalid(self.report_valid(as_reports(reports)))

    def normalize(self, x: float) -> float:
        """The normalized t = 2(x − lo)/(hi − lo) − 1, correctly rounded (x not range-checked)."""
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        return float(2 * (Fraction(as_real("x", x)) - lo) / (hi - lo) - 1)

    def to_x(self, t: float | Fraction) -> float:
        """Map a normalized value back: x = lo + (hi − lo)(t + 1)/2, correctly rounded."""
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        return float(lo + (hi - lo) * (Fraction(t) + 1) / 2)

    def variance_x(self, n: int, estimand: Estimand = "population") -> float:
        """Worst-case variance of the mean of n reports, in x units.

        ``population`` (participants i.i.d. from a population; what the t-interval covers):
        worst_second_moment·((hi−lo)/2)²/n. ``respondents`` (these n true values fixed):
        worst_variance·((hi−lo)/2)²/n.
        """
        count = as_count("n", n, minimum=1)
        per_report = (
            self.worst_second_moment
            if check_estimand(estimand) == "population"
            else self.worst_variance
        )
        half = (self.hi - self.lo) / 2.0
        return per_report * half * half / count

    def _describe_range(self) -> dict[str, Any]:
        return {"mechanism": self.kind, "lo": self.lo, "hi": self.hi}

    @staticmethod
    def _certifies_ratio(epsilon: float, ratio: Fraction) -> bool:
        return exp_at_least(as_real("epsilon", epsilon), ratio)
