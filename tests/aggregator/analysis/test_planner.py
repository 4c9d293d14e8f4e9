"""Sample-size planning: figures match the formula and are minimal."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from deniable.aggregator import margin_achieved, participants_needed, plan
from deniable.shared import RandomizedResponse


def formula_n(margin: float, alpha: float, confidence: float, p: float) -> float:
    """Warner (1965) variance, normal approximation: n = z²·[(1−α²)/(4α²) + p(1−p)]/m²."""
    z = stats.norm.ppf(0.5 + confidence / 2)
    return (
        float(z) * float(z) * ((1 - alpha * alpha) / (4 * alpha * alpha) + p * (1 - p)) / margin**2
    )


@pytest.mark.parametrize(
    ("epsilon", "margin", "confidence", "p"),
    [(1.0, 0.03, 0.95, 0.5), (0.5, 0.01, 0.99, 0.5), (2.0, 0.05, 0.9, 0.2), (4.0, 0.02, 0.95, 0.0)],
)
def test_participants_needed_is_the_ceiling_of_the_formula(
    epsilon: float, margin: float, confidence: float, p: float
) -> None:
    spec = RandomizedResponse.from_epsilon(epsilon)
    n = participants_needed(margin, spec, confidence, p)
    assert n == math.ceil(formula_n(margin, spec.alpha, confidence, p))
    # Minimal: n reaches the margin, n - 1 does not.
    assert margin_achieved(n, spec, confidence, p) <= margin
    assert margin_achieved(n - 1, spec, confidence, p) > margin


def test_epsilon_one_margin_three_points() -> None:
    spec = RandomizedResponse.from_epsilon(1.0)
    n = participants_needed(0.03, spec)
    assert n == math.ceil(formula_n(0.03, spec.alpha, 0.95, 0.5))
    assert 4900 < n < 5100  # ≈ 4997: randomized response costs ~4.6x a plain poll (1068)


def test_half_is_the_worst_case_share() -> None:
    spec = RandomizedResponse(0.5)
    worst = participants_needed(0.02, spec)
    assert all(participants_needed(0.02, spec, p=p) <= worst for p in (0.0, 0.1, 0.3, 0.7, 1.0))


def test_margin_for_participants_inverts_the_formula() -> None:
    spec = RandomizedResponse(0.5)
    margin = margin_achieved(10_000, spec, 0.95, 0.5)
    z = stats.norm.ppf(0.975)
    assert margin == pytest.approx(z * math.sqrt((0.75 / 1.0 + 0.25) / 10_000))
    result = plan(spec, participants=10_000)
    assert result.margin == margin
    assert result.participants == 10_000
    assert result.epsilon == spec.epsilon


def test_plan_from_margin_reports_the_margin_it_achieves() -> None:
    spec = RandomizedResponse.from_epsilon(1.0)
    result = plan(spec, margin=0.03)
    assert result.participants == participants_needed(0.03, spec)
    assert result.margin <= 0.03
    assert "normal approximation" in result.method


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: participants_needed(0.0, s), r"margin must be in \(0, 1\], got 0.0"),
        (lambda s: participants_needed(-0.1, s), r"margin must be in \(0, 1\], got -0.1"),
        (lambda s: participants_needed(math.nan, s), r"margin must be in \(0, 1\], got nan"),
        (lambda s: participants_needed(0.03, s, 1.0), "confidence must be strictly between"),
        (lambda s: participants_needed(0.03, s, p=1.2), r"p must be in \[0, 1\], got 1.2"),
        (lambda s: margin_achieved(0, s), "participants must be >= 1, got 0"),
        (lambda s: plan(s), "give exactly one of margin or participants"),
        (lambda s: plan(s, margin=0.1, participants=5), "give exactly one of margin"),
    ],
)
def test_invalid_planner_input_is_rejected(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(RandomizedResponse(0.5))  # type: ignore[operator]
