"""Means of a clipped column: noisy sum over noisy count, or the notes' mean when N is public."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, check_neighbours
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
from deniable.aggregator.central.curator._numeric import NoisySum, SumSpec, noisy_sum
from deniable.aggregator.central.curator._sensitivity import privacy_fields
from deniable.shared.sampling import ByteSource, os_source

__all__ = [
    "PUBLIC_MEAN_METHOD",
    "SPLIT_METHOD",
    "NoisyMean",
    "NoisyPublicMean",
    "check_public_n",
    "mean_interval",
    "midpoint_units",
    "noisy_mean",
    "noisy_mean_public_n",
]

SPLIT_METHOD = "noisy sum / noisy count, ε split in halves (sequential composition)"
PUBLIC_MEAN_METHOD = (
    "clip-mean with a public N (Dwork and Roth 2014, §3.3): the sum over all N rows in grid "
    "steps plus discrete Laplace noise of scale (max − min)/ε (the whole ε), clamped to "
    "[N·min, N·max], over N; the interval is that noise's exact quantile over N"
)


def _check_present(units_sum: int, present: int, spec: SumSpec) -> None:
    """The engine's (Σ grid steps, rows with a value) are integers Σ can be made of."""
    for name, value in (("the sum in grid steps", units_sum), ("the present count", present)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise CuratorError(f"{name} must be an integer, got {value!r}")
    low, high = spec.unit_range
    if present < 0 or not present * low <= units_sum <= present * high:
        raise CuratorError(
            f"a sum of {units_sum} grid steps is impossible for {present} values in "
            f"[{low}, {high}] steps"
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
            "delta": 0.0,
            "method": SPLIT_METHOD,
            "sensitivity": {"sum": self.total.sensitivity, "count": self.count.sensitivity},
            "noise_scale": {"sum": self.total.scale, "count": float(self.count.scale)},
            **privacy_fields(self.total.neighbours, self.total.unit),
            "clip": [float(self.total.spec.lo), float(self.total.spec.hi)],
            "per_unit_clamp": self.total.to_dict()["per_unit_clamp"],
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
                "covers": (
                    "the mean of the clipped values rounded to the grid over matching rows "
                    "with a value, each unit bounded to K rows (when there is one)"
                ),
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
    units_sum: int,
    present: int,
    spec: SumSpec,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    rows: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyMean:
    """The clipped mean over matching rows with a value: noisy sum / noisy count.

    ``units_sum`` and ``present`` are the exact Σ grid steps and number of rows with a value
    (each unit bounded to K rows). Each half of ε buys one: the sum with Δ of
    :meth:`SumSpec.sensitivity_units`, the count with Δ = K. The mean is their ratio
    clamped to [lo, hi], or the midpoint when the noisy count is 0; the interval holds with
    at least ``confidence`` (each part at 1 − α/2). ``rows``: a public bound on the
    contributing rows, for both clamps (None: none).
    """
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    _check_present(units_sum, present, spec)
    half = exact_epsilon(epsilon) / 2  # exactly half each: ε in all
    each = 1 - (1 - level) / 2
    total = noisy_sum(
        units_sum, spec, half, neighbours, unit, rows=rows, confidence=each, source=source
    )
    count = central_laplace_count(
        present, half, unit.max_contributions, upper=rows, confidence=each, source=source,
        neighbours=neighbours, unit=unit,
        covers="the number of matching rows with a value, each unit bounded to K rows",
    )  # fmt: skip
    lo, hi = float(spec.lo), float(spec.hi)
    if count.released >= 1:
        released = min(hi, max(lo, total.released / count.released))
    else:
        released = (lo + hi) / 2
    low, high = mean_interval((total.low, total.high), (count.low, count.high), lo, hi)
    return NoisyMean(total, count, released, eps, level, low, high)


def check_public_n(neighbours: str, unit: PrivacyUnit, rows: int) -> None:
    """N is public only under replace-one with each row a unit: else an error naming the option."""
    if check_neighbours(neighbours) != "replace":
        raise CuratorError(
            "--neighbours: the mean with a public N needs replace (N is private under "
            "add-remove); use the noisy sum / noisy count mean"
        )
    if not unit.rows_are_units:
        raise CuratorError(
            "--privacy-unit: the mean with a public N needs each row to be a unit (the "
            "number of rows is not public when a unit may hold several)"
        )
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise CuratorError(f"the public row count N must be an integer >= 1, got {rows!r}")


def midpoint_units(spec: SumSpec) -> int:
    """The clip's midpoint (lo + hi)/2 rounded to the grid, in steps: a missing cell's value."""
    return round((spec.lo + spec.hi) / 2 / spec.resolution)


@dataclass(frozen=True)
class NoisyPublicMean:
    """The notes' mean over a public N rows: (sum + Laplace((max − min)/ε))/N, the whole ε."""

    spec: SumSpec
    released: float
    epsilon: float
    sensitivity: float
    scale: float
    confidence: float
    half_width: float
    low: float
    high: float
    rows: int
    neighbours: str
    unit: PrivacyUnit

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries."""
        midpoint = float(midpoint_units(self.spec) * self.spec.resolution)
        return {
            "released": self.released,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "method": PUBLIC_MEAN_METHOD,
            "sensitivity": self.sensitivity,
            "noise_scale": self.scale,
            **privacy_fields(self.neighbours, self.unit),
            "public_rows": self.rows,
            "clip": [float(self.spec.lo), float(self.spec.hi)],
            "resolution": float(self.spec.resolution),
            "interval": {
                "low": self.low,
                "high": self.high,
                "confidence": self.confidence,
                "half_width": self.half_width,
                "method": INTERVAL_METHOD + ", in resolution steps, over N",
                "covers": (
                    f"the mean over all N = {self.rows} rows of the value clipped to [min, max] "
                    f"and rounded to the grid, a missing cell counted as the clip's midpoint "
                    f"{midpoint!r}"
                ),
            },
        }


def noisy_mean_public_n(
    units_sum: int,
    present: int,
    rows: int,
    spec: SumSpec,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyPublicMean:
    """The mean over all ``rows`` rows when N is public: replace-one, rows as units, no filter.

    Replacing one row moves Σ (in grid steps, a missing cell counted as the midpoint) by at
    most hi − lo steps: no row can stop contributing, so 0 is not in the range as it is for
    :func:`noisy_sum`. The noise is drawn on the grid, Σ + Z with Z of scale (hi − lo)/ε,
    clamped to [N·lo, N·hi] and divided by N: the Laplace mechanism with Δ = (max − min)/N
    and the whole ε. The caller must pass the whole table's N and sums: with a filter the
    number of matching rows is not public and this mechanism does not apply.
    """
    check_public_n(neighbours, unit, rows)
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    _check_present(units_sum, present, spec)
    if present > rows:
        raise CuratorError(f"{present} rows with a value is more than N = {rows}")
    low, high = spec.unit_range
    total = units_sum + (rows - present) * midpoint_units(spec)
    delta = max(high - low, 1)
    scale = noise_scale(epsilon, delta)
    released, k, low_units, high_units = noisy_integer(
        total, scale, rows * low, rows * high, level, source
    )
    step = spec.resolution / rows
    return NoisyPublicMean(
        spec,
        float(released * step),
        eps,
        float(delta * step),
        float(scale * step),
        level,
        float(k * step),
        float(low_units * step),
        float(high_units * step),
        rows,
        neighbours,
        unit,
    )
