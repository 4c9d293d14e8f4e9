"""Central discrete Laplace noise of scale Δ/ε: exact pmf, tails, intervals and a noisy count."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit
from deniable.aggregator.central.curator._sensitivity import privacy_fields
from deniable.shared.sampling import ByteSource, discrete_laplace, os_source

__all__ = [
    "MAX_CURATOR_EPSILON",
    "MIN_CURATOR_EPSILON",
    "NoisyCount",
    "central_laplace_count",
    "check_confidence",
    "check_curator_epsilon",
    "clamp_bias",
    "continuous_half_width",
    "discrete_half_width",
    "discrete_laplace_pmf",
    "discrete_laplace_tail",
    "exact_epsilon",
    "float_up",
    "noise_scale",
    "noisy_integer",
]

MIN_CURATOR_EPSILON = 2.0**-20
MAX_CURATOR_EPSILON = 50.0
INTERVAL_METHOD = "exact discrete Laplace quantile: P(|Z| > k) = 2q^(k+1)/(1+q), q = e^(-ε/Δ)"
COUNT_COVERS = (
    "the count of matching rows, each privacy unit's rows bounded to at most K (when it is "
    "at most the clamp's public upper bound)"
)


def check_curator_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """``epsilon`` as a float in [2^-20, 50], else a CuratorError naming it."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | Fraction):
        raise CuratorError(f"{name} must be a number, got {epsilon!r}")
    value = float(epsilon)
    if not MIN_CURATOR_EPSILON <= value <= MAX_CURATOR_EPSILON:  # also rejects NaN
        raise CuratorError(f"{name} must be in [2^-20, {MAX_CURATOR_EPSILON:g}], got {epsilon!r}")
    return value


def check_confidence(confidence: object) -> float:
    """``confidence`` as a float strictly between 0 and 1, else a CuratorError naming it."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise CuratorError(f"confidence must be a number, got {confidence!r}")
    if not 0 < confidence < 1:
        raise CuratorError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def exact_epsilon(epsilon: float | Fraction) -> Fraction:
    """ε as the decimal it is written as: 0.1 is 1/10 (the float's shortest repr), exactly.

    The noise is drawn at exactly this ε and the ledger adds these, so ten spends of 0.1
    make exactly 1 (the binary float 0.1 is a little more than 1/10).
    """
    return epsilon if isinstance(epsilon, Fraction) else Fraction(repr(float(epsilon)))


def float_up(value: Fraction) -> float:
    """The least float >= value (a bound stated as a float is never understated)."""
    number = float(value)
    return math.nextafter(number, math.inf) if Fraction(number) < value else number


def noise_scale(epsilon: float | Fraction, sensitivity: int) -> Fraction:
    """The scale b = Δ/ε exactly, ε taken as :func:`exact_epsilon`."""
    if sensitivity < 1:
        raise CuratorError(f"sensitivity must be a positive integer, got {sensitivity}")
    return Fraction(sensitivity) / exact_epsilon(epsilon)


def _ratio(scale: Fraction) -> float:
    """Q = e^(−1/b), the ratio of neighbouring probabilities of the discrete Laplace."""
    return math.exp(-1.0 / float(scale))


def discrete_laplace_pmf(z: int, scale: Fraction) -> float:
    """P(Z = z) = (1−q)/(1+q)·q^|z| = tanh(1/(2b))·e^(−|z|/b)."""
    rate = 1.0 / float(scale)
    return math.tanh(rate / 2.0) * math.exp(-abs(z) * rate)


def discrete_laplace_tail(k: int, scale: Fraction) -> float:
    """P(|Z| > k) = 2q^(k+1)/(1+q) for an integer k >= 0."""
    rate = 1.0 / float(scale)
    return 2.0 * math.exp(-(k + 1) * rate) / (1.0 + math.exp(-rate))


def discrete_half_width(scale: Fraction, confidence: float) -> int:
    """The least integer k >= 0 with P(|Z| <= k) >= confidence (so |noise| <= k then).

    From P(|Z| > k) = 2q^(k+1)/(1+q) <= α: k = ⌈b·ln(2/(α(1+q)))⌉ − 1, then checked against
    the tail itself in both directions, so float rounding of the logarithm cannot move it.
    """
    alpha = 1.0 - confidence
    rate = 1.0 / float(scale)
    guess = math.ceil(math.log(2.0 / (alpha * (1.0 + math.exp(-rate)))) / rate) - 1
    k = max(0, guess)
    while discrete_laplace_tail(k, scale) > alpha:
        k += 1
    while k > 0 and discrete_laplace_tail(k - 1, scale) <= alpha:
        k -= 1
    return k


def continuous_half_width(scale: Fraction, confidence: float) -> float:
    """b·ln(1/α): the continuous Laplace's |noise| bound with probability 1 − α (for comparison)."""
    return float(scale) * math.log(1.0 / (1.0 - confidence))


def clamp_bias(true_count: int, scale: Fraction, upper: int | None) -> float:
    """E[clamp(c + Z, 0, U)] − c exactly: (q^(c+1) − q^(U−c+1))/(1 − q²).

    The clamp at 0 adds Σ_{j>=1} j·P(Z = −c−j) = q^(c+1)/(1−q²), the one at U takes off
    q^(U−c+1)/(1−q²) likewise; the worst case is c = 0 (or U): q/(1−q²), about b/2.
    """
    q = _ratio(scale)
    low = q ** (true_count + 1)
    high = 0.0 if upper is None else q ** (upper - true_count + 1)
    return (low - high) / (1.0 - q * q)


def _clamp(value: int, upper: int | None, lower: int | None = 0) -> int:
    value = value if lower is None else max(lower, value)
    return value if upper is None else min(upper, value)


def noisy_integer(
    true_value: int,
    scale: Fraction,
    lower: int | None,
    upper: int | None,
    confidence: float,
    source: ByteSource,
) -> tuple[int, int, int, int]:
    """(released, k, low, high): v + Z clamped to [lower, upper], and released ± k clamped.

    The clamp is 1-Lipschitz and fixes every true value in [lower, upper], so the clamped
    interval covers the true value whenever |Z| <= k: with probability >= ``confidence``.
    """
    k = discrete_half_width(scale, confidence)
    noise = int(discrete_laplace(scale, 1, source)[0])
    released = _clamp(true_value + noise, upper, lower)
    return released, k, _clamp(released - k, upper, lower), _clamp(released + k, upper, lower)


@dataclass(frozen=True)
class NoisyCount:
    """A count released with discrete Laplace noise, clamped to [0, upper], and its interval.

    Attributes:
        released: the released count, an integer in [0, upper].
        epsilon: the privacy loss spent.
        sensitivity: Δ, the most one person changes the true count.
        scale: the noise scale b = Δ/ε.
        upper: the public upper clamp (None: clamped at 0 only).
        confidence: the interval's confidence.
        half_width: k, the least integer with P(|Z| <= k) >= confidence.
        low: lower end, max(0, released − k).
        high: upper end, min(upper, released + k).
        neighbours: the neighbour relation Δ was computed for (None: not stated).
        unit: the privacy unit Δ was computed for (None: not stated).
        covers: what the interval covers.
    """

    released: int
    epsilon: float
    sensitivity: int
    scale: Fraction
    upper: int | None
    confidence: float
    half_width: int
    low: int
    high: int
    neighbours: str | None = None
    unit: PrivacyUnit | None = None
    covers: str = COUNT_COVERS

    @property
    def worst_clamp_bias(self) -> float:
        """The clamp's largest bias, at a true count of 0: q/(1 − q²), about b/2."""
        return clamp_bias(0, self.scale, None)

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries (the unit's when it is stated)."""
        stated: dict[str, Any] = {}
        if self.unit is not None and self.neighbours is not None:
            stated = privacy_fields(self.neighbours, self.unit)
        return {
            "released": self.released,
            "epsilon": self.epsilon,
            "delta": 0.0,
            "sensitivity": self.sensitivity,
            "noise_scale": float(self.scale),
            **stated,
            "clamp": [0, self.upper],
            "worst_clamp_bias": self.worst_clamp_bias,
            "interval": {
                "low": self.low,
                "high": self.high,
                "confidence": self.confidence,
                "half_width": self.half_width,
                "method": INTERVAL_METHOD,
                "covers": self.covers,
            },
        }


def central_laplace_count(
    true_count: int,
    epsilon: float | Fraction,
    sensitivity: int = 1,
    *,
    upper: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
    neighbours: str | None = None,
    unit: PrivacyUnit | None = None,
    covers: str = COUNT_COVERS,
) -> NoisyCount:
    """Release ``true_count`` with exact discrete Laplace noise of scale Δ/ε (ε-DP).

    The noisy count c + Z is an integer already (no rounding needed); it is clamped to
    [0, upper], which is post-processing. The clamp is 1-Lipschitz and fixes every true
    count in [0, upper], so |released − c| <= |Z| and released ± k covers c whenever
    |Z| <= k: with probability at least ``confidence``, exactly computed. A count above
    ``upper`` (a public bound stated too low) is clamped too, never refused: a refusal
    would reveal it.

    Args:
        true_count: the count on the data, an integer >= 0.
        epsilon: privacy loss, in [2^-20, 50]: exactly the decimal written (or a Fraction).
        sensitivity: Δ, a positive integer (1 for a count).
        upper: a public upper bound on the count (None: clamp at 0 only).
        confidence: the interval's confidence, in (0, 1).
        source: random bytes (the OS CSPRNG unless a seeded source is given for tests).
        neighbours: the relation Δ was computed for, stated in the output.
        unit: the privacy unit Δ was computed for, stated in the output.
        covers: what the interval covers, for the output.
    """
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    if true_count < 0:
        raise CuratorError(f"true count must be >= 0, got {true_count}")
    # A count above ``upper`` (an analyst's --max-rows set too low) is not an error: an
    # error would tell the count. It is clamped like any other; the interval then covers
    # the count only up to ``upper``, as its ``covers`` says.
    scale = noise_scale(epsilon, sensitivity)
    released, k, low, high = noisy_integer(true_count, scale, 0, upper, level, source)
    return NoisyCount(
        released, eps, sensitivity, scale, upper, level, k, low, high, neighbours, unit, covers
    )
