"""Normal-approximation sample sizes for one option's share or a mean: n = z²·Var₁/m²."""

from __future__ import annotations

import math
from collections.abc import Callable

from deniable.aggregator.analysis._intervals import normal_quantile
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._numeric import NumericSpec
from deniable.shared._validate import as_count, as_real, check_confidence, check_unit_interval

__all__ = [
    "Variance",
    "categorical_margin_achieved",
    "categorical_participants_needed",
    "categorical_variance",
    "check_mean_margin",
    "check_share_margin",
    "margin_for",
    "numeric_margin_achieved",
    "numeric_participants_needed",
    "numeric_variance",
    "smallest_n",
]

Variance = Callable[[int], float]
"""Variance of the estimate from n participants (Var₁/n up to rounding)."""


def smallest_n(margin: float, confidence: float, variance: Variance) -> int:
    """Smallest n >= 1 with z·sqrt(variance(n)) <= margin, starting from z²·Var₁/m²."""
    z = normal_quantile(check_confidence(confidence))
    n = max(1, math.ceil(z * z * variance(1) / (margin * margin)))
    # Guard against float rounding on either side of the exact ceiling.
    while n > 1 and z * math.sqrt(variance(n - 1)) <= margin:
        n -= 1
    while z * math.sqrt(variance(n)) > margin:
        n += 1
    return n


def margin_for(participants: int, confidence: float, variance: Variance) -> float:
    """Half-width z·sqrt(variance(n)) of the normal-approximation interval."""
    n = as_count("participants", participants, minimum=1)
    return normal_quantile(check_confidence(confidence)) * math.sqrt(variance(n))


def categorical_variance(spec: CategoricalSpec, p: float | None) -> Variance:
    """Var(f̂) from n reports: at share p, or the worst case over shares when p is None."""
    if p is None:
        return lambda n: spec.worst_variance(n, "population")
    share = check_unit_interval("p", p)
    return lambda n: spec.variance(share, n, "population")


def check_share_margin(margin: float) -> float:
    """A margin for a share: a number in (0, 1]."""
    m = as_real("margin", margin)
    if not (0.0 < m <= 1.0):  # also rejects NaN
        raise ValueError(f"margin must be in (0, 1], got {m!r}")
    return m


def check_mean_margin(margin: float) -> float:
    """A margin for a mean, in x units: a finite number > 0."""
    m = as_real("margin", margin)
    if not (0.0 < m < math.inf):  # also rejects NaN
        raise ValueError(f"margin must be a finite number > 0, got {m!r}")
    return m


def categorical_participants_needed(
    margin: float, spec: CategoricalSpec, confidence: float = 0.95, p: float | None = None
) -> int:
    """Smallest n whose interval for one option's share has half-width <= ``margin``.

    Var₁ is ``spec.variance(p, 1)`` for the population estimand, or its worst case over all
    shares (``spec.worst_variance``) when ``p`` is None.
    """
    m = check_share_margin(margin)
    return smallest_n(m, confidence, categorical_variance(spec, p))


def categorical_margin_achieved(
    participants: int, spec: CategoricalSpec, confidence: float = 0.95, p: float | None = None
) -> float:
    """Half-width z·sqrt(Var(f̂)) of one option's interval from ``participants``."""
    return margin_for(participants, confidence, categorical_variance(spec, p))


def numeric_variance(spec: NumericSpec) -> Variance:
    """Worst-case Var(mean) from n reports, in x units (``spec.variance_x``)."""
    return lambda n: spec.variance_x(n, "population")


def numeric_participants_needed(margin: float, spec: NumericSpec, confidence: float = 0.95) -> int:
    """Smallest n whose interval for the mean has half-width <= ``margin`` (x units).

    Var₁ is ``spec.variance_x(1)``: the worst case over all distributions on [lo, hi].
    """
    return smallest_n(check_mean_margin(margin), confidence, numeric_variance(spec))


def numeric_margin_achieved(
    participants: int, spec: NumericSpec, confidence: float = 0.95
) -> float:
    """Worst-case half-width z·sqrt(spec.variance_x(n)) of the mean's interval, x units."""
    return margin_for(participants, confidence, numeric_variance(spec))
