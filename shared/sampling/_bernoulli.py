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

    p = N/256^d has d base-256 digits; each draw reads d random bytes, a uniform integer U
    below 256^d, and is U < N. Every draw reads all d bytes, whatever its outcome: reading
    on only where U's first bytes tie with p's digits would make the number of reads say
    something about the draw (a tie's outcome has other odds than the rest). No floating
    point enters the probability.
    """
    if not (0 <= p <= 1):
        raise ValueError(f"probability must be in [0, 1], got {p}")
    if p == 1:
        return np.ones(size, dtype=bool)
    digits = _base256_digits(p)
    if not digits:  # p == 0
        return np.zeros(size, dtype=bool)
    places = len(digits)
    drawn = np.frombuffer(source(size * places), dtype=np.uint8).reshape(size, places)
    words = -(-places // 8)
    padded = np.zeros((size, 8 * words), dtype=np.uint8)
    padded[:, :places] = drawn  # most significant first; the padding is below every digit
    numbers = padded.view(">u8")
    threshold = int.from_bytes(bytes(digits) + bytes(8 * words - places), "big")
    result = np.zeros(size, dtype=bool)
    undecided = np.ones(size, dtype=bool)
    for column in range(words):  # lexicographic U < N, the same work for every draw
        digit = np.uint64((threshold >> (64 * (words - 1 - column))) & ((1 << 64) - 1))
        number = numbers[:, column]
        result |= undecided & (number < digit)
        undecided &= number == digit
    return result
