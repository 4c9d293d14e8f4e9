"""Tallies: the exact integer sums that reports reduce to, merged by addition.

The lowest layer of ``deniable.shared.mechanisms`` with :mod:`._rates`: the estimators read
these, the mechanisms fill them. Nothing here knows a mechanism class; a numeric tally
checks reports against any :class:`ReportGrid`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from operator import mul
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._validate import as_count

__all__ = ["MeanTally", "ReportGrid", "Tally", "add_sums", "as_reports"]


class ReportGrid(Protocol):
    """What a numeric tally needs of its mechanism: the report grid and a report check."""

    @property
    def name(self) -> str:
        """The mechanism's name (in error messages)."""
        ...  # pragma: no cover

    @property
    def unit_bits(self) -> int:
        """G such that every report is an integer multiple of 2^-G."""
        ...  # pragma: no cover

    def validate_report(self, reports: ArrayLike) -> int | None:
        """Index of the first report the mechanism cannot output, or None."""
        ...  # pragma: no cover


def add_sums(sums: Sequence[int], delta: Sequence[int]) -> tuple[int, ...]:
    """Element-wise sum of two tallies' sums, the shorter padded with zeros.

    Example:
        >>> add_sums((1, 2), [3, 4, 5])
        (4, 6, 5)
    """
    length = max(len(sums), len(delta))
    padded = [*sums, *[0] * (length - len(sums))]
    return tuple(total + (delta[i] if i < len(delta) else 0) for i, total in enumerate(padded))


@dataclass(frozen=True)
class Tally:
    """A question's sufficient statistic: ``n`` reports and the exact integer sums they add.

    Tallies of disjoint sets of reports merge by addition, in any order (running tallies,
    several daemons, parallel simulation). ``sums`` is empty until the first report.

    Example:
        >>> Tally(2, (1,)).merge(Tally(3, (2,)))
        Tally(n=5, sums=(3,))
    """

    n: int
    sums: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        as_count("n", self.n)

    @property
    def ones(self) -> int:
        """The first sum, or 0: the yes count of a yes/no question."""
        return self.sums[0] if self.sums else 0

    def merge(self, other: Tally) -> Tally:
        """The tally of both sets of reports."""
        return Tally(self.n + other.n, add_sums(self.sums, other.sums))

    def plus(self, n: int, sums: Sequence[int]) -> Tally:
        """This tally plus ``n`` more reports that add ``sums``."""
        return Tally(self.n + n, add_sums(self.sums, sums))


def as_reports(reports: ArrayLike) -> NDArray[np.float64]:
    """Reports as a flat float64 array (validation works on the flattened order)."""
    array = np.asarray(reports)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"reports must be real numbers, got dtype {array.dtype}")
    return np.ravel(array).astype(np.float64, copy=False)


@dataclass(frozen=True)
class MeanTally:
    """Exact running sums of numeric reports, in integer units of the report grid.

    Every report y of a numeric mechanism is an integer multiple of 2^-G with
    G = ``spec.unit_bits``, so z = y·2^G is an integer and n, Σz and Σz² are kept as exact
    Python integers: adding batches in any order, or recomputing them from the report log,
    gives identical tallies, and the variance is computed without cancellation. The sums
    outgrow 64 bits (Σz² for ~10^9 Piecewise reports, Σz for a few thousand Duchi
    reports), so store them as arbitrary-precision integers (PostgreSQL NUMERIC, SQLite
    TEXT).

    Attributes:
        unit_bits: G, the spec's ``unit_bits``.
        n: number of reports.
        total: Σz.
        total_squares: Σz².
    """

    unit_bits: int
    n: int = 0
    total: int = 0
    total_squares: int = 0

    def __post_init__(self) -> None:
        for name in ("unit_bits", "n", "total", "total_squares"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, got {value!r}")
        as_count("n", self.n)
        as_count("total_squares", self.total_squares)
        if self.total * self.total > self.n * self.total_squares:
            raise ValueError(
                f"inconsistent tally: total^2 > n * total_squares "
                f"(n={self.n}, total={self.total}, total_squares={self.total_squares})"
            )

    @classmethod
    def empty(cls, spec: ReportGrid) -> MeanTally:
        """No reports yet, in ``spec``'s units."""
        return cls(unit_bits=spec.unit_bits)

    def add(self, spec: ReportGrid, reports: ArrayLike) -> MeanTally:
        """This tally plus a batch of reports, after checking them all against ``spec``.

        Raises:
            ValueError: a report is off the mechanism's grid, NaN or inf (naming its index),
                or the tally was kept in other units.
        """
        self._check_units(spec)
        y = as_reports(reports)
        bad = spec.validate_report(y)
        if bad is not None:
            raise ValueError(
                f"report {bad} ({float(y[bad])!r}) is not a possible {spec.name} report"
            )
        units = [int(v) for v in np.ldexp(y, self.unit_bits).tolist()]
        return MeanTally(
            self.unit_bits,
            self.n + len(units),
            self.total + sum(units),
            self.total_squares + sum(map(mul, units, units)),
        )

    def merge(self, other: MeanTally) -> MeanTally:
        """The tally of both sets of reports."""
        if other.unit_bits != self.unit_bits:
            raise ValueError(f"unit_bits differ: {self.unit_bits} and {other.unit_bits}")
        return MeanTally(
            self.unit_bits,
            self.n + other.n,
            self.total + other.total,
            self.total_squares + other.total_squares,
        )

    @property
    def mean(self) -> Fraction:
        """Mean report ȳ exactly (on the normalized [−1, 1] scale)."""
        if self.n == 0:
            raise ValueError("no reports: the mean is undefined")
        return Fraction(self.total, self.n) / Fraction(2) ** self.unit_bits

    @property
    def sample_variance(self) -> Fraction:
        """s² = (nΣy² − (Σy)²)/(n(n−1)) exactly; needs n >= 2."""
        if self.n < 2:
            raise ValueError(f"the sample variance needs at least 2 reports, got n={self.n}")
        spread = self.n * self.total_squares - self.total * self.total
        return Fraction(spread, self.n * (self.n - 1)) / Fraction(4) ** self.unit_bits

    def _check_units(self, spec: ReportGrid) -> None:
        if spec.unit_bits != self.unit_bits:
            raise ValueError(
                f"tally kept in units 2^-{self.unit_bits}, but {spec.name} reports use "
                f"2^-{spec.unit_bits}: it belongs to another mechanism"
            )
