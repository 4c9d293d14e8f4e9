"""Confidence sequences: cross-checks against Howard et al. (2021), exact time-uniform coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from deniable.shared.stats import anytime_rate_interval, binomial_interval
from deniable.shared.stats._sequences import (
    TUNED_AT,
    BennettBound,
    LaplaceNoiseBound,
    SubGaussianBound,
    beta_binomial_log_mixture,
    mean_radius,
    mixture_precision,
    normal_mixture_radius,
)

STEP, LOOKS = 100, 100  # looked at after every 100 reports, up to 10^4


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_precision_minimizes_the_normal_mixture_boundary_at_the_tuned_n(confidence: float) -> None:
    # Howard et al. (2021) eq. (14), minimized over ρ numerically at v = TUNED_AT.
    def boundary(log_rho: float) -> float:
        return float(normal_mixture_radius(TUNED_AT, math.exp(log_rho), confidence))

    best = optimize.minimize_scalar(boundary, bounds=(-5.0, 15.0), method="bounded")
    assert math.isclose(mixture_precision(confidence), math.exp(best.x), rel_tol=1e-3)


def test_normal_mixture_boundary_matches_a_direct_evaluation() -> None:
    # At α = 0.05, ρ = 1, v = 100: sqrt(101 · log(101/0.0025)).
    assert math.isclose(
        float(normal_mixture_radius(100.0, 1.0, 0.95)), math.sqrt(101 * math.log(101 / 0.0025))
    )


@pytest.mark.parametrize("rate", [0.05, 0.3, 0.5])
@pytest.mark.parametrize("n", [1_000, 10_000, 1_000_000])
def test_beta_binomial_sequence_agrees_with_the_normal_mixture_closed_form(
    rate: float, n: int
) -> None:
    # The beta-binomial mixture is the exact-likelihood version of the normal mixture
    # (Howard et al. 2021, Sec. 3): with v = nλ(1−λ) and precision ρλ(1−λ) their
    # half-widths agree to a fraction of a percent once nλ(1−λ) is large.
    low, high = anytime_rate_interval(round(n * rate), n, 0.95)
    spread = rate * (1 - rate)
    closed = normal_mixture_radius(n * spread, mixture_precision(0.95) * spread, 0.95) / n
    assert (high - low) / 2 == pytest.approx(float(closed), rel=4e-3)


@pytest.mark.parametrize("variance", [0.25, 1.0, 6.0])
def test_the_discrete_mixture_reproduces_the_normal_mixture_for_sub_gaussian_reports(
    variance: float,
) -> None:
    n = np.array([10, 300, 1_000, 10_000, 10**6, 10**8])
    rho = mixture_precision(0.95) * variance
    closed = normal_mixture_radius(n * variance, rho, 0.95) / n
    radius = mean_radius(n, SubGaussianBound(variance), 0.95)
    np.testing.assert_allclose(radius, closed, rtol=2e-3)


def test_bennett_and_laplace_bounds_are_valid_log_mgf_bounds() -> None:
    theta = np.linspace(-3.0, 3.0, 61)
    # A report of ±c with probability ½ each attains variance c² and range c.
    c = 1.5
    exact = np.log(np.cosh(c * theta))
    assert np.all(BennettBound(c * c, c).log_mgf(theta) >= exact - 1e-12)
    # Discrete Laplace noise alone, summed directly, against the closed form.
    q, step = math.exp(-0.7), 0.25
    z = np.arange(-6000, 6001)
    log_pmf = math.log((1 - q) / (1 + q)) - 0.7 * np.abs(z)
    inside = theta[np.abs(theta) * step < 0.65]
    direct = [special.logsumexp(log_pmf + t * step * z) for t in inside]
    bound = LaplaceNoiseBound(width=0.0, step=step, decay=0.7)
    np.testing.assert_allclose(bound.log_mgf(inside), direct, rtol=1e-9, atol=1e-12)
    assert bound.curvature == pytest.approx(step**2 * 2 * q / (1 - q) ** 2)
    assert np.isinf(bound.log_mgf(np.array([0.7 / step])))


def test_interval_is_the_set_where_the_mixture_stays_below_one_over_alpha() -> None:
    rng = np.random.default_rng(3)
    n = rng.integers(1, 5_000, size=40)
    ones = rng.integers(0, n + 1)
    low, high = anytime_rate_interval(ones, n, 0.95)
    threshold = math.log(20)
    grid = np.linspace(1e-6, 1 - 1e-6, 4001)
    for y, m, lo, hi in zip(ones, n, low, high, strict=True):
        inside = beta_binomial_log_mixture(grid, y, m, mixture_precision(0.95)) < threshold
        assert lo <= y / m <= hi
        assert np.all((grid[inside] >= lo) & (grid[inside] <= hi))
        # and no wider than the set: points just inside the ends belong to it
        width = hi - lo
        for end, sign in ((lo, 1), (hi, -1)):
            if 0 < end < 1:
                near = end + sign * 1e-6 * width
                assert beta_binomial_log_mixture(near, y, m, mixture_precision(0.95)) < threshold


def exact_ever_miss(rate: float, interval: object) -> float:
    """P(some look after 100, 200, ..., 10^4 reports has an interval missing ``rate``).

    Forward recursion over the Binomial count, exactly (mass below 1e-15 per count is
    dropped and counted as missed, so the figure is an upper bound).
    """
    step_pmf = stats.binom.pmf(np.arange(STEP + 1), STEP, rate)
    alive, offset = np.array([1.0]), 0
    for look in range(1, LOOKS + 1):
        alive = np.convolve(alive, step_pmf)
        kept = np.flatnonzero(alive > 1e-15)
        alive, offset = alive[kept[0] : kept[-1] + 1], offset + int(kept[0])
        counts = offset + np.arange(alive.size)
        low, high = interval(counts, look * STEP)  # type: ignore[operator]
        alive = np.where((low <= rate) & (rate <= high), alive, 0.0)
    return 1.0 - float(alive.sum())


@pytest.mark.parametrize("rate", [0.5, 0.04])
def test_confidence_sequence_never_misses_more_than_alpha_over_all_looks_exactly(
    rate: float,
) -> None:
    anytime = exact_ever_miss(rate, lambda y, n: anytime_rate_interval(y, n, 0.95))
    fixed = exact_ever_miss(rate, lambda y, n: binomial_interval(y, n, 0.95, "clopper-pearson"))
    assert anytime <= 0.05
    # Why --anytime exists: the exact fixed-n interval, looked at 100 times, misses the
    # truth at some look far more often than 5%.
    assert fixed > 0.15


def test_bad_inputs_name_the_value() -> None:
    with pytest.raises(ValueError, match="got count 11 of n=10"):
        anytime_rate_interval([3, 11], 10, 0.95)
    with pytest.raises(ValueError, match=r"confidence must be strictly between 0 and 1, got 1\.5"):
        anytime_rate_interval(3, 10, 1.5)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        mean_radius([0, 5], BennettBound(1.0, 2.0), 0.95)
