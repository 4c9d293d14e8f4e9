"""Count and histogram: exact bounded counts in, discrete Laplace releases of scale Δ/ε out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, Value
from deniable.aggregator.central.curator._noise import (
    INTERVAL_METHOD,
    NoisyCount,
    central_laplace_count,
    check_curator_epsilon,
    noise_scale,
)
from deniable.aggregator.central.curator._sensitivity import (
    count_sensitivity,
    histogram_sensitivity,
    privacy_fields,
)
from deniable.shared.sampling import ByteSource, os_source

__all__ = ["NoisyHistogram", "noisy_count", "noisy_histogram", "parse_values"]


def _check_count(value: object, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CuratorError(f"{option} must be an integer >= 0, got {value!r}")
    return value


def noisy_count(
    true_count: int,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    upper: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyCount:
    """The bounded count (at most K rows per unit) with discrete Laplace noise of scale K/ε.

    Args:
        true_count: the exact count after bounding each unit to K rows.
        epsilon: the privacy loss.
        neighbours: add-remove or replace.
        unit: the privacy unit (its K gives Δ = K either way).
        upper: a public upper bound for the clamp (the row count under replace-one with rows
            as units, or an analyst's public bound); None: clamped at 0 only.
        confidence: the interval's confidence.
        source: random bytes (the OS CSPRNG unless a seeded source is given for tests).
    """
    _check_count(true_count, "the true count")
    sensitivity = count_sensitivity(neighbours, unit)
    return central_laplace_count(
        true_count, epsilon, sensitivity, upper=upper, confidence=confidence, source=source,
        neighbours=neighbours, unit=unit,
    )  # fmt: skip


@dataclass(frozen=True)
class NoisyHistogram:
    """Counts over a public list of keys, released together at ε (L1 sensitivity K or 2K).

    Attributes:
        bins: each listed key and its noisy count (all at the histogram's scale).
        epsilon: the privacy loss of the whole histogram.
        sensitivity: the L1 sensitivity, K under add-remove, 2K under replace.
        scale: the noise scale Δ/ε of every bin.
        neighbours: add-remove or replace.
        unit: the privacy unit.
    """

    bins: tuple[tuple[Value, NoisyCount], ...]
    epsilon: float
    sensitivity: int
    scale: Fraction
    neighbours: str
    unit: PrivacyUnit

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries: one interval per bin."""
        return {
            "epsilon": self.epsilon,
            "delta": 0.0,
            "sensitivity": self.sensitivity,
            "noise_scale": float(self.scale),
            **privacy_fields(self.neighbours, self.unit),
            "bins": [
                {
                    "value": value,
                    "released": count.released,
                    "clamp": [0, count.upper],
                    "interval": {
                        "low": count.low,
                        "high": count.high,
                        "confidence": count.confidence,
                        "half_width": count.half_width,
                        "method": INTERVAL_METHOD + " (each bin on its own)",
                        "covers": "the bin's count of matching rows, each unit bounded to K",
                    },
                }
                for value, count in self.bins
            ],
            "note": "the keys are the public list given; rows with another value are in no bin",
        }


def noisy_histogram(
    counts: Sequence[tuple[Value, int]],
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    upper: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyHistogram:
    """The bounded count of each listed key, each with discrete Laplace noise of scale Δ/ε.

    ``counts`` pairs every key of a *public* list with its exact count (0 for a key no row
    has): a list taken from the data would reveal a rare value (use ``select_keys`` for an
    unknown domain). The whole histogram is ε-DP with the L1 sensitivity K (add-remove) or
    2K (replace). ``upper`` is a public clamp for every bin, as for :func:`noisy_count`.
    """
    eps = check_curator_epsilon(epsilon)
    sensitivity = histogram_sensitivity(neighbours, unit)
    seen: set[Value] = set()
    for key, count in counts:
        if key in seen:
            raise CuratorError(f"--values: key {key!r} is listed twice")
        seen.add(key)
        _check_count(count, f"the count of {key!r}")
    bins = tuple(
        (
            key,
            central_laplace_count(
                count,
                epsilon,
                sensitivity,
                upper=upper,
                confidence=confidence,
                source=source,
                neighbours=neighbours,
                unit=unit,
            ),
        )
        for key, count in counts
    )
    return NoisyHistogram(
        bins, eps, sensitivity, noise_scale(epsilon, sensitivity), neighbours, unit
    )


def parse_values(kind: str, column: str, texts: Sequence[str], option: str) -> list[Value]:
    """The listed values of a ``kind`` (int, float or str) column; one that is not is an error."""
    if kind not in ("int", "float", "str"):
        raise CuratorError(f"{option}: type of {column!r} must be int, float or str, got {kind!r}")
    values: list[Value] = []
    for text in texts:
        try:
            value: Value = text if kind == "str" else (int(text) if kind == "int" else float(text))
        except ValueError:
            raise CuratorError(
                f"{option}: column {column!r} is {kind} but {text!r} is not"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise CuratorError(f"{option}: value {text!r} of {column!r} is not a finite number")
        if value in values:
            raise CuratorError(f"{option}: value {text!r} of {column!r} is listed twice")
        values.append(value)
    if not values:
        raise CuratorError(f"{option}: list the values of {column!r} (a public list of categories)")
    return values
