"""One open survey's report-id index in memory: a filter over every id, and the recent ids.

Everything here is derived from the database and rebuilt from it when the storage opens:
the fingerprints of the sealed segments (:mod:`._segments`) and of the log rows after
them. Per id it holds about 2 bytes of filter (4 after a doubling) and, in the segments'
stacked filters, 2 more; the recent part (at most about ``SEGMENT_IDS`` ids) holds each
id's fingerprint and log row exactly, 16 bytes, until it is sealed into a segment.
"""

from __future__ import annotations

import sqlite3

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._filter import BloomFilter, second_hash
from deniable.aggregator.storage._segments import Segments, lookup

__all__ = ["INITIAL_CAPACITY", "SEGMENT_IDS", "Recent", "SurveyIds"]

SEGMENT_IDS = 1 << 17  # recent ids that are sealed into a segment together
SEGMENT_CAPACITY = SEGMENT_IDS + 16_384  # what a segment's filter is sized for
INITIAL_CAPACITY = 1 << 16  # ids the filter of a new survey is sized for


class Recent:
    """The ids of log rows after the last segment: fingerprints and log rows, in log order."""

    def __init__(self, capacity: int = SEGMENT_CAPACITY) -> None:
        self.capacity = capacity
        self.prints = np.empty(1024, dtype=np.uint64)
        self.seqs = np.empty(1024, dtype=np.int64)
        self.count = 0
        self.bloom = BloomFilter(capacity)

    def append(self, prints: NDArray[np.uint64], seq: int) -> None:
        """Enter the ids one log row added."""
        end = self.count + len(prints)
        if end > len(self.prints):
            size = max(end, 2 * len(self.prints))
            self.prints = np.resize(self.prints, size)
            self.seqs = np.resize(self.seqs, size)
        self.prints[self.count : end] = prints
        self.seqs[self.count : end] = seq
        self.count = end
        self.bloom.add(second_hash(prints))

    def lookup(self, fingerprint: int) -> list[int]:
        """The log rows of recent ids with this fingerprint."""
        hits = np.flatnonzero(self.prints[: self.count] == np.uint64(fingerprint))
        return self.seqs[hits].tolist() if len(hits) else []

    def drop_through(self, last_seq: int) -> None:
        """Forget the ids of log rows up to ``last_seq`` (now in a segment)."""
        keep = int(np.searchsorted(self.seqs[: self.count], last_seq, "right"))
        rest_prints = self.prints[keep : self.count].copy()
        rest_seqs = self.seqs[keep : self.count].copy()
        self.__init__(self.capacity)  # type: ignore[misc]
        if len(rest_prints):
            self.prints = np.resize(self.prints, max(1024, len(rest_prints)))
            self.seqs = np.resize(self.seqs, max(1024, len(rest_prints)))
            self.prints[: len(rest_prints)] = rest_prints
            self.seqs[: len(rest_seqs)] = rest_seqs
            self.count = len(rest_prints)
            self.bloom.add(second_hash(rest_prints))


class SurveyIds:
    """An open survey's ids: a filter over all of them, the recent ones, the segments."""

    def __init__(self, capacity: int | None = None) -> None:
        self.bloom = BloomFilter(INITIAL_CAPACITY if capacity is None else capacity)
        self.recent = Recent()
        self.segments = Segments(SEGMENT_CAPACITY)
        self.growing: BloomFilter | None = None  # the larger filter being built, if any

    @property
    def count(self) -> int:
        """Ids stored."""
        return self.segments.count + self.recent.count

    def enter(self, prints: NDArray[np.uint64], seq: int) -> None:
        """Enter the ids of a committed log row."""
        self.bloom.add(prints)
        if self.growing is not None:
            self.growing.add(prints)
        self.recent.append(prints, seq)

    def maybe(self, prints: NDArray[np.uint64]) -> NDArray[np.intp]:
        """Positions in ``prints`` of the fingerprints that may be stored."""
        return self.bloom.maybe(prints)

    def log_rows(self, db: sqlite3.Connection, fingerprint: int) -> list[int]:
        """The log rows that hold an id with this fingerprint (and maybe a few others)."""
        probe = np.array([fingerprint], dtype=np.uint64)
        seqs = self.recent.lookup(fingerprint) if len(self.recent.bloom.maybe(
            second_hash(probe))) else []  # fmt: skip
        for _, segment in self.segments.maybe(probe):
            seqs.extend(lookup(db, segment, fingerprint))
        return seqs
