"""``auto`` picks the least worst-case variance, checked against the papers' formulas."""

from __future__ import annotations

import math

import pytest

from deniable.shared.questions import (
    CATEGORICAL,
    NUMERIC,
    choose_categorical,
    choose_numeric,
    least_variance,
)

EPSILONS = (0.05, 0.3, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 14.0, 20.0)
OPTIONS = (2, 3, 4, 5, 7, 10, 16, 33, 100, 1024)
RANGES = ((0.0, 1.0), (-5.0, 5.0), (0.0, 1e6))
TIE = 1e-6  # relative: the mechanisms' exact float parameters move variances by ~1e-15


def worst_share_variance(p: float, q: float) -> float:
    """Max over f of Var(f̂) from one participant, population estimand (Wang et al. 2017).

    Pure protocol: Var = q*(1−q*)/(p*−q*)² + f(1−p*−q*)/(p*−q*), plus f(1−f) for drawing
    the participant; concave in f, so the maximum is at f = clip((1 + b)/2, 0, 1).
    """
    a, b = q * (1 - q) / (p - q) ** 2, (1 - p - q) / (p - q)
    f = min(max((1 + b) / 2, 0.0), 1.0)
    return a + b * f + f * (1 - f)


def categorical_formulas(k: int, eps: float) -> dict[str, float]:
    """GRR, OUE and OLH (Wang et al., USENIX Security 2017); OLH with g = round(e^ε) + 1."""
    e = math.exp(eps)
    g = max(2, math.floor(e + 0.5) + 1)
    return {
        "grr": worst_share_variance(e / (e + k - 1), 1 / (e + k - 1)),
        "oue": worst_share_variance(0.5, 1 / (e + 1)),
        "olh": worst_share_variance(e / (e + g - 1), 1 / g),
    }


def numeric_formulas(eps: float) -> dict[str, float]:
    """Max over t in [−1, 1] of E[y² | t] = Var(y | t) + t²: the worst population's Var(y).

    Wang et al., ICDE 2019: Duchi's Var = ((e^ε+1)/(e^ε−1))² − t²; Piecewise's
    t²/(e^{ε/2}−1) + (e^{ε/2}+3)/(3(e^{ε/2}−1)²); Hybrid mixes them with weight
    α = 1 − e^{−ε/2} on Piecewise for ε > ε* ≈ 0.61, else α = 0. Laplace noise of scale
    2/ε (sensitivity 2) adds 8/ε².
    """
    half = math.exp(eps / 2)
    duchi = ((math.exp(eps) + 1) / (math.exp(eps) - 1)) ** 2
    piecewise = 1 + 1 / (half - 1) + (half + 3) / (3 * (half - 1) ** 2)
    alpha = 1 - 1 / half if eps > 0.61 else 0.0
    return {
        "duchi": duchi,
        "piecewise": piecewise,
        "hybrid": alpha * piecewise + (1 - alpha) * duchi,  # both worst at t = ±1
        "laplace": 8 / eps**2 + 1,
    }


@pytest.mark.parametrize("eps", EPSILONS)
def test_categorical_auto_has_the_least_variance_by_the_formulas(eps: float) -> None:
    for k in OPTIONS:
        formulas = categorical_formulas(k, eps)
        chosen = choose_categorical(k, eps)
        assert chosen.name == CATEGORICAL.auto(k, epsilon=eps).name
        assert formulas[chosen.name] <= min(formulas.values()) * (1 + TIE), (k, chosen.name)
        # The implementation's variance is the formula's (exact parameters aside).
        assert chosen.estimate_variance(1) == pytest.approx(formulas[chosen.name], rel=1e-9)


@pytest.mark.parametrize("eps", EPSILONS)
def test_numeric_auto_has_the_least_variance_by_the_formulas(eps: float) -> None:
    formulas = numeric_formulas(eps)
    for lo, hi in RANGES:
        chosen = choose_numeric(lo, hi, eps)
        assert chosen.name == NUMERIC.auto(lo, hi, epsilon=eps).name
        assert formulas[chosen.name] <= min(formulas.values()) * (1 + TIE), chosen.name
        scale = ((hi - lo) / 2) ** 2
        assert chosen.estimate_variance(1) == pytest.approx(formulas[chosen.name] * scale, rel=1e-9)


def test_the_rule_changed_where_the_old_one_was_wrong() -> None:
    # Numeric: Hybrid's E[y² | t] grows to its maximum at t = ±1, Duchi's is B² for every t:
    # for the worst population Duchi needs 13% fewer participants at ε = 1.
    assert choose_numeric(0.0, 40.0, 1.0).name == "duchi"
    formulas = numeric_formulas(1.0)
    assert formulas["hybrid"] / formulas["duchi"] == pytest.approx(1.1295, abs=1e-4)
    # Categorical: at ε = 1, OLH's g = 4 is off the optimal e + 1 = 3.72; OUE is 4.9% ahead.
    assert choose_categorical(20, 1.0).name == "oue"
    assert categorical_formulas(20, 1.0)["olh"] / categorical_formulas(20, 1.0)["oue"] == (
        pytest.approx(1.0486, abs=1e-4)
    )


def test_ties_go_to_the_stated_preference() -> None:
    # At ε <= 0.61 Hybrid is Duchi's mechanism (β = 0): the same variance, Duchi by name.
    hybrid, duchi = (NUMERIC.build(name, 0.0, 1.0, epsilon=0.3) for name in ("hybrid", "duchi"))
    assert hybrid.estimate_variance(1) == duchi.estimate_variance(1)
    assert least_variance([hybrid, duchi]) is hybrid
    assert choose_numeric(0.0, 1.0, 0.3).name == "duchi"
    # With g = 2 (e^ε < 1.5) OLH and OUE have the same variance: OLH, the smaller report.
    olh, oue = (CATEGORICAL.build(name, 50, epsilon=0.3) for name in ("olh", "oue"))
    assert olh.estimate_variance(1) == pytest.approx(oue.estimate_variance(1), rel=1e-12)
    assert choose_categorical(50, 0.3).name == "olh"
    with pytest.raises(ValueError, match="no mechanism to choose from"):
        least_variance([])
