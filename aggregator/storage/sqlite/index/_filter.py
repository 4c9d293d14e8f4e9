"""A register-blocked Bloom filter over 64-bit fingerprints, vectorized with numpy.

Each id sets ``BITS`` bits of one 64-bit word, so a test or an insert touches one word
(one cache line) per id and costs a few numpy operations per batch of ids, whatever the
filter's size (register-blocked Bloom filters: Putze, Sanders and Singler, "Cache-,
Hash- and Space-Efficient Bloom Filters", WEA 2007). The bit pattern is one of 65,536
fixed patterns.

The storage keeps two levels of filters over the same fingerprints, which must not fail
together: the *first* level chooses the word by the fingerprint's top 32 bits
(multiply-shift range reduction, so any number of words works) and the pattern by its low
16 bits; the *second* level chooses the word by the top 32 bits of the fingerprint times
an odd constant (which depend on all 64 bits) and the pattern by bits 16 to 31, which the
first level does not read.

A filter has no false negatives: an id that was added always tests positive. It has false
positives: with 16 bits per id (as many ids as its ``capacity``) about 0.4% of ids never
added test positive (``tests/aggregator/storage/test_filter.py`` measures it). The
storage resolves every positive exactly, so they only cost time.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["BITS", "BloomFilter", "patterns"]

BITS = 6  # bits set per id: the best for 16 bits per id in one 64-bit word
BITS_PER_ID = 16
_PATTERN_SEED = 0x5EED_B100
_S32 = np.uint64(32)
_ODD = np.uint64(0xD6E8FEB86659FD93)  # an odd multiplier (Steele, Lea and Flood's SplitMix)


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


class BloomFilter:
    """A set of 64-bit fingerprints that may answer "maybe" for a fingerprint never added.

    Attributes:
        capacity: the ids it is sized for (``BITS_PER_ID`` bits each); more only raise its
            false positive rate (the storage rebuilds a larger one).
        second: whether it is a second-level filter (see the module docstring).
        words: the bit array.
        count: ids added (repeats counted).
    """

    def __init__(self, capacity: int, *, second: bool = False) -> None:
        self.capacity = max(int(capacity), 64)
        self.second = second
        self.words = np.zeros(-(-self.capacity * BITS_PER_ID // 64), dtype=np.uint64)
        self.count = 0
        self._size = np.uint64(len(self.words))

    @classmethod
    def of_words(
        cls, words: NDArray[np.uint64], capacity: int, count: int, *, second: bool
    ) -> BloomFilter:
        """A filter around a stored bit array."""
        bloom = cls.__new__(cls)
        bloom.capacity, bloom.second, bloom.words, bloom.count = capacity, second, words, count
        bloom._size = np.uint64(len(words))
        return bloom

    def slots(self, hashes: NDArray[np.uint64]) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
        """Each fingerprint's word index and bit pattern, at this filter's level."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        chooser = hashes * _ODD if self.second else hashes
        index = chooser >> _S32
        np.multiply(index, self._size, out=index)
        np.right_shift(index, _S32, out=index)
        halves = hashes.view(np.uint16)  # little-endian: bits 0-15, 16-31, ... of each
        return index, patterns().take(halves[1::4] if self.second else halves[0::4])

    def maybe(self, hashes: NDArray[np.uint64]) -> NDArray[np.intp]:
        """Positions in ``hashes`` of the fingerprints that may have been added."""
        index, pattern = self.slots(hashes)
        found = self.words.take(index)
        np.bitwise_and(found, pattern, out=found)
        return np.flatnonzero(found == pattern)

    def add(self, hashes: NDArray[np.uint64]) -> None:
        """Add fingerprints (repeats are harmless)."""
        self.add_slots(*self.slots(hashes))

    def add_slots(self, index: NDArray[np.uint64], pattern: NDArray[np.uint64]) -> None:
        """Add fingerprints by their :meth:`slots` (for a caller that computed them).

        One gather, or and scatter (random accesses are what costs on a large filter,
        and ``ufunc.at`` is several times slower at them); where two fingerprints share a
        word the scatter keeps only one of their patterns, so those found incomplete are
        added again with ``ufunc.at``.
        """
        merged = self.words.take(index)
        np.bitwise_or(merged, pattern, out=merged)
        self.words[index] = merged
        np.bitwise_and(self.words.take(index), pattern, out=merged)
        lost = np.flatnonzero(merged != pattern)
        if len(lost):
            np.bitwise_or.at(self.words, index[lost].astype(np.intp), pattern[lost])
        self.count += len(index)

    @property
    def full(self) -> bool:
        """Whether it holds more ids than its capacity."""
        return self.count > self.capacity
