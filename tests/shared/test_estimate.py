"""Yes/no estimates: the debiasing formula, the four interval methods, validation."""

from __future__ import annotations

import dataclasses
import math

import pytest
from scipy import stats

from deniable.aggregator import METHODS, ProportionEstimate, estimate_proportion
from deniable.shared import RandomizedResponse

CONTRACT_FIELDS = {
    "n", "estimate", "estimate_raw", "std_error", "ci_low", "ci_high", "method",
    "confidence", "estimand", "alpha", "epsilon", "epsilon_approx", "coverage", "anytime",
}  # fmt: skip


def test_the_exam_example_gives_one_half() -> None:
    # Seed 000: 18 participants, 9 report yes, alpha = 1/2 -> p_hat = 1/2.
    result = estimate_proportion(9, 18, alpha=0.5)
    assert result.estimate_raw == 0.5
    assert result.estimate == 0.5
    assert result.ci_low < 0.5 < result.ci_high


def test_fields_match_the_wire_contract_names() -> None:
    result = estimate_proportion(30, 100, alpha=0.5)
    assert {f.name for f in dataclasses.fields(ProportionEstimate)} == CONTRACT_FIELDS
    assert set(result.to_dict()) == CONTRACT_FIELDS
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n = 5  # type: ignore[misc]


@pytest.mark.parametrize(("ones", "n", "alpha"), [(0, 50, 0.5), (50, 50, 0.5), (37, 90, 0.2)])
def test_raw_estimate_is_the_unbiased_formula_and_estimate_is_clipped(
    ones: int, n: int, alpha: float
) -> None:
    result = estimate_proportion(ones, n, alpha)
    assert result.estimate_raw == pytest.approx((ones / n - (1 - alpha) / 2) / alpha)
    assert result.estimate == min(1.0, max(0.0, result.estimate_raw))
    assert 0.0 <= result.ci_low <= result.estimate <= result.ci_high <= 1.0


def test_all_no_reports_give_a_negative_raw_estimate_kept_beside_the_clipped_one() -> None:
    result = estimate_proportion(0, 50, alpha=0.5)
    assert result.estimate_raw == pytest.approx(-0.5)
    assert result.estimate == 0.0
    assert result.std_error > 0  # plug-in from the clipped estimate, never a false 0


def test_privacy_figures_come_from_the_mechanism() -> None:
    result = estimate_proportion(9, 18, alpha=0.5)
    spec = RandomizedResponse(0.5)
    assert result.epsilon == spec.epsilon == math.log(3)
    assert result.epsilon_approx == 1.0
    assert result.alpha == 0.5


@pytest.mark.parametrize("method", ["clopper-pearson", "wilson"])
@pytest.mark.parametrize(("ones", "n"), [(0, 18), (9, 18), (18, 18), (312, 1000)])
def test_intervals_match_scipy_binomtest_mapped_affinely(method: str, ones: int, n: int) -> None:
    alpha, confidence = 0.5, 0.9
    scipy_method = {"clopper-pearson": "exact", "wilson": "wilson"}[method]
    lam = stats.binomtest(ones, n).proportion_ci(confidence, method=scipy_method)
    spec = RandomizedResponse(alpha)
    result = estimate_proportion(ones, n, alpha, confidence, method)
    assert result.ci_low == pytest.approx(min(1.0, max(0.0, spec.debias(lam.low))), abs=1e-12)
    assert result.ci_high == pytest.approx(min(1.0, max(0.0, spec.debias(lam.high))), abs=1e-12)


def test_wald_interval_formula() -> None:
    ones, n, alpha = 300, 1000, 0.5
    lam = ones / n
    half = stats.norm.ppf(0.975) * math.sqrt(lam * (1 - lam) / n) / alpha
    result = estimate_proportion(ones, n, alpha, method="wald")
    assert result.ci_low == pytest.approx(result.estimate_raw - half)
    assert result.ci_high == pytest.approx(result.estimate_raw + half)


def test_chebyshev_half_width_is_the_classroom_bound() -> None:
    n, alpha = 10_000, 0.5
    result = estimate_proportion(5000, n, alpha, method="chebyshev")
    half = (result.ci_high - result.ci_low) / 2
    assert half == pytest.approx(1 / (2 * alpha * math.sqrt(n * 0.05)))
    assert half == pytest.approx(2.236 / (alpha * math.sqrt(n)), rel=1e-3)


def test_methods_are_ordered_by_width_as_theory_says() -> None:
    widths = {
        method: (lambda r: r.ci_high - r.ci_low)(estimate_proportion(450, 1000, 0.5, method=method))
        for method in METHODS
    }
    assert widths["wald"] < widths["clopper-pearson"] < widths["chebyshev"]
    assert widths["wilson"] < widths["clopper-pearson"]


def test_std_error_for_each_estimand() -> None:
    alpha, n = 0.5, 400
    population = estimate_proportion(130, n, alpha)
    lam = alpha * population.estimate + (1 - alpha) / 2
    assert population.std_error == pytest.approx(math.sqrt(lam * (1 - lam) / (alpha**2 * n)))
    respondents = estimate_proportion(130, n, alpha, estimand="respondents")
    assert respondents.std_error == pytest.approx(math.sqrt((1 - alpha**2) / (4 * alpha**2 * n)))
    assert respondents.estimand == "respondents"
    assert (respondents.ci_low, respondents.ci_high) == (population.ci_low, population.ci_high)


def test_no_privacy_alpha_one_estimates_the_plain_share() -> None:
    result = estimate_proportion(30, 100, alpha=1.0)
    assert result.estimate_raw == pytest.approx(0.3)
    assert result.epsilon == math.inf


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"ones": 1, "n": 0}, ValueError, "n must be >= 1, got 0"),
        ({"ones": 19, "n": 18}, ValueError, "ones must be <= n, got ones=19 > n=18"),
        ({"ones": -1, "n": 18}, ValueError, "ones must be >= 0, got -1"),
        ({"ones": 9, "n": 18.0}, TypeError, r"n must be an integer, got 18.0 \(float\)"),
        ({"ones": True, "n": 18}, TypeError, "ones must be an integer, got True"),
        ({"confidence": 0.0}, ValueError, "confidence must be strictly between 0 and 1, got 0.0"),
        ({"confidence": 1.0}, ValueError, "confidence must be strictly between 0 and 1, got 1.0"),
        ({"confidence": 95}, ValueError, "confidence must be strictly between 0 and 1, got 95"),
        ({"confidence": math.nan}, ValueError, "confidence must be strictly between 0 and 1"),
        ({"method": "bayes"}, ValueError, "unknown method 'bayes'; expected one of: clopper"),
        ({"estimand": "everyone"}, ValueError, "unknown estimand 'everyone'"),
        ({"alpha": 0.0}, ValueError, r"alpha must be in \(0, 1\], got 0.0"),
        ({"alpha": math.nan}, ValueError, "alpha must be a finite number, got nan"),
    ],
)
def test_invalid_input_is_rejected_naming_the_value(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {"ones": 9, "n": 18, "alpha": 0.5} | kwargs
    with pytest.raises(error, match=message):
        estimate_proportion(**arguments)  # type: ignore[arg-type]
