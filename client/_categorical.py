"""Multiple-choice answers perturbed on the participant's device: GRR, OUE and OLH, exactly."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.client._bernoulli import ByteSource, bernoulli, generator_source, os_source
from deniable.client._uniform import uniform_below
from deniable.shared._categorical import GrrSpec, OlhSpec, OueSpec
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._universal_hash import HASH_PRIME, hash_unchecked

__all__ = [
    "CategoricalMechanism",
    "GeneralizedRandomizedResponse",
    "OlhReport",
    "OlhReports",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "categorical_mechanism",
]

_HALF = Fraction(1, 2)


def _source(rng: np.random.Generator | None) -> ByteSource:
    return os_source if rng is None else generator_source(rng)


def _as_options(values: ArrayLike, k: int, name: str) -> NDArray[np.int64]:
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


def _as_option(value: object, k: int) -> NDArray[np.int64]:
    """Validate one true option; returns a 0-d array."""
    option = _as_options(value, k, "value")  # type: ignore[arg-type]
    if option.ndim != 0:
        raise ValueError(
            f"value must be a single option, got shape {option.shape}; use perturb_many for arrays"
        )
    return option


def _randomized_response(
    truth: NDArray[np.int64], size: int, alpha: float, source: ByteSource
) -> NDArray[np.int64]:
    """Keep each value w.p. α exactly, else replace it by a uniform draw from [0, size)."""
    flat = truth.reshape(-1)
    keep = bernoulli(Fraction(alpha), flat.size, source)
    out = flat.copy()
    replaced = np.flatnonzero(~keep)
    out[replaced] = uniform_below(size, replaced.size, source).astype(np.int64)
    return out.reshape(truth.shape)


@dataclass(frozen=True)
class GeneralizedRandomizedResponse(GrrSpec):
    """GRR that perturbs true options where they are given (OS CSPRNG unless ``rng`` is passed).

    Example:
        >>> grr = GeneralizedRandomizedResponse(k=4, alpha=0.5)
        >>> grr.perturb(2) in range(4)
        True
    """

    def perturb(self, value: int | np.integer[Any], rng: np.random.Generator | None = None) -> int:
        """Return the reported option for one true option."""
        return int(self.perturb_many(_as_option(value, self.k), rng))

    def perturb_many(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.int64]:
        """Return reported options (same shape): the truth w.p. α, else uniform over all k."""
        truth = _as_options(values, self.k, "values")
        return _randomized_response(truth, self.k, self.alpha, _source(rng))


@dataclass(frozen=True)
class OptimizedUnaryEncoding(OueSpec):
    """OUE that perturbs true options where they are given (OS CSPRNG unless ``rng`` is passed).

    Example:
        >>> oue = OptimizedUnaryEncoding(k=3, q=0.25)
        >>> oue.perturb(1).shape
        (3,)
    """

    def perturb(
        self, value: int | np.integer[Any], rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Return the k reported bits for one true option."""
        return self.perturb_many(_as_option(value, self.k), rng)

    def perturb_many(
        self, values: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Return reported bits, shape ``values.shape + (k,)``.

        The true option's bit is Bernoulli(1/2), every other bit Bernoulli(q), all
        independent and exact.
        """
        truth = _as_options(values, self.k, "values")
        source = _source(rng)
        flat = truth.reshape(-1)
        bits = bernoulli(Fraction(self.q), flat.size * self.k, source).reshape(flat.size, self.k)
        bits[np.arange(flat.size), flat] = bernoulli(_HALF, flat.size, source)
        return bits.reshape((*truth.shape, self.k))


class OlhReport(NamedTuple):
    """One OLH report: hash parameters a, b in [0, 2^61 − 1) and a value y in [0, g)."""

    a: int
    b: int
    y: int


class OlhReports(NamedTuple):
    """Many OLH reports as parallel arrays: a, b (uint64) and y (int64), all the same shape."""

    a: NDArray[np.uint64]
    b: NDArray[np.uint64]
    y: NDArray[np.int64]


@dataclass(frozen=True)
class OptimizedLocalHashing(OlhSpec):
    """OLH that perturbs true options where they are given (OS CSPRNG unless ``rng`` is passed).

    Example:
        >>> olh = OptimizedLocalHashing(k=100, g=4, alpha=0.5)
        >>> olh.perturb(42).y in range(4)
        True
    """

    def perturb(
        self, value: int | np.integer[Any], rng: np.random.Generator | None = None
    ) -> OlhReport:
        """Return the report (a, b, y) for one true option."""
        a, b, y = self.perturb_many(_as_option(value, self.k), rng)
        return OlhReport(int(a), int(b), int(y))

    def perturb_many(self, values: ArrayLike, rng: np.random.Generator | None = None) -> OlhReports:
        """Return reports (a, b, y), each array shaped like ``values``.

        a and b are exactly uniform on [0, P) (rejection from 61-bit words), and y is
        H_{a,b}(value) with probability α exactly, else exactly uniform on [0, g).
        """
        truth = _as_options(values, self.k, "values")
        source = _source(rng)
        a = uniform_below(HASH_PRIME, truth.size, source)
        b = uniform_below(HASH_PRIME, truth.size, source)
        hashed = hash_unchecked(a, b, truth.reshape(-1).astype(np.uint64), self.g)
        y = _randomized_response(hashed.astype(np.int64), self.g, self.alpha, source)
        return OlhReports(a.reshape(truth.shape), b.reshape(truth.shape), y.reshape(truth.shape))


CategoricalMechanism = (
    GeneralizedRandomizedResponse | OptimizedUnaryEncoding | OptimizedLocalHashing
)
"""A multiple-choice mechanism that can perturb answers."""

_MECHANISMS: dict[str, type[CategoricalMechanism]] = {
    "grr": GeneralizedRandomizedResponse,
    "oue": OptimizedUnaryEncoding,
    "olh": OptimizedLocalHashing,
}


def categorical_mechanism(spec: CategoricalSpec) -> CategoricalMechanism:
    """The perturbing mechanism for a shared specification (same parameters, same ε).

    Example:
        >>> from deniable.shared._categorical import GrrSpec
        >>> categorical_mechanism(GrrSpec(k=4, alpha=0.5))
        GeneralizedRandomizedResponse(k=4, alpha=0.5)
    """
    if not isinstance(spec, CategoricalSpec):
        raise TypeError(f"spec must be a categorical spec, got {type(spec).__name__}")
    cls = _MECHANISMS[spec.kind]
    if isinstance(spec, cls):
        return spec
    params = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.init}
    return cls(**params)
