"""Categorical and yes/no intervals contain the estimate shown; simultaneous intervals cover all."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats

from deniable.shared.mechanisms import (
    FrequencyOracle,
    GeneralizedRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    Tally,
    estimate_frequencies,
    estimate_proportion,
    frequency_arrays,
)
from deniable.shared.mechanisms._frequency_estimate import method_interval, share_intervals
from deniable.shared.stats import METHODS

KINDS: tuple[type[FrequencyOracle], ...] = (
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
    OptimizedLocalHashing,
)


@st.composite
def categorical_counts(draw: st.DrawFn) -> tuple[FrequencyOracle, list[int], int]:
    """A mechanism at some (k, ε) and support counts it can produce from n reports."""
    kind: Any = draw(st.sampled_from(KINDS))
    k = draw(st.integers(2, 12))
    spec = kind.from_epsilon(k, draw(st.sampled_from([0.1, 0.5, 1.0, 2.0, 4.0, 8.0])))
    n = draw(st.integers(1, 400))
    if spec.one_option_per_report:  # GRR: reports per option, summing to n
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
        counts = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    else:
        counts = draw(st.lists(st.integers(0, n), min_size=k, max_size=k))
    return spec, counts, n


@settings(max_examples=300, deadline=None)
@given(
    categorical_counts(),
    st.sampled_from(sorted(METHODS)),
    st.booleans(),
    st.sampled_from([0.5, 0.9, 0.95, 0.999]),
)
def test_every_categorical_interval_contains_its_estimate(
    drawn: tuple[FrequencyOracle, list[int], int],
    method: str,
    simultaneous: bool,
    confidence: float,
) -> None:
    spec, counts, n = drawn
    est = spec.estimate(Tally(n, tuple(counts)), confidence, method, simultaneous=simultaneous)
    assert isinstance(est, type(estimate_frequencies(counts, n, spec)))
    for low, shown, high in zip(est.ci_low, est.estimate, est.ci_high, strict=True):
        assert 0.0 <= low <= shown <= high <= 1.0
    assert math.isclose(sum(est.estimate), 1.0, abs_tol=1e-9)
    assert est.simultaneous is simultaneous
    kind = "simultaneous over" if simultaneous else "per option (not simultaneous"
    assert est.coverage.startswith(kind)
    assert f"{spec.k} options" in est.coverage


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
    st.sampled_from([0.05, 0.3, 0.5, 0.9, 1.0]),
    st.sampled_from(sorted(METHODS)),
)
def test_every_yes_no_interval_contains_its_estimate(
    drawn: tuple[int, int], alpha: float, method: str
) -> None:
    n, ones = drawn
    est = estimate_proportion(ones, n, alpha, 0.95, method)
    assert 0.0 <= est.ci_low <= est.estimate <= est.ci_high <= 1.0
    assert est.coverage.startswith("the yes-share")


def test_the_projected_estimate_used_to_fall_outside_its_interval() -> None:
    # OUE at ε = 1, k = 3, n = 1000: the raw vector (0.182, 1.078, −0.008) sums to 1.25,
    # so the projection lowers option 0 to 0.052, below the lower end 0.058 of the interval
    # for its support rate. The interval shown now reaches down to the estimate shown.
    spec = OptimizedUnaryEncoding.from_epsilon(3, 1.0)
    counts = np.array([311, 518, 267])
    own_low, _ = share_intervals(counts, 1000, spec, 0.95, method_interval("clopper-pearson"))
    est = estimate_frequencies(counts, 1000, spec)
    assert est.estimate[0] == pytest.approx(0.0521, abs=1e-4)
    assert own_low[0] == pytest.approx(0.0583, abs=1e-4)
    assert est.ci_low[0] == est.estimate[0]
    assert est.ci_low[1:] == tuple(own_low[1:].tolist())  # the others were already inside


# --- simultaneous coverage -----------------------------------------------------------------

SHARES = np.array([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.02, 0.0])  # k = 10
N, REPEATS = 400, 3000
POINTS = 3  # coverage checks below: a false alarm at most 1e-4 over all of them


def sampled_counts(spec: FrequencyOracle, rng: np.random.Generator) -> NDArray[np.int64]:
    """REPEATS surveys' support counts, drawn from their exact distribution.

    True options are Multinomial(N, SHARES). GRR: each report is the truth w.p. p*, else
    uniform among the others, so reports per option are Multinomial(N, λ) with λ_v =
    q* + f_v(p* − q*). OUE: every bit is independent given the truth, so C_v =
    Binomial(N_v, p*) + Binomial(N − N_v, q*).
    """
    if spec.one_option_per_report:
        lam = spec.q_star + SHARES * (spec.p_star - spec.q_star)
        return rng.multinomial(N, lam / lam.sum(), size=REPEATS)
    truth = rng.multinomial(N, SHARES, size=REPEATS)
    return rng.binomial(truth, spec.p_star) + rng.binomial(N - truth, spec.q_star)


def all_covered(spec: FrequencyOracle, counts: NDArray[np.int64], simultaneous: bool) -> int:
    """Repeats in which every option's interval contains its true share."""
    arrays = frequency_arrays(
        counts, N, spec, 0.95, "clopper-pearson", "population", simultaneous=simultaneous
    )
    low, high = arrays["ci_low"], arrays["ci_high"]
    inside = (low <= SHARES) & (high >= SHARES)
    return int(np.count_nonzero(inside.all(axis=1)))


@pytest.mark.parametrize(
    "spec",
    [
        GeneralizedRandomizedResponse.from_epsilon(10, 2.0),
        OptimizedUnaryEncoding.from_epsilon(10, 1.0),
    ],
    ids=lambda spec: spec.name,
)
def test_simultaneous_intervals_cover_all_ten_options_at_once(spec: FrequencyOracle) -> None:
    counts = sampled_counts(spec, np.random.default_rng(18))
    misses = REPEATS - all_covered(spec, counts, simultaneous=True)
    # Fails only if the true miss rate exceeds 5% with a chance of 1e-4 (over all points).
    assert misses <= stats.binom.isf(1e-4 / POINTS, REPEATS, 0.05), misses / REPEATS


def test_per_option_intervals_cover_all_ten_at_once_far_less_often() -> None:
    # What makes the label matter: each per-option interval covers >= 95%, but all ten at
    # once, far less (about 0.65 here; Clopper-Pearson is conservative per option).
    spec = OptimizedUnaryEncoding.from_epsilon(10, 1.0)
    counts = sampled_counts(spec, np.random.default_rng(19))
    misses = REPEATS - all_covered(spec, counts, simultaneous=False)
    # Fails if the joint miss rate were 10% or less, except with a chance of 1e-4.
    assert misses > stats.binom.isf(1e-4 / POINTS, REPEATS, 0.10), misses / REPEATS


def test_simultaneous_intervals_are_tightened_to_the_simplex() -> None:
    # OUE at ε = 2, k = 2: the two support counts are separate binomials, so the
    # Bonferroni interval of each share is looser than 1 minus the other's.
    spec = OptimizedUnaryEncoding.from_epsilon(2, 2.0)
    est = estimate_frequencies([386, 233], 1000, spec, simultaneous=True)
    plain = estimate_frequencies([386, 233], 1000, spec, confidence=1 - 0.05 / 2)
    assert plain.ci_low[0] < 1.0 - plain.ci_high[1] - 0.008  # Bonferroni alone: looser
    assert est.ci_low[0] == pytest.approx(1.0 - plain.ci_high[1], abs=1e-9)
    assert est.ci_high[0] == pytest.approx(1.0 - plain.ci_low[1], abs=1e-9)
    assert est.ci_low[1:] == plain.ci_low[1:]
    assert est.ci_high[1:] == plain.ci_high[1:]
    assert est.coverage.startswith("simultaneous over 2 options: Bonferroni")
