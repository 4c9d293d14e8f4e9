"""Exact binary digits of probabilities built from e^(−x), x rational, by interval arithmetic."""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from functools import lru_cache

__all__ = ["Shape", "exp_neg_bounds", "leading_bits"]

_GUARD = 16


class Shape(Enum):
    """How a probability p is made from E = e^(−x)."""

    EXP = "E"  # p = E
    LOGISTIC = "E/(1+E)"  # p = E/(1 + E), increasing in E
    TANH = "(1−E)/(1+E)"  # p = tanh(x/2), decreasing in E


def exp_neg_bounds(x: Fraction, precision: int) -> tuple[Fraction, Fraction]:
    """(lo, hi) with lo <= e^(−x) <= hi and hi − lo <= 2^(s+3−precision), x >= 0 rational.

    e^(−x) = (e^(−f))^(2^s) with f = x/2^s < 1. The Taylor series of e^(−f) alternates with
    decreasing terms, so consecutive partial sums bracket it; the bracket is rounded outwards
    to ``precision + s`` bits and squared s times, rounding outwards each time.
    """
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x}")
    s = (-(-x.numerator // x.denominator)).bit_length()  # 2^s > ceil(x) >= x
    f = x / (1 << s)
    bits = precision + s + _GUARD
    one = Fraction(1 << bits)
    term, total, index = Fraction(1), Fraction(1), 0
    while True:  # stop once the next term is below one unit in the last place
        index += 1
        term = term * f / index
        below = total - term  # partial sums alternate around e^(−f)
        if term * one < 1:
            low_sum, high_sum = below, total
            break
        total = below
        index += 1
        term = term * f / index
        above = total + term
        if term * one < 1:
            low_sum, high_sum = total, above
            break
        total = above
    lo = (low_sum.numerator << bits) // low_sum.denominator
    hi = -((-high_sum.numerator << bits) // high_sum.denominator)
    for _ in range(s):
        lo = (lo * lo) >> bits
        hi = -((-hi * hi) >> bits)
    return Fraction(max(lo, 0), 1 << bits), Fraction(min(hi, 1 << bits), 1 << bits)


@lru_cache(maxsize=1024)
def leading_bits(shape: Shape, x: Fraction, bits: int) -> int:
    """floor(p·2^bits) exactly for p = shape(e^(−x)), x > 0 rational (p is irrational).

    The bounds on e^(−x) bound p (each shape is monotone in E); the precision doubles until
    both ends have the same first ``bits`` bits.
    """
    if x <= 0:
        raise ValueError(f"x must be > 0, got {x}")
    precision = bits + _GUARD
    while True:
        lo, hi = exp_neg_bounds(x, precision)
        if shape is Shape.EXP:
            p_lo, p_hi = lo, hi
        elif shape is Shape.LOGISTIC:
            p_lo, p_hi = lo / (1 + lo), hi / (1 + hi)
        else:
            p_lo, p_hi = (1 - hi) / (1 + hi), (1 - lo) / (1 + lo)
        floor_lo = (p_lo.numerator << bits) // p_lo.denominator
        floor_hi = (p_hi.numerator << bits) // p_hi.denominator
        if floor_lo == floor_hi:
            return floor_lo
        precision *= 2
