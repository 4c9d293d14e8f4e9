"""Each stated sensitivity is the worst change over small neighbouring data sets (brute force)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.central.curator import (
    CuratorError,
    SumSpec,
    Table,
    count_sensitivity,
    histogram_sensitivity,
    load_table,
)

# A row: (value or None for an empty cell, matches the condition?)
Row = tuple[int | None, bool]
VALUES = (None, -40, 0, 15, 40)  # ±40 lie beyond every clip range below
DOMAIN: list[Row] = [(v, m) for v in VALUES for m in (True, False)]
CATEGORIES = (-40, 0, 15)  # the listed values of a histogram (40 and empty are unlisted)


def _data_sets(size: int) -> Iterator[tuple[Row, ...]]:
    yield from itertools.product(DOMAIN, repeat=size)


def _neighbours(data: tuple[Row, ...], relation: str) -> Iterator[tuple[Row, ...]]:
    for index in range(len(data)):
        if relation == "add-remove":
            yield data[:index] + data[index + 1 :]
        else:
            for row in DOMAIN:
                yield (*data[:index], row, *data[index + 1 :])


def _worst(query: Callable[[tuple[Row, ...]], list[float]], relation: str) -> float:
    """The max over data sets of up to 3 rows and their neighbours of the L1 change."""
    worst = 0.0
    for size in range(1, 4):
        for data in _data_sets(size):
            here = query(data)
            for other in _neighbours(data, relation):
                there = query(other)
                worst = max(worst, sum(abs(a - b) for a, b in zip(here, there, strict=True)))
    return worst


def _count(data: tuple[Row, ...]) -> list[float]:
    return [sum(1 for _, match in data if match)]


def _histogram(data: tuple[Row, ...]) -> list[float]:
    return [sum(1 for v, m in data if m and v == c) for c in CATEGORIES]


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_count_and_histogram_sensitivities_are_the_worst_case(relation: str) -> None:
    assert _worst(_count, relation) == count_sensitivity(relation)
    assert _worst(_histogram, relation) == histogram_sensitivity(relation)


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
@pytest.mark.parametrize(("lo", "hi"), [(-10, 30), (5, 30), (-30, -5)])
def test_sum_sensitivity_is_the_worst_case(relation: str, lo: int, hi: int, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("x\n1\n")
    spec = SumSpec.build(load_table(path), "x", lo, hi, None)

    def total(data: tuple[Row, ...]) -> list[float]:
        return [sum(spec.units(v) for v, m in data if m and v is not None)]

    assert _worst(total, relation) == spec.sensitivity_units(relation)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_file_loads_or_is_our_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.csv"
    path.write_bytes(data)
    outcome = _load_or_error(path)
    if isinstance(outcome, CuratorError):
        assert str(path) in str(outcome)
    else:
        assert all(set(row) == set(outcome.columns) for row in outcome.rows)


def _load_or_error(path: Path) -> Table | CuratorError:
    """The table, or our error (anything else propagates and fails the test)."""
    try:
        return load_table(path)
    except CuratorError as error:
        return error
