"""Confidence sequences: intervals valid at every number of reports, from running tallies.

A confidence sequence (CS) at level 1 − a is a sequence of intervals C_1, C_2, ... with
P(the truth lies in C_n for every n) >= 1 − a: an analyst may look after every report and
stop whenever the interval is narrow enough. Each CS here is {μ : M_n(μ) < 1/a} for a
nonnegative (super)martingale M_n(μ) with M_0 <= 1 under μ, so Ville's inequality gives
the guarantee (Howard, Ramdas, McAuliffe, Sekhon 2021, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Statist. 49(2)). Every M_n here depends on the
reports only through the running tally (n and the sum of the reports), so the intervals
are computed in O(1) from the stored tallies whatever the order the reports came in.

- Bernoulli reports (yes/no, each option's support indicator, Duchi's two outputs): the
  beta-binomial mixture of likelihood ratios (Robbins 1970), with a Beta prior centred on
  the null rate λ and worth ``rho`` reports: Beta(ρλ, ρ(1 − λ)).
- Other numeric reports: a mixture over a grid of exponential supermartingales
  exp(θ S_n − n ψ(θ)), with ψ a bound on the report's centred log-MGF: Bennett's bound for
  bounded reports, or Hoeffding plus the exact discrete-Laplace log-MGF for Laplace noise.
  The mixing weights are a N(0, 1/ρ_θ) prior on θ (Robbins' normal mixture, Howard et al.
  2021 Sec. 3.2), discretized; any weights summing to at most 1 give a valid CS.

Both are tuned to be tightest at n = :data:`TUNED_AT` reports, with the precision that
minimizes the two-sided normal-mixture boundary there (Howard et al. 2021, eq. (14) and
the choice of ρ after it): ρ = m / (−W₋₁(−a²/e) − 1) in units of reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._validate import check_confidence

__all__ = [
    "RATE_METHOD",
    "TUNED_AT",
    "BennettBound",
    "LaplaceNoiseBound",
    "SubGaussianBound",
    "anytime_coverage",
    "anytime_rate_interval",
    "beta_binomial_log_mixture",
    "mean_radius",
    "mixture_precision",
    "normal_mixture_radius",
]

TUNED_AT = 1000
"""Number of reports at which every confidence sequence here is tightest."""

RATE_METHOD = "beta-binomial-mixture"
"""``method`` of an anytime interval from Bernoulli reports (:func:`anytime_rate_interval`)."""
_BISECTIONS = 30
_GRID_RATIO = 1.02  # neighbouring mixture points θ differ by 2%
_GRID_SPAN = 1e-7  # smallest |θ| on the grid, relative to the largest
_PRIOR_SDS = 8.0  # the grid reaches 8 prior standard deviations


def _level(confidence: float) -> float:
    """The error level 1 − confidence, after validating ``confidence``."""
    return 1.0 - check_confidence(confidence)


def anytime_coverage(confidence: float, options: int = 0) -> str:
    """What an anytime interval promises, in words (``options``: Bonferroni over that many)."""
    level = check_confidence(confidence)
    if options:
        each = 1.0 - (1.0 - level) / options
        return (
            f"anytime-valid and simultaneous: all {options} options covered at every look with "
            f"probability >= {100 * level:.6g}% (each option's confidence sequence at "
            f"{100 * each:.6g}%, Bonferroni; tightest near n = {TUNED_AT})"
        )
    return (
        f"anytime-valid: covers at every look with probability >= {100 * level:.6g}% "
        f"(confidence sequence; tightest near n = {TUNED_AT})"
    )


def mixture_precision(confidence: float, tuned_at: float = TUNED_AT) -> float:
    """ρ, in reports, that minimizes the two-sided normal-mixture boundary at ``tuned_at``.

    With x = (m + ρ)/ρ, the boundary sqrt((m + ρ) log((m + ρ)/(ρ a²))) is smallest where
    log(x/a²) = x − 1, i.e. x = −W₋₁(−a²/e) (the lower branch of Lambert's W).
    """
    from scipy import special  # imported here: scipy.special adds ~0.3 s to every CLI start

    a = _level(confidence)
    x = -float(special.lambertw(-(a * a) / math.e, -1).real)
    return tuned_at / (x - 1.0)


def normal_mixture_radius(
    intrinsic_time: ArrayLike, rho: ArrayLike, confidence: float
) -> NDArray[np.float64]:
    """Howard et al. (2021) eq. (14): sqrt((v + ρ) log((v + ρ)/(ρ a²))), two-sided.

    A 1-sub-Gaussian sum S_n with variance process v crosses ±this radius at some n with
    probability at most a = 1 − confidence.
    """
    a = _level(confidence)
    r = np.asarray(rho, dtype=np.float64)
    v = np.asarray(intrinsic_time, dtype=np.float64) + r
    return np.asarray(np.sqrt(v * np.log(v / (r * a * a))))


# --- Bernoulli reports --------------------------------------------------------------------


def beta_binomial_log_mixture(
    rate: ArrayLike, ones: ArrayLike, n: ArrayLike, rho: float
) -> NDArray[np.float64]:
    """The log of M_n(λ), the Beta(ρλ, ρ(1 − λ))-mixture of likelihood ratios against rate λ.

    M_n(λ) = ∫ p^Y (1 − p)^(n−Y) dBeta(ρλ, ρ(1−λ))(p) / (λ^Y (1 − λ)^(n−Y)) with Y ones
    among n reports: a martingale with M_0 = 1 when the reports are i.i.d. Bernoulli(λ).
    """
    from scipy import special

    lam = np.asarray(rate, dtype=np.float64)
    y = np.asarray(ones, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    a, b = rho * lam, rho * (1.0 - lam)
    gamma = special.gammaln
    with np.errstate(divide="ignore", invalid="ignore"):
        fit = special.xlogy(y, lam) + special.xlog1py(m - y, -lam)
        # log B(a + Y, b + n − Y) − log B(a, b), with a + b = ρ
        mixture = (
            gamma(a + y) + gamma(b + m - y) - gamma(a) - gamma(b) + gamma(rho) - gamma(rho + m)
        )
    return np.asarray(mixture - fit)


def _lower_rate(
    ones: NDArray[np.float64], n: NDArray[np.float64], rho: float, confidence: float
) -> NDArray[np.float64]:
    """Smallest rate in the CS, by bisection on (0, Y/n], returning the end outside the set.

    The bracket starts at Y/n minus four normal-mixture radii when that is outside the set
    (checked), else at 0; 30 halvings leave it below 1e-9 of its width.
    """
    threshold = -math.log(_level(confidence))
    rate = ones / n
    spread = np.maximum(rate * (1.0 - rate), 1.0 / n)
    guess = normal_mixture_radius(n * spread, rho * spread, confidence) / n
    far = rate - 4.0 * guess
    with np.errstate(invalid="ignore"):
        checked = (far > 0) & (beta_binomial_log_mixture(far, ones, n, rho) >= threshold)
    outside = np.where(checked, far, 0.0)
    inside = rate
    for _ in range(_BISECTIONS):
        middle = (outside + inside) / 2.0
        rejected = beta_binomial_log_mixture(middle, ones, n, rho) >= threshold
        outside = np.where(rejected, middle, outside)
        inside = np.where(rejected, inside, middle)
    return np.where(ones > 0, outside, 0.0)


def anytime_rate_interval(
    counts: ArrayLike, n: ArrayLike, confidence: float, tuned_at: float = TUNED_AT
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The beta-binomial confidence sequence for a Bernoulli rate λ, at (counts, n).

    ``counts`` (ones among n reports) and ``n`` broadcast against each other; one interval
    per entry, in [0, 1]. If the reports are i.i.d. Bernoulli(λ), then with probability at
    least ``confidence`` λ lies in every interval the running count ever gives. The set
    {λ : M_n(λ) < 1/a} contains the observed rate Y/n (where M_n <= 1); its ends are found
    by bisection and rounded outwards.

    Example:
        >>> low, high = anytime_rate_interval(300, 1000, 0.95)
        >>> bool(low < 0.3 < high), round(float(high - low), 3)
        (True, 0.088)
    """
    y, m = np.broadcast_arrays(
        np.asarray(counts, dtype=np.float64), np.asarray(n, dtype=np.float64)
    )
    if np.any(m < 1) or np.any(y < 0) or np.any(y > m):
        bad = np.flatnonzero(((m < 1) | (y < 0) | (y > m)).ravel())[0]
        raise ValueError(
            f"counts must be in [0, n] with n >= 1, got count {y.ravel()[bad]:g} of "
            f"n={m.ravel()[bad]:g}"
        )
    rho = mixture_precision(confidence, tuned_at)
    low = _lower_rate(y, m, rho, confidence)
    high = 1.0 - _lower_rate(m - y, m, rho, confidence)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


# --- sums of numeric reports --------------------------------------------------------------


@dataclass(frozen=True)
class SubGaussianBound:
    """ψ(θ) = σ²θ²/2: reports whose centred log-MGF is at most that of N(0, σ²)."""

    method: ClassVar[str] = "sub-gaussian-mixture"
    variance: float

    @property
    def curvature(self) -> float:
        """ψ''(0), the variance the mixture is tuned with."""
        return self.variance

    @property
    def limit(self) -> float:
        """ψ is finite for |θ| below this."""
        return math.inf

    def log_mgf(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """The bound ψ(θ) on log E exp(θ(y − μ))."""
        return np.asarray(self.variance * theta * theta / 2.0)


@dataclass(frozen=True)
class BennettBound:
    """Bennett (1962): |y − μ| <= c and Var(y) <= σ² give ψ(θ) = σ²(e^(c|θ|) − 1 − c|θ|)/c².

    Attributes:
        variance: σ², a bound on the variance of one report.
        bound: c, a bound on |y − μ| (for a mean μ in [−1, 1]: the largest |y| plus 1).
    """

    method: ClassVar[str] = "bennett-mixture"
    variance: float
    bound: float

    @property
    def curvature(self) -> float:
        """ψ''(0) = σ²."""
        return self.variance

    @property
    def limit(self) -> float:
        """ψ is finite everywhere."""
        return math.inf

    def log_mgf(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """σ²(e^(c|θ|) − 1 − c|θ|)/c²."""
        ct = self.bound * np.abs(theta)
        with np.errstate(over="ignore"):
            return np.asarray(self.variance * (np.expm1(ct) - ct) / (self.bound * self.bound))


@dataclass(frozen=True)
class LaplaceNoiseBound:
    """y − μ = B + s·Z with B mean-zero of range ``width`` and Z discrete Laplace, independent.

    ψ(θ) = θ²w²/8 (Hoeffding's lemma for B) + log E exp(θsZ), where for
    P(Z = z) ∝ q^|z|, q = e^(−d): E exp(uZ) = (1 − q)²/((1 − q e^u)(1 − q e^(−u))), finite
    for |u| < d.

    Attributes:
        width: range of the bounded part (true value and stochastic rounding).
        step: s, the report units of one noise step.
        decay: d = −log q.
    """

    method: ClassVar[str] = "laplace-mixture"
    width: float
    step: float
    decay: float

    @property
    def curvature(self) -> float:
        """ψ''(0) = w²/4 + s²·Var(Z), Var(Z) = 2q/(1 − q)² = 1/(2 sinh²(d/2))."""
        return self.width**2 / 4.0 + self.step**2 / (2.0 * math.sinh(self.decay / 2.0) ** 2)

    @property
    def limit(self) -> float:
        """The noise's MGF is finite for |θ| < d/s."""
        return self.decay / self.step

    def log_mgf(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """θ²w²/8 + 2 log(1 − q) − log(1 − q e^(sθ)) − log(1 − q e^(−sθ)); inf beyond the limit."""
        u = self.step * np.asarray(theta, dtype=np.float64)
        d = self.decay
        with np.errstate(invalid="ignore", divide="ignore"):
            noise = (
                2.0 * np.log(-np.expm1(-d)) - np.log(-np.expm1(u - d)) - np.log(-np.expm1(-u - d))
            )
        noise = np.where(np.abs(u) < d, noise, np.inf)
        return np.asarray(theta * theta * self.width**2 / 8.0 + noise)


LogMgfBound = SubGaussianBound | BennettBound | LaplaceNoiseBound


def _mixture_grid(
    bound: LogMgfBound, confidence: float, tuned_at: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Points θ_j > 0 and log weights of a discretized N(0, 1/ρ_θ) prior on ±θ_j.

    ρ_θ = ρ·ψ''(0), with ρ from :func:`mixture_precision`; the weight of θ_j (and of −θ_j)
    is the prior mass of the cell around it, so the weights of all ±θ_j sum to less than 1.
    """
    from scipy import special

    rho = mixture_precision(confidence, tuned_at) * bound.curvature
    top = min(_PRIOR_SDS / math.sqrt(rho), bound.limit * (1.0 - 1e-9))
    count = math.ceil(math.log(1.0 / _GRID_SPAN) / math.log(_GRID_RATIO))
    edges = top * _GRID_RATIO ** -np.arange(count + 1, dtype=np.float64)
    points = np.sqrt(edges[:-1] * edges[1:])
    scale = math.sqrt(rho)
    mass = special.ndtr(edges[:-1] * scale) - special.ndtr(edges[1:] * scale)
    return points, np.log(mass)


def mean_radius(
    n: ArrayLike, bound: LogMgfBound, confidence: float, tuned_at: float = TUNED_AT
) -> NDArray[np.float64]:
    """Radius r_n with P(|ȳ_n − μ| >= r_n for some n) <= 1 − confidence, one per ``n``.

    For i.i.d. reports whose centred log-MGF is at most ``bound.log_mgf``, each
    exp(±θ S_n − n ψ(θ)) with S_n = Σ(y − μ) is a supermartingale; their mixture over the
    grid of :func:`_mixture_grid` is one whose value at S_n is even and increasing in |S_n|,
    so {μ : M_n < 1/a} is ȳ_n ± s_n/n with s_n the root of M_n(s) = 1/a, found by bisection
    and rounded up.
    """
    from scipy import special

    m = np.atleast_1d(np.asarray(n, dtype=np.float64))
    if np.any(m < 1):
        raise ValueError(f"n must be >= 1, got {float(m[np.argmin(m)]):g}")
    threshold = -math.log(_level(confidence))
    theta, log_weight = _mixture_grid(bound, confidence, tuned_at)
    base = log_weight[None, :] - m[:, None] * bound.log_mgf(theta)[None, :]

    def log_mixture(s: NDArray[np.float64]) -> NDArray[np.float64]:
        up = base + theta[None, :] * s[:, None]
        down = base - theta[None, :] * s[:, None]
        both = np.concatenate([up, down], axis=1)
        return np.asarray(special.logsumexp(both, axis=1))

    # One term alone reaching 1/a is enough: the smallest such s brackets the root.
    high = np.min((threshold - base) / theta[None, :], axis=1)
    low = np.zeros_like(high)
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2.0
        crossed = log_mixture(middle) >= threshold
        high = np.where(crossed, middle, high)
        low = np.where(crossed, low, middle)
    return np.asarray(high / m).reshape(np.shape(n))
