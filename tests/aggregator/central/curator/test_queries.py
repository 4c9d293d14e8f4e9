"""Curator queries on a table: types, sensitivities, the sum's grid, the mean's coverage."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator.central.curator import (
    CuratorError,
    SumSpec,
    Table,
    discrete_laplace_pmf,
    discrete_laplace_tail,
    histogram_sensitivity,
    load_table,
    make_release,
    noisy_count,
    noisy_histogram,
    noisy_mean,
    noisy_sum,
    parse_types,
    parse_where,
    read_release,
)
from deniable.shared.sampling import generator_source

STAFF = """name,age,dept,remote,salary
ann,34,HR,yes,52000.5
bob,29,IT,no,61000
cy,45,HR,no,58000
dee,51,Sales,yes,
eve,38,IT,yes,70500.25
"""


@pytest.fixture
def staff(tmp_path: Path) -> Table:
    path = tmp_path / "staff.csv"
    path.write_text(STAFF)
    return load_table(path)


def test_types_are_inferred_and_empty_numeric_cells_are_none(staff: Table) -> None:
    assert dict(staff.types) == {
        "name": "str", "age": "int", "dept": "str", "remote": "str", "salary": "float",
    }  # fmt: skip
    assert staff.rows[3]["salary"] is None
    assert staff.rows[0]["age"] == 34


def test_declared_types_win_and_a_cell_that_is_not_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("age,code\n3,007\n4,12\n")
    table = load_table(path, parse_types("code=str"))
    assert table.rows[0]["code"] == "007"
    path.write_text("age,code\n3,7\n4,12x\n")
    with pytest.raises(CuratorError, match=r"t.csv line 3: column 'code' is int but has '12x'"):
        load_table(path, parse_types("code=int"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("age=integer", "--types: type of 'age' must be int, float or str, got 'integer'"),
        ("age", "--types: expected COLUMN=TYPE, got 'age'"),
        ("age=int,age=str", "--types: column 'age' is declared twice"),
    ],
)
def test_bad_type_declarations_are_named(text: str, message: str) -> None:
    with pytest.raises(CuratorError, match=f"^{message}$"):
        parse_types(text)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"a,,c\n1,2,3\n", "header column 2 has no name"),
        (b"a,b,a\n1,2,3\n", "header names column 'a' twice"),
        (b"a,b\n1,2\n3\n", "line 3: 1 fields, the header has 2"),
        (b"a,b\n\xff,2\n", r"not UTF-8 text \(byte 0xff at offset 4\)"),
    ],
)
def test_bad_files_are_named(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(CuratorError, match=message):
        load_table(path)


def test_declaring_an_unknown_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("age\n3\n")
    with pytest.raises(CuratorError, match=r"--types: no column 'agge' in .* \(columns: age\)"):
        load_table(path, {"agge": "int"})


def test_histogram_sensitivity_and_scale_follow_the_neighbour_relation(staff: Table) -> None:
    assert histogram_sensitivity("add-remove") == 1
    assert histogram_sensitivity("replace") == 2
    source = generator_source(np.random.default_rng(1))
    bins = noisy_histogram(staff, "dept", ["HR", "IT"], None, 0.5, "replace", source=source)
    assert [float(result.scale) for _, result in bins] == [4.0, 4.0]
    assert all(result.upper == 5 for _, result in bins)  # N is public under replace-one
    with pytest.raises(CuratorError, match="--neighbours must be add-remove or replace, got 'x'"):
        histogram_sensitivity("x")


def test_counts_are_clamped_to_the_public_row_count_under_replace(staff: Table) -> None:
    source = generator_source(np.random.default_rng(2))
    condition = parse_where("age >= 0", staff.types)
    results = [noisy_count(staff, condition, 0.05, "replace", source=source) for _ in range(200)]
    assert {r.upper for r in results} == {5}
    assert all(0 <= r.released <= 5 for r in results)
    assert {0, 5} <= {r.released for r in results}  # scale 20: both clamps are reached
    added = [noisy_count(staff, condition, 0.05, "add-remove", source=source) for _ in range(50)]
    assert {r.upper for r in added} == {None}
    assert max(r.released for r in added) > 5


@pytest.mark.parametrize(
    ("lo", "hi", "add_remove", "replace"),
    [(0, 100, 100, 100), (-30, 10, 30, 40), (20, 60, 60, 60), (-60, -20, 60, 60)],
)
def test_sum_sensitivity_in_grid_steps(
    staff: Table, lo: int, hi: int, add_remove: int, replace: int
) -> None:
    spec = SumSpec.build(staff, "age", lo, hi, None)
    assert spec.resolution == 1  # an int column with integer ends
    assert spec.sensitivity_units("add-remove") == add_remove
    assert spec.sensitivity_units("replace") == replace


def test_sum_noise_stays_on_the_grid_and_values_are_clipped(staff: Table) -> None:
    spec = SumSpec.build(staff, "salary", 0, 60000, "0.25")
    source = generator_source(np.random.default_rng(4))
    # clipped: 52000.5 + 60000 + 58000 + (empty) + 60000
    true = Fraction(2300005, 10)
    for _ in range(20):
        result = noisy_sum(staff, spec, None, 1.0, "add-remove", source=source)
        steps = (Fraction(result.released) - true) / Fraction(1, 4)
        assert steps.denominator == 1
        assert result.scale == 60000.0
        assert result.released >= 0  # the clip range is >= 0: the sum is clamped at 0


def test_bad_sum_specs_are_named(staff: Table) -> None:
    with pytest.raises(CuratorError, match=r"--min 5.0 must be below --max 5.0"):
        SumSpec.build(staff, "age", 5, 5, None)
    with pytest.raises(CuratorError, match="--column: 'dept' is a str column"):
        SumSpec.build(staff, "dept", 0, 1, None)
    with pytest.raises(CuratorError, match="--resolution must be a number, got 'abc'"):
        SumSpec.build(staff, "age", 0, 1, "abc")
    with pytest.raises(CuratorError, match=r"--resolution must be positive, got -1.0"):
        SumSpec.build(staff, "age", 0, 1, "-1")
    with pytest.raises(CuratorError, match="--column: no column 'agee'"):
        SumSpec.build(staff, "agee", 0, 1, None)


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
def test_mean_interval_covers_at_least_the_confidence(tmp_path: Path, neighbours: str) -> None:
    """Seeded: misses of the true clipped mean are at most Binomial(n, α)'s 1e-6 quantile."""
    path = tmp_path / "ages.csv"
    rng = np.random.default_rng(11)
    ages = rng.integers(18, 71, size=60)
    path.write_text("age\n" + "".join(f"{a}\n" for a in ages))
    table = load_table(path)
    spec = SumSpec.build(table, "age", 18, 70, None)
    true = float(np.mean(ages))
    source = generator_source(np.random.default_rng(12))
    trials, confidence = 600, 0.8
    results = [
        noisy_mean(table, spec, None, 2.0, neighbours, confidence=confidence, source=source)
        for _ in range(trials)
    ]
    misses = sum(not (r.low <= true <= r.high) for r in results)
    assert misses <= stats.binom.ppf(1 - 1e-6, trials, 1 - confidence)
    assert all(18 <= r.low <= r.released <= r.high <= 70 for r in results)
    assert {r.total.epsilon for r in results} == {1.0}  # ε split in halves
    assert {r.count.epsilon for r in results} == {1.0}
    # Informative: the typical interval is far narrower than [18, 70].
    assert np.median([r.high - r.low for r in results]) < 30


def test_a_release_answers_counts_and_round_trips_through_its_file(
    staff: Table, tmp_path: Path
) -> None:
    source = generator_source(np.random.default_rng(5))
    release = make_release(
        staff, ["dept", "remote"], {"dept": ["HR", "IT", "Sales"], "remote": ["yes", "no"]},
        1.0, "replace", source=source,
    )  # fmt: skip
    assert len(release.cells) == 6
    assert release.sensitivity == 2
    assert release.upper == 5
    path = tmp_path / "release.json"
    path.write_text(json.dumps(release.to_dict()))
    again = read_release(path)
    assert again == release
    condition = parse_where("dept = 'HR' or remote = 'yes'", again.types)
    answer = again.answer(condition, 0.95)
    assert answer.cells == 4
    expected = sum(
        count for values, count in release.cells if values[0] == "HR" or values[1] == "yes"
    )
    assert answer.value == expected
    assert answer.high - answer.value == 4 * answer.half_width


@pytest.mark.slow
def test_histogram_noise_under_replace_has_scale_two_over_epsilon(tmp_path: Path) -> None:
    """Released − true over 1500 histograms of 2 bins: chi-square against scale 4 (ε = 0.5)."""
    path = tmp_path / "big.csv"
    path.write_text("dept\n" + "HR\n" * 300 + "IT\n" * 200)
    table = load_table(path)
    source = generator_source(np.random.default_rng(21))
    noise = []
    for _ in range(1500):
        bins = noisy_histogram(table, "dept", ["HR", "IT"], None, 0.5, "replace", source=source)
        noise += [bins[0][1].released - 300, bins[1][1].released - 200]
    draws = np.array(noise)
    scale = Fraction(4)
    edges = list(range(-10, 11))
    observed = [int(np.sum(draws < -10)), *(int(np.sum(draws == z)) for z in edges)]
    observed.append(int(np.sum(draws > 10)))
    tail = discrete_laplace_tail(10, scale) / 2
    expected = [tail, *(discrete_laplace_pmf(z, scale) for z in edges), tail]
    _, p_value = stats.chisquare(observed, np.array(expected) * draws.size)
    assert p_value > 1e-6  # 22 cells; scale 2 (Δ = 1) gives p far below at this n
