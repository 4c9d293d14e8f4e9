"""The random choice of K of a unit's rows: exact uniformity, and no draw for units <= K."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deniable.aggregator.central.curator._base import PrivacyUnit
from deniable.aggregator.central.curator.engine import open_engine, parse_key
from deniable.aggregator.central.curator.engine._duckdb import DuckDBEngine
from deniable.aggregator.central.curator.engine._sample import (
    FLOYD_MAX_K,
    Sampler,
    _by_keys,
    _floyd,
    below,
    choose,
)


def test_below_stays_below_each_bound() -> None:
    bounds = np.array([1, 2, 3, 7, 2**32 + 1, 2**62 + 1, 2**63 - 1], dtype=np.int64)
    for _ in range(50):
        got, words = below(bounds)
        assert ((got >= 0) & (got < bounds)).all()
        assert words >= len(bounds)
    assert (below(np.ones(10, dtype=np.int64))[0] == 0).all()


@pytest.mark.slow
def test_below_is_uniform() -> None:
    """30000 draws on [0, 3) and on [0, 5): each value Binomial(n, 1/b), within 5 sigma."""
    for b in (3, 5):
        got, _ = below(np.full(30_000, b, dtype=np.int64))
        counts = Counter(got.tolist())
        n, p = 30_000, 1 / b
        assert set(counts) == set(range(b))
        for value in range(b):
            assert abs(counts[value] - n * p) <= 5 * math.sqrt(n * p * (1 - p)), counts


@pytest.mark.parametrize("method", [_floyd, _by_keys, choose])
def test_each_unit_gets_k_distinct_positions_in_range(method: object) -> None:
    n = np.array([2, 3, 5, 40, 41, 1000], dtype=np.int64)
    for k in (1, 2):
        chosen, words = method(n, k)  # type: ignore[operator]
        assert chosen.shape == (len(n), k)
        assert words >= len(n) * k
        for row, size in zip(chosen.tolist(), n.tolist(), strict=True):
            assert len(set(row)) == k
            assert all(0 <= position < size for position in row)
    big = np.array([FLOYD_MAX_K + 5, 200], dtype=np.int64)
    chosen, words = choose(big, FLOYD_MAX_K + 1)  # the one-key-per-row method
    assert words == int(big.sum())
    assert all(len(set(row)) == FLOYD_MAX_K + 1 for row in chosen.tolist())
    assert choose(np.empty(0, dtype=np.int64), 3)[0].shape == (0, 3)


@pytest.mark.slow
@pytest.mark.parametrize("method", [_floyd, _by_keys])
def test_every_k_subset_is_equally_likely(method: object) -> None:
    """2 of 5 positions for 20000 units: every one of the 10 subsets equally likely.

    Each subset's count is Binomial(n, 1/10): within 5 standard deviations (a false alarm
    about 6e-7 per subset).
    """
    n = np.full(20_000, 5, dtype=np.int64)
    chosen, _ = method(n, 2)  # type: ignore[operator]
    counts = Counter(tuple(sorted(row)) for row in chosen.tolist())
    subsets = list(itertools.combinations(range(5), 2))
    assert set(counts) == set(subsets)
    p = 1 / len(subsets)
    for subset in subsets:
        assert abs(counts[subset] - 20_000 * p) <= 5 * math.sqrt(20_000 * p * (1 - p))


def test_the_sampler_refuses_units_within_k() -> None:
    sampler = Sampler()
    got = sampler(pa.array([4, 9], type=pa.int64()), pa.array([3, 3], type=pa.int64()))
    rows = got.to_pylist()
    assert [len(row) for row in rows] == [3, 3]
    assert all(1 <= p <= 4 for p in rows[0])
    assert all(1 <= p <= 9 for p in rows[1])
    assert sampler.units == 2
    assert sampler.words >= 6
    with pytest.raises(ValueError, match="more than K rows"):
        sampler(pa.array([3], type=pa.int64()), pa.array([3], type=pa.int64()))


@pytest.fixture
def staff(tmp_path: Path) -> DuckDBEngine:
    # unit 1: 4 rows (3 with a salary); unit 2: 1; unit 3: 2; no unit: 2 rows
    table = pa.table(
        {
            "pid": pa.array([1, 1, 1, 1, 2, 3, 3, None, None], type=pa.int64()),
            "dept": ["hr", "it", "hr", "hr", "hr", "it", None, "ops", "it"],
            "salary": [10.0, None, 12.0, 7.0, 3.0, 100.0, -2.0, 1.0, 2.5],
        }
    )
    path = tmp_path / "staff.parquet"
    pq.write_table(table, path)
    engine = open_engine(str(path))
    assert isinstance(engine, DuckDBEngine)
    return engine


def test_units_within_k_draw_no_randomness(staff: DuckDBEngine) -> None:
    dept = parse_key("dept", staff.columns)
    within = PrivacyUnit("pid", 4)
    with staff:
        assert dict(staff.histogram(dept, None, within)) == {"hr": 4, "it": 3, "ops": 1, None: 1}
        assert dict(staff.histogram(dept, None, within, ["hr", "it"])) == {"hr": 4, "it": 3}
        assert staff.sum("salary", Fraction(1), -5, 200, None, within).present == 8
        assert sum(staff.contingency(["dept"], [["hr", None]], None, within).values()) == 5
        assert (staff.sampler.units, staff.sampler.words) == (0, 0)
        # K = 2: only unit 1 (4 rows; 3 with a salary) has more than K, so only it is sampled
        over = PrivacyUnit("pid", 2)
        assert sum(count for _, count in staff.histogram(dept, None, over)) == 7
        assert staff.sampler.units == 1
        assert staff.sum("salary", Fraction(1), -5, 200, None, over).present == 7
        assert staff.sampler.units == 2
        # K = 3: unit 1 has 4 rows but only 3 with a salary, so the sum samples nothing
        assert staff.sum("salary", Fraction(1), -5, 200, None, PrivacyUnit("pid", 3)).present == 8
        assert staff.sampler.units == 2
        assert staff.sampler.words >= 2 * 2
