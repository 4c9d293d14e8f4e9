"""Validation helpers whose error messages name the parameter and the bad value."""

from __future__ import annotations

import math
import numbers
import operator

__all__ = ["as_count", "as_real", "check_finite", "check_open_unit", "check_unit_interval"]


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
