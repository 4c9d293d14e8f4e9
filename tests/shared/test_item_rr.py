"""Per-item randomized response: exact ε pinned, exact flips, tallies, estimates, coverage."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from deniable.shared import tightest_epsilon
from deniable.shared.mechanisms import (
    ItemRandomizedResponse,
    ReportValueError,
    Tally,
    mechanism_of,
)
from deniable.shared.mechanisms._item_estimate import pair_index
from deniable.shared.wire.v1 import aggregator_pb2 as pb


def unchecked(value: object) -> Any:
    """Pass a wrongly typed value past the type checker, to test run-time validation."""
    return value


def worst_ratio(k: int, q: Fraction) -> Fraction:
    """The max over reports y and true sets x, x' of P(y | x)/P(y | x'), by enumeration."""

    def likelihood(y: tuple[int, ...], x: tuple[int, ...]) -> Fraction:
        result = Fraction(1)
        for yi, xi in zip(y, x, strict=True):
            result *= (1 - q) if yi == xi else q
        return result

    sets = list(itertools.product((0, 1), repeat=k))
    return max(likelihood(y, x) / likelihood(y, z) for y in sets for x in sets for z in sets)


@pytest.mark.parametrize(("k", "q"), [(2, 0.25), (3, 0.125), (4, 0.375), (2, 0.4375)])
def test_the_exact_ratio_is_the_enumerated_worst_case_pinned_from_both_sides(
    k: int, q: float
) -> None:
    mechanism = ItemRandomizedResponse(k=k, q=q)
    exact = worst_ratio(k, Fraction(q))
    assert mechanism.privacy_ratio == exact == ((1 - Fraction(q)) / Fraction(q)) ** k
    assert mechanism.certifies(mechanism.epsilon)
    assert not mechanism.certifies(math.nextafter(mechanism.epsilon, 0.0))
    assert mechanism.epsilon == tightest_epsilon(exact)
    # the bits' ε/k compose to ε exactly (basic composition is tight here)
    assert mechanism.item_ratio**k == exact


@given(
    k=st.integers(min_value=2, max_value=64),
    epsilon=st.floats(min_value=1e-3, max_value=20.0),
)
def test_from_epsilon_splits_epsilon_evenly_and_is_the_most_useful_q(
    k: int, epsilon: float
) -> None:
    mechanism = ItemRandomizedResponse.from_epsilon(k, epsilon)
    assert mechanism.certifies(epsilon)
    assert mechanism.epsilon <= epsilon
    # one ulp less flipping is no longer certified: the q is the least noisy allowed
    less = math.nextafter(mechanism.q, 0.0)
    assert not ItemRandomizedResponse(k=k, q=less).certifies(epsilon)
    assert math.isclose(mechanism.epsilon_per_item * k, epsilon, rel_tol=1e-9)
    assert math.isclose(mechanism.q, 1 / (math.exp(epsilon / k) + 1), rel_tol=1e-9)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1, 0.25), "k must be between 2 and 64 items, got 1"),
        ((65, 0.25), "k must be between 2 and 64 items, got 65"),
        ((3, 0.0), "q must be strictly between 0 and 1/2, got 0.0"),
        ((3, 0.5), "q must be strictly between 0 and 1/2, got 0.5"),
        ((3, math.nan), "q must be"),
    ],
)
def test_bad_parameters_are_refused_naming_them(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ItemRandomizedResponse(*args)


def test_too_small_an_epsilon_to_represent_is_refused() -> None:
    with pytest.raises(ValueError, match="too small to represent"):
        ItemRandomizedResponse.from_epsilon(64, 1e-300)


def test_every_bit_is_flipped_with_probability_q_independently() -> None:
    mechanism = ItemRandomizedResponse(k=3, q=0.25)
    n = 40_000
    truths = np.full(n, 0b101)
    reports = mechanism.perturb_many(truths, np.random.default_rng(7))
    assert reports.shape == (n, 3)
    flipped = reports != np.array([True, False, True])
    # each bit's flips ~ Binomial(n, 1/4): within 4 standard deviations
    sd = math.sqrt(n * 0.25 * 0.75)
    assert np.all(np.abs(flipped.sum(axis=0) - n * 0.25) < 4 * sd)
    # independence: both of bits 0 and 1 flipped ~ Binomial(n, 1/16)
    both = int((flipped[:, 0] & flipped[:, 1]).sum())
    assert abs(both - n / 16) < 4 * math.sqrt(n * (1 / 16) * (15 / 16))


def test_the_os_csprng_is_used_without_a_generator() -> None:
    mechanism = ItemRandomizedResponse(k=64, q=0.25)
    one, two = mechanism.perturb_many([2**64 - 1, 0]), mechanism.perturb_many([2**64 - 1, 0])
    assert one.shape == (2, 64)
    assert not np.array_equal(one, two)


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ([8], ValueError, r"item-set masks in \[0, 2\^3\), got 8 at index \(0,\)"),
        ([-1], ValueError, r"got -1 at index \(0,\)"),
        ([0.5], TypeError, "must be item-set masks"),
    ],
)
def test_true_answers_outside_the_sets_are_refused(
    values: list[Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ItemRandomizedResponse(k=3, q=0.25).perturb_many(values)


def test_reports_travel_as_packed_bits_and_bad_payloads_name_the_row() -> None:
    mechanism = ItemRandomizedResponse(k=9, q=0.25)
    reports = mechanism.perturb_many([0b100000101, 0], np.random.default_rng(1))
    encoded = mechanism.encode(reports)
    assert [len(value["bits"]) for value in encoded] == [2, 2]
    assert np.array_equal(mechanism.decode([value["bits"] for value in encoded]), reports)
    with pytest.raises(ReportValueError, match="row 1: bits: must be 2 bytes for k=9, got 1"):
        mechanism.decode([b"\x00\x00", b"\x00"])
    with pytest.raises(ReportValueError, match="row 0: bits: has padding bits set"):
        mechanism.decode([b"\x00\x02"])


def test_the_tally_is_item_counts_then_pair_counts_and_merges_by_addition() -> None:
    mechanism = ItemRandomizedResponse(k=4, q=0.25)
    rng = np.random.default_rng(3)
    reports = rng.random((50, 4)) < 0.5
    sums = mechanism.tally(reports)
    assert len(sums) == 4 + 6
    assert sums[:4] == reports.sum(axis=0).tolist()
    for i, j in itertools.combinations(range(4), 2):
        assert sums[4 + pair_index(4, i, j)] == int((reports[:, i] & reports[:, j]).sum())
    halves = Tally(20, tuple(mechanism.tally(reports[:20]))).merge(
        Tally(30, tuple(mechanism.tally(reports[20:])))
    )
    assert halves == Tally(50, tuple(sums))
    joined = mechanism.join([reports[:20], reports[20:]])
    assert joined is not None
    assert mechanism.tally(joined) == sums


def test_the_wire_form_round_trips_through_the_registry() -> None:
    mechanism = ItemRandomizedResponse.from_epsilon(3, 1.5)
    question = pb.Question(
        multi_select=pb.MultiSelectQuestion(items=["a", "b", "c"]),
        mechanism=mechanism.to_message(),
    )
    assert question.mechanism.WhichOneof("kind") == "item_rr"
    assert mechanism_of(question) == mechanism


def population(n: int, rng: np.random.Generator) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Three correlated items: a ~ 0.4; b is a with prob. 0.7 else 0.2; c ~ 0.1 alone."""
    a = rng.random(n) < 0.4
    b = np.where(rng.random(n) < 0.7, a, rng.random(n) < 0.2)
    c = rng.random(n) < 0.1
    return np.stack([a, b, c], axis=1)


TRUE_SHARES = (0.4, 0.7 * 0.4 + 0.3 * 0.2, 0.1)
TRUE_PAIRS = {(0, 1): 0.4 * (0.7 + 0.3 * 0.2), (0, 2): 0.04, (1, 2): 0.1 * TRUE_SHARES[1]}


def masks_of(sets: np.ndarray[Any, np.dtype[np.bool_]]) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.asarray((sets * (1 << np.arange(sets.shape[1]))).sum(axis=1), dtype=np.int64)


def test_item_pair_and_conditional_intervals_cover_at_the_stated_level() -> None:
    """Seeded simulation: coverage no lower than 0.95 by more than 3 binomial SEs."""
    mechanism = ItemRandomizedResponse.from_epsilon(3, 3.0)
    rng = np.random.default_rng(2026)
    runs, n = 600, 3000
    items = np.zeros(3)
    pairs = dict.fromkeys(TRUE_PAIRS, 0)
    conditional = 0
    raw_pairs = dict.fromkeys(TRUE_PAIRS, 0.0)
    r_true = TRUE_PAIRS[(0, 1)] / TRUE_SHARES[0]
    for _ in range(runs):
        reports = mechanism.perturb_many(masks_of(population(n, rng)), rng)
        tally = Tally(n, tuple(mechanism.tally(reports)))
        estimate = mechanism.estimate_items(tally)
        low, high = np.array(estimate.ci_low), np.array(estimate.ci_high)
        items += (low <= TRUE_SHARES) & (np.array(TRUE_SHARES) <= high)
        for (i, j), share in TRUE_PAIRS.items():
            pairs[(i, j)] += estimate.pair_ci_low[i][j] <= share <= estimate.pair_ci_high[i][j]
            raw_pairs[(i, j)] += estimate.pair_estimate_raw[i][j]
        given_a = mechanism.conditional(tally, 0, 1)
        conditional += given_a.ci_low <= r_true <= given_a.ci_high
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / runs)
    assert np.all(items / runs >= floor), items / runs
    assert all(count / runs >= floor for count in pairs.values()), pairs
    assert conditional / runs >= floor, conditional
    # unbiased: the mean of the raw pair estimates is within 4 standard errors of the truth
    for (i, j), total in raw_pairs.items():
        f = (TRUE_SHARES[i], TRUE_SHARES[j])
        v = mechanism.bit_variance
        share = TRUE_PAIRS[(i, j)]
        sd = math.sqrt((v * v + v * sum(f) + share * (1 - share)) / n / runs)
        assert abs(total / runs - share) < 4 * sd


def test_the_stated_pair_variance_is_the_empirical_one() -> None:
    """Var(f̂_ij) = [v² + v(f_i+f_j) + f_ij(1−f_ij)]/n: chi-square bounds on the sample variance."""
    mechanism = ItemRandomizedResponse.from_epsilon(3, 2.0)
    rng = np.random.default_rng(11)
    runs, n = 800, 1000
    values = []
    for _ in range(runs):
        reports = mechanism.perturb_many(masks_of(population(n, rng)), rng)
        estimate = mechanism.estimate_items(Tally(n, tuple(mechanism.tally(reports))))
        values.append(estimate.pair_estimate_raw[0][1])
    v, f = mechanism.bit_variance, TRUE_SHARES
    share = TRUE_PAIRS[(0, 1)]
    stated = (v * v + v * (f[0] + f[1]) + share * (1 - share)) / n
    ratio = float(np.var(values, ddof=1)) / stated
    low, high = stats.chi2.ppf([0.0005, 0.9995], runs - 1) / (runs - 1)
    assert low < ratio < high


def test_a_conditional_share_needs_two_different_items_and_a_positive_given_share() -> None:
    mechanism = ItemRandomizedResponse(k=3, q=0.25)
    tally = Tally(100, (25, 50, 60, 10, 10, 30))  # item 0 at the noise floor: f̂_0 = 0
    with pytest.raises(ValueError, match="given and item must be two different items, got 1"):
        mechanism.conditional(tally, 1, 1)
    with pytest.raises(ValueError, match=r"item must be an item index in \[0, 3\), got 3"):
        mechanism.conditional(tally, 0, 3)
    undefined = mechanism.conditional(tally, 0, 1)
    assert not undefined.defined
    assert (undefined.ci_low, undefined.ci_high) == (0.0, 1.0)
    assert mechanism.conditional(tally, 1, 2).defined


def test_a_tally_that_no_reports_can_give_is_refused() -> None:
    mechanism = ItemRandomizedResponse(k=2, q=0.25)
    with pytest.raises(ValueError, match="pair count above one of its items' counts"):
        mechanism.estimate(Tally(10, (3, 4, 5)))
    with pytest.raises(ValueError, match=r"tally sum 1 is 11, outside \[0, n=10\]"):
        mechanism.estimate(Tally(10, (3, 11, 0)))


def test_the_variance_used_for_planning_is_the_worst_item_share() -> None:
    mechanism = ItemRandomizedResponse(k=2, q=0.25)
    v = 0.25 * 0.75 / 0.25
    assert mechanism.estimate_variance(100) == pytest.approx((v + 0.25) / 100)
    assert mechanism.estimate_variance(100, 0.1) == pytest.approx((v + 0.09) / 100)
    assert mechanism.estimate_variance(100) > mechanism.estimate_variance(100, 0.9)


@pytest.mark.parametrize("values", [[2**64, 0], [2**64 - 1, -1], [-(2**70)]])
def test_python_integers_beyond_64_bits_are_refused_not_rounded(values: list[int]) -> None:
    with pytest.raises(ValueError, match=r"item-set masks in \[0, 2\^64\)"):
        ItemRandomizedResponse(k=64, q=0.25).perturb_many(values)


def test_simultaneous_and_anytime_item_intervals_are_wider_and_say_so() -> None:
    mechanism = ItemRandomizedResponse(k=3, q=0.25)
    tally = Tally(400, (150, 200, 120, 90, 60, 70))
    fixed = mechanism.estimate_items(tally)
    together = mechanism.estimate_items(tally, simultaneous=True)
    anytime = mechanism.estimate_items(tally, anytime=True)
    for wider in (together, anytime):
        assert all(
            w_low <= low and high <= w_high
            for low, high, w_low, w_high in zip(
                fixed.ci_low, fixed.ci_high, wider.ci_low, wider.ci_high, strict=True
            )
        )
        assert wider.ci_high[0] - wider.ci_low[0] > fixed.ci_high[0] - fixed.ci_low[0]
        assert wider.pair_ci_low == fixed.pair_ci_low  # pairs: fixed n, per pair
    assert together.simultaneous
    assert "simultaneous over 3 items (Bonferroni" in together.coverage
    assert anytime.anytime
    assert "anytime-valid confidence sequences" in anytime.coverage
    assert "pairs: per pair, fixed n" in fixed.coverage


@pytest.mark.parametrize("q", [0.01, 0.2, 0.3, 0.45])
def test_the_worst_pair_variance_is_the_largest_over_possible_populations(q: float) -> None:
    mechanism = ItemRandomizedResponse(k=3, q=q)
    v = mechanism.bit_variance
    grid = np.linspace(0.0, 1.0, 101)
    fi, fj, fij = np.meshgrid(grid, grid, grid, indexing="ij")
    possible = (fij <= np.minimum(fi, fj) + 1e-12) & (fi + fj - fij <= 1 + 1e-12)
    largest = float(np.where(possible, v * v + v * (fi + fj) + fij * (1 - fij), 0.0).max())
    worst = mechanism.pair_variance(1)
    assert largest <= worst * (1 + 1e-12)
    assert worst - largest <= 1e-4 * worst  # the grid's step away from the maximum
    assert mechanism.pair_variance(10) == pytest.approx(worst / 10)
