"""Exact positions of true values on their range, and unbiased rounding onto a grid."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.sampling import ByteSource, bernoulli_rational

__all__ = ["exact_positions", "stochastic_round"]


def exact_positions(
    values: ArrayLike, lo: float, hi: float, *, clamp: bool = False
) -> tuple[list[int], int]:
    """Exact positions u_i = (x_i − lo)/(hi − lo) in [0, 1] as numerators over one denominator.

    Floats are dyadic rationals, so with D the largest power-of-two denominator among
    lo, hi and the values, u_i = (x_i·D − lo·D)/(hi·D − lo·D) with integer numerators.

    Raises:
        TypeError: values are not real numbers.
        ValueError: a value is NaN or infinite, or outside [lo, hi] without ``clamp``.

    Example:
        >>> exact_positions([0.25, 1.0], 0.0, 2.0)
        ([1, 4], 8)
    """
    array = np.asarray(values)
    if array.dtype.kind not in "fiu" or array.dtype == np.bool_:
        raise TypeError(f"values must be real numbers, got dtype {array.dtype}")
    flat = np.ravel(array).astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        raise ValueError(
            f"values must be finite, got {float(flat[bad[0]])!r} at index {int(bad[0])}"
        )
    outside = np.flatnonzero((flat < lo) | (flat > hi))
    if outside.size and not clamp:
        index = int(outside[0])
        raise ValueError(
            f"value {float(flat[index])!r} at index {index} is outside [{lo!r}, {hi!r}]; "
            "pass clamp=True to clamp it to the range"
        )
    ratios = [v.as_integer_ratio() for v in np.clip(flat, lo, hi).tolist()]
    lo_n, lo_d = lo.as_integer_ratio()
    hi_n, hi_d = hi.as_integer_ratio()
    common = max([lo_d, hi_d, *(d for _, d in ratios)])
    base = lo_n * (common // lo_d)
    return [n * (common // d) - base for n, d in ratios], hi_n * (common // hi_d) - base


def stochastic_round(
    numerators: list[int], denominator: int, steps: int, source: ByteSource
) -> NDArray[np.int64]:
    """k_i in {0, ..., steps} with E[k_i] = steps·numerators[i]/denominator, exactly.

    k = floor(s) plus 1 with probability s − floor(s) (an exact rational Bernoulli). The
    Bernoulli reads one word even where s is whole (the range's ends, grid points), so the
    randomness read does not depend on the true values.
    """
    split = [divmod(n * steps, denominator) for n in numerators]
    up = bernoulli_rational([r for _, r in split], denominator, source, fixed_reads=True)
    return np.array([q for q, _ in split], dtype=np.int64) + up
