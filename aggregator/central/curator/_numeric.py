"""Sum of a column clipped to [min, max] on a grid: an exact sum in grid steps in, noise out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, Value
from deniable.aggregator.central.curator._noise import (
    INTERVAL_METHOD,
    check_confidence,
    check_curator_epsilon,
    noise_scale,
    noisy_integer,
)
from deniable.aggregator.central.curator._sensitivity import (
    privacy_fields,
    sum_sensitivity_units,
)
from deniable.shared.sampling import ByteSource, os_source

__all__ = ["MAX_GRID_STEPS", "NoisySum", "SumSpec", "noisy_sum"]

MAX_GRID_STEPS = 1 << 40
"""At most this many resolution steps in [min, max] (the noise is drawn in those steps)."""

SUM_COVERS = (
    "the sum over matching rows with a value of the value clipped to [min, max] and rounded "
    "to the resolution grid, each unit's rows bounded to K"
)


@dataclass(frozen=True)
class SumSpec:
    """A clipped numeric column on a grid: values clipped to [lo, hi], rounded to the resolution.

    Attributes:
        column: the numeric column.
        lo: public lower clip.
        hi: public upper clip.
        resolution: grid step h > 0; each clipped value is rounded to the nearest multiple
            (ties to even: ``round(clip(v) / h)`` on exact fractions), see :meth:`units`.
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
    def build(cls, column: str, kind: str, lo: float, hi: float, resolution: str | None) -> SumSpec:
        """The spec of a ``kind`` (int or float) column; resolution 1 for int with integer ends.

        Without ``resolution`` the grid is 1 for an int column with integer ends, else
        (hi − lo)/1024. A written resolution is taken as the decimal written, exactly.
        """
        if kind == "str":
            raise CuratorError(f"--column: {column!r} is a str column; sum and mean need numbers")
        if kind not in ("int", "float"):
            raise CuratorError(f"--column: type of {column!r} must be int or float, got {kind!r}")
        for flag, end in (("--min", lo), ("--max", hi)):
            if isinstance(end, bool) or not isinstance(end, int | float) or not math.isfinite(end):
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
        if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
            raise CuratorError(f"--column: {self.column!r} has a non-numeric value {value!r}")
        clipped = min(self.hi, max(self.lo, Fraction(value)))
        return round(clipped / self.resolution)

    @property
    def unit_range(self) -> tuple[int, int]:
        """The grid steps of lo and hi (every rounded contribution lies between)."""
        return round(self.lo / self.resolution), round(self.hi / self.resolution)

    def sensitivity_units(self, neighbours: str, unit: PrivacyUnit) -> int:
        """Δ in grid steps: K·max(|lo|, |hi|) (add-remove), K·(max(hi,0) − min(lo,0)) (replace)."""
        low, high = self.unit_range
        return sum_sensitivity_units(low, high, neighbours, unit)

    def per_unit_clamp(self, unit: PrivacyUnit) -> tuple[Fraction, Fraction]:
        """The range of one unit's total: at most K rows, each clipped to [lo, hi], or none."""
        k = unit.max_contributions
        return k * min(self.lo, Fraction(0)), k * max(self.hi, Fraction(0))

    def sum_range(self, rows: int | None) -> tuple[int | None, int | None]:
        """The public clamp of a sum in grid steps over at most ``rows`` contributions.

        With a public bound N on the contributing rows: [N·min(lo, 0), N·max(hi, 0)];
        without one only the sign the range implies (>= 0 when lo >= 0, <= 0 when hi <= 0).
        """
        low, high = self.unit_range
        if rows is not None:
            return rows * min(low, 0), rows * max(high, 0)
        return (0 if low >= 0 else None), (0 if high <= 0 else None)


@dataclass(frozen=True)
class NoisySum:
    """A clipped sum released with discrete Laplace noise on the resolution grid."""

    spec: SumSpec
    released: float
    epsilon: float
    sensitivity: float
    scale: float
    confidence: float
    half_width: float
    low: float
    high: float
    neighbours: str
    unit: PrivacyUnit
    rows: int | None

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries."""
        per_unit = self.spec.per_unit_clamp(self.unit)
        return {
            "released": self.released,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "sensitivity": self.sensitivity,
            "noise_scale": self.scale,
            **privacy_fields(self.neighbours, self.unit),
            "clip": [float(self.spec.lo), float(self.spec.hi)],
            "per_unit_clamp": {
                "range": [float(per_unit[0]), float(per_unit[1])],
                "how": "each unit's total is at most K rows, each clipped to [min, max]",
            },
            "resolution": float(self.spec.resolution),
            "public_rows": self.rows,
            "interval": {
                "low": self.low,
                "high": self.high,
                "confidence": self.confidence,
                "half_width": self.half_width,
                "method": INTERVAL_METHOD + ", in resolution steps",
                "covers": SUM_COVERS,
            },
        }


def noisy_sum(
    units_sum: int,
    spec: SumSpec,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    rows: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisySum:
    """The exact clipped sum in grid steps plus discrete Laplace noise of scale Δ/ε (ε-DP).

    Args:
        units_sum: Σ of :meth:`SumSpec.units` over matching rows with a value, at most K
            rows per unit.
        spec: the clip and grid.
        epsilon: the privacy loss.
        neighbours: add-remove or replace.
        unit: the privacy unit; Δ = :meth:`SumSpec.sensitivity_units`.
        rows: a public bound on the contributing rows for the clamp (N under replace-one
            with rows as units); None: clamped only to the sign the range implies.
        confidence: the interval's confidence.
        source: random bytes (the OS CSPRNG unless a seeded source is given for tests).
    """
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    if isinstance(units_sum, bool) or not isinstance(units_sum, int):
        raise CuratorError(f"the sum in grid steps must be an integer, got {units_sum!r}")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise CuratorError(f"the public row count must be an integer >= 0, got {rows!r}")
    lower, upper = spec.sum_range(rows)
    if (lower is not None and units_sum < lower) or (upper is not None and units_sum > upper):
        raise CuratorError(
            f"the sum {units_sum} grid steps is outside its public range [{lower}, {upper}]"
        )
    delta = spec.sensitivity_units(neighbours, unit)
    scale = noise_scale(epsilon, delta)
    released, k, low_units, high_units = noisy_integer(
        units_sum, scale, lower, upper, level, source
    )
    step = spec.resolution
    return NoisySum(
        spec,
        float(released * step),
        eps,
        float(delta * step),
        float(scale * step),
        level,
        float(k * step),
        float(low_units * step),
        float(high_units * step),
        neighbours,
        unit,
        rows,
    )
