"""Exact samplers from random bytes: rational and exp(−γ) Bernoullis, geometric draws."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from deniable.shared.sampling._bernoulli import ByteSource
from deniable.shared.sampling._uniform import uniform_below as _uniform_below

__all__ = [
    "bernoulli_exp",
    "bernoulli_rational",
    "geometric_exp",
    "uniform_below",
]

_DIGIT_BITS = 64
_MAX_UNIFORM = 1 << 63


def _uint64(source: ByteSource, size: int) -> NDArray[np.uint64]:
    """``size`` independent uniform 64-bit integers from the byte source."""
    return np.frombuffer(source(8 * size), dtype="<u8").astype(np.uint64, copy=False)


def bernoulli_rational(
    numerators: Sequence[int] | int,
    denominator: int,
    source: ByteSource,
    size: int | None = None,
    *,
    fixed_reads: bool = False,
) -> NDArray[np.bool_]:
    """Independent Bernoulli(numerator/denominator) draws, exactly, for rational probabilities.

    A uniform U in [0, 1) is revealed 64 bits at a time and compared with the base-2^64
    expansion of each probability; the first differing digit decides U < p. Only a tie
    (probability 2^-64 per digit) needs another digit, so a draw costs 8 bytes, and the
    probability is exact for any rational, dyadic or not. A certain draw (probability 0
    or 1) reads nothing, unless ``fixed_reads``.

    Args:
        numerators: one integer numerator per draw in [0, denominator], or a single integer
            shared by ``size`` draws.
        denominator: common positive denominator.
        source: uniform random bytes.
        size: number of draws when ``numerators`` is a single integer.
        fixed_reads: read the first digit of every draw, even at probability 0 or 1, for
            probabilities derived from a secret (a true value): the bytes read, and the
            work, then do not depend on it. Only a tie, 2^-64 per draw, reads on where p's
            expansion continues.

    Returns:
        Boolean array, True with probability numerators[i]/denominator.

    Example:
        >>> from deniable.shared.sampling._bernoulli import os_source
        >>> bernoulli_rational([0, 3], 3, os_source).tolist()
        [False, True]
    """
    if denominator <= 0:
        raise ValueError(f"denominator must be positive, got {denominator}")
    if isinstance(numerators, int):
        count = 1 if size is None else size
        return _bernoulli_same(numerators, denominator, count, source)
    nums = list(numerators)
    if nums and (min(nums) < 0 or max(nums) > denominator):
        bad = next(n for n in nums if n < 0 or n > denominator)
        raise ValueError(f"probability must be in [0, 1], got {bad}/{denominator}")
    certain = np.array([n == denominator for n in nums], dtype=bool)
    result = np.zeros(len(nums), dtype=bool)
    if fixed_reads:  # p = 1 is read as p = 0, then set
        pending = np.arange(len(nums))
        remainders = [0 if n == denominator else n for n in nums]
    else:
        pending = np.flatnonzero([0 < n < denominator for n in nums])
        remainders = [nums[i] for i in pending.tolist()]
    while pending.size:
        split = [divmod(r << _DIGIT_BITS, denominator) for r in remainders]
        digits = np.array([d for d, _ in split], dtype=np.uint64)
        drawn = _uint64(source, pending.size)
        result[pending] = drawn < digits
        tie = drawn == digits
        # On a tie U's next digits are compared with the rest of p; if p's expansion ends
        # (remainder 0), U >= p and the draw is False.
        keep = tie & np.array([r != 0 for _, r in split], dtype=bool)
        pending = pending[keep]
        remainders = [split[i][1] for i in np.flatnonzero(keep).tolist()]
    result |= certain
    return result


def _bernoulli_same(
    numerator: int, denominator: int, size: int, source: ByteSource
) -> NDArray[np.bool_]:
    """Bernoulli(numerator/denominator) ``size`` times: one probability, digits computed once."""
    if not 0 <= numerator <= denominator:
        raise ValueError(f"probability must be in [0, 1], got {numerator}/{denominator}")
    if numerator == denominator:
        return np.ones(size, dtype=bool)
    result = np.zeros(size, dtype=bool)
    pending = np.arange(size)
    remainder = numerator
    while pending.size and remainder:
        digit, remainder = divmod(remainder << _DIGIT_BITS, denominator)
        drawn = _uint64(source, pending.size)
        result[pending] = drawn < np.uint64(digit)
        pending = pending[drawn == np.uint64(digit)]
    return result


def uniform_below(bound: int, size: int, source: ByteSource) -> NDArray[np.int64]:
    """Independent uniform integers in {0, ..., bound−1}, exactly, as int64 (bound <= 2^63).

    The shared exact rejection sampler (:func:`._uniform.uniform_below`), typed for the signed
    arithmetic of the samplers here.
    """
    if not 1 <= bound <= _MAX_UNIFORM:
        raise ValueError(f"bound must be in [1, 2^63], got {bound}")
    return _uniform_below(bound, size, source).astype(np.int64)


def _bernoulli_exp_unit(
    numerators: Sequence[int], denominator: int, source: ByteSource
) -> NDArray[np.bool_]:
    """Bernoulli(exp(−γ)) for γ = numerators[i]/denominator in [0, 1] (CKS 2020, Alg. 1).

    K counts up while Bernoulli(γ/K) succeeds; the result is "K is odd" when it first fails.
    P(K = k) = γ^(k−1)/(k−1)! − γ^k/k!, and summing over odd k gives exp(−γ).
    """
    size = len(numerators)
    result = np.zeros(size, dtype=bool)
    active = np.arange(size)
    nums = list(numerators)
    k = 1
    while active.size:
        going = bernoulli_rational(nums, denominator * k, source)
        result[active[~going]] = k % 2 == 1
        active = active[going]
        nums = [n for n, g in zip(nums, going.tolist(), strict=True) if g]
        k += 1
    return result


def bernoulli_exp(
    numerators: Sequence[int], denominator: int, source: ByteSource
) -> NDArray[np.bool_]:
    """Independent Bernoulli(exp(−γ_i)) draws for rationals γ_i = numerators[i]/denominator >= 0.

    Exact: exp(−γ) = exp(−1)^floor(γ) · exp(−frac(γ)), each factor an independent
    Bernoulli(exp(−γ')) with γ' in [0, 1] sampled by Canonne, Kamath and Steinke's
    Algorithm 1 from rational Bernoullis. No floating-point number is involved.

    Example:
        >>> from deniable.shared.sampling._bernoulli import os_source
        >>> bernoulli_exp([0, 0], 7, os_source).tolist()
        [True, True]
    """
    if denominator <= 0:
        raise ValueError(f"denominator must be positive, got {denominator}")
    nums = list(numerators)
    if nums and min(nums) < 0:
        raise ValueError(f"gamma must be >= 0, got {min(nums)}/{denominator}")
    result = np.ones(len(nums), dtype=bool)
    whole = np.array([n // denominator for n in nums], dtype=np.int64)
    for round_ in range(1, int(whole.max(initial=0)) + 1):
        need = np.flatnonzero(result & (whole >= round_))
        result[need] = _bernoulli_exp_unit([denominator] * need.size, denominator, source)
    need = np.flatnonzero(result)
    fractional = [nums[i] % denominator for i in need.tolist()]
    result[need] = _bernoulli_exp_unit(fractional, denominator, source)
    return result


def _bernoulli_exp_same(gamma: Fraction, size: int, source: ByteSource) -> NDArray[np.bool_]:
    """``size`` draws of Bernoulli(exp(−γ)) for one rational γ >= 0 (digits computed once)."""
    result = np.ones(size, dtype=bool)
    whole, part = divmod(gamma, 1)
    factors = [Fraction(1)] * int(whole) + ([part] if part else [])  # exp(−1)^whole·exp(−part)
    for unit in factors:
        need = np.flatnonzero(result)
        odd = np.zeros(need.size, dtype=bool)
        active = np.arange(need.size)
        k = 1
        while active.size:  # CKS Algorithm 1, as in _bernoulli_exp_unit
            going = bernoulli_rational(unit.numerator, unit.denominator * k, source, active.size)
            odd[active[~going]] = k % 2 == 1
            active = active[going]
            k += 1
        result[need] = odd
    return result


def geometric_exp(gamma: Fraction, size: int, source: ByteSource) -> NDArray[np.int64]:
    """Independent geometric draws with P(V = v) = (1 − e^−γ)·e^(−γv), v = 0, 1, ...

    Counts the successes of Bernoulli(exp(−γ)) before the first failure, exactly.
    """
    if gamma <= 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    out = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        going = _bernoulli_exp_same(gamma, active.size, source)
        active = active[going]
        out[active] += 1
    return out
