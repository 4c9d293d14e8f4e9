"""Arrays that grow in place: rows survive growth on every path, prefaulting changes nothing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from deniable.aggregator.storage import _arena
from deniable.aggregator.storage._arena import Column, prefault
from deniable.aggregator.storage._id_table import IdTable
from deniable.aggregator.storage._ids import fingerprints

ON_LINUX = pytest.mark.skipif(sys.platform != "linux", reason="mremap and madvise: Linux")


@pytest.mark.parametrize("remap", [True, False])
def test_growing_keeps_the_rows_and_starts_at_zero(remap: bool) -> None:
    if remap and not _arena._REMAP:
        pytest.skip("no in-place growth on this platform")
    column = Column(3, (4,), np.uint8, remap=remap)
    assert column.array.shape == (3, 4)
    assert not column.array.any()
    column.array[:] = np.arange(12, dtype=np.uint8).reshape(3, 4)
    column.grow(1000, keep=3)
    assert column.capacity == 1000
    assert column.array.shape == (1000, 4)
    assert column.array[:3].tolist() == np.arange(12).reshape(3, 4).tolist()
    column.array[999] = 7  # the new rows are writable
    column.grow(10, keep=1000)  # never shrinks
    assert column.capacity == 1000
    assert column.array[999].tolist() == [7] * 4


@ON_LINUX
def test_growing_in_place_resizes_the_same_mapping() -> None:
    """Growth in place (mremap) extends the rows' own mapping: no copy into a new one."""
    column = Column(1 << 12, (), np.int64)
    column.array[:] = np.arange(1 << 12)
    mapping = column._map
    column.grow(1 << 24, keep=1 << 12)  # 128 MiB of address space, none of it touched
    assert column._map is mapping
    assert column.array[: 1 << 12].tolist() == list(range(1 << 12))
    assert not column.array[1 << 12 : (1 << 12) + 8].any()


@ON_LINUX
def test_a_live_view_makes_growth_copy_instead() -> None:
    """A live view rules out mremap: the rows are copied, and the old view stays valid."""
    column = Column(8, (), np.uint64)
    column.array[:] = np.arange(8, dtype=np.uint64) * 3
    held = column.array[2:5]  # a caller that did not let go
    mapping = column._map
    column.grow(64, keep=8)
    assert column._map is not mapping
    assert column.array[:8].tolist() == [3 * i for i in range(8)]
    assert held.tolist() == [6, 9, 12]
    column.array[:8] = 0  # the copy is separate from what the old view sees
    assert held.tolist() == [6, 9, 12]


@ON_LINUX
def test_prefaulting_changes_no_byte() -> None:
    column = Column(1 << 16, (8,), np.uint8)
    column.array[::7] = 5
    before = column.array.copy()
    column.prefault(100, 1 << 16)
    prefault(column.array[3:9])  # not page-aligned: rounded down to its page
    assert np.array_equal(column.array, before)


def test_the_id_table_works_without_in_place_growth(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copying fallback (other platforms) gives the same answers through growth."""
    monkeypatch.setattr(_arena, "_REMAP", False)
    table = IdTable(5, background_from=512)
    rng = np.random.default_rng(5)
    letters = np.frombuffer(b"abcdefghijklmnop", np.uint8)
    ids = np.unique(rng.choice(letters, (5000, 5)), axis=0)
    for start in range(0, len(ids), 250):
        chunk = ids[start : start + 250]
        refs = np.arange(start, start + len(chunk), dtype=np.int64)
        assert (table.claim(chunk, fingerprints(chunk), refs) == -1).all()
    table.settle()
    assert table.capacity >= len(ids)
    found = table.claim(ids[::-1], fingerprints(ids[::-1]), np.zeros(len(ids), np.int64))
    assert found.tolist() == list(range(len(ids)))[::-1]
