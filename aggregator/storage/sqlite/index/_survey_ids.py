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

from deniable.aggregator.storage.sqlite.index._filter import BloomFilter
from deniable.aggregator.storage.sqlite.index._segments import Segment, Segments, lookup

__all__ = ["INITIAL_CAPACITY", "SEGMENT_IDS", "Recent", "SurveyIds"]

SEGMENT_IDS = 1 << 17  # recent ids that are sealed into a segment together
SEGMENT_CAPACITY = SEGMENT_IDS + 16_384  # what a segment's filter is sized for
INITIAL_CAPACITY = 1 << 16  # ids the filter of a new survey is sized for

Slots = tuple[BloomFilter, NDArray[np.uint64], NDArray[np.uint64]]  # filter, words, patterns


class Recent:
    """The ids of log rows after the last segment: fingerprints and log rows, in log order.

    Its arrays are sized for a segment once and reused after each seal, so entering ids
    touches no new memory (on a virtual machine, first-touch pages cost far more than the
    work done on them).
    """

    def __init__(self, capacity: int = SEGMENT_CAPACITY) -> None:
        self.capacity = capacity
        self.prints = np.empty(capacity, dtype=np.uint64)
        self.seqs = np.empty(capacity, dtype=np.int64)
        self.count = 0
        self.seals = 0  # times ids were dropped into a segment: entries before a seal moved
        self.bloom = BloomFilter(capacity, second=True)

    def append(self, prints: NDArray[np.uint64], seq: int | NDArray[np.int64]) -> None:
        """Enter the ids of one log row (or of several, with one ``seq`` each)."""
        end = self.count + len(prints)
        if end > len(self.prints):  # sealing is behind: grow
            size = max(end, 2 * len(self.prints))
            self.prints = np.resize(self.prints, size)
            self.seqs = np.resize(self.seqs, size)
        self.prints[self.count : end] = prints
        self.seqs[self.count : end] = seq
        self.count = end
        self.bloom.add(prints)

    def lookup(self, fingerprints: NDArray[np.uint64]) -> dict[int, list[int]]:
        """The log rows of recent ids with each of these fingerprints (found ones only).

        One pass over the recent ids for all of them (a resent batch's thousand ids cost
        about one pass, not a thousand).
        """
        prints = self.prints[: self.count]
        if len(fingerprints) == 1:
            hits = np.flatnonzero(prints == fingerprints[0])
        else:  # numpy compares one by one when there are few, else sorts
            hits = np.flatnonzero(np.isin(prints, fingerprints))
        found: dict[int, list[int]] = {}
        for fingerprint, seq in zip(prints[hits].tolist(), self.seqs[hits].tolist(), strict=True):
            found.setdefault(fingerprint, []).append(seq)
        return found

    def drop_through(self, last_seq: int) -> None:
        """Forget the ids of log rows up to ``last_seq`` (now in a segment).

        The filter is cleared and reused: the segment keeps a copy of its words.
        """
        keep = int(np.searchsorted(self.seqs[: self.count], last_seq, "right"))
        prints = self.prints[keep : self.count].copy()
        seqs = self.seqs[keep : self.count].copy()
        self.count = 0
        self.seals += 1
        self.bloom.words.fill(0)
        self.bloom.count = 0
        if len(prints):
            self.append(prints, seqs)


class SurveyIds:
    """An open survey's ids: a filter over all of them, the recent ones, the segments."""

    def __init__(self, capacity: int | None = None) -> None:
        self.bloom = BloomFilter(INITIAL_CAPACITY if capacity is None else capacity)
        self.recent = Recent()
        self.segments = Segments(SEGMENT_CAPACITY)

    @property
    def count(self) -> int:
        """Ids stored."""
        return self.segments.count + self.recent.count

    def enter(
        self, prints: NDArray[np.uint64], seq: int | NDArray[np.int64], slots: Slots | None = None
    ) -> None:
        """Enter the ids of committed log rows (``seq``: the row, or each id's row).

        ``slots`` are the ids' places in the survey's filter, as :meth:`locate` found them
        (used if the filter was not replaced since).
        """
        if slots is not None and slots[0] is self.bloom:
            self.bloom.add_slots(slots[1], slots[2])
        else:
            self.bloom.add(prints)
        self.recent.append(prints, seq)

    def locate(
        self, db: sqlite3.Connection, prints: NDArray[np.uint64]
    ) -> tuple[dict[int, list[int]], Slots]:
        """The log rows that may hold each of ``prints`` that may be stored, and slots.

        The slots are the fingerprints' places in the survey's filter (for :meth:`enter`).
        The survey's filter answers for every fingerprint at once; the few it lets
        through are tried against the recent ids' filter and the segments' filters,
        again all at once, and only then looked up exactly (in memory, or in one chunk
        of a segment).
        """
        found: dict[int, list[int]] = {}
        index, pattern = self.bloom.slots(prints)
        slots = (self.bloom, index, pattern)
        present = self.bloom.words.take(index)
        np.bitwise_and(present, pattern, out=present)
        maybe = np.flatnonzero(present == pattern)
        if not len(maybe):
            return found, slots
        second = self.recent.bloom.slots(prints[maybe])  # every segment filter's too
        present = self.recent.bloom.words.take(second[0])
        np.bitwise_and(present, second[1], out=present)
        recent = np.flatnonzero(present == second[1])
        if len(recent):
            hits = self.recent.lookup(prints[maybe[recent]])
            for at in recent.tolist():
                seqs = hits.get(int(prints[maybe[at]]))
                if seqs:
                    found.setdefault(int(maybe[at]), []).extend(seqs)
        by_segment: dict[int, tuple[Segment, list[int]]] = {}
        for at, segment in self.segments.maybe(*second):
            by_segment.setdefault(segment.number, (segment, []))[1].append(at)
        for segment, ats in by_segment.values():
            hits = lookup(db, segment, prints[maybe[ats]])
            for at in ats:
                seqs = hits.get(int(prints[maybe[at]]))
                if seqs:
                    found.setdefault(int(maybe[at]), []).extend(seqs)
        return found, slots
