"""Numeric answers perturbed on the participant's device: exact sampling on dyadic grids."""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, TypeAlias, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.client._bernoulli import ByteSource, bernoulli, generator_source, os_source
from deniable.client._dlaplace import bernoulli_rational, discrete_laplace, uniform_below
from deniable.shared._numeric import DuchiSpec, HybridSpec, LaplaceSpec, NumericSpec
from deniable.shared._piecewise import PiecewiseSpec

__all__ = [
    "DuchiMechanism",
    "HybridMechanism",
    "LaplaceMechanism",
    "NumericMechanism",
    "PiecewiseMechanism",
    "exact_positions",
    "numeric_mechanism",
    "perturb_numeric",
    "stochastic_round",
]


def _source(rng: np.random.Generator | None) -> ByteSource:
    return os_source if rng is None else generator_source(rng)


def exact_positions(
    values: ArrayLike, lo: float, hi: float, *, clamp: bool = False
) -> tuple[list[int], int]:
    """Exact positions u_i = (x_i − lo)/(hi − lo) in [0, 1] as numerators over one denominator.

    Floats are dyadic rationals, so with D the largest power-of-two denominator among
    lo, hi and the values, u_i = (x_i·D − lo·D)/(hi·D − lo·D) with integer numerators.

    Raises:
        TypeError: values are not real numbers.
        ValueError: a value is NaN or infinite, or outside [lo, hi] without ``clamp``.
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

    k = floor(s) plus 1 with probability s − floor(s) (an exact rational Bernoulli).
    """
    split = [divmod(n * steps, denominator) for n in numerators]
    up = bernoulli_rational([r for _, r in split], denominator, source)
    return np.array([q for q, _ in split], dtype=np.int64) + up


def _laplace(spec: LaplaceSpec, nums: list[int], den: int, source: ByteSource) -> Any:
    bits = spec.grid_bits
    j = stochastic_round(nums, den, 1 << bits, source)
    z = j + discrete_laplace(spec.noise_scale_exact, len(nums), source) - (1 << (bits - 1))
    limit = 1 << 52  # post-processing clamp: every report is an exact float
    return np.ldexp(np.clip(z, -limit, limit).astype(np.float64), -spec.unit_bits)


def _duchi(spec: DuchiSpec, nums: list[int], den: int, source: ByteSource) -> Any:
    # P(+B) = 1/2 + t/(2B) = (B + 2u − 1)/(2B), with u = n/den and B = b/2^G.
    b, scale = Fraction(spec.bound).as_integer_ratio()
    positive = bernoulli_rational(
        [b * den + scale * (2 * n - den) for n in nums], 2 * b * den, source
    )
    return np.where(positive, spec.bound, -spec.bound)


def _piecewise(spec: PiecewiseSpec, nums: list[int], den: int, source: ByteSource) -> Any:
    size, center, outer, cells = len(nums), spec.center_cells, spec.outer_cells, spec.cells
    k = stochastic_round(nums, den, outer, source)
    p = spec.p_center_exact
    high = bernoulli_rational(p.numerator, p.denominator, source, size)
    cell = np.empty(size, dtype=np.int64)
    cell[high] = k[high] + uniform_below(center, int(high.sum()), source)
    low = uniform_below(outer, size - int(high.sum()), source)
    cell[~high] = np.where(low < k[~high], low, low + center)
    return np.ldexp((2 * cell + 1 - cells).astype(np.float64), -spec.grid_bits)


def _hybrid(spec: HybridSpec, nums: list[int], den: int, source: ByteSource) -> Any:
    use_pm = bernoulli(Fraction(spec.beta), len(nums), source)
    reports = np.empty(len(nums), dtype=np.float64)
    chosen = np.flatnonzero(use_pm).tolist()
    if chosen:
        reports[use_pm] = _piecewise(spec.piecewise, [nums[i] for i in chosen], den, source)
    chosen = np.flatnonzero(~use_pm).tolist()
    if chosen:
        reports[~use_pm] = _duchi(spec.duchi, [nums[i] for i in chosen], den, source)
    return reports


def perturb_numeric(
    spec: NumericSpec,
    values: ArrayLike,
    rng: np.random.Generator | None = None,
    *,
    clamp: bool = False,
) -> NDArray[np.float64]:
    """Reports for true values on [lo, hi] under ``spec`` (same shape, float64, on its grid).

    Randomness comes from the OS CSPRNG unless a seeded ``numpy.random.Generator`` is passed
    (simulations and tests only). Every probability is an exact rational; no logarithm of a
    uniform float is taken anywhere.

    Args:
        spec: a numeric mechanism specification.
        values: true answers, any shape.
        rng: seeded generator for simulations; None (default) means ``os.urandom``.
        clamp: clamp values outside [lo, hi] to the range instead of raising.

    Returns:
        The normalized reports y (E[y] = t = 2(x − lo)/(hi − lo) − 1), float64.
    """
    if not isinstance(spec, LaplaceSpec | DuchiSpec | PiecewiseSpec | HybridSpec):
        raise TypeError(f"spec must be a numeric mechanism spec, got {type(spec).__name__}")
    source = _source(rng)
    array = np.asarray(values)
    nums, den = exact_positions(array, spec.lo, spec.hi, clamp=clamp)
    if isinstance(spec, LaplaceSpec):
        reports = _laplace(spec, nums, den, source)
    elif isinstance(spec, DuchiSpec):
        reports = _duchi(spec, nums, den, source)
    elif isinstance(spec, PiecewiseSpec):
        reports = _piecewise(spec, nums, den, source)
    else:
        reports = _hybrid(spec, nums, den, source)
    return np.asarray(reports, dtype=np.float64).reshape(array.shape)


class _Perturbing:
    """perturb / perturb_many for the mechanism classes below."""

    def perturb_many(
        self, values: ArrayLike, rng: np.random.Generator | None = None, *, clamp: bool = False
    ) -> NDArray[np.float64]:
        """Reports for an array of true values (same shape, float64, on the output grid).

        Values outside [lo, hi] raise a ValueError naming the first one unless ``clamp``.
        """
        return perturb_numeric(cast(NumericSpec, self), values, rng, clamp=clamp)

    def perturb(
        self, value: float, rng: np.random.Generator | None = None, *, clamp: bool = False
    ) -> float:
        """The report for one true value."""
        array = np.asarray(value)
        if array.ndim != 0:
            raise ValueError(
                f"value must be a single number, got shape {array.shape}; use perturb_many"
            )
        return float(self.perturb_many(array, rng, clamp=clamp))


@dataclass(frozen=True)
class LaplaceMechanism(LaplaceSpec, _Perturbing):
    """Exact discrete Laplace noise on the participant's device (see ``LaplaceSpec``).

    Example:
        >>> mech = LaplaceMechanism(0.0, 10.0, epsilon=1.0)
        >>> mech.validate_report([mech.perturb(3.5)]) is None
        True
    """


@dataclass(frozen=True)
class DuchiMechanism(DuchiSpec, _Perturbing):
    """Duchi's ±B reports on the participant's device (see ``DuchiSpec``).

    Example:
        >>> mech = DuchiMechanism.from_epsilon(0.0, 10.0, 1.0)
        >>> abs(mech.perturb(3.5)) == mech.bound
        True
    """


@dataclass(frozen=True)
class PiecewiseMechanism(PiecewiseSpec, _Perturbing):
    """Piecewise reports on a dyadic grid on the participant's device (see ``PiecewiseSpec``).

    Example:
        >>> mech = PiecewiseMechanism.from_epsilon(0.0, 10.0, 2.0)
        >>> mech.validate_report([mech.perturb(10.0)]) is None
        True
    """


@dataclass(frozen=True)
class HybridMechanism(HybridSpec, _Perturbing):
    """Hybrid reports (Piecewise or Duchi) on the participant's device (see ``HybridSpec``).

    Example:
        >>> mech = HybridMechanism.from_epsilon(0.0, 10.0, 2.0)
        >>> mech.validate_report(mech.perturb_many([0.0, 5.0, 10.0])) is None
        True
    """


NumericMechanism: TypeAlias = (
    LaplaceMechanism | DuchiMechanism | PiecewiseMechanism | HybridMechanism
)

_MECHANISMS: dict[type[Any], type[Any]] = {
    LaplaceSpec: LaplaceMechanism,
    DuchiSpec: DuchiMechanism,
    PiecewiseSpec: PiecewiseMechanism,
    HybridSpec: HybridMechanism,
}


def numeric_mechanism(spec: NumericSpec) -> NumericMechanism:
    """The client-side mechanism for a spec (e.g. one received from the aggregator).

    Example:
        >>> from deniable.shared._numeric import numeric_spec
        >>> type(numeric_mechanism(numeric_spec("auto", 0.0, 1.0, 1.0))).__name__
        'HybridMechanism'
    """
    for spec_type, mechanism in _MECHANISMS.items():
        if isinstance(spec, spec_type):
            init = {f.name: getattr(spec, f.name) for f in fields(spec) if f.init}
            return cast(NumericMechanism, mechanism(**init))
    raise TypeError(f"spec must be a numeric mechanism spec, got {type(spec).__name__}")
