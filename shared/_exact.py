"""Exact comparisons between a float ε and a mechanism's rational privacy-loss ratio."""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

__all__ = ["exp_at_least", "tightest_epsilon"]

_START_DIGITS = 60
_MAX_DIGITS = 2000


def exp_at_least(epsilon: float, ratio: Fraction | None) -> bool:
    """Return whether e^epsilon >= ratio, decided exactly.

    ``ratio`` is the worst-case likelihood ratio of a mechanism (a rational number, since
    its parameters are floats); ``None`` means an unbounded ratio (no privacy). The
    exponential is evaluated with correctly rounded decimal arithmetic at growing precision
    until the comparison is certain, so the answer never depends on float rounding.
    """
    if math.isnan(epsilon):
        raise ValueError("epsilon must not be NaN")
    if ratio is None:
        return epsilon == math.inf
    if epsilon == math.inf:
        return True
    if ratio <= 0:
        raise ValueError(f"ratio must be positive, got {ratio}")
    digits = _START_DIGITS
    while digits <= _MAX_DIGITS:
        context = Context(prec=digits)
        approx = Fraction(context.exp(Decimal(epsilon)))
        # A correctly rounded result lies within half a unit in the last place, which is
        # at most 10^(1-digits) relative.
        slack = approx * Fraction(1, 10 ** (digits - 1))
        if approx - slack >= ratio:
            return True
        if approx + slack < ratio:
            return False
        digits *= 2
    raise ArithmeticError(f"cannot decide e^{epsilon!r} >= {ratio}")  # pragma: no cover


def tightest_epsilon(ratio: Fraction | None) -> float:
    """Return the smallest float ε with e^ε >= ratio: the privacy loss, never understated."""
    if ratio is None:
        return math.inf
    if ratio <= 1:
        return 0.0
    try:
        guess = math.log1p(float(ratio - 1))  # accurate near 1, where the ratio is closest
    except OverflowError:
        guess = math.log(ratio.numerator) - math.log(ratio.denominator)
    guess = max(guess, math.ulp(0.0))
    while not exp_at_least(guess, ratio):
        guess = math.nextafter(guess, math.inf)
    while guess > 0 and exp_at_least(math.nextafter(guess, 0.0), ratio):
        guess = math.nextafter(guess, 0.0)
    return guess
