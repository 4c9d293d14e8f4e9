"""Each sensitivity from K is the worst change over small neighbouring data sets of units.

Pinned from both sides: a brute force over every data set of one or two units (each of at
most K rows) and its neighbours finds exactly the stated Δ, and the release at scale Δ/ε
has a worst log-ratio of output probabilities on those worst neighbouring aggregates of
exactly ε (so the ε stated is neither exceeded nor loose).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest

from deniable.aggregator.central.curator import (
    PrivacyUnit,
    SumSpec,
    count_sensitivity,
    discrete_laplace_pmf,
    discrete_laplace_tail,
    histogram_sensitivity,
    midpoint_units,
    noisy_count,
    noisy_histogram,
    noisy_mean_public_n,
    noisy_sum,
)
from deniable.shared.sampling import ByteSource, generator_source

# A row: (value or None for an empty cell, matches the filter?)
Row = tuple[int | None, bool]
Unit = tuple[Row, ...]
VALUES = (None, -40, 0, 15, 40)  # ±40 lie beyond every clip range below
CATEGORIES = (-40, 0, 15)  # the listed values of a histogram (40 and empty are unlisted)
CASES = [(1, 3), (2, 2), (3, 2)]  # (K, most units in a data set)


def _rows(k: int) -> list[Row]:
    values = VALUES if k < 3 else (None, -40, 15, 40)  # fewer for K = 3: the search stays small
    return [(v, m) for v in values for m in (True, False)]


def _units(k: int) -> list[Unit]:
    """Every unit of 1..K rows (as a multiset: the order of a unit's rows does not matter)."""
    rows = _rows(k)
    return [u for n in range(1, k + 1) for u in itertools.combinations_with_replacement(rows, n)]


def _worst(query: Callable[[tuple[Unit, ...]], list[int]], relation: str, k: int, most: int) -> int:
    """The max over data sets of 1..most units and their neighbours of the L1 change.

    The query is computed on every data set and every neighbour (one unit removed, or
    replaced by any unit of at most K rows), vectorized over the replacements.
    """
    units = _units(k)
    everyone = np.array([query((unit,)) for unit in units])  # each unit on its own
    worst = 0
    for size in range(1, most + 1):
        for data in itertools.combinations_with_replacement(range(len(units)), size):
            here = np.array(query(tuple(units[i] for i in data)))
            for index in range(size):
                rest = data[:index] + data[index + 1 :]
                without = np.array(query(tuple(units[i] for i in rest)))
                there = without[None, :] if relation == "add-remove" else without + everyone
                worst = max(worst, int(np.abs(there - here).sum(axis=1).max()))
    return worst


def _flat(data: tuple[Unit, ...]) -> Iterator[Row]:
    return (row for unit in data for row in unit)


def _count(data: tuple[Unit, ...]) -> list[int]:
    return [sum(1 for _, match in _flat(data) if match)]


def _histogram(data: tuple[Unit, ...]) -> list[int]:
    return [sum(1 for v, m in _flat(data) if m and v == c) for c in CATEGORIES]


def _unit(k: int) -> PrivacyUnit:
    return PrivacyUnit() if k == 1 else PrivacyUnit("person", k)


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
@pytest.mark.parametrize(("k", "most"), CASES)
def test_count_and_histogram_sensitivities_are_the_worst_case(
    relation: str, k: int, most: int
) -> None:
    unit = _unit(k)
    assert _worst(_count, relation, k, most) == count_sensitivity(relation, unit) == k
    expected = k if relation == "add-remove" else 2 * k
    assert (
        _worst(_histogram, relation, k, most) == histogram_sensitivity(relation, unit) == expected
    )


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
@pytest.mark.parametrize(("lo", "hi"), [(-10, 30), (5, 30), (-30, -5)])
@pytest.mark.parametrize(("k", "most"), CASES)
def test_sum_sensitivity_is_the_worst_case(
    relation: str, lo: int, hi: int, k: int, most: int
) -> None:
    spec = SumSpec.build("x", "int", lo, hi, None)

    def total(data: tuple[Unit, ...]) -> list[int]:
        return [sum(spec.units(v) for v, m in _flat(data) if m and v is not None)]

    stated = spec.sensitivity_units(relation, _unit(k))
    assert _worst(total, relation, k, most) == stated
    per_unit = max(abs(lo), abs(hi)) if relation == "add-remove" else max(hi, 0) - min(lo, 0)
    assert stated == k * per_unit
    low, high = spec.per_unit_clamp(_unit(k))  # one unit's total lies in the stated clamp
    for unit in _units(k):
        assert low <= sum(spec.units(v) for v, m in unit if m and v is not None) <= high


def test_public_mean_total_moves_by_at_most_hi_minus_lo_when_one_row_is_replaced() -> None:
    """N rows, none filtered, a missing cell counted as the midpoint: Δ = hi − lo, attained."""
    spec = SumSpec.build("x", "int", -10, 30, None)
    mid = midpoint_units(spec)

    def total(data: tuple[int | None, ...]) -> int:
        return sum(mid if v is None else spec.units(v) for v in data)

    worst = 0
    for data in itertools.product(VALUES, repeat=3):
        for index, value in itertools.product(range(3), VALUES):
            other = (*data[:index], value, *data[index + 1 :])
            worst = max(worst, abs(total(data) - total(other)))
    low, high = spec.unit_range
    assert worst == high - low == 40  # no 0 in the range: a row cannot stop contributing


def _released_pmf(true: int, scale: Fraction, lower: int, upper: int) -> np.ndarray:
    """P(clamp(true + Z, lower, upper) = r) for r = lower..upper: the ends carry the tails."""

    def at_least(gap: int) -> float:  # P(Z >= gap) for gap >= 0
        return discrete_laplace_pmf(gap, scale) + discrete_laplace_tail(gap, scale) / 2

    inner = [discrete_laplace_pmf(r - true, scale) for r in range(lower + 1, upper)]
    return np.array([at_least(true - lower), *inner, at_least(upper - true)])


def _worst_log_ratio(here: np.ndarray, there: np.ndarray) -> float:
    assert here.sum() == pytest.approx(1.0, abs=1e-12)
    return float(np.max(np.abs(np.log(here) - np.log(there))))


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("epsilon", [0.25, 1.0])
def test_a_count_at_scale_k_over_epsilon_is_exactly_epsilon_private(
    relation: str, k: int, epsilon: float
) -> None:
    unit = _unit(k)
    source = generator_source(np.random.default_rng(1))
    scale = noisy_count(3, epsilon, relation, unit, upper=60, source=source).scale
    assert scale == Fraction(k) / Fraction(repr(epsilon))
    worst = max(
        _worst_log_ratio(_released_pmf(c, scale, 0, 60), _released_pmf(c + k, scale, 0, 60))
        for c in range(0, 60 - k)
    )
    assert worst == pytest.approx(epsilon, abs=1e-9)  # e^ε, and no less
    # A scale from Δ = K − 1 would leak more than ε on the worst neighbours.
    if k > 1:
        smaller = Fraction(k - 1) / Fraction(repr(epsilon))
        leak = _worst_log_ratio(
            _released_pmf(10, smaller, 0, 60), _released_pmf(10 + k, smaller, 0, 60)
        )
        assert leak > epsilon * 1.1


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("epsilon", [0.25, 1.0])
def test_a_histogram_under_replace_needs_2k(k: int, epsilon: float) -> None:
    """Replacing one unit moves K rows from one bin to another: scale 2K/ε gives e^ε exactly."""
    source = generator_source(np.random.default_rng(2))
    result = noisy_histogram([("a", 20), ("b", 20)], epsilon, "replace", _unit(k), source=source)
    assert result.sensitivity == 2 * k
    reach = range(-80, 121)

    def log_ratio(scale: Fraction) -> float:
        worst = 0.0
        for a in reach:
            for b in (-3, 20, 25):  # bins (20, 20) versus (20 − K, 20 + K)
                here = discrete_laplace_pmf(a - 20, scale) * discrete_laplace_pmf(b - 20, scale)
                there = discrete_laplace_pmf(a - 20 + k, scale) * discrete_laplace_pmf(
                    b - 20 - k, scale
                )
                worst = max(worst, abs(math.log(here) - math.log(there)))
        return worst

    assert log_ratio(result.scale) == pytest.approx(epsilon, abs=1e-9)
    assert log_ratio(result.scale / 2) == pytest.approx(2 * epsilon, abs=1e-9)  # Δ = K: 2ε


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
@pytest.mark.parametrize("k", [1, 2])
def test_a_sum_in_grid_steps_is_exactly_epsilon_private(relation: str, k: int) -> None:
    spec = SumSpec.build("x", "int", -3, 5, None)
    unit = _unit(k)
    source = generator_source(np.random.default_rng(3))
    result = noisy_sum(4, spec, 0.5, relation, unit, rows=10, source=source)
    delta = spec.sensitivity_units(relation, unit)
    scale = Fraction(delta) / Fraction(1, 2)
    assert result.scale == float(scale)  # resolution 1: grid steps are the values
    lower, upper = spec.sum_range(10)
    assert lower is not None
    assert upper is not None
    worst = max(
        _worst_log_ratio(
            _released_pmf(s, scale, lower, upper), _released_pmf(s + delta, scale, lower, upper)
        )
        for s in range(lower, upper - delta + 1)
    )
    assert worst == pytest.approx(0.5, abs=1e-9)


def test_the_public_mean_is_exactly_epsilon_private_at_scale_hi_minus_lo() -> None:
    """Σ over N = 3 rows in [−2, 4] steps, clamped to [−6, 12]: totals Δ = 6 apart give e^ε."""
    spec = SumSpec.build("x", "int", -2, 4, None)
    result = noisy_mean_public_n(3, 3, 3, spec, 0.5, "replace", PrivacyUnit(), source=_seed(4))
    scale = Fraction(6) / Fraction(1, 2)
    assert result.scale == pytest.approx(float(scale) / 3)  # in mean units: steps over N
    worst = max(
        _worst_log_ratio(_released_pmf(t, scale, -6, 12), _released_pmf(t + 6, scale, -6, 12))
        for t in range(-6, 7)
    )
    assert worst == pytest.approx(0.5, abs=1e-9)


def _seed(seed: int) -> ByteSource:
    return generator_source(np.random.default_rng(seed))
