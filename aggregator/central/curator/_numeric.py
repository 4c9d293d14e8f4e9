"""Central numeric queries: the sum and mean of a column clipped to [min, max], on a grid."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._noise import (
    INTERVAL_METHOD,
    NoisyCount,
    central_laplace_count,
    check_confidence,
    check_curator_epsilon,
    exact_epsilon,
    noise_scale,
    noisy_integer,
)
from deniable.aggregator.central.curator._queries import check_neighbours, matching
from deniable.aggregator.central.curator._table import CuratorError, Table
from deniable.aggregator.central.curator._where import Condition, Value
from deniable.shared.sampling import ByteSource, os_source

__all__ = ["NoisyMean", "NoisySum", "SumSpec", "mean_interval", "noisy_mean", "noisy_sum"]

MAX_GRID_STEPS = 1 << 40
"""At most this many resolution steps in [min, max] (the noise is drawn in those steps)."""


@dataclass(frozen=True)
class SumSpec:
    """A clipped numeric column on a grid: values clipped to [lo, hi], rounded to the resolution.

    Attributes:
        column: the numeric column.
        lo: public lower clip.
        hi: public upper clip.
        resolution: grid step h > 0; each clipped value is rounded to the nearest multiple.
    """

    column: str
    lo: Fraction
    hi: Fraction
    resolution: Fraction

    def __post_init__(self) -> None:
        if not self.lo < self.hi:
            raise CuratorError(f"--min {float(self.lo)!r} must be below --max {float(self.hi)!r}")
        if self.resolution <= 0:
            raise CuratorError(f"--resolution must be positive, got {float(self.resolution)!r}")
        if self.resolution > self.hi - self.lo:
            raise CuratorError(
                f"--resolution {float(self.resolution)!r} is wider than [{float(self.lo)!r}, "
                f"{float(self.hi)!r}]"
            )
        if (self.hi - self.lo) / self.resolution > MAX_GRID_STEPS:
            raise CuratorError(
                f"--resolution {float(self.resolution)!r} is too fine for [{float(self.lo)!r}, "
                f"{float(self.hi)!r}]: at most 2^40 steps"
            )

    @classmethod
    def build(
        cls, table: Table, column: str, lo: float, hi: float, resolution: str | None
    ) -> SumSpec:
        """The spec, its resolution 1 for an int column with integer ends, else (hi − lo)/1024."""
        kind = table.column(column, "--column")
        if kind == "str":
            raise CuratorError(f"--column: {column!r} is a str column; sum and mean need numbers")
        for flag, end in (("--min", lo), ("--max", hi)):
            if not math.isfinite(end):
                raise CuratorError(f"{flag} must be a finite number, got {end!r}")
        low, high = Fraction(lo), Fraction(hi)
        if resolution is not None:
            try:
                number = float(resolution)
            except ValueError:
                raise CuratorError(f"--resolution must be a number, got {resolution!r}") from None
            if not math.isfinite(number):
                raise CuratorError(f"--resolution must be a finite number, got {resolution!r}")
            step = Fraction(repr(number))  # the decimal written, exactly
        elif kind == "int" and low.denominator == 1 and high.denominator == 1:
            step = Fraction(1)
        else:
            step = (high - low) / 1024
        return cls(column, low, high, step)

    def units(self, value: Value) -> int:
        """The value clipped to [lo, hi] and rounded to the grid, in grid steps."""
        assert isinstance(value, int | float)
        clipped = min(self.hi, max(self.lo, Fraction(value)))
        return round(clipped / self.resolution)

    @property
    def unit_range(self) -> tuple[int, int]:
        """The grid steps of lo and hi (every contribution lies between)."""
        return round(self.lo / self.resolution), round(self.hi / self.resolution)

    def sensitivity_units(self, neighbours: str) -> int:
        """Δ in grid steps: max(|lo|, |hi|) under add/remove, max(hi, 0) − min(lo, 0) under replace.

        Under replace-one a row may go from contributing nothing (not matching, or an empty
        cell) to contributing hi, so the span includes 0; it is hi − lo when lo <= 0 <= hi.
        """
        low, high = self.unit_range
        if check_neighbours(neighbours) == "add-remove":
            return max(abs(low), abs(high), 1)
        return max(max(high, 0) - min(low, 0), 1)


@dataclass(frozen=True)
class NoisySum:
    """A clipped sum released with discrete Laplace noise on the resolution grid."""

    spec: SumSpec
    released: float
    epsilon: float
    sensitivity: float
    scale: float
    confidence: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries."""
        return {
            "released": self.released,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "noise_scale": self.scale,
            "clip": [float(self.spec.lo), float(self.spec.hi)],
            "resolution": float(self.spec.resolution),
            "interval": {
                "low": self.low,
                "high": self.high,
                "confidence": self.confidence,
                "method": INTERVAL_METHOD + ", in resolution steps",
                "covers": "the sum of the clipped values rounded to the resolution grid",
            },
        }


def _sum_units(table: Table, spec: SumSpec, condition: Condition | None) -> tuple[int, int]:
    """(Σ grid steps, number of contributing rows) over matching rows with a value."""
    present = [
        row[spec.column] for row in matching(table, condition) if row[spec.column] is not None
    ]
    return sum(spec.units(value) for value in present), len(present)


def noisy_sum(
    table: Table,
    spec: SumSpec,
    condition: Condition | None,
    epsilon: float | Fraction,
    neighbours: str,
    *,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisySum:
    """Σ of the clipped, grid-rounded column over matching rows, plus noise of scale Δ/ε.

    Noise is discrete Laplace in grid steps (exactly ε-DP). Under replace-one the row count
    N is public and the sum is clamped to [N·min(lo, 0), N·max(hi, 0)]; under add/remove
    only to the sign the range implies (>= 0 when lo >= 0, <= 0 when hi <= 0).
    """
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    units, _ = _sum_units(table, spec, condition)
    delta = spec.sensitivity_units(neighbours)
    scale = noise_scale(epsilon, delta)
    low, high = spec.unit_range
    lower: int | None
    upper: int | None
    if neighbours == "replace":
        lower, upper = len(table.rows) * min(low, 0), len(table.rows) * max(high, 0)
    else:  # N is private: only the sign of the range bounds the sum
        lower = 0 if low >= 0 else None
        upper = 0 if high <= 0 else None
    released, _, low_units, high_units = noisy_integer(units, scale, lower, upper, level, source)
    step = spec.resolution
    return NoisySum(
        spec,
        float(released * step),
        eps,
        float(delta * step),
        float(scale * step),
        level,
        float(low_units * step),
        float(high_units * step),
    )


@dataclass(frozen=True)
class NoisyMean:
    """A clipped mean: a noisy sum (ε/2) over a noisy count (ε/2), clamped to [lo, hi]."""

    total: NoisySum
    count: NoisyCount
    released: float
    epsilon: float
    confidence: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries."""
        return {
            "released": self.released,
            "epsilon": self.epsilon,
            "method": "noisy sum / noisy count, ε split in halves (sequential composition)",
            "sensitivity": {"sum": self.total.sensitivity, "count": self.count.sensitivity},
            "noise_scale": {"sum": self.total.scale, "count": float(self.count.scale)},
            "clip": [float(self.total.spec.lo), float(self.total.spec.hi)],
            "resolution": float(self.total.spec.resolution),
            "noisy_sum": self.total.released,
            "noisy_count": self.count.released,
            "interval": {
                "low": self.low,
                "high": self.high,
                "confidence": self.confidence,
                "method": (
                    "sum and count each within their exact discrete Laplace interval at "
                    "1 − α/2 (union bound); the mean is bounded by the extreme ratios of the "
                    "two, intersected with [min, max]"
                ),
                "covers": "the mean of the clipped values rounded to the grid (when N >= 1)",
            },
        }


def mean_interval(
    total: tuple[float, float], count: tuple[int, int], lo: float, hi: float
) -> tuple[float, float]:
    """Bounds of S/N for S in [s0, s1] and an integer N >= 1 in [n0, n1], within [lo, hi].

    S/N is monotone in N for a fixed S, so its extremes are at the ends of both ranges.
    """
    n_low, n_high = max(1, count[0]), count[1]
    if n_high < 1:
        return lo, hi
    s_low, s_high = total
    low = min(s_low / n_low, s_low / n_high)
    high = max(s_high / n_low, s_high / n_high)
    return max(lo, min(hi, low)), min(hi, max(lo, high))


def noisy_mean(
    table: Table,
    spec: SumSpec,
    condition: Condition | None,
    epsilon: float,
    neighbours: str,
    *,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyMean:
    """The mean of the clipped column over matching rows with a value: noisy sum / noisy count.

    Each half of ε buys one of them; the released mean is their ratio clamped to
    [lo, hi], or the midpoint when the noisy count is 0. The interval holds with at least
    ``confidence`` (each part at 1 − α/2).
    """
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    half = exact_epsilon(epsilon) / 2  # exactly half each: ε in all
    each = 1 - (1 - level) / 2
    total = noisy_sum(table, spec, condition, half, neighbours, confidence=each, source=source)
    _, present = _sum_units(table, spec, condition)
    upper = len(table.rows) if neighbours == "replace" else None
    count = central_laplace_count(present, half, 1, upper=upper, confidence=each, source=source)
    lo, hi = float(spec.lo), float(spec.hi)
    if count.released >= 1:
        released = min(hi, max(lo, total.released / count.released))
    else:
        released = (lo + hi) / 2
    low, high = mean_interval((total.low, total.high), (count.low, count.high), lo, hi)
    return NoisyMean(total, count, released, eps, level, low, high)
