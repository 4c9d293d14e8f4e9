"""The compiled id table: exact answers whatever the fingerprints, growth, and undo."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aggregator.storage._id_table import IdTable
from aggregator.storage._ids import ReportIds, UniformPayloads, fingerprints

ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


def matrix(ids: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(ids), dtype=np.uint8).reshape(len(ids), -1)


def claim(table: IdTable, ids: list[bytes], refs: list[int], fps: list[int] | None = None):  # type: ignore[no-untyped-def]
    m = matrix(ids)
    prints = fingerprints(m) if fps is None else np.array(fps, dtype=np.uint64)
    return table.claim(m, prints, np.array(refs, dtype=np.int64)).tolist()


def test_new_ids_are_entered_and_known_ids_give_their_reference() -> None:
    table = IdTable(3)
    assert claim(table, [b"abc", b"def"], [10, 11]) == [-1, -1]
    assert claim(table, [b"def", b"ghi", b"abc"], [20, 21, 22]) == [11, -1, 10]
    assert table.used == 3


def test_equal_fingerprints_never_make_different_ids_equal() -> None:
    """Every id gets the same fingerprint: the table must still compare the bytes."""
    table = IdTable(2)
    ids = [bytes([a, b]) for a in ALPHABET[:20] for b in ALPHABET[:20]]
    same = [12345 | 1] * len(ids)
    assert claim(table, ids, list(range(len(ids))), same) == [-1] * len(ids)
    assert claim(table, ids[::-1], [0] * len(ids), same) == list(range(len(ids)))[::-1]
    assert claim(table, [b"zz"], [999], same[:1]) == [-1]


def test_the_table_grows_far_past_its_first_size() -> None:
    table = IdTable(8)
    rng = np.random.default_rng(5)
    ids = [bytes(row) for row in rng.choice(np.frombuffer(ALPHABET, np.uint8), (20_000, 8))]
    ids = list(dict.fromkeys(ids))  # distinct
    half = len(ids) // 2
    assert claim(table, ids[:half], list(range(half))) == [-1] * half
    assert claim(table, ids, list(range(len(ids)))) == list(range(half)) + [-1] * (len(ids) - half)
    assert table.used == len(ids)


def test_truncate_forgets_the_latest_ids_only() -> None:
    table = IdTable(1)
    claim(table, [b"a", b"b"], [1, 2])
    claim(table, [b"c"], [3])
    table.truncate(2)
    assert claim(table, [b"c", b"a"], [4, 5]) == [-1, 1]
    with pytest.raises(ValueError, match="cannot truncate 3 ids to 4"):
        table.truncate(4)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"an \(m, 2\) matrix"):
        claim(IdTable(2), [b"abc"], [1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.binary(min_size=1, max_size=4), max_size=60), max_size=6))
def test_the_table_agrees_with_a_set(batches: list[list[bytes]]) -> None:
    """Batches of ids (padded to one length) against a Python dict of first references."""
    table, seen, ref = IdTable(4), dict[bytes, int](), 0
    for batch in batches:
        ids = list(dict.fromkeys(i.ljust(4, b"_") for i in batch))
        if not ids:
            continue
        refs = list(range(ref, ref + len(ids)))
        ref += len(ids)
        expected = [seen.get(i, -1) for i in ids]
        assert claim(table, ids, refs) == expected
        for i, r in zip(ids, refs, strict=True):
            seen.setdefault(i, r)


def test_report_ids_group_by_length_and_index_like_a_list() -> None:
    ids = [b"abc", b"de", b"fgh", b"i", b"jk"]
    grouped = ReportIds.of(ids)
    assert list(grouped) == ids
    assert grouped[-1] == b"jk"
    assert grouped[1:3] == [b"de", b"fgh"]
    assert [g.rows.tolist() for g in grouped.groups] == [[3], [1, 4], [0, 2]]
    uniform = ReportIds.uniform(matrix([b"abc", b"fgh"]))
    assert uniform.groups[0].fingerprints.tolist() == grouped.groups[2].fingerprints.tolist()
    with pytest.raises(IndexError, match="report row 5 out of range for 5"):
        grouped[5]


def test_uniform_payloads_are_the_stem_and_the_bit() -> None:
    payloads = UniformPayloads(b"stem", np.array([1, 0, 1], dtype=np.uint8))
    assert list(payloads) == [b"stem\x01", b"stem\x00", b"stem\x01"]
    assert payloads[0:2] == [b"stem\x01", b"stem\x00"]
