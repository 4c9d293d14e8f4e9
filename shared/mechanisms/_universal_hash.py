"""The universal hash family of optimized local hashing, vectorized in exact uint64 arithmetic."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "HASH_MAX_INPUT",
    "HASH_MAX_RANGE",
    "HASH_PRIME",
    "check_hash_range",
    "hash_unchecked",
    "universal_hash",
    "universal_hash_reference",
]

HASH_PRIME = (1 << 61) - 1
"""P = 2^61 − 1, a Mersenne prime: reduction mod P is a shift, a mask and an addition."""

HASH_MAX_INPUT = 1 << 16
"""Hashed values must be below this (options are < 1024); it keeps every sum below 2^63."""

HASH_MAX_RANGE = (1 << 32) - 1
"""Largest hash range g (so g and y fit in uint32); the bias bound 1/P stays negligible."""

_P = np.uint64(HASH_PRIME)
_LOW32 = np.uint64(0xFFFF_FFFF)
_LOW29 = np.uint64((1 << 29) - 1)


def universal_hash_reference(a: int, b: int, value: int, g: int) -> int:
    """H_{a,b}(v) = ((a·v + b) mod P) mod g in Python integers: the definition, for checking.

    Example:
        >>> universal_hash_reference(HASH_PRIME - 1, HASH_PRIME - 1, 1023, 7)
        6
    """
    return ((a * value + b) % HASH_PRIME) % g


def check_hash_range(g: object) -> int:
    """Return ``g`` if it is an integer hash range in [2, 2^32 − 1], else raise naming it."""
    if isinstance(g, bool) or not isinstance(g, int | np.integer):
        raise TypeError(f"g must be an integer, got {g!r} ({type(g).__name__})")
    if not (2 <= int(g) <= HASH_MAX_RANGE):
        raise ValueError(f"g must be between 2 and {HASH_MAX_RANGE}, got {int(g)}")
    return int(g)


def _mod_p(s: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Reduce s < 2^63 modulo P using 2^61 ≡ 1 (mod P)."""
    folded = (s & _P) + (s >> np.uint64(61))  # < 2^61 + 4
    reduced: NDArray[np.uint64] = folded - (folded >= _P).astype(np.uint64) * _P
    return reduced


def universal_hash(a: ArrayLike, b: ArrayLike, value: ArrayLike, g: int) -> NDArray[np.uint64]:
    """H_{a,b}(v) = ((a·v + b) mod P) mod g, elementwise with numpy broadcasting.

    The family: P = 2^61 − 1 is prime and a, b are drawn uniformly from [0, P) (a = 0 is
    allowed). For two inputs x ≠ v below P, the map (a, b) ↦ (a·x + b, a·v + b) mod P is a
    bijection of Z_P², so the pair of unreduced hashes is exactly uniform on Z_P²: H(v) is
    independent of H(x), and P(H(v) = j) = ⌈P/g⌉/P or ⌊P/g⌋/P, within 1/P = 2^−61 of 1/g.

    a·v does not fit in 64 bits, so a is split as a_hi·2^32 + a_lo. With v < 2^16,
    a_lo·v < 2^48 and t = a_hi·v < 2^45; then t·2^32 = (t >> 29)·2^61 + (t mod 2^29)·2^32
    and 2^61 ≡ 1 (mod P) give a sum below 2^63 that one fold reduces. The result equals
    :func:`universal_hash_reference` exactly (tested against Python integers).

    Args:
        a: hash parameters in [0, P) (unsigned or non-negative integers).
        b: hash parameters in [0, P).
        value: hashed values in [0, 2^16).
        g: hash range, 2 <= g <= 2^32 − 1.

    Returns:
        The hashes in [0, g), dtype uint64, with the broadcast shape of a, b and value.

    Raises:
        ValueError: a parameter or value is out of range (naming the first bad one).

    Example:
        >>> universal_hash([HASH_PRIME - 1], [HASH_PRIME - 1], [1023], 7).tolist()
        [6]
    """
    range_ = check_hash_range(g)
    return hash_unchecked(
        _as_uint64("a", a, HASH_PRIME),
        _as_uint64("b", b, HASH_PRIME),
        _as_uint64("value", value, HASH_MAX_INPUT),
        range_,
    )


def hash_unchecked(
    a: NDArray[np.uint64], b: NDArray[np.uint64], value: NDArray[np.uint64], g: int
) -> NDArray[np.uint64]:
    """:func:`universal_hash` for inputs already known to be in range (uint64 arrays)."""
    a_hi = a >> np.uint64(32)
    a_lo = a & _LOW32
    t = a_hi * value
    s = ((t & _LOW29) << np.uint64(32)) + (t >> np.uint64(29)) + a_lo * value + b
    return np.asarray(_mod_p(s) % np.uint64(g), dtype=np.uint64)


def _as_uint64(name: str, values: ArrayLike, bound: int) -> NDArray[np.uint64]:
    """Validate integers in [0, bound) and return them as uint64, naming the first bad one."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        if array.size == 0:
            return array.astype(np.uint64)
        raise TypeError(f"{name} must be integers, got dtype {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array >= bound))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = f" at index {tuple(map(int, index))}" if array.ndim else ""
        raise ValueError(f"{name} must be in [0, {bound}), got {array[index].item()!r}{where}")
    return array.astype(np.uint64)
