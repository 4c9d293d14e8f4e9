"""Support counts C_v of multiple-choice reports, validated and vectorized, batch by batch."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._categorical import GrrSpec, OlhSpec, OueSpec
from deniable.shared._frequency_oracle import CategoricalSpec, check_options
from deniable.shared._universal_hash import HASH_PRIME, check_hash_range, hash_unchecked

__all__ = [
    "CHUNK_ELEMENTS",
    "grr_support_counts",
    "olh_support",
    "olh_support_counts",
    "oue_support_counts",
    "support_counts",
]

CHUNK_ELEMENTS = 1 << 16
"""Hashes evaluated at once by :func:`olh_support_counts` (bounds memory to a few MB)."""


def _first_bad(array: NDArray[Any], bad: NDArray[np.bool_]) -> tuple[tuple[int, ...], Any]:
    index = np.unravel_index(int(np.flatnonzero(bad)[0]), array.shape)
    return tuple(map(int, index)), array[index].item()


def _as_integers(name: str, values: ArrayLike, bound: int, ndim: int = 1) -> NDArray[np.int64]:
    """Validate an ``ndim``-dimensional integer array with entries in [0, bound)."""
    array = np.asarray(values)
    if array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-dimensional array, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {array.dtype}")
    bad = (array < 0) | (array >= bound)
    if bad.any():
        index, value = _first_bad(array, bad)
        raise ValueError(f"{name} must be in [0, {bound}), got {value!r} at index {index}")
    return array.astype(np.int64)


def _as_hash_parameters(name: str, values: ArrayLike) -> NDArray[np.uint64]:
    return _as_integers(name, values, HASH_PRIME).astype(np.uint64)


def grr_support_counts(reports: ArrayLike, k: int) -> NDArray[np.int64]:
    """Count GRR reports per option: C_v = number of reports equal to v (length k, int64).

    Example:
        >>> grr_support_counts([0, 2, 2, 1], 3).tolist()
        [1, 1, 2]
    """
    count = check_options(k)
    options = _as_integers("reports", reports, count)
    return np.bincount(options, minlength=count).astype(np.int64)


def oue_support_counts(bits: ArrayLike, k: int) -> NDArray[np.int64]:
    """Column sums of OUE reports: C_v = number of reports whose bit v is set (length k).

    ``bits`` has shape (m, k) and holds booleans or 0/1 integers.
    """
    count = check_options(k)
    array = np.asarray(bits)
    if array.ndim != 2 or array.shape[1] != count:
        raise ValueError(f"bits must have shape (m, {count}), got {array.shape}")
    if array.dtype != np.bool_:
        if array.size and array.dtype.kind not in "iu":
            raise TypeError(f"bits must be booleans or 0/1 integers, got dtype {array.dtype}")
        bad = (array != 0) & (array != 1)
        if bad.any():
            index, value = _first_bad(array, bad)
            raise ValueError(f"bits must be 0 or 1, got {value!r} at index {index}")
    return np.asarray(np.count_nonzero(array, axis=0), dtype=np.int64)


def _olh_inputs(
    a: ArrayLike, b: ArrayLike, y: ArrayLike, g: int
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    range_ = check_hash_range(g)
    a64, b64 = _as_hash_parameters("a", a), _as_hash_parameters("b", b)
    y64 = _as_integers("y", y, range_).astype(np.uint64)
    if not (a64.shape == b64.shape == y64.shape):
        raise ValueError(f"a, b and y must have one length, got {a64.size}, {b64.size}, {y64.size}")
    return a64, b64, y64


def olh_support(a: ArrayLike, b: ArrayLike, y: ArrayLike, k: int, g: int) -> NDArray[np.bool_]:
    """Which options each OLH report supports: entry (i, v) is H_{a_i,b_i}(v) == y_i.

    Memory is m·k booleans plus temporaries of m·k words; use :func:`olh_support_counts`
    for large batches.
    """
    count = check_options(k)
    a64, b64, y64 = _olh_inputs(a, b, y, g)
    options = np.arange(count, dtype=np.uint64)
    hashed = hash_unchecked(a64[:, None], b64[:, None], options[None, :], g)
    return np.asarray(hashed == y64[:, None])


def olh_support_counts(
    a: ArrayLike, b: ArrayLike, y: ArrayLike, k: int, g: int, chunk_elements: int = CHUNK_ELEMENTS
) -> NDArray[np.int64]:
    """Support counts of a batch of OLH reports: C_v = #{i : H_{a_i,b_i}(v) = y_i} (length k).

    Every report is hashed at every option, ``chunk_elements`` hashes at a time, so memory
    stays bounded for any batch. Counts of separate batches add up: keep a running tally.

    Example:
        >>> olh_support_counts([0], [5], [1], k=4, g=4).tolist()  # H(v) = 5 mod 4 for a = 0
        [1, 1, 1, 1]
    """
    count = check_options(k)
    a64, b64, y64 = _olh_inputs(a, b, y, g)
    options = np.arange(count, dtype=np.uint64)[None, :]
    rows = max(1, chunk_elements // count)
    total = np.zeros(count, dtype=np.int64)
    for start in range(0, a64.size, rows):
        part = slice(start, start + rows)
        hashed = hash_unchecked(a64[part, None], b64[part, None], options, g)
        total += np.count_nonzero(hashed == y64[part, None], axis=0)
    return total


def support_counts(spec: CategoricalSpec, reports: Any) -> NDArray[np.int64]:
    """Support counts for a batch of reports of any multiple-choice mechanism.

    Args:
        spec: the question's mechanism.
        reports: GRR: option numbers, shape (m,); OUE: bits, shape (m, k);
            OLH: a tuple (a, b, y) of arrays of shape (m,).

    Returns:
        Length-k int64 counts, to be added to the question's running tally.
    """
    if isinstance(spec, GrrSpec):
        return grr_support_counts(reports, spec.k)
    if isinstance(spec, OueSpec):
        return oue_support_counts(reports, spec.k)
    if isinstance(spec, OlhSpec):
        if not isinstance(reports, tuple) or len(reports) != 3:
            raise TypeError("OLH reports must be a tuple (a, b, y) of arrays")
        a, b, y = reports
        return olh_support_counts(a, b, y, spec.k, spec.g)
    raise TypeError(f"spec must be GrrSpec, OueSpec or OlhSpec, got {type(spec).__name__}")
