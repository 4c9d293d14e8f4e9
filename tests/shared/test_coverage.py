"""Exact coverage and moments on a grid of n, p and α, by summing the binomial pmf."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator import exact_coverage, exact_moments, report_count_pmf
from deniable.shared import RandomizedResponse

GRID = list(itertools.product((18, 100, 1000), (0.01, 0.3, 0.5), (0.1, 0.5, 0.9)))
NOMINAL = 0.95


def independent_wald_coverage(n: int, p: float, alpha: float) -> float:
    """Wald coverage computed here from first principles, not with the product's code."""
    total = 0.0
    z = stats.norm.ppf(0.5 + NOMINAL / 2)
    lam = alpha * p + (1 - alpha) / 2
    for y in range(n + 1):
        rate = y / n
        half = z * math.sqrt(rate * (1 - rate) / n)
        low = (max(0.0, rate - half) - (1 - alpha) / 2) / alpha
        high = (min(1.0, rate + half) - (1 - alpha) / 2) / alpha
        if max(0.0, low) <= p <= min(1.0, high):
            total += stats.binom.pmf(y, n, lam)
    return total


@pytest.mark.parametrize(("n", "p", "alpha"), GRID)
def test_clopper_pearson_never_falls_below_nominal(n: int, p: float, alpha: float) -> None:
    assert exact_coverage(n, p, alpha, NOMINAL, "clopper-pearson") >= NOMINAL


@pytest.mark.parametrize(("n", "p", "alpha"), GRID)
def test_clopper_pearson_keeps_nominal_for_fixed_respondents(
    n: int, p: float, alpha: float
) -> None:
    share = round(p * n) / n  # the respondents estimand is a multiple of 1/n
    coverage = exact_coverage(n, share, alpha, NOMINAL, "clopper-pearson", "respondents")
    assert coverage >= NOMINAL


@pytest.mark.parametrize(("n", "p", "alpha"), GRID)
def test_chebyshev_never_falls_below_nominal(n: int, p: float, alpha: float) -> None:
    assert exact_coverage(n, p, alpha, NOMINAL, "chebyshev") >= NOMINAL


def test_wald_shortfall_is_shown_not_hidden() -> None:
    coverages = {point: exact_coverage(*point, NOMINAL, "wald") for point in GRID}
    short = {point: c for point, c in coverages.items() if c < NOMINAL}
    # Wald falls short at most grid points, worst at n = 18, p = 0.01, alpha = 0.9.
    assert len(short) > len(GRID) // 2
    worst = min(coverages, key=coverages.__getitem__)
    assert worst == (18, 0.01, 0.9)
    assert coverages[worst] < 0.7
    for point in [(18, 0.01, 0.9), (100, 0.3, 0.5), (1000, 0.5, 0.1)]:
        assert coverages[point] == pytest.approx(independent_wald_coverage(*point), abs=1e-12)


def test_wilson_shortfall_is_shown_not_hidden() -> None:
    coverages = {point: exact_coverage(*point, NOMINAL, "wilson") for point in GRID}
    short = sorted(point for point, c in coverages.items() if c < NOMINAL)
    assert short, "Wilson is expected to dip below nominal somewhere on the grid"
    assert all(n <= 1000 for n, _, _ in short)
    assert min(coverages.values()) > 0.93  # it dips, but far less than Wald
    # Off the grid it dips further for small n (about 0.92 at n <= 100).
    assert exact_coverage(18, 0.83, 0.5, NOMINAL, "wilson") < 0.93


def test_clopper_pearson_coverage_matches_scipy_intervals_summed_by_hand() -> None:
    n, p, alpha = 100, 0.3, 0.5
    spec = RandomizedResponse(alpha)
    total = 0.0
    for y in range(n + 1):
        ci = stats.binomtest(y, n).proportion_ci(NOMINAL, method="exact")
        if spec.debias(ci.low) <= p <= spec.debias(ci.high):
            total += stats.binom.pmf(y, n, spec.report_probability(p))
    assert exact_coverage(n, p, alpha) == pytest.approx(total, abs=1e-12)


@pytest.mark.parametrize(("n", "p", "alpha"), GRID)
def test_estimator_is_unbiased_with_the_theoretical_variance(
    n: int, p: float, alpha: float
) -> None:
    mean, variance = exact_moments(n, p, alpha)
    spec = RandomizedResponse(alpha)
    assert mean == pytest.approx(p, abs=1e-12)
    assert variance == pytest.approx(spec.estimator_variance(p, n, "population"), rel=1e-9)


@pytest.mark.parametrize(("n", "p", "alpha"), [(18, 0.5, 0.5), (100, 0.3, 0.1), (1000, 0.01, 0.9)])
def test_fixed_respondents_variance(n: int, p: float, alpha: float) -> None:
    share = round(p * n) / n
    mean, variance = exact_moments(n, share, alpha, "respondents")
    spec = RandomizedResponse(alpha)
    assert mean == pytest.approx(share, abs=1e-12)
    assert variance == pytest.approx(spec.estimator_variance(share, n, "respondents"), rel=1e-9)


def test_pmf_is_a_distribution_and_validates_input() -> None:
    pmf = report_count_pmf(50, 0.2, 0.5, "respondents")
    assert pmf.shape == (51,)
    assert np.isclose(pmf.sum(), 1.0)
    with pytest.raises(ValueError, match="p must be a multiple of 1/n for respondents"):
        report_count_pmf(18, 0.01, 0.5, "respondents")
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\], got 1.5"):
        report_count_pmf(18, 1.5, 0.5)
    with pytest.raises(ValueError, match="unknown estimand 'all'"):
        report_count_pmf(18, 0.5, 0.5, "all")  # type: ignore[arg-type]
