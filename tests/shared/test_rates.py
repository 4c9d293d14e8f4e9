"""The estimators read rates through small protocols; any object with the rates will do."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from deniable.shared.mechanisms import (
    BinaryRates,
    GeneralizedRandomizedResponse,
    ItemRandomizedResponse,
    ItemRates,
    MeanReports,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    RandomizedResponse,
    SupportRates,
    Tally,
    estimate_frequencies,
    estimate_proportion,
    frequency_arrays,
    proportion_arrays,
)
from deniable.shared.mechanisms._anytime import proportion_interval
from deniable.shared.mechanisms._frequency_estimate import support_variance
from deniable.shared.mechanisms._item_estimate import estimate_multi_select, flip_rates
from deniable.shared.mechanisms._proportion import keep_probability, keep_rates

ALPHAS = [0.5, math.tanh(0.25), math.tanh(1.3), 0.1, 1.0]


@dataclass(frozen=True)
class Channel:
    """A yes/no channel that is no mechanism: just its two rates."""

    p_star_exact: Fraction
    q_star_exact: Fraction


def test_the_mechanisms_implement_the_protocols() -> None:
    rates: list[BinaryRates] = [RandomizedResponse(0.5), keep_rates(0.5)]
    oracles: list[SupportRates] = [
        RandomizedResponse(0.5),
        GeneralizedRandomizedResponse(3, 0.5),
        OptimizedUnaryEncoding.from_epsilon(4, 1.0),
        OptimizedLocalHashing.from_epsilon(6, 1.0),
    ]
    items: ItemRates = ItemRandomizedResponse(3, 0.2)
    numeric: MeanReports = PiecewiseMechanism.from_epsilon(0.0, 1.0, 1.0)
    # Statically (mypy) by the annotations above; at run time, the one runtime-checkable
    # protocol, which estimate_frequencies checks its argument against.
    assert all(isinstance(oracle, SupportRates) for oracle in oracles)
    assert not isinstance(items, SupportRates)
    assert not isinstance(numeric, SupportRates)
    assert [float(r.p_star_exact - r.q_star_exact) for r in rates] == [0.5, 0.5]


@pytest.mark.parametrize("alpha", ALPHAS)
def test_keep_rates_are_randomized_responses(alpha: float) -> None:
    rr = RandomizedResponse(alpha)
    keep = keep_rates(alpha)
    assert (keep.p_star_exact, keep.q_star_exact) == (rr.p_star_exact, rr.q_star_exact)
    assert keep_probability(keep) == ((1.0 - alpha) / 2.0, alpha)
    assert float(keep.p_star_exact) == rr.p_truth


@pytest.mark.parametrize("alpha", ALPHAS)
def test_the_yes_no_estimator_needs_only_the_rates(alpha: float) -> None:
    rr = RandomizedResponse(alpha)
    channel = Channel(rr.p_star_exact, rr.q_star_exact)
    ones = np.arange(0, 41, 3)
    for estimand in ("population", "respondents"):
        mine = proportion_arrays(ones, 40, channel, 0.9, "wilson", estimand)
        theirs = proportion_arrays(ones, 40, rr, 0.9, "wilson", estimand)
        for name, values in theirs.items():
            assert mine[name].tolist() == values.tolist(), name
    assert [x.tolist() for x in proportion_interval(channel, ones, 40, 0.9)] == [
        x.tolist() for x in proportion_interval(rr, ones, 40, 0.9)
    ]
    assert rr.estimate(Tally(40, (13,)), 0.9) == estimate_proportion(13, 40, alpha, 0.9)


def test_the_yes_no_estimator_refuses_an_asymmetric_channel() -> None:
    with pytest.raises(ValueError, match="symmetric channel"):
        proportion_arrays(
            [3], 10, Channel(Fraction(3, 4), Fraction(1, 8)), 0.9, "wald", "population"
        )
    with pytest.raises(ValueError, match="symmetric channel"):
        keep_probability(Channel(Fraction(1, 4), Fraction(3, 4)))  # p below q


@dataclass(frozen=True)
class Oracle:
    """A frequency oracle's rates without the oracle."""

    k: int
    p_star_exact: Fraction
    q_star_exact: Fraction
    one_option_per_report: bool
    name: str
    epsilon: float


@pytest.mark.parametrize(
    "spec",
    [
        GeneralizedRandomizedResponse(3, math.tanh(0.7)),
        OptimizedUnaryEncoding.from_epsilon(4, 1.1),
        OptimizedLocalHashing.from_epsilon(6, 0.9),
    ],
    ids=lambda spec: spec.name,
)
def test_the_frequency_estimator_needs_only_the_rates(spec: SupportRates) -> None:
    oracle = Oracle(
        spec.k,
        spec.p_star_exact,
        spec.q_star_exact,
        spec.one_option_per_report,
        spec.name,
        spec.epsilon,
    )
    counts = np.array([[40, 30, 30, 0, 0, 0][: spec.k], [10, 20, 70, 0, 0, 0][: spec.k]])
    counts[:, 0] += 100 - counts.sum(axis=1)
    for estimand in ("population", "respondents"):
        mine = frequency_arrays(counts, 100, oracle, 0.9, "wilson", estimand, simultaneous=True)
        theirs = frequency_arrays(counts, 100, spec, 0.9, "wilson", estimand, simultaneous=True)
        for name, values in theirs.items():
            assert mine[name].tolist() == values.tolist(), name
    mine_one = estimate_frequencies(counts[0], 100, oracle, 0.9).to_dict()
    theirs_one = estimate_frequencies(counts[0], 100, spec, 0.9).to_dict()
    assert mine_one.pop("alpha") == 0.0  # read from the mechanism when it has one
    theirs_one.pop("alpha")
    assert mine_one == theirs_one


@pytest.mark.parametrize(
    "spec",
    [GeneralizedRandomizedResponse(5, 0.3), OptimizedUnaryEncoding.from_epsilon(4, 1.1)],
    ids=lambda spec: spec.name,
)
def test_the_oracles_variance_is_the_estimators(spec: GeneralizedRandomizedResponse) -> None:
    p, q = spec.p_star_exact, spec.q_star_exact
    shares = np.linspace(0.0, 1.0, 11)
    for estimand in ("population", "respondents"):
        direct = support_variance(float(q), float(p - q), float(1 - p - q), shares, 50, estimand)
        assert spec.variance_unchecked(shares, 50, estimand).tolist() == direct.tolist()


def test_the_item_estimator_needs_only_the_rates() -> None:
    @dataclass(frozen=True)
    class Items:
        k: int
        q: float
        name: str
        epsilon: float

    spec = ItemRandomizedResponse(3, 0.2)
    assert flip_rates(spec) == (spec.q, spec.gap, spec.bit_variance)
    tally = Tally(100, (40, 30, 20, 15, 10, 5))
    mine = estimate_multi_select(Items(3, 0.2, spec.name, spec.epsilon), tally, 0.9)
    assert mine == spec.estimate_items(tally, 0.9)
