"""Multiple-choice specs: exact ε pinned from both sides, p*/q*, variances, auto rule, errors."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deniable.shared import RandomizedResponse, tightest_epsilon
from deniable.shared.mechanisms import (
    FrequencyOracle,
    GeneralizedRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
)
from deniable.shared.questions import categorical_mechanism, choose_categorical

options = st.integers(min_value=2, max_value=1024)
open_alphas = st.floats(min_value=1e-12, max_value=1 - 1e-12)
oue_qs = st.floats(min_value=1e-12, max_value=0.5, exclude_max=True)
hash_ranges = st.integers(min_value=2, max_value=(1 << 32) - 1)
epsilons = st.floats(min_value=1e-6, max_value=30.0)


def unchecked(value: object) -> Any:
    """Pass a wrongly typed value past the type checker, to test run-time validation."""
    return value


def assert_pinned(spec: FrequencyOracle) -> None:
    """ε is certified, and one ulp less is not: the tightest float, never understated."""
    assert spec.certifies(spec.epsilon)
    assert not spec.certifies(math.nextafter(spec.epsilon, 0.0))
    assert spec.epsilon == tightest_epsilon(spec.privacy_ratio)


@pytest.mark.parametrize(
    ("spec", "ratio"),
    [
        (GeneralizedRandomizedResponse(k=4, alpha=0.5), Fraction(5)),  # 1 + kα/(1−α) = 1 + 4
        (GeneralizedRandomizedResponse(k=2, alpha=0.5), Fraction(3)),  # yes/no RR: ln 3
        (GeneralizedRandomizedResponse(k=10, alpha=0.25), Fraction(13, 3)),  # 1 + 10/3
        (OptimizedUnaryEncoding(k=3, q=0.25), Fraction(3)),  # (1−q)/q
        (OptimizedUnaryEncoding(k=1024, q=0.125), Fraction(7)),
        (OptimizedLocalHashing(k=100, g=4, alpha=0.5), Fraction(5)),  # 1 + gα/(1−α)
        (OptimizedLocalHashing(k=7, g=2, alpha=0.75), Fraction(7)),
    ],
)
def test_epsilon_is_the_log_of_the_exact_ratio_pinned_from_both_sides(
    spec: FrequencyOracle, ratio: Fraction
) -> None:
    assert spec.privacy_ratio == ratio
    p, q = spec.p_star_exact, spec.q_star_exact
    if isinstance(spec, OptimizedUnaryEncoding):  # two bits differ between inputs
        assert p * (1 - q) / ((1 - p) * q) == ratio
    elif isinstance(
        spec, OptimizedLocalHashing
    ):  # the value y in [g] versus one other value in [g]
        assert p / ((1 - Fraction(spec.alpha)) / spec.g) == ratio
    else:
        assert p / q == ratio
    assert spec.epsilon == pytest.approx(math.log(ratio), rel=1e-15)
    assert_pinned(spec)
    assert not spec.certifies(math.log(float(ratio)) * (1 - 1e-9))


def test_documented_values_at_alpha_half() -> None:
    spec = GeneralizedRandomizedResponse(k=4, alpha=0.5)
    assert (spec.p_star, spec.q_star) == (0.625, 0.125)
    assert spec.certifies(math.log(5.0001))
    assert not spec.certifies(math.log(4.9999))


@given(open_alphas)
def test_grr_with_two_options_is_yes_no_randomized_response(alpha: float) -> None:
    grr, rr = GeneralizedRandomizedResponse(k=2, alpha=alpha), RandomizedResponse(alpha)
    assert grr.privacy_ratio == rr.privacy_ratio
    assert grr.epsilon == rr.epsilon
    assert grr.p_star_exact == rr.p_truth_exact
    for share in (0.0, 0.3, 1.0):
        for estimand in ("population", "respondents"):
            assert grr.variance(share, 50, estimand) == pytest.approx(
                rr.estimator_variance(share, 50, estimand), rel=1e-9
            )


@given(options, open_alphas)
def test_grr_epsilon_is_exact_for_any_alpha(k: int, alpha: float) -> None:
    spec = GeneralizedRandomizedResponse(k, alpha)
    assert spec.p_star_exact == Fraction(alpha) + (1 - Fraction(alpha)) / k
    assert spec.q_star_exact == (1 - Fraction(alpha)) / k
    assert spec.epsilon == pytest.approx(math.log1p(k * alpha / (1 - alpha)), rel=1e-12)
    assert_pinned(spec)


@given(options, oue_qs)
def test_oue_epsilon_is_exact_for_any_q(k: int, q: float) -> None:
    spec = OptimizedUnaryEncoding(k, q)
    assert (spec.p_star_exact, spec.q_star_exact) == (Fraction(1, 2), Fraction(q))
    assert spec.epsilon == pytest.approx(math.log((1 - q) / q), rel=1e-12, abs=1e-15)
    assert_pinned(spec)


@given(options, hash_ranges, open_alphas)
def test_olh_epsilon_is_exact_for_any_alpha_and_range(k: int, g: int, alpha: float) -> None:
    spec = OptimizedLocalHashing(k, g, alpha)
    assert spec.p_star_exact == Fraction(alpha) + (1 - Fraction(alpha)) / g
    assert spec.q_star_exact == Fraction(1, g)
    assert spec.q_star_bias_bound == Fraction(1, 2**61 - 1)
    assert spec.epsilon == pytest.approx(math.log1p(g * alpha / (1 - alpha)), rel=1e-12)
    assert_pinned(spec)


@given(options, epsilons)
def test_grr_from_epsilon_is_the_largest_certified_alpha(k: int, epsilon: float) -> None:
    spec = GeneralizedRandomizedResponse.from_epsilon(k, epsilon)
    expected = math.expm1(epsilon) / (math.expm1(epsilon) + k)
    assert spec.alpha == pytest.approx(expected, rel=1e-12)
    assert spec.certifies(epsilon)
    assert spec.epsilon <= epsilon
    if spec.alpha < 1.0:
        assert not GeneralizedRandomizedResponse(k, math.nextafter(spec.alpha, 1.0)).certifies(
            epsilon
        )
    e = math.exp(epsilon)
    assert spec.p_star == pytest.approx(e / (e + k - 1), rel=1e-9)
    assert spec.q_star == pytest.approx(1 / (e + k - 1), rel=1e-6)


@given(options, epsilons)
def test_oue_from_epsilon_is_the_smallest_certified_q(k: int, epsilon: float) -> None:
    spec = OptimizedUnaryEncoding.from_epsilon(k, epsilon)
    assert spec.q == pytest.approx(1 / (math.exp(epsilon) + 1), rel=1e-12)
    assert spec.certifies(epsilon)
    assert spec.epsilon <= epsilon
    assert not OptimizedUnaryEncoding(k, math.nextafter(spec.q, 0.0)).certifies(epsilon)


@given(options, epsilons)
def test_olh_from_epsilon_uses_g_round_e_to_epsilon_plus_one(k: int, epsilon: float) -> None:
    spec = OptimizedLocalHashing.from_epsilon(k, epsilon)
    e = math.exp(epsilon)
    assert spec.g == min(max(2, math.floor(e + 0.5) + 1), (1 << 32) - 1)
    assert spec.alpha == pytest.approx((e - 1) / (e + spec.g - 1), rel=1e-9)
    assert spec.certifies(epsilon)
    if spec.alpha < 1.0:
        assert not OptimizedLocalHashing(k, spec.g, math.nextafter(spec.alpha, 1.0)).certifies(
            epsilon
        )
    assert spec.p_star == pytest.approx(e / (e + spec.g - 1), rel=1e-9)


def test_huge_epsilon_still_gives_certified_parameters() -> None:
    olh = OptimizedLocalHashing.from_epsilon(10, 40.0)
    assert olh.g == (1 << 32) - 1  # capped so that g fits in uint32
    assert olh.certifies(40.0)
    oue = OptimizedUnaryEncoding.from_epsilon(
        10, 800.0
    )  # 1/(e^800 + 1) underflows; the least q is certified
    assert oue.q == math.ulp(0.0)
    assert oue.certifies(800.0)
    assert GeneralizedRandomizedResponse.from_epsilon(10, 800.0).certifies(800.0)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_small_f_variances_match_the_design_table(epsilon: float) -> None:
    e, k, n = math.exp(epsilon), 32, 1000
    grr = GeneralizedRandomizedResponse.from_epsilon(k, epsilon)
    assert n * grr.small_f_variance(n) == pytest.approx((k - 2 + e) / (e - 1) ** 2, rel=1e-9)
    oue_figure = 4 * e / (e - 1) ** 2
    assert n * OptimizedUnaryEncoding.from_epsilon(k, epsilon).small_f_variance(n) == pytest.approx(
        oue_figure, rel=1e-9
    )
    # OLH with integer g = round(e^ε) + 1 is within 1% of OUE, never better.
    olh = n * OptimizedLocalHashing.from_epsilon(k, epsilon).small_f_variance(n)
    assert oue_figure * (1 - 1e-12) <= olh <= 1.01 * oue_figure


@pytest.mark.parametrize(
    "spec",
    [
        GeneralizedRandomizedResponse(5, 0.3),
        OptimizedUnaryEncoding(5, 0.2),
        OptimizedLocalHashing(50, 3, 0.4),
        OptimizedLocalHashing(50, 40, 0.97),
    ],
)
def test_variance_formulas_and_their_worst_case(spec: FrequencyOracle) -> None:
    n = 400
    p, q = spec.p_star, spec.q_star
    grid = [i / 1000 for i in range(1001)]
    for f in (0.0, 0.25, 1.0):
        fixed = (q * (1 - q) + f * (p - q) * (1 - p - q)) / (n * (p - q) ** 2)
        assert spec.variance(f, n, "respondents") == pytest.approx(fixed, rel=1e-12)
        assert spec.variance(f, n) - fixed == pytest.approx(f * (1 - f) / n, rel=1e-9, abs=1e-18)
    for estimand in ("population", "respondents"):
        worst = spec.worst_variance(n, estimand)
        largest = max(spec.variance(f, n, estimand) for f in grid)
        assert largest <= worst * (1 + 1e-12)
        assert worst == pytest.approx(largest, rel=1e-5)
    assert spec.small_f_variance(n) == spec.variance(0.0, n, "respondents")


@pytest.mark.parametrize("k", [2, 3, 8, 20, 100, 1024])
@pytest.mark.parametrize("epsilon", [1e-9, 0.5, 1.0, 3.0, 6.0, 20.0])
def test_auto_choice_has_the_least_worst_case_variance(k: int, epsilon: float) -> None:
    chosen = choose_categorical(k, epsilon)
    assert chosen.certifies(epsilon)
    assert chosen.k == k
    others = [
        kind.from_epsilon(k, epsilon)
        for kind in (GeneralizedRandomizedResponse, OptimizedUnaryEncoding, OptimizedLocalHashing)
    ]
    assert chosen.estimate_variance(1) == min(m.estimate_variance(1) for m in others)
    assert chosen.estimate_variance(1) == chosen.worst_variance(1, "population")


def test_categorical_spec_factory() -> None:
    assert categorical_mechanism("grr", 4, alpha=0.5) == GeneralizedRandomizedResponse(4, 0.5)
    assert categorical_mechanism(
        "grr", 4, epsilon=1.0
    ) == GeneralizedRandomizedResponse.from_epsilon(4, 1.0)
    assert categorical_mechanism("oue", 40, epsilon=1.0) == OptimizedUnaryEncoding.from_epsilon(
        40, 1.0
    )
    assert categorical_mechanism("olh", 40, epsilon=1.0) == OptimizedLocalHashing.from_epsilon(
        40, 1.0
    )
    assert categorical_mechanism("auto", 40, epsilon=1.0) == OptimizedUnaryEncoding.from_epsilon(
        40, 1.0
    )
    assert categorical_mechanism(
        "auto", 4, epsilon=1.0
    ) == GeneralizedRandomizedResponse.from_epsilon(4, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kind": "rappor", "k": 4, "epsilon": 1.0},
            r"unknown kind 'rappor' of a categorical question; expected one of",
        ),
        ({"kind": "oue", "k": 4, "alpha": 0.5}, r"alpha=0.5 applies only to kind 'grr', not 'oue'"),
        (
            {"kind": "grr", "k": 4, "alpha": 0.5, "epsilon": 1.0},
            r"give epsilon or alpha, not both \(epsilon=1.0, alpha=0.5\)",
        ),
        ({"kind": "grr", "k": 4}, r"kind 'grr' needs epsilon or alpha"),
        ({"kind": "olh", "k": 4}, r"kind 'olh' needs epsilon"),
        ({"kind": "auto", "k": 1, "epsilon": 1.0}, r"k must be between 2 and 1024 options, got 1"),
    ],
)
def test_categorical_spec_rejects_bad_combinations(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        categorical_mechanism(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: GeneralizedRandomizedResponse(1, 0.5),
            ValueError,
            r"k must be between 2 and 1024 options, got 1",
        ),
        (
            lambda: GeneralizedRandomizedResponse(1025, 0.5),
            ValueError,
            r"k must be between 2 and 1024 options, got 1025",
        ),
        (
            lambda: GeneralizedRandomizedResponse(True, 0.5),
            TypeError,
            r"k must be an integer, got True",
        ),
        (
            lambda: GeneralizedRandomizedResponse(unchecked(4.0), 0.5),
            TypeError,
            r"k must be an integer, got 4.0 \(float\)",
        ),
        (
            lambda: GeneralizedRandomizedResponse(4, 0),
            ValueError,
            r"alpha must be in \(0, 1\], got 0.0 \(alpha = 0",
        ),
        (
            lambda: GeneralizedRandomizedResponse(4, 1.5),
            ValueError,
            r"alpha must be in \(0, 1\], got 1.5",
        ),
        (
            lambda: GeneralizedRandomizedResponse(4, math.nan),
            ValueError,
            r"alpha must be a finite number, got nan",
        ),
        (
            lambda: GeneralizedRandomizedResponse(4, unchecked("0.5")),
            TypeError,
            r"alpha must be a real number, got '0.5' \(str\)",
        ),
        (
            lambda: OptimizedUnaryEncoding(4, 0.5),
            ValueError,
            r"q must be strictly between 0 and 1/2, got 0.5",
        ),
        (
            lambda: OptimizedUnaryEncoding(4, 0.0),
            ValueError,
            r"q must be strictly between 0 and 1/2, got 0.0",
        ),
        (
            lambda: OptimizedUnaryEncoding(4, -math.inf),
            ValueError,
            r"q must be a finite number, got -inf",
        ),
        (
            lambda: OptimizedLocalHashing(4, 1, 0.5),
            ValueError,
            r"g must be between 2 and 4294967295, got 1",
        ),
        (
            lambda: OptimizedLocalHashing(4, 2**32, 0.5),
            ValueError,
            r"between 2 and 4294967295, got 4294967296",
        ),
        (
            lambda: OptimizedLocalHashing(4, unchecked(2.0), 0.5),
            TypeError,
            r"g must be an integer, got 2.0 \(float\)",
        ),
        (
            lambda: OptimizedLocalHashing(4, 3, 1.01),
            ValueError,
            r"alpha must be in \(0, 1\], got 1.01",
        ),
        (
            lambda: GeneralizedRandomizedResponse.from_epsilon(4, 0),
            ValueError,
            r"epsilon must be .* > 0, got 0.0",
        ),
        (
            lambda: OptimizedUnaryEncoding.from_epsilon(4, math.inf),
            ValueError,
            r"finite number > 0, got inf",
        ),
        (
            lambda: OptimizedLocalHashing.from_epsilon(4, math.nan),
            ValueError,
            r"finite number > 0, got nan",
        ),
        (
            lambda: OptimizedUnaryEncoding.from_epsilon(4, 1e-17),
            ValueError,
            r"epsilon=1e-17 is too small",
        ),
        (lambda: GeneralizedRandomizedResponse.from_epsilon(2000, 1.0), ValueError, r"got 2000"),
        (lambda: choose_categorical(4, -1.0), ValueError, r"got -1.0"),
        (
            lambda: GeneralizedRandomizedResponse(4, 0.5).variance(1.5, 10),
            ValueError,
            r"f must be in \[0, 1\], got 1.5",
        ),
        (
            lambda: GeneralizedRandomizedResponse(4, 0.5).variance(0.5, 0),
            ValueError,
            r"n must be >= 1, got 0",
        ),
        (
            lambda: OptimizedUnaryEncoding(4, 0.25).variance(0.5, 10, "everyone"),  # type: ignore[arg-type]
            ValueError,
            r"unknown estimand 'everyone'",
        ),
        (
            lambda: OptimizedLocalHashing(4, 3, 0.5).certifies(unchecked("1")),
            TypeError,
            r"epsilon must be a real number",
        ),
    ],
)
def test_invalid_parameters_are_rejected_naming_the_value(
    make: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        make()  # type: ignore[operator]


def test_specs_are_frozen_and_normalize_their_parameters() -> None:
    spec = OptimizedLocalHashing(10, 3, 1)
    assert isinstance(spec.alpha, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.alpha = 0.5  # type: ignore[misc]
    assert spec == OptimizedLocalHashing(10, 3, 1.0)
    assert GeneralizedRandomizedResponse(4, 0.5) != OptimizedLocalHashing(4, 4, 0.5)  # type: ignore[comparison-overlap]
    assert hash(GeneralizedRandomizedResponse(4, 0.5)) == hash(
        GeneralizedRandomizedResponse(4, 0.5)
    )


@pytest.mark.parametrize(
    "spec",
    [
        GeneralizedRandomizedResponse(4, 0.5),
        OptimizedUnaryEncoding(12, 0.25),
        OptimizedLocalHashing(100, 4, 0.5),
        OptimizedLocalHashing(1024, 9000, 0.999),
    ],
)
def test_explain_and_describe(spec: FrequencyOracle) -> None:
    sentence = spec.explain()
    assert sentence.endswith(f"(epsilon = {spec.epsilon:.2f}).")
    assert sentence.count(".") <= 4  # one sentence (the dots are in the numbers)
    described = spec.describe()
    assert described["mechanism"] == spec.name
    assert described["k"] == spec.k
    assert described["epsilon"] == spec.epsilon
    assert (described["p_star"], described["q_star"]) == (spec.p_star, spec.q_star)
    assert described["private"] is True
    json.dumps(described, allow_nan=False)
    assert "epsilon_approx" not in described


def test_specific_sentences() -> None:
    assert GeneralizedRandomizedResponse(4, 0.5).explain() == (
        "Your report is your true choice with probability 62% and each of the 3 other options "
        "with probability 12%, so any report is at most 5.00 times as likely from one choice "
        "as from another (epsilon = 1.61)."
    )
    assert (
        "and the other option with probability 25%,"
        in GeneralizedRandomizedResponse(2, 0.5).explain()
    )
    assert "flag is set with probability 50% and every other flag with probability 25%" in (
        OptimizedUnaryEncoding(3, 0.25).explain()
    )
    assert "sorts the 100 options into 4 groups" in OptimizedLocalHashing(100, 4, 0.5).explain()


@pytest.mark.parametrize(
    "spec", [GeneralizedRandomizedResponse(4, 1.0), OptimizedLocalHashing(20, 4, 1.0)]
)
def test_alpha_one_is_representable_but_flagged_as_no_privacy(spec: FrequencyOracle) -> None:
    assert spec.epsilon == math.inf
    assert spec.privacy_ratio is None
    assert not spec.is_private
    assert not spec.certifies(1e300)
    assert spec.certifies(math.inf)
    assert spec.explain().startswith("No privacy")
    assert spec.describe()["private"] is False
