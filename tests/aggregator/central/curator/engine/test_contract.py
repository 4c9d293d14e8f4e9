"""One contract for every engine: DuckDB over CSV and Parquet, and PostgreSQL, same answers."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit
from deniable.aggregator.central.curator.engine import (
    Engine,
    SumAggregate,
    open_engine,
    parse_condition,
    parse_key,
)

NAN = float("nan")
# pid, row (a unit's row number), age, dept, salary, ok
ROWS: list[tuple[int | None, int, int | None, str | None, float | None, bool | None]] = [
    (1, 1, 30, "hr", 10.5, True),
    (1, 2, 31, "it", None, False),
    (1, 3, 32, "hr", 12.0, True),
    (1, 4, 33, "hr", 7.0, None),
    (2, 1, 40, "hr", 3.25, None),
    (3, 1, None, "it", 100.0, True),
    (3, 2, 50, None, -2.0, False),
    (4, 1, 20, "it", NAN, True),
    (None, 1, 60, "ops", 1.0, True),
    (None, 2, 61, "it's", 2.5, False),
]
NAMES = ("pid", "row", "age", "dept", "salary", "ok")
KINDS = {"pid": "int", "row": "int", "age": "int", "dept": "str", "salary": "float", "ok": "bool"}
ROWS_AS_UNITS = PrivacyUnit()
# Many units of 4 rows each, for the uniformity of the random choice.
UNIFORM_UNITS = 1000


def _write_csv(path: Path, rows: list[tuple[object, ...]], names: tuple[str, ...]) -> None:
    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        text = str(value)
        return '"' + text.replace('"', '""') + '"' if "," in text or "'" in text else text

    lines = [",".join(names)] + [",".join(cell(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")


def _arrow(rows: list[tuple[object, ...]]) -> pa.Table:
    types = [pa.int64(), pa.int64(), pa.int64(), pa.string(), pa.float64(), pa.bool_()]
    columns = [pa.array([row[i] for row in rows], type=t) for i, t in enumerate(types)]
    return pa.table(columns, names=list(NAMES))


def _uniform_rows() -> list[tuple[object, ...]]:
    return [(u, r, 0, "x", 1.0, True) for u in range(UNIFORM_UNITS) for r in range(1, 5)]


def _postgres(request: pytest.FixtureRequest, name: str, rows: list[tuple[object, ...]]) -> str:
    import psycopg

    cluster = request.getfixturevalue("postgres_cluster")
    database = f"t{uuid.uuid4().hex}"
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    url: str = cluster.url_of(database)
    with psycopg.connect(url) as conn:
        conn.execute(
            f"CREATE TABLE {name} (pid bigint, row integer, age integer, dept text, "
            "salary double precision, ok boolean)"
        )
        with conn.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, %s)", rows)
    return url


def _open(
    kind: str, request: pytest.FixtureRequest, tmp: Path, rows: list[tuple[object, ...]]
) -> Engine:
    if kind == "csv":
        path = tmp / "staff.csv"
        _write_csv(path, rows, NAMES)
        types = {"pid": "int", "age": "int", "dept": "str", "salary": "float", "ok": "bool"}
        return open_engine(str(path), types=types)
    if kind == "parquet":
        path = tmp / "staff.parquet"
        pq.write_table(_arrow(rows), path)
        return open_engine(str(path))
    return open_engine(_postgres(request, "public.staff", rows), table="public.staff")


@pytest.fixture(scope="module", params=["csv", "parquet", "postgres"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    opened = _open(request.param, request, tmp_path_factory.mktemp("contract"), list(ROWS))
    yield opened
    opened.close()


@pytest.fixture(scope="module", params=["parquet", "postgres"])
def uniform(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    opened = _open(request.param, request, tmp_path_factory.mktemp("uniform"), _uniform_rows())
    yield opened
    opened.close()


def where(engine: Engine, text: str | None) -> object:
    return None if text is None else parse_condition(text, engine.columns)


def test_columns_and_sizes(engine: Engine) -> None:
    assert dict(engine.columns) == KINDS
    assert engine.row_count() == len(ROWS)
    assert engine.unit_count(ROWS_AS_UNITS) == len(ROWS)
    # units 1, 2, 3, 4 and the rows without a unit, which form one unit together
    assert engine.unit_count(PrivacyUnit("pid", 2)) == 5


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (None, 10),
        ("dept = 'hr'", 4),
        ("dept <> 'hr'", 5),
        ("dept IS NULL", 1),
        ("age > 31 AND NOT ok", 2),
        ("age IS NULL OR salary < 0", 2),
        ("dept IN ('it', 'ops')", 4),
        ("dept LIKE 'i%'", 4),
        ("dept ILIKE 'IT%'", 4),
        ("dept = 'it''s'", 1),
        ("age BETWEEN 30 AND 33", 4),
        ("salary > 10", 4),  # NaN is above every number in both engines,
        ("ok", 5),
        ("salary = 3.25", 1),
    ],
)
def test_count_rows_as_units_is_exact(engine: Engine, condition: str | None, expected: int) -> None:
    parsed = None if condition is None else parse_condition(condition, engine.columns)
    assert engine.count(parsed, ROWS_AS_UNITS) == expected


@pytest.mark.parametrize(
    ("condition", "k", "expected"),
    [
        (None, 1, 5),
        (None, 2, 8),
        (None, 4, 10),
        ("dept = 'hr'", 1, 2),
        ("dept = 'hr'", 2, 3),
        ("dept = 'hr'", 3, 4),
        ("ok", 1, 4),
    ],
)
def test_count_bounds_each_unit_exactly(
    engine: Engine, condition: str | None, k: int, expected: int
) -> None:
    parsed = None if condition is None else parse_condition(condition, engine.columns)
    assert engine.count(parsed, PrivacyUnit("pid", k)) == expected


def test_histogram_of_listed_values_rows_as_units(engine: Engine) -> None:
    key = parse_key("dept", engine.columns)
    got = list(engine.histogram(key, None, ROWS_AS_UNITS, ["hr", "it", "none", None]))
    assert got == [("hr", 4), ("it", 3), ("none", 0), (None, 1)]
    ok = parse_key("ok", engine.columns)
    assert list(engine.histogram(ok, None, ROWS_AS_UNITS, [True, False, None])) == [
        (True, 5),
        (False, 3),
        (None, 2),
    ]


def test_histogram_of_every_key_present(engine: Engine) -> None:
    key = parse_key("dept", engine.columns)
    cond = parse_condition("age < 60", engine.columns)
    got = dict(engine.histogram(key, cond, ROWS_AS_UNITS))
    assert got == {"hr": 4, "it": 2, None: 1}


@pytest.mark.parametrize("k", [1, 2, 3])
def test_bounded_histogram_keeps_at_most_k_rows_per_unit(engine: Engine, k: int) -> None:
    unit = PrivacyUnit("pid", k)
    key = parse_key("dept", engine.columns)
    for _ in range(20):
        got = dict(engine.histogram(key, None, unit))
        assert sum(got.values()) == engine.count(None, unit)
        # unit 1 is hr, it, hr, hr (at most one kept row is not hr); unit 2 is hr
        assert 1 + max(0, min(k, 4) - 1) <= got.get("hr", 0) <= 1 + min(k, 3)
        assert got.get("ops", 0) <= 1
        listed = dict(engine.histogram(key, None, unit, ["hr", "it"]))
        assert sum(listed.values()) == engine.count(
            parse_condition("dept IN ('hr', 'it')", engine.columns), unit
        )


def test_sum_rows_as_units_is_exact(engine: Engine) -> None:
    # salaries in quarters: 42 + 48 + 28 + 13 + 400 - 8 + 4 + 10 (NaN and NULL missing)
    got = engine.sum("salary", Fraction(1, 4), -1000, 1000, None, ROWS_AS_UNITS)
    assert got == SumAggregate(units=537, present=8)
    clamped = engine.sum("salary", Fraction(1), 0, 11, None, ROWS_AS_UNITS)
    # 10.5 rounds half up to 11, 12 clamps to 11, -2 to 0, 100 to 11, 2.5 rounds to 3
    assert clamped == SumAggregate(units=11 + 11 + 7 + 3 + 11 + 0 + 1 + 3, present=8)
    ages = engine.sum(
        "age", Fraction(10), 0, 100, parse_condition("ok", engine.columns), ROWS_AS_UNITS
    )
    assert ages == SumAggregate(units=3 + 3 + 2 + 6, present=4)


def test_bounded_sum_is_within_its_exact_range(engine: Engine) -> None:
    unit = PrivacyUnit("pid", 1)
    # with a value, in units: unit 1 keeps one of 11, 12, 7; unit 2 has 3; unit 3 one of
    # 100, -2 (clamped to [-5, 50]: 50, -2); unit 4 only NaN; no unit: one of 1, 3 (2.5).
    seen = set()
    for _ in range(40):
        got = engine.sum("salary", Fraction(1), -5, 50, None, unit)
        assert got.present == 4
        assert 7 + 3 - 2 + 1 <= got.units <= 12 + 3 + 50 + 3
        seen.add(got.units)
    assert len(seen) > 1


def test_contingency(engine: Engine) -> None:
    got = engine.contingency(
        ["dept", "ok"], [["hr", "it"], [True, False, None]], None, ROWS_AS_UNITS
    )
    assert got == {
        ("hr", True): 2,
        ("hr", False): 0,
        ("hr", None): 2,
        ("it", True): 2,
        ("it", False): 1,
        ("it", None): 0,
    }
    unit = PrivacyUnit("pid", 1)
    bounded = engine.contingency(["dept", "ok"], [["hr", "it"], [True, False, None]], None, unit)
    within = parse_condition("dept IN ('hr', 'it')", engine.columns)
    assert sum(bounded.values()) == engine.count(within, unit)


def test_refusals_name_the_option(engine: Engine) -> None:
    with pytest.raises(CuratorError, match="--privacy-unit: unknown column 'nope'"):
        engine.count(None, PrivacyUnit("nope", 2))
    with pytest.raises(CuratorError, match="--column: column 'dept' has type str"):
        engine.sum("dept", Fraction(1), 0, 1, None, ROWS_AS_UNITS)
    with pytest.raises(CuratorError, match="clamp is empty"):
        engine.sum("age", Fraction(1), 2, 1, None, ROWS_AS_UNITS)
    with pytest.raises(CuratorError, match="value 3 does not fit a str column"):
        list(engine.histogram(parse_key("dept", engine.columns), None, ROWS_AS_UNITS, [3]))


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2])
def test_the_choice_of_rows_is_uniform(uniform: Engine, k: int) -> None:
    """Each of a unit's 4 rows is kept with probability k/4: 4 queries of 1000 units each.

    Every row's kept count over n = 4000 draws is Binomial(n, k/4): within 5 standard
    deviations of its mean (a false alarm about 6e-7 per row).
    """
    unit = PrivacyUnit("pid", k)
    key = parse_key("row", uniform.columns)
    kept: Counter[object] = Counter()
    queries = 4
    for _ in range(queries):
        for value, count in uniform.histogram(key, None, unit, [1, 2, 3, 4]):
            kept[value] += count
    n, p = queries * UNIFORM_UNITS, k / 4
    sigma = math.sqrt(n * p * (1 - p))
    for value in (1, 2, 3, 4):
        assert abs(kept[value] - n * p) <= 5 * sigma, (value, kept)
    assert sum(kept.values()) == n * k


def _unused(_: Callable[[], None]) -> None:
    """Keeps the imports honest for type checkers."""
