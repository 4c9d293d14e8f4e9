"""Sealed segments of a survey's report ids: sorted fingerprints on disk, filters in memory.

A segment covers a run of consecutive log rows of one survey. On disk it is a row of
``id_segments`` (the last log row it covers, how many ids, the first fingerprint of each
chunk, and its Bloom filter) and its chunks in ``id_chunks``: ``CHUNK`` fingerprints in
ascending order with the log row of each. A segment is written once, sequentially, in
one transaction, and never changes. To find the log rows that may hold a fingerprint,
one chunk is read (the fences say which); the segments' filters, stacked in one matrix,
say which segments to look in at all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage.sqlite.index._filter import BloomFilter

__all__ = [
    "CHUNK",
    "Sealed",
    "Segment",
    "Segments",
    "delete_segments",
    "load_segments",
    "lookup",
    "prepare_segment",
    "segment_prints",
    "write_segment",
]

CHUNK = 1024  # fingerprints per chunk row: 8 KB of fingerprints and 8 KB of log rows
_ORDER_BITS = 20  # positions packed into fingerprints while sorting a segment
_CHUNK_BITS = 20  # a chunk's rowid is (segment << 20) | index
_QUERY_CHUNKS = 500  # chunks read per query (under SQLite's limit of bound parameters)


@dataclass(frozen=True)
class Segment:
    """One sealed segment: its number, the last log row it covers, its ids and fences."""

    number: int
    last_seq: int
    count: int
    fences: NDArray[np.uint64]


@dataclass(frozen=True)
class Sealed:
    """A segment ready to be written: sorted fingerprints, their log rows, its filter."""

    prints: NDArray[np.uint64]
    seqs: NDArray[np.int64]
    bloom: BloomFilter
    last_seq: int


def prepare_segment(
    prints: NDArray[np.uint64],
    seqs: NDArray[np.int64],
    capacity: int,
    bloom: BloomFilter | None = None,
) -> Sealed:
    """Sort the ids of consecutive log rows, with their filter (no database access).

    ``bloom``, if given, is a second-level filter of ``capacity`` that holds at least
    these ids (the recent ids' own, copied); else one is built.
    """
    if bloom is None:
        bloom = BloomFilter(capacity, second=True)
        bloom.add(prints)
    order = _sorting_order(prints)
    return Sealed(prints[order], seqs[order], bloom, int(seqs.max()))


def _sorting_order(prints: NDArray[np.uint64]) -> NDArray[np.intp]:
    """The permutation that sorts ``prints``.

    A plain sort of 64-bit words is several times faster than an argsort, so each
    fingerprint's low ``_ORDER_BITS`` bits are replaced by its position, the words
    sorted, and the positions read back. Fingerprints equal in their other bits (rare)
    may come out of order in their low bits; then a full argsort decides.
    """
    if len(prints) > 1 << _ORDER_BITS:
        return np.argsort(prints)
    positions = np.arange(len(prints), dtype=np.uint64)
    keyed = np.sort((prints & ~np.uint64((1 << _ORDER_BITS) - 1)) | positions)
    order = (keyed & np.uint64((1 << _ORDER_BITS) - 1)).astype(np.intp)
    ordered = prints[order]
    if (ordered[1:] < ordered[:-1]).any():
        return np.argsort(prints)
    return order


def write_segment(db: sqlite3.Connection, survey_id: str, sealed: Sealed) -> Segment:
    """Store a prepared segment (in the caller's transaction)."""
    prints, seqs = sealed.prints.astype("<u8"), sealed.seqs.astype("<i8")
    fences = sealed.prints[::CHUNK].copy()
    (number,) = db.execute("SELECT COALESCE(MAX(segment), 0) + 1 FROM id_segments").fetchone()
    db.execute(
        "INSERT INTO id_segments (segment, survey_id, last_seq, count, fences, filter) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            number,
            survey_id,
            sealed.last_seq,
            len(prints),
            fences.astype("<u8").tobytes(),
            sealed.bloom.words.astype("<u8").tobytes(),
        ),
    )
    db.executemany(
        "INSERT INTO id_chunks (chunk, prints, seqs) VALUES (?, ?, ?)",
        (
            (
                (number << _CHUNK_BITS) | index,
                prints[start : start + CHUNK].tobytes(),
                seqs[start : start + CHUNK].tobytes(),
            )
            for index, start in enumerate(range(0, len(prints), CHUNK))
        ),
    )
    return Segment(number, sealed.last_seq, len(prints), fences)


def load_segments(
    db: sqlite3.Connection, survey_id: str, capacity: int
) -> Iterator[tuple[Segment, BloomFilter]]:
    """A survey's segments with their filters, oldest first, one row at a time.

    The filter's words are a view of the row's bytes: the caller copies them.
    """
    cursor = db.execute(
        "SELECT segment, last_seq, count, fences, filter FROM id_segments "
        "WHERE survey_id = ? ORDER BY segment",
        (survey_id,),
    )
    for number, last_seq, count, fences, words in cursor:
        bloom = BloomFilter.of_words(np.frombuffer(words, "<u8"), capacity, count, second=True)
        fence_array = np.frombuffer(fences, "<u8").astype(np.uint64)
        yield Segment(number, last_seq, count, fence_array), bloom


def segment_prints(db: sqlite3.Connection, segment: Segment) -> NDArray[np.uint64]:
    """All of the segment's fingerprints, in one array (one query)."""
    low = segment.number << _CHUNK_BITS
    chunks = db.execute(
        "SELECT prints FROM id_chunks WHERE chunk BETWEEN ? AND ? ORDER BY chunk",
        (low, low | ((1 << _CHUNK_BITS) - 1)),
    ).fetchall()
    return np.frombuffer(b"".join(prints for (prints,) in chunks), "<u8")


def delete_segments(db: sqlite3.Connection, survey_id: str) -> None:
    """Remove a survey's segments (in the caller's transaction)."""
    numbers = [n for (n,) in db.execute(
        "SELECT segment FROM id_segments WHERE survey_id = ?", (survey_id,)
    )]  # fmt: skip
    for number in numbers:
        low = number << _CHUNK_BITS
        db.execute(
            "DELETE FROM id_chunks WHERE chunk BETWEEN ? AND ?",
            (low, low | ((1 << _CHUNK_BITS) - 1)),
        )
    db.execute("DELETE FROM id_segments WHERE survey_id = ?", (survey_id,))


class Segments:
    """A survey's sealed segments and their filters, stacked for one probe per fingerprint."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.list: list[Segment] = []
        width = len(BloomFilter(capacity, second=True).words)  # every segment filter's
        self._words = np.zeros((0, width), dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.list)

    @property
    def count(self) -> int:
        """Ids in all segments."""
        return sum(segment.count for segment in self.list)

    @property
    def last_seq(self) -> int:
        """The last log row the segments cover (0 without segments)."""
        return self.list[-1].last_seq if self.list else 0

    def add(self, segment: Segment, bloom: BloomFilter) -> None:
        """Append a sealed segment and its filter."""
        if len(self.list) == len(self._words):
            grown = np.zeros((max(4, 2 * len(self._words)), self._words.shape[1]), np.uint64)
            grown[: len(self._words)] = self._words
            self._words = grown
        self._words[len(self.list)] = bloom.words
        self.list.append(segment)

    def maybe(
        self, index: NDArray[np.uint64], pattern: NDArray[np.uint64]
    ) -> list[tuple[int, Segment]]:
        """(position, segment) pairs whose segment filter may hold a fingerprint.

        ``index`` and ``pattern`` are the fingerprints' second-level slots
        (:meth:`BloomFilter.slots`) in a filter of the segments' common capacity.
        """
        if not self.list:
            return []
        found = self._words[: len(self.list)][:, index]
        hits = np.argwhere((found & pattern) == pattern)  # (segment, position) pairs
        return [(int(at), self.list[int(seg)]) for seg, at in hits.tolist()]


def lookup(
    db: sqlite3.Connection, segment: Segment, fingerprints: NDArray[np.uint64]
) -> dict[int, list[int]]:
    """The log rows of the segment's ids with each of these fingerprints (found ones only).

    The chunks that may hold them (the fences say which) are read in one query, and each
    chunk is searched for all of its fingerprints at once, so looking up a resent batch's
    thousand ids costs about what looking up one does.
    """
    keys = np.unique(np.asarray(fingerprints, dtype=np.uint64))
    first = np.maximum(np.searchsorted(segment.fences, keys, "left") - 1, 0)
    last = np.maximum(np.searchsorted(segment.fences, keys, "right") - 1, 0)
    chunks = np.unique(np.concatenate([first, last]))
    low = segment.number << _CHUNK_BITS
    found: dict[int, list[int]] = {}
    for start in range(0, len(chunks), _QUERY_CHUNKS):
        wanted = [low | int(chunk) for chunk in chunks[start : start + _QUERY_CHUNKS].tolist()]
        marks = ",".join("?" * len(wanted))
        for prints, stored in db.execute(
            f"SELECT prints, seqs FROM id_chunks WHERE chunk IN ({marks})", wanted
        ):
            column = np.frombuffer(prints, "<u8")
            begin = np.searchsorted(column, keys, "left")
            end = np.searchsorted(column, keys, "right")
            hit = np.flatnonzero(end > begin)
            if not len(hit):
                continue
            seqs = np.frombuffer(stored, "<i8")
            for at in hit.tolist():
                found.setdefault(int(keys[at]), []).extend(
                    seqs[int(begin[at]) : int(end[at])].tolist()
                )
    return found
