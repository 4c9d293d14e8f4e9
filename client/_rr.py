"""Randomized response on the participant's device, with the OS CSPRNG by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.client._bernoulli import ByteSource, bernoulli, generator_source, os_source
from deniable.shared import RandomizedResponseSpec

__all__ = ["RandomizedResponse"]


def _source(rng: np.random.Generator | None) -> ByteSource:
    return os_source if rng is None else generator_source(rng)


def _as_bits(bits: ArrayLike, name: str) -> NDArray[np.bool_]:
    """Validate true answers: booleans or integers 0/1, any shape."""
    array = np.asarray(bits)
    if array.dtype == np.bool_:
        return array
    if array.size == 0:
        return np.zeros(array.shape, dtype=bool)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be booleans or 0/1 integers, got dtype {array.dtype}")
    bad = np.flatnonzero((array != 0) & (array != 1))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = f" at index {tuple(map(int, index))}" if array.ndim else ""
        raise ValueError(f"{name} must be 0 or 1, got {array[index].item()!r}{where}")
    return array.astype(bool)


@dataclass(frozen=True)
class RandomizedResponse(RandomizedResponseSpec):
    """Randomized response that perturbs true yes/no answers where they are given.

    Randomness comes from the OS CSPRNG with exact integer comparisons; a seeded
    ``numpy.random.Generator`` may be passed explicitly for simulations and tests.

    Example:
        >>> rr = RandomizedResponse(alpha=0.5)
        >>> round(rr.epsilon, 4)
        1.0986
        >>> rr.perturb(True) in (True, False)
        True
    """

    def perturb(
        self, bit: bool | int | np.bool_ | np.integer[Any], rng: np.random.Generator | None = None
    ) -> bool:
        """Return the randomized report for one true answer."""
        truth = _as_bits(bit, "bit")
        if truth.ndim != 0:
            raise ValueError(
                f"bit must be a single answer, got shape {truth.shape}; use perturb_many for arrays"
            )
        return bool(self.perturb_many(truth, rng))

    def perturb_many(
        self, bits: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Return randomized reports for an array of true answers (same shape, dtype bool).

        Each report equals its true answer with probability (1+α)/2, independently.
        """
        truth = _as_bits(bits, "bits")
        keep = bernoulli(self.p_truth_exact, truth.size, _source(rng)).reshape(truth.shape)
        return np.equal(truth, keep)
