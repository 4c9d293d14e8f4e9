"""Randomized-response spec: validation, exact ε pinned from both sides, explanations."""

from __future__ import annotations

import dataclasses
import math
from decimal import Context, Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deniable.shared import RandomizedResponse, exp_at_least, tightest_epsilon
from deniable.shared._validate import MAX_CONFIDENCE, check_confidence
from deniable.shared.stats._intervals import normal_quantile


def test_epsilon_at_half_is_ln3_pinned_from_both_sides() -> None:
    spec = RandomizedResponse(0.5)
    assert spec.epsilon == math.log(3)
    assert spec.certifies(math.log(3))
    assert not spec.certifies(math.log(2.999))
    # ε is the tightest float: one ulp less is not certified.
    assert not spec.certifies(math.nextafter(spec.epsilon, 0.0))


def test_the_textbook_approximation_understates_epsilon() -> None:
    half = RandomizedResponse(0.5)
    assert half.epsilon_approx == 1.0
    assert half.epsilon == pytest.approx(1.0986, abs=5e-5)
    high = RandomizedResponse(0.9)
    assert high.epsilon == pytest.approx(2.944, abs=5e-4)
    assert high.epsilon_approx == pytest.approx(1.8)
    assert not high.certifies(high.epsilon_approx)


@given(st.floats(min_value=1e-12, max_value=1 - 1e-12))
def test_epsilon_is_exact_and_tight_for_any_alpha(alpha: float) -> None:
    spec = RandomizedResponse(alpha)
    assert spec.epsilon == pytest.approx(2 * math.atanh(alpha), rel=1e-13)
    assert spec.certifies(spec.epsilon)
    assert not spec.certifies(math.nextafter(spec.epsilon, 0.0))
    assert spec.epsilon_approx < spec.epsilon


@given(st.floats(min_value=1e-9, max_value=30.0))
def test_alpha_from_epsilon_round_trips(epsilon: float) -> None:
    spec = RandomizedResponse.from_epsilon(epsilon)
    assert spec.alpha == pytest.approx(math.tanh(epsilon / 2), rel=1e-14)
    assert spec.certifies(epsilon)
    assert spec.epsilon <= epsilon
    if spec.alpha < 1.0:  # α is the largest float certified at ε: the next one overshoots
        above = RandomizedResponse(math.nextafter(spec.alpha, 1.0))
        assert not above.certifies(epsilon)
        assert spec.epsilon <= epsilon < above.epsilon
    back = RandomizedResponse.from_epsilon(spec.epsilon)
    assert back.alpha >= spec.alpha
    assert back.alpha == pytest.approx(spec.alpha, rel=1e-14)


def test_exp_at_least_agrees_with_high_precision_logarithm() -> None:
    context = Context(prec=60)
    for value in (Fraction(2), Fraction(3), Fraction(10), Fraction(3, 2), Fraction(1001, 1000)):
        true_log = context.ln(Decimal(value.numerator) / Decimal(value.denominator))
        nearest = float(true_log)  # correctly rounded
        above = Decimal(nearest) >= true_log
        assert exp_at_least(nearest, value) == above
        assert exp_at_least(math.nextafter(nearest, math.inf), value)
        assert not exp_at_least(math.nextafter(nearest, 0.0), value)
        assert tightest_epsilon(value) == (nearest if above else math.nextafter(nearest, math.inf))


def test_exp_at_least_rejects_nan_and_handles_unbounded_ratio() -> None:
    with pytest.raises(ValueError, match="NaN"):
        exp_at_least(math.nan, Fraction(2))
    assert exp_at_least(math.inf, None)
    assert not exp_at_least(1e300, None)
    assert tightest_epsilon(Fraction(1)) == 0.0


def test_alpha_one_is_representable_but_flagged_as_no_privacy() -> None:
    spec = RandomizedResponse(1.0)
    assert spec.epsilon == math.inf
    assert not spec.is_private
    assert spec.privacy_ratio is None
    assert spec.certifies(math.inf)
    assert not spec.certifies(1e6)
    assert "No privacy" in spec.explain()
    assert spec.describe()["private"] is False


def test_explanation_is_plain_language_with_exact_epsilon() -> None:
    text = RandomizedResponse(0.5).explain()
    assert "guess your true answer right with probability 75%" in text
    assert "3.00 times" in text
    assert "epsilon = 1.10" in text


@pytest.mark.parametrize(
    ("alpha", "share", "ratio", "epsilon"),
    [
        (0.99, "99%", "199.00", "5.29"),  # (1+α)/2 is just below 0.995: rounds down
        (0.991, "over 99.5%", "221.22", "5.40"),
        (0.999, "over 99.5%", "1999.00", "7.60"),
        (1 - 2**-53, "over 99.5%", "1.8e+16", "37.43"),  # (1+α)/2 rounds to 1 in floats
    ],
)
def test_explanation_near_alpha_one_is_finite_and_never_says_certain(
    alpha: float, share: str, ratio: str, epsilon: str
) -> None:
    spec = RandomizedResponse(alpha)
    assert spec.is_private
    assert spec.explain() == (
        f"The server can guess your true answer right with probability {share}; any report "
        f"is at most {ratio} times as likely from one answer as from the other "
        f"(epsilon = {epsilon})."
    )


def test_very_large_epsilon_stays_private_and_certified() -> None:
    spec = RandomizedResponse.from_epsilon(100.0)
    assert spec.is_private
    assert spec.alpha < 1.0
    assert spec.certifies(100.0)
    assert spec.epsilon == pytest.approx(37.43, abs=0.01)


@pytest.mark.parametrize(
    ("alpha", "message"),
    [
        (0.0, r"alpha must be in \(0, 1\], got 0.0 \(alpha = 0 reports pure noise"),
        (-0.25, r"alpha must be in \(0, 1\], got -0.25"),
        (1.5, r"alpha must be in \(0, 1\], got 1.5"),
        (math.nan, "alpha must be a finite number, got nan"),
        (math.inf, "alpha must be a finite number, got inf"),
        (-math.inf, "alpha must be a finite number, got -inf"),
    ],
)
def test_invalid_alpha_is_rejected_naming_the_value(alpha: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RandomizedResponse(alpha)


@pytest.mark.parametrize("alpha", ["0.5", True, None, [0.5]])
def test_non_numeric_alpha_is_a_type_error(alpha: object) -> None:
    with pytest.raises(TypeError, match="alpha must be a real number"):
        RandomizedResponse(alpha)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("epsilon", "message"),
    [
        (0.0, "epsilon must be a finite number > 0, got 0.0"),
        (-1.0, "epsilon must be a finite number > 0, got -1.0"),
        (math.nan, "epsilon must be a finite number > 0, got nan"),
        (math.inf, r"got inf \(epsilon = inf means no privacy; use alpha=1 explicitly\)"),
        (5e-324, "epsilon=5e-324 is too small to represent"),
    ],
)
def test_invalid_epsilon_is_rejected_naming_the_value(epsilon: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RandomizedResponse.from_epsilon(epsilon)


def test_spec_is_frozen_and_compares_by_alpha() -> None:
    spec = RandomizedResponse(0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.alpha = 0.9  # type: ignore[misc]
    assert spec == RandomizedResponse(0.5)
    assert RandomizedResponse(1).alpha == 1.0


def test_variance_formulas_for_both_estimands() -> None:
    spec = RandomizedResponse(0.5)
    n, p = 100, 0.3
    lam = 0.5 * p + 0.25
    population = spec.estimator_variance(p, n, "population")
    respondents = spec.estimator_variance(p, n, "respondents")
    assert population == pytest.approx(lam * (1 - lam) / (0.25 * n))
    assert respondents == pytest.approx((1 - 0.25) / (4 * 0.25 * n))
    assert population - respondents == pytest.approx(p * (1 - p) / n)
    with pytest.raises(ValueError, match="unknown estimand 'everyone'"):
        spec.estimator_variance(p, n, "everyone")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="p must be in"):
        spec.estimator_variance(1.5, n)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        spec.estimator_variance(p, 0)


def test_confidence_levels_stop_where_quantiles_stay_finite() -> None:
    """Closer to 1 than 1 - 1e-9, (1 + c)/2 rounds towards 1 and a quantile is infinite."""
    assert check_confidence(MAX_CONFIDENCE) == MAX_CONFIDENCE
    assert math.isfinite(normal_quantile(MAX_CONFIDENCE))
    for bad in (math.nextafter(MAX_CONFIDENCE, 1.0), 1 - 2**-53):
        with pytest.raises(ValueError, match="confidence must be at most 1 - 1e-9"):
            check_confidence(bad)
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1"):
        check_confidence(1.0)
