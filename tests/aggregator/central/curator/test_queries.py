"""Curator mechanisms on exact aggregates: counts, histograms, the sum's grid, means, releases."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator.central.curator import (
    CuratorError,
    PrivacyUnit,
    SumSpec,
    Value,
    discrete_half_width,
    discrete_laplace_pmf,
    discrete_laplace_tail,
    make_release,
    noisy_count,
    noisy_histogram,
    noisy_mean,
    noisy_sum,
    parse_values,
    read_release,
)
from deniable.shared.sampling import generator_source

ROWS = PrivacyUnit()
PERSON = PrivacyUnit("person", 3)


def _seeded(seed: int) -> Any:
    return generator_source(np.random.default_rng(seed))


def _states_the_unit(document: dict[str, Any], unit: PrivacyUnit, neighbours: str) -> None:
    assert document["neighbours"] == neighbours
    assert document["privacy_unit"]["column"] == unit.column
    assert document["privacy_unit"]["max_contributions"] == unit.max_contributions
    assert document["privacy_unit"]["description"] == unit.describe()
    assert {"low", "high", "confidence", "method", "covers"} <= set(document["interval"])


def test_parse_values_takes_the_columns_type_and_names_a_bad_value() -> None:
    assert parse_values("int", "age", ["3", "40"], "--values") == [3, 40]
    assert parse_values("float", "pay", ["1.5"], "--values") == [1.5]
    assert parse_values("str", "dept", ["HR", "007"], "--values") == ["HR", "007"]
    with pytest.raises(CuratorError, match="--values: column 'age' is int but 'x' is not"):
        parse_values("int", "age", ["x"], "--values")
    with pytest.raises(CuratorError, match="--values: value 'HR' of 'dept' is listed twice"):
        parse_values("str", "dept", ["HR", "HR"], "--values")
    with pytest.raises(CuratorError, match="--values: list the values of 'dept'"):
        parse_values("str", "dept", [], "--values")
    with pytest.raises(CuratorError, match="--values: value 'nan' of 'pay' is not a finite"):
        parse_values("float", "pay", ["nan"], "--values")


@pytest.mark.parametrize("unit", [ROWS, PERSON], ids=["rows", "person"])
@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
def test_a_count_has_scale_k_over_epsilon_and_states_its_unit(
    unit: PrivacyUnit, neighbours: str
) -> None:
    result = noisy_count(7, 0.5, neighbours, unit, upper=9, source=_seeded(1))
    assert result.sensitivity == unit.max_contributions
    assert result.scale == Fraction(2 * unit.max_contributions)
    document = result.to_dict()
    _states_the_unit(document, unit, neighbours)
    assert document["sensitivity"] == unit.max_contributions
    assert document["delta"] == 0.0
    assert result.low <= result.released <= result.high
    assert 0 <= result.released <= 9


def test_counts_are_clamped_to_the_public_upper_bound() -> None:
    source = _seeded(2)
    results = [noisy_count(5, 0.05, "replace", ROWS, upper=5, source=source) for _ in range(200)]
    assert {r.upper for r in results} == {5}
    assert all(0 <= r.released <= 5 for r in results)
    assert {0, 5} <= {r.released for r in results}  # scale 20: both clamps are reached
    free = [noisy_count(5, 0.05, "add-remove", ROWS, source=source) for _ in range(50)]
    assert max(r.released for r in free) > 5
    above = [noisy_count(6, 1.0, "add-remove", ROWS, upper=5, source=source) for _ in range(50)]
    assert all(0 <= r.released <= 5 for r in above)  # clamped: a refusal would tell the count
    with pytest.raises(CuratorError, match="the true count must be an integer >= 0, got -1"):
        noisy_count(-1, 1.0, "replace", ROWS)
    with pytest.raises(CuratorError, match="--neighbours must be add-remove or replace"):
        noisy_count(1, 1.0, "swap", ROWS)


@pytest.mark.parametrize(("neighbours", "factor"), [("add-remove", 1), ("replace", 2)])
def test_a_histogram_has_l1_sensitivity_k_or_2k(neighbours: str, factor: int) -> None:
    counts = [("HR", 3), ("IT", 0), ("Sales", 8)]
    result = noisy_histogram(counts, 0.5, neighbours, PERSON, upper=11, source=_seeded(3))
    assert result.sensitivity == factor * 3
    assert [key for key, _ in result.bins] == ["HR", "IT", "Sales"]
    assert {float(count.scale) for _, count in result.bins} == {factor * 6.0}
    document = result.to_dict()
    _states_the_unit({**document, "interval": document["bins"][0]["interval"]}, PERSON, neighbours)
    for (_, count), shown in zip(result.bins, document["bins"], strict=True):
        assert shown["interval"]["low"] <= shown["released"] <= shown["interval"]["high"]
        assert shown["released"] == count.released
    with pytest.raises(CuratorError, match="key 'HR' is listed twice"):
        noisy_histogram([("HR", 1), ("HR", 2)], 0.5, neighbours, PERSON)


@pytest.mark.parametrize(
    ("lo", "hi", "add_remove", "replace"),
    [(0, 100, 100, 100), (-30, 10, 30, 40), (20, 60, 60, 60), (-60, -20, 60, 60)],
)
def test_sum_sensitivity_in_grid_steps_is_k_times_the_per_row_bound(
    lo: int, hi: int, add_remove: int, replace: int
) -> None:
    spec = SumSpec.build("age", "int", lo, hi, None)
    assert spec.resolution == 1  # an int column with integer ends
    assert spec.sensitivity_units("add-remove", ROWS) == add_remove
    assert spec.sensitivity_units("replace", ROWS) == replace
    assert spec.sensitivity_units("add-remove", PERSON) == 3 * add_remove
    assert spec.sensitivity_units("replace", PERSON) == 3 * replace
    assert spec.per_unit_clamp(PERSON) == (Fraction(3 * min(lo, 0)), Fraction(3 * max(hi, 0)))


def test_sum_noise_stays_on_the_grid_and_the_output_states_the_per_unit_clamp() -> None:
    spec = SumSpec.build("salary", "float", 0, 60000, "0.25")
    # clipped: 52000.5 + 60000 + 58000 + (empty) + 60000, in quarter steps
    true = Fraction(2300005, 10)
    units = spec.units(52000.5) + spec.units(61000) + spec.units(58000) + spec.units(70500.25)
    assert units * spec.resolution == true
    source = _seeded(4)
    for _ in range(20):
        result = noisy_sum(units, spec, 1.0, "add-remove", PERSON, source=source)
        steps = (Fraction(result.released) - true) / Fraction(1, 4)
        assert steps.denominator == 1
        assert result.scale == 3 * 60000.0
        assert result.released >= 0  # the clip range is >= 0: the sum is clamped at 0
        assert result.low <= result.released <= result.high
    document = result.to_dict()
    _states_the_unit(document, PERSON, "add-remove")
    assert document["per_unit_clamp"]["range"] == [0.0, 180000.0]
    assert "K rows" in document["per_unit_clamp"]["how"]
    assert document["interval"]["half_width"] == 0.25 * discrete_half_width(
        Fraction(3 * 60000 * 4), 0.95
    )


def test_a_sum_is_clamped_to_a_public_row_bound() -> None:
    spec = SumSpec.build("x", "int", -2, 5, None)
    assert spec.sum_range(4) == (-8, 20)
    assert spec.sum_range(None) == (None, None)
    source = _seeded(5)
    results = [noisy_sum(3, spec, 0.05, "replace", ROWS, rows=4, source=source) for _ in range(100)]
    assert all(-8 <= r.released <= 20 and r.low >= -8 and r.high <= 20 for r in results)
    with pytest.raises(CuratorError, match=r"the sum 21 grid steps is outside .*\[-8, 20\]"):
        noisy_sum(21, spec, 1.0, "replace", ROWS, rows=4)


def test_bad_sum_specs_are_named() -> None:
    with pytest.raises(CuratorError, match=r"--min 5.0 must be below --max 5.0"):
        SumSpec.build("age", "int", 5, 5, None)
    with pytest.raises(CuratorError, match="--column: 'dept' is a str column"):
        SumSpec.build("dept", "str", 0, 1, None)
    with pytest.raises(CuratorError, match="--resolution must be a number, got 'abc'"):
        SumSpec.build("age", "int", 0, 1, "abc")
    with pytest.raises(CuratorError, match=r"--resolution must be positive, got -1.0"):
        SumSpec.build("age", "int", 0, 1, "-1")
    with pytest.raises(CuratorError, match="--max must be a finite number, got inf"):
        SumSpec.build("age", "int", 0, float("inf"), None)
    assert SumSpec.build("age", "float", 0, 1, None).resolution == Fraction(1, 1024)


def test_a_mean_checks_its_aggregates_and_states_both_parts() -> None:
    spec = SumSpec.build("age", "int", 18, 70, None)
    with pytest.raises(CuratorError, match="a sum of 10 grid steps is impossible for 2 values"):
        noisy_mean(10, 2, spec, 1.0, "add-remove", ROWS)
    result = noisy_mean(60, 2, spec, 1.0, "add-remove", PERSON, source=_seeded(6))
    assert result.total.epsilon == result.count.epsilon == 0.5
    assert result.count.sensitivity == 3
    document = result.to_dict()
    _states_the_unit(document, PERSON, "add-remove")
    assert document["sensitivity"] == {"sum": 3 * 70.0, "count": 3}
    assert 18 <= result.low <= result.released <= result.high <= 70


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
def test_mean_interval_covers_at_least_the_confidence(neighbours: str) -> None:
    """Seeded: misses of the true clipped mean are at most Binomial(n, α)'s 1e-6 quantile."""
    ages = np.random.default_rng(11).integers(18, 71, size=60)
    spec = SumSpec.build("age", "int", 18, 70, None)
    units, present = sum(spec.units(int(a)) for a in ages), len(ages)
    true = float(np.mean(ages))
    source = _seeded(12)
    trials, confidence = 600, 0.8
    rows = 60 if neighbours == "replace" else None
    results = [
        noisy_mean(units, present, spec, 2.0, neighbours, ROWS, rows=rows, confidence=confidence,
                   source=source)
        for _ in range(trials)
    ]  # fmt: skip
    misses = sum(not (r.low <= true <= r.high) for r in results)
    assert misses <= stats.binom.ppf(1 - 1e-6, trials, 1 - confidence)
    assert all(18 <= r.low <= r.released <= r.high <= 70 for r in results)
    assert np.median([r.high - r.low for r in results]) < 30  # informative


def _release() -> Any:
    cells: dict[tuple[Value, ...], int] = {
        ("HR", "yes"): 1, ("IT", "no"): 1, ("HR", "no"): 1, ("Sales", "yes"): 1,
        ("IT", "yes"): 1, ("Other", "yes"): 4,
    }  # fmt: skip
    columns = [("dept", "str", ["HR", "IT", "Sales"]), ("remote", "str", ["yes", "no"])]
    return make_release(cells, columns, 1.0, "replace", PERSON, upper=5, source=_seeded(7))


def test_a_release_answers_constraints_and_round_trips_through_its_file(tmp_path: Path) -> None:
    release = _release()
    assert len(release.cells) == 6  # ("Other", "yes") is listed nowhere: in no cell
    assert release.sensitivity == 2 * 3
    assert release.upper == 5
    assert release.to_dict()["privacy_unit"]["max_contributions"] == 3
    path = tmp_path / "release.json"
    path.write_text(json.dumps(release.to_dict()))
    again = read_release(path)
    assert again == release
    answer = again.answer({"dept": ["HR", "IT"], "remote": ["yes"]}, 0.95)
    assert answer.cells == 2
    expected = sum(c for v, c in release.cells if v[0] in ("HR", "IT") and v[1] == "yes")
    assert answer.value == expected
    assert answer.high - answer.value == 2 * answer.half_width
    assert answer.half_width == discrete_half_width(release.scale, 1 - 0.05 / 2)
    assert again.answer(None, 0.95).cells == again.answer({}, 0.95).cells == 6
    document = answer.to_dict()
    _states_the_unit(document, PERSON, "replace")
    assert document["epsilon"] == 0.0  # answering spends nothing
    assert document["interval"]["low"] <= document["released"] <= document["interval"]["high"]


def test_a_release_names_a_bad_constraint_and_a_first_format_file_is_row_units(
    tmp_path: Path,
) -> None:
    release = _release()
    with pytest.raises(CuratorError, match="--where: column 'age' is not in the release"):
        release.answer({"age": [3]}, 0.95)
    with pytest.raises(CuratorError, match="--where: give a list of values for column 'dept'"):
        release.answer({"dept": []}, 0.95)
    document = release.to_dict()
    document["format"] = "deniable-curator-release/1"
    del document["privacy_unit"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    assert read_release(path).unit == PrivacyUnit()
    path.write_text("{}")
    with pytest.raises(CuratorError, match="is not a valid release"):
        read_release(path)


@pytest.mark.slow
def test_histogram_noise_under_replace_has_scale_2k_over_epsilon() -> None:
    """Released − true over 1500 two-bin histograms: chi-square against scale 4 (K=1, ε=0.5)."""
    source = _seeded(21)
    noise = []
    for _ in range(1500):
        bins = noisy_histogram([("HR", 300), ("IT", 200)], 0.5, "replace", ROWS, source=source)
        noise += [bins.bins[0][1].released - 300, bins.bins[1][1].released - 200]
    draws = np.array(noise)
    scale = Fraction(4)
    edges = list(range(-10, 11))
    observed = [int(np.sum(draws < -10)), *(int(np.sum(draws == z)) for z in edges)]
    observed.append(int(np.sum(draws > 10)))
    tail = discrete_laplace_tail(10, scale) / 2
    expected = [tail, *(discrete_laplace_pmf(z, scale) for z in edges), tail]
    _, p_value = stats.chisquare(observed, np.array(expected) * draws.size)
    assert p_value > 1e-6  # 22 cells; scale 2 (Δ = 1) gives p far below at this n
