"""Normal-approximation sample sizes for any mechanism: n = z²·Var₁/m², and the margin of n."""

from __future__ import annotations

import math
from collections.abc import Callable

from deniable.shared._validate import as_count, as_real, check_confidence, check_unit_interval
from deniable.shared.mechanisms import Mechanism
from deniable.shared.stats import normal_quantile

__all__ = [
    "Variance",
    "check_mean_margin",
    "check_share_margin",
    "margin_achieved_by",
    "margin_for",
    "participants_for",
    "smallest_n",
    "variance_of",
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


def variance_of(mechanism: Mechanism, share: float | None = None) -> Variance:
    """N ↦ the mechanism's ``estimate_variance(n, share)`` (share None: the worst case)."""
    checked = None if share is None else check_unit_interval("p", share)
    return lambda n: mechanism.estimate_variance(n, checked)


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


def participants_for(
    margin: float,
    mechanism: Mechanism,
    confidence: float = 0.95,
    share: float | None = None,
    *,
    mean: bool = False,
) -> int:
    """Smallest n whose interval has half-width <= ``margin``.

    For a share (``mean`` False) the margin is in (0, 1] and Var₁ is taken at ``share``,
    or at the worst share when None; for a mean it is in x units and Var₁ is the worst
    case over all distributions on the range.
    """
    m = check_mean_margin(margin) if mean else check_share_margin(margin)
    return smallest_n(m, confidence, variance_of(mechanism, share))


def margin_achieved_by(
    participants: int, mechanism: Mechanism, confidence: float = 0.95, share: float | None = None
) -> float:
    """Half-width z·sqrt(Var(estimate)) from ``participants`` (see :func:`participants_for`)."""
    return margin_for(participants, confidence, variance_of(mechanism, share))
