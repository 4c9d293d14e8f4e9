"""Exact Bernoulli draws from uniform random bytes, vectorized, with no floating point."""

from __future__ import annotations

import os
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["ByteSource", "bernoulli", "generator_source", "os_source"]

ByteSource = Callable[[int], bytes]
"""A callable returning that many independent, uniformly random bytes."""


def os_source(size: int) -> bytes:
    """The operating system's CSPRNG (``os.urandom``), looked up at call time."""
    return os.urandom(size)


def generator_source(rng: np.random.Generator) -> ByteSource:
    """Bytes from a seeded numpy Generator: for simulations and tests only, never participants."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng.bytes


@lru_cache(maxsize=256)
def _base256_digits(p: Fraction) -> tuple[int, ...]:
    """Digits of p in [0, 1) in base 256, most significant first; p must be dyadic."""
    exponent = p.denominator.bit_length() - 1
    if p.denominator != 1 << exponent:
        raise ValueError(f"probability {p} is not a dyadic rational")
    places = -(-exponent // 8)
    scaled = p.numerator << (8 * places - exponent)
    return tuple((scaled >> (8 * (places - 1 - i))) & 0xFF for i in range(places))


def bernoulli(p: Fraction, size: int, source: ByteSource) -> NDArray[np.bool_]:
    """Draw ``size`` independent Bernoulli(p) values exactly, for a dyadic rational p.

    A uniform U in [0, 1) is revealed one random byte at a time and compared with the
    base-256 expansion of p; the first differing digit decides U < p. Only draws whose
    byte equals p's digit (probability 1/256) need another byte, so a draw costs about
    one byte, and no floating-point rounding enters the probability.
    """
    if not (0 <= p <= 1):
        raise ValueError(f"probability must be in [0, 1], got {p}")
    if p == 1:
        return np.ones(size, dtype=bool)
    digits = _base256_digits(p)
    if not digits:  # p == 0
        return np.zeros(size, dtype=bool)
    drawn = np.frombuffer(source(size), dtype=np.uint8)
    result = drawn < digits[0]
    undecided = np.flatnonzero(drawn == digits[0])
    for digit in digits[1:]:
        if undecided.size == 0:
            break
        drawn = np.frombuffer(source(undecided.size), dtype=np.uint8)
        result[undecided] = drawn < digit
        undecided = undecided[drawn == digit]
    # Still undecided: U matched every digit of p, and p's expansion ends, so U >= p.
    return result
