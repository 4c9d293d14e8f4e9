"""Local Laplace noise, exact: discrete Laplace on a dyadic grid of the input (Mironov 2012)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared._validate import as_real
from deniable.shared.mechanisms._mean import MeanTally
from deniable.shared.mechanisms._mean_intervals import (
    MeanInterval,
    chernoff_half_width,
    discrete_laplace_log_mgf,
    theorem,
)
from deniable.shared.mechanisms._numeric import NumericMechanism, check_epsilon, check_int, on_grid
from deniable.shared.mechanisms._numeric_sampling import stochastic_round
from deniable.shared.mechanisms.piecewise import rounding_term
from deniable.shared.sampling import ByteSource, discrete_laplace
from deniable.shared.stats._sequences import LaplaceNoiseBound

__all__ = ["LaplaceMechanism"]


@lru_cache(maxsize=4096)
def _chernoff_half_width(epsilon: float, bits: int, n: int, confidence: float) -> float:
    """:meth:`LaplaceMechanism.chernoff_half_width`, cached: it depends on nothing else."""
    decay = math.ldexp(epsilon, -bits)

    def log_mgf(rate: float) -> float:
        noise = discrete_laplace_log_mgf(decay, math.ldexp(2.0 * rate, -bits))
        return rate * rate / 2.0 + noise

    return chernoff_half_width(n, log_mgf, epsilon / 2.0, confidence)


@dataclass(frozen=True)
class LaplaceMechanism(NumericMechanism):
    """Local Laplace noise, exact: discrete Laplace on a 2^-m grid (Mironov 2012).

    Sampling. u = (x − lo)/(hi − lo) in [0, 1]; s = u·2^m exactly; j = floor(s) plus 1
    with probability s − floor(s) (an exact rational Bernoulli), so E[j] = s; Z is discrete
    Laplace with scale b = 2^m/ε, P(Z = z) ∝ exp(−|z|ε/2^m), sampled exactly, with the
    same random bytes read whatever Z is (:func:`~deniable.shared.sampling.discrete_laplace`);
    the report is y = 2(j + Z)/2^m − 1, the normalized value on
    the grid 2^(1−m)·ℤ. E[y | x] = t exactly. (Reporting (j + Z)/2^m
    would carry the same information; it is mapped to [−1, 1] like every other numeric
    mechanism's report.)

    Privacy. Given j, P(y) ∝ exp(−|2^m(y+1)/2 − j|·ε/2^m). Any two j, j' in {0, ..., 2^m}
    differ by at most 2^m steps, so by the triangle inequality the ratio is at most e^ε
    for every y, and mixing over the rounding keeps that bound. x = lo versus x = hi
    attains it (every y <= −1), so the exact ε is the float ``epsilon`` itself, which is
    dyadic, making b an exact rational.

    Reports with |y| > 2^(53−m) are clamped to that bound (post-processing; probability
    below exp(−2^22) for ε >= 2^-20), so every report is an exact float.

    Variance. Var(y | t) = 4[f(1−f) + σ²]/4^m with σ² = 2q/(1−q)² = 1/(2 sinh²(ε/2^(m+1))),
    q = e^(−ε/2^m), and f the fractional part of s. Worst case (f = ½):
    (1 + 4σ²)/4^m = 8/ε² + 1/(3·4^m) + O(ε²/16^m): the grid adds about 3·10^-7 at m = 10.

    Attributes:
        lo: lower end of the public range.
        hi: upper end of the public range.
        epsilon: privacy loss, in [2^-20, 50]; exact.
        grid_bits: m in [1, 30]; the input is rounded onto 2^m + 1 points.
    """

    name: ClassVar[str] = "laplace"
    title: ClassVar[str] = "exact discrete Laplace noise"

    T_INTERVAL_FROM: ClassVar[tuple[tuple[float, int], ...]] = ((4.0, 200), (8.0, 500))
    """t-intervals from these n at ε up to these (simulated worst populations, docs)."""

    epsilon: float
    grid_bits: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "grid_bits", check_int("grid_bits", self.grid_bits, 1, 30))

    @classmethod
    def from_epsilon(
        cls, lo: float, hi: float, epsilon: float, grid_bits: int = 10
    ) -> LaplaceMechanism:
        """The mechanism at exactly ``epsilon`` (its privacy loss is ε itself)."""
        return cls(lo, hi, epsilon=epsilon, grid_bits=grid_bits)

    @property
    def noise_scale_exact(self) -> Fraction:
        """The discrete Laplace scale b = 2^m/ε in input-grid steps, exactly."""
        return Fraction(1 << self.grid_bits) / Fraction(self.epsilon)

    @property
    def noise_variance(self) -> float:
        """σ² = Var(Z) = 1/(2 sinh²(ε/2^(m+1))) in input-grid steps²."""
        return 0.5 / math.sinh(math.ldexp(self.epsilon, -self.grid_bits - 1)) ** 2

    @property
    def grid_step(self) -> float:
        """Distance 2^(1−m) between neighbouring reports."""
        return math.ldexp(1.0, 1 - self.grid_bits)

    @property
    def bound(self) -> float:
        """Largest |report|, 2^(53−m) (the clamp; never reached in practice)."""
        return math.ldexp(1.0, 53 - self.grid_bits)

    @property
    def privacy_ratio(self) -> Fraction:
        """e^ε rounded to the nearest float (approximate: e^ε is irrational).

        Only for display: the privacy map is ε itself, which is exact, and
        :meth:`certifies` compares with it directly.
        """
        return Fraction(math.exp(self.epsilon))

    @property
    def is_private(self) -> bool:
        """Always: ε is at most 50."""
        return True

    @property
    def unit_bits(self) -> int:
        """Reports are integer multiples of 2^-(m−1)."""
        return self.grid_bits - 1

    def certifies(self, epsilon: float) -> bool:
        """ε-LDP for ``epsilon`` iff epsilon >= ε: the worst ratio is e^ε exactly."""
        eps = as_real("epsilon", epsilon)
        if math.isnan(eps):
            raise ValueError("epsilon must not be NaN")
        return eps >= self.epsilon

    def variance(self, t: float) -> float:
        """Var(y | t) = 4[f(1−f) + σ²]/4^m for t in [−1, 1]."""
        value = Fraction(as_real("t", t))
        if not -1 <= value <= 1:
            raise ValueError(f"t must be in [-1, 1], got {t!r}")
        rounding = float(rounding_term(value, 1 << self.grid_bits))
        return math.ldexp(rounding + self.noise_variance, 2 - 2 * self.grid_bits)

    @property
    def worst_variance(self) -> float:
        """(1 + 4σ²)/4^m ≈ 8/ε² + 1/(3·4^m)."""
        return math.ldexp(1 + 4 * self.noise_variance, -2 * self.grid_bits)

    @property
    def worst_second_moment(self) -> float:
        """Largest E[y² | t]: 1 + 4σ²/4^m, at t = ±1."""
        return 1 + math.ldexp(self.noise_variance, 2 - 2 * self.grid_bits)

    def chernoff_half_width(self, n: int, confidence: float) -> float:
        """Half-width u of the ``chernoff`` interval ȳ ± u from n reports (normalized scale).

        y = r + e: r = 2j/2^m − 1 in [−1, 1] has mean μ (Hoeffding's lemma: log-MGF of
        r − μ at most λ²/2) and e = 2Z/2^m is the discrete Laplace noise, independent, with
        the exact log-MGF of :func:`._mean_intervals.discrete_laplace_log_mgf` at 2λ/2^m
        (finite for λ < ε/2). Chernoff's bound then holds for every population.
        """
        return _chernoff_half_width(self.epsilon, self.grid_bits, n, confidence)

    def conservative_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """ȳ ± :meth:`chernoff_half_width`: at least the confidence for every population.

        (The clamp at 2^(53−m), probability below exp(−2^22), is ignored.)
        """
        half = self.chernoff_half_width(tally.n, confidence)
        mean = float(tally.mean)
        how = "Chernoff bound with the known discrete Laplace noise and Hoeffding's lemma"
        return MeanInterval(mean - half, mean + half, "chernoff", theorem(confidence, how))

    def anytime_bound(self) -> LaplaceNoiseBound:
        """Bound y − μ = (t − μ + rounding) + 2^(1−m)·Z: range 2 + 2^(2−m), plus the noise.

        t − μ lies in [−1 − μ, 1 − μ] and the rounding 2(j − s)/2^m in (−2^(1−m), 2^(1−m)),
        both of mean zero; Z is the discrete Laplace noise with q = e^(−ε/2^m). (The clamp
        at 2^(53−m) is ignored: it acts with probability below exp(−2^22).)
        """
        m = self.grid_bits
        return LaplaceNoiseBound(
            width=2.0 + math.ldexp(1.0, 2 - m),
            step=math.ldexp(1.0, 1 - m),
            decay=math.ldexp(self.epsilon, -m),
        )

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether y is a multiple of 2^(1−m) with |y| <= 2^(53−m)."""
        with np.errstate(invalid="ignore"):
            return np.asarray(on_grid(y, self.unit_bits) & (np.abs(y) <= self.bound))

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        typical = (self.hi - self.lo) / self.epsilon
        return (
            f"Your answer is sent with random noise added, typically about {typical:.3g} "
            f"either way on the range {self.lo:g} to {self.hi:g}; any report is at most "
            f"{math.exp(self.epsilon):.2f} times as likely for one answer as for any other "
            f"(epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters, exact ε and grid, JSON-ready."""
        return {
            **self._describe_range(),
            "epsilon": self.epsilon,
            "grid_bits": self.grid_bits,
            "noise_scale": 2.0 / self.epsilon,
            "bound": self.bound,
            "grid_step": self.grid_step,
            "worst_variance": self.worst_variance,
        }

    def _sample(self, numerators: list[int], denominator: int, source: ByteSource) -> Any:
        """J = the input rounded onto 2^m steps, plus discrete Laplace noise; y = 2(j+Z)/2^m − 1."""
        bits = self.grid_bits
        j = stochastic_round(numerators, denominator, 1 << bits, source)
        noise = discrete_laplace(self.noise_scale_exact, len(numerators), source)
        z = j + noise - (1 << (bits - 1))
        limit = 1 << 52  # post-processing clamp: every report is an exact float
        return np.ldexp(np.clip(z, -limit, limit).astype(np.float64), -self.unit_bits)
