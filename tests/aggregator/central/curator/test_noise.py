"""Central discrete Laplace noise: its pmf, exact interval, exact ε and the clamp's bias."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator.central.curator import (
    NoisyCount,
    PrivacyUnit,
    central_laplace_count,
    clamp_bias,
    continuous_half_width,
    discrete_half_width,
    discrete_laplace_pmf,
    discrete_laplace_tail,
    noise_scale,
)
from deniable.shared.sampling import discrete_laplace, generator_source

SCALES = [Fraction(1, 4), Fraction(1), Fraction(2), Fraction(20, 3), Fraction(100)]
CONFIDENCES = [0.5, 0.9, 0.95, 0.99, 0.999]


def _mass_within(k: int, scale: Fraction) -> float:
    """P(|Z| <= k) by summing the pmf term by term (not the closed-form tail)."""
    return math.fsum(discrete_laplace_pmf(z, scale) for z in range(-k, k + 1))


@pytest.mark.parametrize("scale", SCALES)
def test_pmf_sums_to_one_and_tail_matches_the_sum(scale: Fraction) -> None:
    reach = int(60 * scale) + 60
    assert math.fsum(discrete_laplace_pmf(z, scale) for z in range(-reach, reach + 1)) == (
        pytest.approx(1.0, abs=1e-12)
    )
    for k in (0, 1, 3, int(scale) + 2):
        assert discrete_laplace_tail(k, scale) == pytest.approx(
            1.0 - _mass_within(k, scale), abs=1e-12
        )


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_half_width_is_the_least_k_covering_the_confidence_exactly(
    scale: Fraction, confidence: float
) -> None:
    k = discrete_half_width(scale, confidence)
    assert _mass_within(k, scale) >= confidence - 1e-12
    if k > 0:
        assert _mass_within(k - 1, scale) < confidence
    # The discrete quantile never exceeds the continuous bound b·ln(1/α) by a step or more.
    assert k <= math.ceil(continuous_half_width(scale, confidence))


def _released_pmf(true: int, scale: Fraction, upper: int) -> np.ndarray:
    """P(clamp(true + Z, 0, upper) = r) for r = 0..upper: the ends carry the clamped tails."""

    def at_least(gap: int) -> float:  # P(Z >= gap) for gap >= 0
        return discrete_laplace_pmf(gap, scale) + discrete_laplace_tail(gap, scale) / 2

    inner = [discrete_laplace_pmf(r - true, scale) for r in range(1, upper)]
    return np.array([at_least(true), *inner, at_least(upper - true)])


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0])
def test_a_count_is_exactly_epsilon_private_the_worst_ratio_is_e_to_epsilon(epsilon: float) -> None:
    scale = noise_scale(epsilon, 1)
    upper = 40
    worst = 0.0
    for true in range(upper):
        here = _released_pmf(true, scale, upper)
        there = _released_pmf(true + 1, scale, upper)
        assert here.sum() == pytest.approx(1.0, abs=1e-12)
        worst = max(worst, float(np.max(np.abs(np.log(here) - np.log(there)))))
    assert worst <= epsilon + 1e-9  # never more than ε
    assert worst >= epsilon - 1e-9  # and attained: the ε stated is not loose


@pytest.mark.parametrize("epsilon", [0.25, 1.0])
def test_a_histogram_under_replace_needs_sensitivity_2(epsilon: float) -> None:
    """Replacing one row moves one bin down and another up: scale 2/ε gives e^ε exactly."""
    reach = range(-60, 61)

    def log_ratio(scale: Fraction) -> float:
        worst = 0.0
        for a in reach:
            for b in (-3, 0, 5):
                # bins (5, 5) versus (4, 6); outputs a, b of each noisy bin
                here = discrete_laplace_pmf(a - 5, scale) * discrete_laplace_pmf(b - 5, scale)
                there = discrete_laplace_pmf(a - 4, scale) * discrete_laplace_pmf(b - 6, scale)
                worst = max(worst, abs(math.log(here) - math.log(there)))
        return worst

    assert log_ratio(noise_scale(epsilon, 2)) == pytest.approx(epsilon, abs=1e-9)
    # Δ = 1 would only be 2ε-private under replace-one.
    assert log_ratio(noise_scale(epsilon, 1)) == pytest.approx(2 * epsilon, abs=1e-9)


@pytest.mark.parametrize("true", [0, 1, 3, 10])
@pytest.mark.parametrize("upper", [None, 12])
def test_clamp_bias_matches_the_pmf(true: int, upper: int | None) -> None:
    scale = Fraction(3, 2)
    top = 200 if upper is None else upper
    expected = math.fsum(
        (min(max(true + z, 0), top) - true) * discrete_laplace_pmf(z, scale)
        for z in range(-300, 301)
    )
    assert clamp_bias(true, scale, upper) == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
def test_noise_follows_the_discrete_laplace_pmf_chi_square() -> None:
    scale = noise_scale(0.5, 1)
    draws = discrete_laplace(scale, 40_000, generator_source(np.random.default_rng(19)))
    edges = list(range(-8, 9))
    observed = [int(np.sum(draws < edges[0]))]
    observed += [int(np.sum(draws == z)) for z in edges]
    observed += [int(np.sum(draws > edges[-1]))]
    tail = discrete_laplace_tail(8, scale) / 2
    expected = [tail, *(discrete_laplace_pmf(z, scale) for z in edges), tail]
    statistic, p_value = stats.chisquare(observed, np.array(expected) * draws.size)
    # 18 degrees of freedom: p < 1e-6 would need statistic > 62; a wrong scale (b = 1 or
    # 4) gives thousands at this n.
    assert p_value > 1e-6, statistic


@pytest.mark.slow
def test_released_counts_cover_at_the_stated_rate() -> None:
    """Seeded coverage of released ± k at 90%: the misses are Binomial(n, ≤ 0.1)."""
    source = generator_source(np.random.default_rng(7))
    trials, confidence = 1500, 0.9
    results = [
        central_laplace_count(3, 0.7, confidence=confidence, upper=20, source=source)
        for _ in range(trials)
    ]
    misses = sum(not (r.low <= 3 <= r.high) for r in results)
    miss_rate = discrete_laplace_tail(results[0].half_width, results[0].scale)
    assert miss_rate <= 1 - confidence
    # Upper 1e-6 quantile of the binomial: a miss rate above the stated would exceed it.
    assert misses <= stats.binom.ppf(1 - 1e-6, trials, 1 - confidence)
    assert all(0 <= r.released <= 20 and r.low <= r.released <= r.high for r in results)
    # The noisy counts are unbiased away from the clamp: mean within 6 standard errors.
    released = np.array([r.released for r in results], dtype=float)
    bias = clamp_bias(3, results[0].scale, 20)
    spread = math.sqrt(2 * float(results[0].scale) ** 2 / trials)
    assert abs(released.mean() - 3 - bias) <= 6 * spread


def test_central_laplace_count_checks_its_inputs() -> None:
    with pytest.raises(ValueError, match=r"epsilon must be in \[2\^-20, 50\], got 0"):
        central_laplace_count(3, 0)
    with pytest.raises(ValueError, match="got nan"):
        central_laplace_count(3, float("nan"))
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 1.5"):
        central_laplace_count(3, 1.0, confidence=1.5)
    with pytest.raises(ValueError, match=r"true count must be >= 0, got -1"):
        central_laplace_count(-1, 1.0, upper=2)
    # Above the public bound: clamped, never refused (a refusal would tell the count).
    assert 0 <= central_laplace_count(3, 1.0, upper=2).released <= 2
    with pytest.raises(ValueError, match="sensitivity must be a positive integer, got 0"):
        central_laplace_count(3, 1.0, 0)


def test_noisy_count_reports_every_field() -> None:
    result = central_laplace_count(
        7, 0.5, 2, upper=9, confidence=0.9, source=generator_source(np.random.default_rng(3))
    )
    assert isinstance(result, NoisyCount)
    document = result.to_dict()
    assert document["epsilon"] == 0.5
    assert document["sensitivity"] == 2
    assert document["noise_scale"] == 4.0
    assert document["clamp"] == [0, 9]
    assert document["interval"]["confidence"] == 0.9
    assert document["interval"]["half_width"] == discrete_half_width(Fraction(4), 0.9)
    assert document["interval"]["low"] == max(0, result.released - result.half_width)
    assert document["interval"]["high"] == min(9, result.released + result.half_width)


def test_a_count_states_its_unit_and_what_its_interval_covers() -> None:
    unit = PrivacyUnit("person", 3)
    source = generator_source(np.random.default_rng(4))
    result = central_laplace_count(7, 0.5, 3, source=source, neighbours="replace", unit=unit)
    document = result.to_dict()
    assert document["neighbours"] == "replace"
    assert document["privacy_unit"] == {
        "column": "person", "max_contributions": 3, "description": unit.describe(),
    }  # fmt: skip
    assert "at most K" in document["interval"]["covers"]
    assert document["delta"] == 0.0
    assert "privacy_unit" not in central_laplace_count(7, 0.5).to_dict()  # not stated: not shown
