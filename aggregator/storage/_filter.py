"""A register-blocked Bloom filter over 64-bit fingerprints, vectorized with numpy.

Each id sets ``BITS`` bits of one 64-bit word, so a test or an insert touches one word
(one cache line) per id and costs a few numpy operations per batch of ids, whatever the
filter's size (register-blocked Bloom filters: Putze, Sanders and Singler, "Cache-,
Hash- and Space-Efficient Bloom Filters", WEA 2007). The word is chosen by the
fingerprint's top 32 bits (multiply-shift range reduction, so any number of words works)
and the bit pattern is one of 65,536 fixed patterns, chosen by its low 16 bits.

A filter has no false negatives: an id that was added always tests positive. It has false
positives: with ``bits_per_id`` = 16 and as many ids as its capacity, about 0.4% of ids
never added test positive (``tests/aggregator/storage/test_filter.py`` measures it). The
storage resolves every positive exactly, so they only cost time.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["BITS", "BloomFilter", "patterns", "second_hash"]

BITS = 6  # bits set per id: the best for 16 bits per id in one 64-bit word
_PATTERN_SEED = 0x5EED_B100
_LOW16 = np.uint64(0xFFFF)
_S32 = np.uint64(32)
_M = np.uint64(0xD6E8FEB86659FD93)  # an odd multiplier (Steele, Lea and Flood's SplitMix)


@cache
def patterns() -> NDArray[np.uint64]:
    """65,536 words of ``BITS`` distinct set bits each, the same in every process."""
    rng = np.random.default_rng(_PATTERN_SEED)
    out = np.zeros(1 << 16, dtype=np.uint64)
    for start in range(0, len(out), 8192):
        keys = rng.random((8192, 64))
        positions = np.argpartition(keys, BITS, axis=1)[:, :BITS].astype(np.uint64)
        out[start : start + 8192] = np.bitwise_or.reduce(np.uint64(1) << positions, axis=1)
    return out


def second_hash(hashes: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """A second fingerprint, independent enough of the first for a second filter."""
    mixed = hashes * _M
    mixed ^= mixed >> np.uint64(29)
    mixed *= _M
    return mixed


class BloomFilter:
    """A set of 64-bit fingerprints that may answer "maybe" for a fingerprint never added.

    Attributes:
        capacity: the ids it is sized for at ``bits_per_id``; more only raise its false
            positive rate (the storage rebuilds a larger one).
        words: the bit array.
        count: ids added (repeats counted).
    """

    def __init__(self, capacity: int, bits_per_id: int = 16) -> None:
        self.capacity = max(int(capacity), 64)
        self.words = np.zeros(-(-self.capacity * bits_per_id // 64), dtype=np.uint64)
        self.count = 0
        self._size = np.uint64(len(self.words))

    @classmethod
    def of_words(cls, words: NDArray[np.uint64], capacity: int, count: int) -> BloomFilter:
        """A filter around a stored bit array."""
        bloom = cls.__new__(cls)
        bloom.capacity, bloom.words, bloom.count = capacity, words, count
        bloom._size = np.uint64(len(words))
        return bloom

    def slots(self, hashes: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.uint64]]:
        """Each fingerprint's word index and bit pattern."""
        index = ((hashes >> _S32) * self._size) >> _S32
        return index.astype(np.intp), patterns()[(hashes & _LOW16).astype(np.intp)]

    def maybe(self, hashes: NDArray[np.uint64]) -> NDArray[np.intp]:
        """Positions in ``hashes`` of the fingerprints that may have been added."""
        index, pattern = self.slots(hashes)
        found = self.words[index]
        np.bitwise_and(found, pattern, out=found)
        return np.flatnonzero(found == pattern)

    def add(self, hashes: NDArray[np.uint64]) -> None:
        """Add fingerprints (repeats are harmless).

        One gather, or and scatter; where two fingerprints share a word the scatter keeps
        only one of their patterns, so those found incomplete are added again one by one.
        """
        index, pattern = self.slots(hashes)
        merged = self.words[index]
        np.bitwise_or(merged, pattern, out=merged)
        self.words[index] = merged
        np.bitwise_and(self.words[index], pattern, out=merged)
        lost = merged != pattern
        if lost.any():
            np.bitwise_or.at(self.words, index[lost], pattern[lost])
        self.count += len(hashes)

    @property
    def full(self) -> bool:
        """Whether it holds more ids than its capacity."""
        return self.count > self.capacity
