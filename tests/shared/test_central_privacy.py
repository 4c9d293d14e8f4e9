"""The central (ε, δ) of shuffled reports, release steps and composition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from deniable.shared.privacy import (
    MAX_SHUFFLED,
    CentralBound,
    ReleaseSteps,
    central_bound,
    compose,
    default_delta,
    shuffled_delta,
    shuffled_epsilon,
)


def _brute_force_delta(local_epsilon: float, n: int, epsilon: float) -> float:
    """max(D(P‖Q), D(Q‖P)) from the clones paper's definitions, summed over every outcome.

    C ~ Bin(n − 1, e^−ε₀), A ~ Bin(C, 1/2), Δ ~ Bern(α) with α = e^ε₀ / (e^ε₀ + 1);
    P = (A + Δ, C − A + 1 − Δ) and Q = (A + 1 − Δ, C − A + Δ).
    """
    alpha = math.exp(local_epsilon) / (math.exp(local_epsilon) + 1)
    p_pmf = np.zeros((n + 1, n + 1))
    q_pmf = np.zeros((n + 1, n + 1))
    for c in range(n):
        weight = stats.binom.pmf(c, n - 1, math.exp(-local_epsilon))
        a = np.arange(c + 1)
        w = weight * stats.binom.pmf(a, c, 0.5)
        p_pmf[a + 1, c - a] += w * alpha
        p_pmf[a, c - a + 1] += w * (1 - alpha)
        q_pmf[a, c - a + 1] += w * alpha
        q_pmf[a + 1, c - a] += w * (1 - alpha)
    scale = math.exp(epsilon)
    forward = np.clip(p_pmf - scale * q_pmf, 0, None).sum()
    backward = np.clip(q_pmf - scale * p_pmf, 0, None).sum()
    return float(max(forward, backward))


@pytest.mark.parametrize("local_epsilon", [0.5, 2.0, 5.0])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_delta_is_the_hockey_stick_divergence_of_the_clones_pair(
    local_epsilon: float, n: int
) -> None:
    for epsilon in (0.0, 0.05, local_epsilon / 3, local_epsilon * 0.9, local_epsilon):
        exact = _brute_force_delta(local_epsilon, n, epsilon)
        assert shuffled_delta(local_epsilon, n, epsilon) == pytest.approx(exact, abs=1e-11)


# δ = 1e-6. "lower" and "upper": the reference code of the paper
# (apple/ml-shuffling-amplification, computeamplification.py, numericalanalysis with
# upperbound False at step 1, and True at step max(1, n // 1000), 30 bisection steps),
# re-implemented from reading it and run once. The exact bound lies between them; the
# lower one at step 1 sums every c exactly, as we do.
REFERENCE = [
    # ε₀, n, lower, upper
    (0.5, 1000, 0.0705, 0.0738),
    (0.5, 10_000, 0.0204, 0.0212),
    (1.0, 1000, 0.1824, 0.1902),
    (1.0, 10_000, 0.0530, 0.0550),
    (2.0, 1000, 0.5454, 0.5627),
    (2.0, 10_000, 0.1550, 0.1598),
    (4.0, 1000, 3.9900, 3.9945),
    (4.0, 10_000, 0.6008, 0.6208),
]


@pytest.mark.parametrize(("local_epsilon", "n", "lower", "upper"), REFERENCE)
def test_matches_the_reference_code(
    local_epsilon: float, n: int, lower: float, upper: float
) -> None:
    epsilon = shuffled_epsilon(local_epsilon, n, 1e-6)
    assert lower - 1e-4 <= epsilon <= upper
    assert epsilon == pytest.approx(lower, abs=2e-4)


@pytest.mark.parametrize(
    ("local_epsilon", "n", "delta"),
    [(0.5, 1000, 1e-6), (1.0, 10_000, 1e-6), (2.0, 10_000, 1e-8), (3.0, 100_000, 1e-6)],
)
def test_below_the_papers_closed_form(local_epsilon: float, n: int, delta: float) -> None:
    """The paper's closed form (its Theorem 3.1) bounds the numerical one from above.

    For ε₀ <= log(n / (16 log(2/δ))): ε <= log(1 + (e^ε₀ − 1) / (e^ε₀ + 1)
    · (8 √(e^ε₀ log(4/δ)) / √n + 8 e^ε₀ / n)).
    """
    assert local_epsilon <= math.log(n / (16 * math.log(2 / delta)))
    e0 = math.exp(local_epsilon)
    closed = math.log(
        1 + (e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta) / n) + 8 * e0 / n)
    )
    epsilon = shuffled_epsilon(local_epsilon, n, delta)
    assert epsilon < closed
    assert (
        shuffled_delta(local_epsilon, n, epsilon)
        <= delta
        < shuffled_delta(local_epsilon, n, epsilon * 0.999)
    )


def test_more_reports_than_computed_are_credited_as_the_most_computed() -> None:
    assert shuffled_epsilon(1.0, 10**9, 1e-6) == shuffled_epsilon(1.0, MAX_SHUFFLED, 1e-6)
    assert shuffled_epsilon(1.0, MAX_SHUFFLED, 1e-6) < shuffled_epsilon(1.0, 10**5, 1e-6)


def test_one_report_is_not_amplified() -> None:
    # Alone, the report's likelihood ratio is e^ε₀ exactly: only δ buys a hair below ε₀.
    assert shuffled_epsilon(1.5, 1, 1e-12) == pytest.approx(1.5, abs=1e-9)
    assert 1.5 - 1e-5 < shuffled_epsilon(1.5, 1, 1e-6) < 1.5


@settings(max_examples=15, deadline=None)
@given(
    local_epsilon=st.floats(0.1, 6.0),
    n=st.integers(2, 50_000),
    delta=st.sampled_from([1e-4, 1e-6, 1e-9]),
)
def test_monotone_and_never_above_the_local_epsilon(
    local_epsilon: float, n: int, delta: float
) -> None:
    epsilon = shuffled_epsilon(local_epsilon, n, delta)
    assert 0 < epsilon <= local_epsilon
    assert shuffled_epsilon(local_epsilon, 2 * n, delta) <= epsilon  # more reports
    assert shuffled_epsilon(local_epsilon * 1.2, n, delta) >= epsilon  # a larger ε₀
    assert shuffled_epsilon(local_epsilon, n, delta * 10) <= epsilon  # a larger δ


def test_decreases_strictly_where_it_amplifies() -> None:
    figures = [shuffled_epsilon(1.0, n, 1e-6) for n in (100, 1000, 10_000, 100_000)]
    assert figures == sorted(figures, reverse=True)
    assert len(set(figures)) == len(figures)
    assert figures[-1] < 0.02 < figures[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, 10, 1e-6), "local_epsilon: must be a positive number, got 0.0"),
        ((math.nan, 10, 1e-6), "local_epsilon: must be a positive number, got nan"),
        ((1.0, 0, 1e-6), "n: must be a whole number >= 1, got 0"),
        ((1.0, 10, 0.0), "delta: must be in (0, 1), got 0.0"),
        ((1.0, 10, 1.0), "delta: must be in (0, 1), got 1.0"),
        ((1.0, 10, math.nan), "delta: must be in (0, 1), got nan"),
    ],
)
def test_refuses_bad_arguments(args: tuple[float, int, float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        shuffled_epsilon(*args)


def test_release_steps() -> None:
    assert ReleaseSteps.of(min_reports=50, release_step=0) is None
    gated = ReleaseSteps.of(min_reports=50, release_step=1000)
    assert gated == ReleaseSteps(first=50, step=1000)
    assert gated.smallest == 50
    assert [gated.next_at(r) for r in (0, 50, 1_234)] == [50, 1050, 2234]
    assert [gated.due(0, s) for s in (49, 50)] == [False, True]
    assert [gated.due(50, s) for s in (1049, 1050, 5000)] == [False, True, True]
    ungated = ReleaseSteps.of(min_reports=0, release_step=1000)
    assert ungated == ReleaseSteps(first=1000, step=1000)
    assert ungated.smallest == 1000
    late = ReleaseSteps.of(min_reports=5000, release_step=1000)
    assert late is not None
    assert late.smallest == 1000
    with pytest.raises(ValueError, match=r"^step: must be 1..1,000,000,000, got 0$"):
        ReleaseSteps(first=1, step=0)


def test_central_bound_is_for_the_smallest_step() -> None:
    steps = ReleaseSteps(first=500, step=2000)
    bound = central_bound(1.0, steps, 1e-6)
    assert bound == CentralBound(shuffled_epsilon(1.0, 500, 1e-6), 1e-6, 500, 1.0)


def test_basic_composition_adds_up() -> None:
    a = CentralBound(0.2, 1e-7, 1000, 1.0)
    b = CentralBound(0.5, 2e-7, 800, 2.0)
    total = compose([a, b])
    assert (total.epsilon, total.step, total.local_epsilon, total.questions) == (0.7, 800, 3.0, 2)
    assert total.delta == pytest.approx(3e-7)
    with pytest.raises(ValueError, match="at least one question"):
        compose([])


def test_default_delta_is_well_below_one_over_n() -> None:
    assert default_delta(0) == default_delta(1) == 1e-6
    assert default_delta(10_000) == 1e-6
    assert default_delta(1_000_000) == pytest.approx(1e-8)
    assert default_delta(2_000_000) == pytest.approx(1e-9)  # a power of 10, below 1/(100 n)
    for stored in (1, 10**4, 10**5, 10**7):
        assert default_delta(stored) <= 0.01 / stored or default_delta(stored) == 1e-6
