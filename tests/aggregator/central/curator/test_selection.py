"""DP key selection: the threshold's δ formula, its certified bound, release rates, (ε, δ)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from deniable.aggregator.central.curator import (
    CuratorError,
    PrivacyUnit,
    Value,
    select_keys,
    selection_plan,
    unique_release_bound,
)
from deniable.aggregator.central.curator._selection import selection_delta
from deniable.shared.sampling import generator_source


def _unit(k: int) -> PrivacyUnit:
    return PrivacyUnit() if k == 1 else PrivacyUnit("person", k)


def _partitions(total: int, largest: int) -> Iterator[tuple[int, ...]]:
    """Every multiset of positive integers summing to exactly ``total``, parts <= largest."""
    if total == 0:
        yield ()
        return
    for part in range(min(total, largest), 0, -1):
        for rest in _partitions(total - part, part):
            yield (part, *rest)


@pytest.mark.parametrize("q", [Fraction(1, 3), Fraction(1, 2), Fraction(9, 10)])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_the_formula_is_the_brute_force_max_over_every_partition(q: Fraction, k: int) -> None:
    """Σ_i q^(τ−c_i)/(1+q) over c_i >= 1, Σ c_i <= K: the max is the formula, exactly."""
    for tau in range(k, k + 7):
        brute = max(
            sum(q ** (tau - c) for c in counts) / (1 + q)
            for total in range(1, k + 1)
            for counts in _partitions(total, total)
        )
        assert unique_release_bound(tau, q, k) == brute
        # and the convex bracket's ends: max(q^(τ−K), K·q^(τ−1))/(1+q)
        assert brute == max(q ** (tau - k), k * q ** (tau - 1)) / (1 + q)


@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
@pytest.mark.parametrize("k", [1, 3, 20])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_tau_is_the_least_whose_certified_bound_is_below_delta(
    neighbours: str, k: int, epsilon: float
) -> None:
    taus = []
    for delta in (0.4, 0.1, 1e-3, 1e-6, 1e-9, 1e-12):
        plan = selection_plan(epsilon, delta, neighbours, _unit(k))
        assert plan.delta_bound <= plan.delta == Fraction(repr(delta))
        assert plan.threshold > k
        eps = Fraction(repr(epsilon))
        bits = 200
        before = selection_delta(plan.threshold - 1, plan.scale, k, eps, bits)
        assert before > plan.delta  # τ − 1 would not do: τ is the least
        # The certified bound is an upper bound of the float formula, and a tight one.
        q = math.exp(-1 / float(plan.scale))
        formula = max(q ** (plan.threshold - k), k * q ** (plan.threshold - 1)) / (1 + q)
        other = math.exp(epsilon) * (formula - (1 - q))  # the absent keys' side
        assert formula * (1 - 1e-12) <= float(plan.delta_bound)
        assert float(plan.delta_bound) <= max(formula, other) * (1 + 1e-9)
        taus.append(plan.threshold)
    assert taus == sorted(taus)  # a smaller δ never lowers τ


def test_a_delta_outside_the_range_is_named() -> None:
    for bad in (0, 0.5, 1.0, -1e-9, float("nan")):
        with pytest.raises(CuratorError, match=r"--delta must be in \(0, 0.5\)"):
            selection_plan(1.0, bad, "add-remove", PrivacyUnit())
    with pytest.raises(CuratorError, match="the count of key 'a' must be an integer >= 0"):
        select_keys([("a", -1)], 1.0, 1e-6, "add-remove", PrivacyUnit())


@pytest.mark.slow
def test_a_key_is_released_at_the_stated_rate() -> None:
    """K = 3, ε = 1 (add-remove): τ = 7; counts 3 and 1 pass with q^(τ−c)/(1+q), q = e^(−1/3)."""
    unit = PrivacyUnit("person", 3)
    plan = selection_plan(1.0, 0.3, "add-remove", unit)
    assert plan.threshold == 7
    n = 4000
    counts: list[tuple[Value, int]] = [(f"three {i}", 3) for i in range(n)]
    counts += [(f"one {i}", 1) for i in range(n)]
    counts += [(f"none {i}", 0) for i in range(n)]  # absent keys: never released
    source = generator_source(np.random.default_rng(41))
    result = select_keys(iter(counts), 1.0, 0.3, "add-remove", unit, source=source)
    q = math.exp(-1 / 3)
    for label, count in (("three", 3), ("one", 1)):
        released = sum(1 for item in result.keys if str(item.key).startswith(label))
        rate = q ** (7 - count) / (1 + q)
        assert stats.binom.ppf(1e-6, n, rate) <= released <= stats.binom.ppf(1 - 1e-6, n, rate)
    assert not any(str(item.key).startswith("none") for item in result.keys)
    assert all(item.released >= 7 for item in result.keys)
    assert all(item.low <= item.released <= item.high for item in result.keys)


def test_the_output_states_epsilon_delta_tau_and_the_suppression() -> None:
    unit = PrivacyUnit("person", 2)
    source = generator_source(np.random.default_rng(42))
    counts = [("flu", 400), ("rare", 1), ("cold", 250)]
    result = select_keys(counts, 1.0, 1e-6, "replace", unit, source=source)
    assert [item.key for item in result.keys] == ["flu", "cold"]
    document = result.to_dict()
    assert document["epsilon"] == 1.0
    assert document["delta_requested"] == 1e-6
    assert Fraction(document["delta"]) >= result.plan.delta_bound  # rounded up, never down
    assert document["delta"] <= 1e-6
    assert document["threshold"] == result.plan.threshold
    assert document["sensitivity"] == 4  # 2K under replace
    assert document["privacy_unit"]["max_contributions"] == 2
    assert "below the threshold are not released" in document["suppressed"]
    assert "Korolova" in document["method"]
    assert "Wilson" in document["method"]
    for item in document["released"]:
        assert item["low"] <= item["released"] <= item["high"]
    with pytest.raises(CuratorError, match="key 'flu' is given twice"):
        select_keys([("flu", 400), ("flu", 400)], 1.0, 1e-6, "replace", unit, source=source)


# --- (ε, δ) on neighbouring data sets, exactly --------------------------------------------


def _key_law(count: int | None, scale: float, tau: int, reach: int) -> NDArray[np.float64]:
    """[P(suppressed), P(released τ), ..., P(released τ+reach−1), P(released >= τ+reach)]."""
    law = np.zeros(reach + 2)
    if count is None:  # the key is not in the data
        law[0] = 1.0
        return law
    q = math.exp(-1 / scale)

    def at_least(t: int) -> float:  # P(Z >= t)
        return q**t / (1 + q) if t >= 1 else 1 - q ** (1 - t) / (1 + q)

    z = np.arange(tau, tau + reach) - count
    law[1:-1] = math.tanh(1 / (2 * scale)) * np.exp(-np.abs(z) / scale)
    law[-1] = at_least(tau + reach - count)
    law[0] = 1 - at_least(tau - count)
    return law


def _joint(counts: list[int | None], scale: float, tau: int, reach: int) -> NDArray[np.float64]:
    joint: NDArray[np.float64] = np.ones(1)
    for count in counts:
        joint = np.multiply.outer(joint, _key_law(count, scale, tau, reach)).ravel()
    return joint


def _hockey(p: NDArray[np.float64], q: NDArray[np.float64], epsilon: float) -> float:
    """Σ_o max(0, P(o) − e^ε·Q(o)): the least δ for which P is (ε, δ)-close to Q."""
    return float(np.maximum(p - math.exp(epsilon) * q, 0).sum())


# Keys: a common one (count 5 without the unit), and the unit's own keys. A unit of K = 2
# rows: both on the common key, one there and one on its own key, or two on its own keys.
UNITS = {"common": (2, 0, 0), "split": (1, 1, 0), "own": (0, 2, 0), "two own": (0, 1, 1)}


@pytest.mark.parametrize("epsilon", [1.0, 0.3])
def test_add_remove_neighbours_are_epsilon_delta_close_and_delta_is_a_unique_key(
    epsilon: float,
) -> None:
    unit = PrivacyUnit("person", 2)
    plan = selection_plan(epsilon, 0.05, "add-remove", unit)
    scale, tau = float(plan.scale), plan.threshold
    reach = int(15 * scale) + 10
    without = _joint([5, None, None], scale, tau, reach)
    found = {}
    for name, (common, own, second) in UNITS.items():
        counts = [5 + common, own or None, second or None]
        with_unit = _joint(counts, scale, tau, reach)
        tail = 3 * math.exp(-(reach - 7) / scale)  # mass in the lumped buckets, at most
        found[name] = (_hockey(with_unit, without, epsilon), _hockey(without, with_unit, epsilon))
        assert max(found[name]) + tail <= plan.delta_bound
    q = math.exp(-1 / scale)
    # A unit alone on one key of count K: δ is exactly that key's release, q^(τ−K)/(1+q).
    assert found["own"][0] == pytest.approx(q ** (tau - 2) / (1 + q), rel=1e-9)
    # Both rows on the common key: pure ε, and ε is attained (a smaller ε' is not enough).
    assert found["common"] == pytest.approx((0.0, 0.0), abs=1e-12)
    shifted = _joint([7, None, None], scale, tau, reach)
    assert _hockey(shifted, without, 0.99 * epsilon) > 1e-4


@pytest.mark.parametrize("epsilon", [1.0, 0.3])
def test_replace_neighbours_are_epsilon_delta_close(epsilon: float) -> None:
    """One unit of K = 2 rows replaced by another: its own keys and the other's are distinct."""
    unit = PrivacyUnit("person", 2)
    plan = selection_plan(epsilon, 0.05, "replace", unit)
    scale, tau = float(plan.scale), plan.threshold
    reach = int(15 * scale) + 10
    tail = 3 * math.exp(-(reach - 7) / scale)
    for (_, one), (_, other) in itertools.product(list(UNITS.items())[:3], repeat=2):
        here = _joint([5 + one[0], one[1] or None, None], scale, tau, reach)
        there = _joint([5 + other[0], None, other[1] or None], scale, tau, reach)
        worst = max(_hockey(here, there, epsilon), _hockey(there, here, epsilon))
        assert worst + tail <= plan.delta_bound
