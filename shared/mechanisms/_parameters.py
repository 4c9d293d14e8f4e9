"""Checks and searches shared by the mechanisms' constructors: options, α, ε, wording."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from deniable.shared._exact import exp_at_least
from deniable.shared._validate import as_count, as_real, check_finite

__all__ = [
    "MAX_OPTIONS",
    "alpha_for",
    "check_alpha",
    "check_epsilon",
    "check_options",
    "grr_ratio",
    "most_useful",
    "percent",
    "times",
]

MAX_OPTIONS = 1024
"""Most options a multiple-choice question may have."""


def check_options(k: object) -> int:
    """Return ``k`` if it is an integer number of options in [2, 1024], else raise naming it."""
    count = as_count("k", k)
    if not (2 <= count <= MAX_OPTIONS):
        raise ValueError(f"k must be between 2 and {MAX_OPTIONS} options, got {count}")
    return count


def check_alpha(alpha: object) -> float:
    """Return a keep-probability α in (0, 1] as a float, else raise naming it."""
    value = check_finite("alpha", as_real("alpha", alpha))
    if not (0.0 < value <= 1.0):
        raise ValueError(
            f"alpha must be in (0, 1], got {value!r}"
            + (" (alpha = 0 reports pure noise: nothing can be estimated)" if value == 0 else "")
        )
    return value


def check_epsilon(epsilon: object, *, alpha_hint: bool = False) -> float:
    """Return a target ε as a finite float > 0, else raise naming it.

    ``alpha_hint``: for mechanisms with a keep-probability, say how to ask for no privacy.
    """
    eps = as_real("epsilon", epsilon)
    if math.isnan(eps) or eps <= 0 or eps == math.inf:
        hint = " (epsilon = inf means no privacy; use alpha=1 explicitly)"
        raise ValueError(
            f"epsilon must be a finite number > 0, got {eps!r}"
            + (hint if alpha_hint and eps > 0 else "")
        )
    return eps


def most_useful(
    start: float,
    epsilon: float,
    ratio: Callable[[float], Fraction | None],
    private_end: float,
    useful_end: float,
) -> float:
    """Move ``start`` by ulps to the most useful float whose exact ratio is <= e^epsilon.

    ``private_end`` is the end of the parameter's range with the most privacy and
    ``useful_end`` the other: the result is certified at ``epsilon``, and its next float
    toward ``useful_end`` is not.
    """
    x = start
    while x != private_end and not exp_at_least(epsilon, ratio(x)):
        x = math.nextafter(x, private_end)
    while x != useful_end and exp_at_least(epsilon, ratio(math.nextafter(x, useful_end))):
        x = math.nextafter(x, useful_end)
    return x


def grr_ratio(alpha: float, size: int) -> Fraction | None:
    """p*/q* = 1 + size·α/(1−α) for randomized response over ``size`` values (α form)."""
    if alpha >= 1.0:
        return None
    a = Fraction(alpha)
    return 1 + size * a / (1 - a)


def alpha_for(epsilon: float, size: int) -> float:
    """α = (e^ε − 1)/(e^ε + size − 1), written with e^−ε so that it never overflows."""
    tiny = math.exp(-epsilon)
    return -math.expm1(-epsilon) / (1.0 + (size - 1) * tiny)


def times(ratio: float) -> str:
    """Format a likelihood ratio for a sentence: two decimals, or 3 significant digits."""
    return f"{ratio:.2f}" if ratio < 1000 else f"{ratio:.3g}"


def percent(share: Fraction) -> str:
    """A probability as a whole percentage, rounded exactly; never "100%" for one below 1."""
    whole = round(share * 100)
    return "over 99.5%" if whole == 100 and share < 1 else f"{whole}%"
