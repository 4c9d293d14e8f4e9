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


_WIDTHS = (1, 2, 4, 8)


@lru_cache(maxsize=256)
def _threshold_words(p: Fraction) -> tuple[int, tuple[int, ...]]:
    """(w, words): p's base-256 digits as big-endian words of w bytes, zero-padded.

    w is the smallest of 1, 2, 4 and 8 bytes that holds every digit, else 8 (several words).
    """
    digits = _base256_digits(p)
    width = next((w for w in _WIDTHS if len(digits) <= w), 8)
    count = -(-len(digits) // width)
    number = int.from_bytes(bytes(digits) + bytes(width * count - len(digits)), "big")
    bits = 8 * width
    mask = (1 << bits) - 1
    return width, tuple((number >> (bits * (count - 1 - i))) & mask for i in range(count))


def bernoulli(p: Fraction, size: int, source: ByteSource) -> NDArray[np.bool_]:
    """Draw ``size`` independent Bernoulli(p) values exactly, for a dyadic rational p.

    p = N/256^d has d base-256 digits; each draw reads the smallest whole number of 1-, 2-,
    4- or 8-byte words that holds d bytes (one byte for p = 3/4, 8 for a float α's
    (1+α)/2), a uniform U of as many bits, and is U < p, compared a word at a time. Every
    draw reads all its bytes, whatever its outcome: reading on only where U's first bytes
    tie with p's digits would make the number of reads say something about the draw (a
    tie's outcome has other odds than the rest). No floating point enters the probability.
    """
    if not (0 <= p <= 1):
        raise ValueError(f"probability must be in [0, 1], got {p}")
    if p == 1:
        return np.ones(size, dtype=bool)
    if p == 0:
        return np.zeros(size, dtype=bool)
    width, thresholds = _threshold_words(p)
    count = len(thresholds)
    kind = np.dtype(f">u{width}")
    drawn = np.frombuffer(source(width * count * size), dtype=kind).reshape(size, count)
    if count == 1:  # one comparison
        return np.asarray(drawn[:, 0] < kind.type(thresholds[0]))
    result = np.zeros(size, dtype=bool)
    undecided = np.ones(size, dtype=bool)
    for column, threshold in enumerate(thresholds):  # lexicographic, the same work for all
        number, digit = drawn[:, column], kind.type(threshold)
        result |= undecided & (number < digit)
        undecided &= number == digit
    return result
