"""Validation helpers whose error messages name the parameter and the bad value."""

from __future__ import annotations

import math
import numbers
import operator

__all__ = [
    "MAX_CONFIDENCE",
    "as_count",
    "as_real",
    "check_confidence",
    "check_finite",
    "check_open_unit",
    "check_unit_interval",
]

MAX_CONFIDENCE = 1.0 - 1e-9
"""Highest confidence level an estimate accepts (GetEstimate refuses levels above it).

Far beyond any useful level, and far enough from 1 that the two-sided tail (1 − c)/2 is at
least 5e-10, held to full float precision: every interval's quantile is finite there. At
the bound: normal 6.11 (Wilson, Wald), Student t with 1 degree of freedom 6.4e8 (the
numeric t-interval at n = 2), Chebyshev 1/(2·sqrt(n·1e-9)), and Clopper–Pearson's beta
quantiles in [0, 1]. Closer to 1, (1 + c)/2 rounds to 1 and those quantiles become
infinite.
"""


def as_real(name: str, value: object) -> float:
    """Return ``value`` as a float, rejecting booleans, strings and other non-numbers."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def as_count(name: str, value: object, *, minimum: int = 0) -> int:
    """Return ``value`` as an int >= ``minimum``; integral floats such as 9.0 are rejected."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        result = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None
    if result < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {result}")
    return result


def check_open_unit(name: str, value: object) -> float:
    """Return ``value`` as a float strictly between 0 and 1 (confidence levels, shares)."""
    number = as_real(name, value)
    if not (0.0 < number < 1.0):  # also rejects NaN
        raise ValueError(f"{name} must be strictly between 0 and 1, got {number!r}")
    return number


def check_confidence(value: object, name: str = "confidence") -> float:
    """Return ``value`` as a confidence level in (0, :data:`MAX_CONFIDENCE`]."""
    number = check_open_unit(name, value)
    if number > MAX_CONFIDENCE:
        raise ValueError(
            f"{name} must be at most 1 - 1e-9 ({MAX_CONFIDENCE!r}), got {number!r}: closer "
            "to 1 an interval's quantile is infinite"
        )
    return number


def check_unit_interval(name: str, value: object) -> float:
    """Return ``value`` as a float in [0, 1] (a true share)."""
    number = as_real(name, value)
    if not (0.0 <= number <= 1.0):  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {number!r}")
    return number


def check_finite(name: str, number: float) -> float:
    """Raise a ValueError naming ``name`` unless ``number`` is finite."""
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {number!r}")
    return number
