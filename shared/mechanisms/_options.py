"""True options and randomized values of frequency oracles, validated and sampled exactly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms._base import ReportValueError
from deniable.shared.sampling import ByteSource, bernoulli, uniform_below

__all__ = ["as_option", "as_options", "check_below", "randomized_response"]


def as_options(values: ArrayLike, k: int, name: str) -> NDArray[np.int64]:
    """Validate true options: integers in [0, k), any shape; name the first bad one."""
    array = np.asarray(values)
    if array.size == 0 and array.dtype.kind not in "b":
        return np.zeros(array.shape, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be option numbers (integers), got dtype {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array >= k))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = f" at index {tuple(map(int, index))}" if array.ndim else ""
        raise ValueError(
            f"{name} must be option numbers in [0, {k}), got {array[index].item()!r}{where}"
        )
    return array.astype(np.int64)


def as_option(value: object, k: int) -> NDArray[np.int64]:
    """Validate one true option; returns a 0-d array."""
    option = as_options(value, k, "value")  # type: ignore[arg-type]
    if option.ndim != 0:
        raise ValueError(
            f"value must be a single option, got shape {option.shape}; use perturb_many for arrays"
        )
    return option


def randomized_response(
    truth: NDArray[np.int64], size: int, alpha: float, source: ByteSource
) -> NDArray[np.int64]:
    """Keep each value w.p. α exactly, else replace it by a uniform draw from [0, size).

    The replacement is drawn for every value, kept or not, and picked by arithmetic
    (replacement + keep·(truth − replacement)), not by a branch: the randomness read and the
    work are the same whether the report is the truth or not.
    """
    flat = truth.reshape(-1)
    keep = bernoulli(Fraction(alpha), flat.size, source).astype(np.int64)
    replacement = uniform_below(size, flat.size, source).astype(np.int64)
    return (replacement + keep * (flat - replacement)).reshape(truth.shape)


def check_below(values: NDArray[np.integer], bound: int, field: str, what: str) -> None:
    """Raise :class:`ReportValueError` at the first received value >= ``bound``."""
    out = np.flatnonzero(values >= bound)
    if out.size:
        row = int(out[0])
        raise ReportValueError(row, field, f"{values[row]} is not below {what}")
