"""Fingerprints and Bloom filters: no false negatives, the documented false positive rates."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.aggregator.storage.codec import Hasher
from deniable.aggregator.storage.sqlite.index._filter import BITS, BloomFilter, patterns


def ids(count: int, start: int = 0, width: int = 32) -> np.ndarray:
    text = b"".join(f"{i:0{width}x}".encode() for i in range(start, start + count))
    return np.frombuffer(text, np.uint8).reshape(count, width)


def test_patterns_have_the_documented_bits_and_never_change() -> None:
    table = patterns()
    assert len(table) == 1 << 16
    counts = np.array([bin(int(word)).count("1") for word in table[:4096]])
    assert (counts == BITS).all()
    assert int(table[0]) == int(patterns.__wrapped__()[0])  # the same in every process
    assert len(np.unique(table)) > 65_000


@pytest.mark.parametrize("second", [False, True], ids=["first", "second"])
def test_no_false_negatives_and_the_false_positive_rate(second: bool) -> None:
    hasher = Hasher((11, 22))
    bloom = BloomFilter(100_000, second=second)
    stored = hasher(ids(100_000))
    for part in np.array_split(stored, 37):  # batches of varied sizes, words shared
        bloom.add(part)
    assert len(bloom.maybe(stored)) == len(stored)
    assert not bloom.full
    fresh = hasher(ids(200_000, start=10**9))
    rate = len(bloom.maybe(fresh)) / len(fresh)
    assert 0.002 < rate < 0.006  # about 0.4% at 16 bits per id (one 64-bit word, 6 bits)
    bloom.add(fresh[:1])
    assert bloom.count == 100_001
    assert bloom.full


def test_the_two_levels_fail_independently() -> None:
    """An id that passes the first level passes the second about as often as any id."""
    hasher = Hasher((5, 6))
    stored = hasher(ids(100_000))
    first, second = BloomFilter(100_000), BloomFilter(100_000, second=True)
    first.add(stored)
    second.add(stored)
    fresh = hasher(ids(1_000_000, start=10**9))
    both = np.intersect1d(first.maybe(fresh), second.maybe(fresh))
    expected = len(first.maybe(fresh)) * len(second.maybe(fresh)) / len(fresh)
    assert expected < 30
    assert len(both) < 3 * expected + 10


def test_fingerprints_depend_on_the_key_the_length_and_every_byte() -> None:
    matrix = ids(1000)
    one, other = Hasher((1, 2)), Hasher((1, 3))
    assert (one(matrix) == one(matrix.copy())).all()
    assert (one(matrix) != other(matrix)).all()
    assert len(np.unique(one(matrix))) == 1000
    shorter = np.ascontiguousarray(matrix[:, 1:])  # 31 bytes: padded to 32 with a zero
    assert not np.isin(one(shorter), one(matrix)).any()
    for column in range(32):
        changed = matrix.copy()
        changed[:, column] ^= 0x01
        assert (one(changed) != one(matrix)).all()
    words = one(ids(200_000))
    for bits in (words >> np.uint64(54), words & np.uint64(1023)):  # the ends filters read
        counts = np.bincount(bits.astype(np.intp), minlength=1024)
        chi2 = float(((counts - 200_000 / 1024) ** 2 / (200_000 / 1024)).sum()) / 1023
        assert 0.85 < chi2 < 1.15


def test_ids_of_every_length_up_to_128_are_fingerprinted() -> None:
    hasher = Hasher((9, 9))
    for width in (1, 7, 8, 9, 127, 128):
        matrix = np.full((3, width), ord("a"), dtype=np.uint8)
        matrix[1, -1] = ord("b")
        prints = hasher(matrix)
        assert prints[0] == prints[2] != prints[1]
    with pytest.raises(ValueError, match="at most 128"):
        hasher(np.full((1, 129), ord("a"), dtype=np.uint8))
