"""Anytime-valid estimates of every question type: seeded trajectories, looked at often."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from deniable.shared.mechanisms import (
    DuchiMechanism,
    FrequencyEstimate,
    GeneralizedRandomizedResponse,
    LaplaceMechanism,
    MeanTally,
    NumericMechanism,
    PiecewiseMechanism,
    RandomizedResponse,
    estimate_mean,
    proportion_arrays,
)
from deniable.shared.mechanisms._anytime import frequency_interval, proportion_interval
from deniable.shared.mechanisms._base import Tally
from deniable.shared.stats import binomial_interval
from deniable.shared.wire.v1 import aggregator_pb2 as pb

STEP, LOOKS = 100, 100  # looked at after every 100 reports, up to n = 10^4
LOOKED = STEP * np.arange(1, LOOKS + 1)
POINTS = 5  # trajectory checks in this file: each fails with probability <= 1e-4 / POINTS
NOMINAL = 0.05

Draw = Callable[[tuple[int, ...]], NDArray[np.float64]]


def most_misses(runs: int) -> int:
    """Largest count of ever-missing trajectories a valid 95% sequence can plausibly give."""
    return int(stats.binom.isf(1e-4 / POINTS, runs, NOMINAL))


def fewest_misses(runs: int, rate: float = 0.15) -> int:
    """Smallest count plausible if the fixed-n interval ever misses in >= ``rate`` of runs."""
    return int(stats.binom.ppf(1e-4 / POINTS, runs, rate))


def on_unique(
    interval: Callable[[NDArray[np.int64], NDArray[np.int64]], tuple[NDArray[np.float64], ...]],
    counts: NDArray[np.int64],
    n: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``interval(counts, n)`` for every entry, computed once per distinct (count, n) pair.

    An interval is a function of (count, n) alone, and trajectories share most pairs.
    """
    c, m = np.broadcast_arrays(counts, n)
    pairs, inverse = np.unique(
        np.stack([c.ravel(), m.ravel()], axis=1), axis=0, return_inverse=True
    )
    low, high = interval(pairs[:, 0], pairs[:, 1])
    return low.ravel()[inverse].reshape(c.shape), high.ravel()[inverse].reshape(c.shape)


def ever_missed(low: NDArray[np.float64], high: NDArray[np.float64], truth: float) -> int:
    """Trajectories (rows) whose interval missed ``truth`` at some look (column)."""
    return int(np.count_nonzero(np.any((low > truth) | (high < truth), axis=-1)))


def test_yes_no_share_is_covered_at_every_look() -> None:
    spec, share, runs = RandomizedResponse(alpha=0.5), 0.3, 1000
    rng = np.random.default_rng(1)
    ones = np.cumsum(rng.binomial(STEP, spec.report_probability(share), (runs, LOOKS)), axis=1)
    low, high = on_unique(lambda y, n: proportion_interval(spec, y, n, 0.95), ones, LOOKED)
    assert ever_missed(low, high, share) <= most_misses(runs)
    fixed = [proportion_arrays(ones[:, j], int(n), spec, 0.95, "clopper-pearson", "population")
             for j, n in enumerate(LOOKED)]  # fmt: skip
    fixed_low = np.stack([f["ci_low"] for f in fixed], axis=1)
    fixed_high = np.stack([f["ci_high"] for f in fixed], axis=1)
    assert ever_missed(fixed_low, fixed_high, share) >= fewest_misses(runs)
    # the estimate the daemon returns is this interval at the final look
    estimate = spec.estimate(Tally(10_000, (int(ones[0, -1]),)), 0.95, anytime=True)
    assert (estimate.ci_low, estimate.ci_high) == (low[0, -1], high[0, -1])
    assert estimate.anytime
    assert estimate.method == "beta-binomial-mixture"
    assert estimate.coverage.startswith("anytime-valid: covers at every look with probability")


def test_categorical_shares_are_covered_at_once_at_every_look() -> None:
    # Each option's sequence alone is the Bernoulli one (exact coverage: test_sequences.py);
    # here all options at once, with --simultaneous, on multinomial GRR counts.
    shares = np.array([0.6, 0.3, 0.1])
    spec, runs = GeneralizedRandomizedResponse(k=3, alpha=0.4), 1000
    rates = spec.q_star + shares * (spec.p_star - spec.q_star)
    rng = np.random.default_rng(2)
    counts = np.cumsum(rng.multinomial(STEP, rates, (runs, LOOKS)), axis=1)  # runs, looks, k
    low, high = on_unique(
        lambda y, n: frequency_interval(spec, y[:, None], n, 0.95, True),
        counts,
        LOOKED[:, None],
    )
    missed = (low > shares) | (high < shares)
    assert np.count_nonzero(missed.any(axis=(1, 2))) <= most_misses(runs)


@pytest.mark.parametrize("simultaneous", [False, True])
def test_categorical_estimate_has_the_sequences_and_says_so(simultaneous: bool) -> None:
    spec = GeneralizedRandomizedResponse(k=3, alpha=0.4)
    counts = np.array([4100, 3500, 2400])
    estimate = spec.estimate(
        Tally(10_000, tuple(counts.tolist())), 0.9, anytime=True, simultaneous=simultaneous
    )
    assert isinstance(estimate, FrequencyEstimate)
    low, high = frequency_interval(spec, counts, 10_000, 0.9, simultaneous)
    assert estimate.ci_low == tuple(low.tolist())
    assert estimate.ci_high == tuple(high.tolist())
    assert (estimate.anytime, estimate.simultaneous) == (True, simultaneous)
    assert estimate.method == "beta-binomial-mixture"
    assert ("all 3 options covered" in estimate.coverage) == simultaneous
    wire = estimate.wire_fields(pb.Question())
    assert (wire["anytime"], wire["simultaneous"], wire["coverage"]) == (
        True, simultaneous, estimate.coverage
    )  # fmt: skip


def test_simultaneous_sequences_are_wider_than_per_option_ones() -> None:
    spec = GeneralizedRandomizedResponse(k=5, alpha=0.5)
    counts = np.array([400, 250, 150, 120, 80])
    each = frequency_interval(spec, counts, 1000, 0.95, False)
    every = frequency_interval(spec, counts, 1000, 0.95, True)
    assert np.all(every[1] - every[0] > each[1] - each[0])


def laplace_reports(
    spec: LaplaceMechanism, u: NDArray[np.float64], rng: np.random.Generator
) -> NDArray[np.float64]:
    """Reports of participants at positions u, drawn from the mechanism's exact law."""
    scaled = np.ldexp(u, spec.grid_bits)
    j = np.floor(scaled) + (rng.random(u.shape) < scaled - np.floor(scaled))
    q = math.exp(-math.ldexp(spec.epsilon, -spec.grid_bits))
    noise = rng.geometric(1 - q, u.shape) - rng.geometric(1 - q, u.shape)  # discrete Laplace
    return np.asarray(np.ldexp(j + noise, 1 - spec.grid_bits) - 1.0)


def pooled_reports(
    spec: NumericMechanism, u: NDArray[np.float64], rng: np.random.Generator
) -> tuple[Draw, float]:
    """Draws from the empirical law of the mechanism's own reports for positions u, and its mean.

    Resampling the pool is i.i.d. sampling from a population whose mean is the pool's and
    whose reports keep the mechanism's range and (checked) variance bound.
    """
    pool = spec.perturb_many(spec.lo + (spec.hi - spec.lo) * u, rng)
    assert np.var(pool) <= spec.worst_second_moment
    return (lambda shape: pool[rng.integers(0, pool.size, shape)]), float(np.mean(pool))


def trajectories(draw: Draw, runs: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Running Σy and Σy² at every look, shape (runs, looks)."""
    sums = np.empty((2, runs, LOOKS))
    total = np.zeros((2, runs))
    for look in range(LOOKS):
        y = draw((runs, STEP))
        total += [y.sum(axis=1), (y * y).sum(axis=1)]
        sums[:, :, look] = total
    return sums[0], sums[1]


@pytest.mark.parametrize("kind", ["laplace", "piecewise", "duchi"])
def test_numeric_mean_is_covered_at_every_look(kind: str) -> None:
    rng = np.random.default_rng({"laplace": 4, "piecewise": 5, "duchi": 6}[kind])
    runs = 500
    spec: NumericMechanism
    draw: Draw
    if kind == "laplace":
        laplace = LaplaceMechanism.from_epsilon(0.0, 10.0, 1.0)
        spec = laplace
        # a population spread over the range: u uniform, so the mean report is 0
        draw, truth = (lambda shape: laplace_reports(laplace, rng.random(shape), rng)), 0.0
    else:
        make = PiecewiseMechanism if kind == "piecewise" else DuchiMechanism
        spec = make.from_epsilon(0.0, 10.0, 2.0)
        draw, truth = pooled_reports(spec, rng.beta(2.0, 5.0, 20_000), rng)
    total, squares = trajectories(draw, runs)
    mean = total / LOOKED
    low, high = spec.anytime_mean_interval(LOOKED, mean, 0.95)
    assert ever_missed(low, high, truth) <= most_misses(runs)
    # the fixed-n t-interval, looked at after every 100 reports
    sd = np.sqrt((squares - total * mean) / (LOOKED - 1))
    half = stats.t.isf(0.025, LOOKED - 1) * sd / np.sqrt(LOOKED)
    assert ever_missed(mean - half, mean + half, truth) >= fewest_misses(runs)
    # the daemon's estimate: the same interval on the question's scale
    units = 1 << spec.unit_bits
    if kind == "duchi":  # every report is ±B: the exact tally from the count of +B
        b = int(Fraction(spec.bound) * units)
        ups = round(10_000 * (1.0 + mean[0, -1] / spec.bound) / 2.0)
        tally = MeanTally(spec.unit_bits, 10_000, (2 * ups - 10_000) * b, 10_000 * b * b)
    else:
        tally = MeanTally(spec.unit_bits, 10_000, int(total[0, -1] * units),
                          int(squares[0, -1] * units * units))  # fmt: skip
    estimate = spec.estimate(Tally(10_000, (tally.total, tally.total_squares)), anytime=True)
    assert estimate.anytime
    assert estimate.method == spec.anytime_method
    assert estimate.ci_low == pytest.approx(spec.to_x(max(float(low[0, -1]), -1.0)), abs=1e-9)
    assert estimate.ci_high == pytest.approx(spec.to_x(min(float(high[0, -1]), 1.0)), abs=1e-9)
    assert estimate.estimate == estimate_mean(spec, tally).estimate


def test_anytime_intervals_cost_width_and_the_flag_changes_only_the_interval() -> None:
    spec = PiecewiseMechanism.from_epsilon(0.0, 10.0, 1.0)
    reports = spec.perturb_many(np.full(1000, 3.0), np.random.default_rng(7))
    tally = Tally(1000, tuple(spec.tally(reports)))
    fixed, anytime = spec.estimate(tally), spec.estimate(tally, anytime=True)
    assert (fixed.anytime, fixed.method) == (False, "t")
    assert anytime.estimate == fixed.estimate
    assert anytime.ci_low < fixed.ci_low <= fixed.ci_high < anytime.ci_high
    wire = anytime.wire_fields(pb.Question())
    assert wire["anytime"] is True
    assert "anytime-valid" in wire["coverage"]


def test_yes_no_interval_is_the_mapped_rate_sequence() -> None:
    spec = RandomizedResponse(alpha=0.25)
    low, high = proportion_interval(spec, np.array([0, 480, 1000]), 1000, 0.9)
    rate_low, rate_high = binomial_interval(np.array([480]), 1000, 0.9, "clopper-pearson")
    assert low[0] == 0.0
    assert high[2] == 1.0
    assert low[1] < spec.debias(rate_low[0]) < spec.debias(rate_high[0]) < high[1]
