"""The id index's two background jobs, sealing and filter growth, each in three steps.

A job is taken under the storage lock (a snapshot of what it works on), built without it
(sorting, or reading fingerprints through its own connection), and installed under the
lock again. While it is built, batches commit and enter their ids into the index as
usual: nothing a job builds is shared with them until it is installed, and installing
accounts for what they entered meanwhile. Splitting the steps lets the maintenance
thread hold the lock only briefly, and lets tests interleave commits with any step.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage.sqlite._transaction import transaction
from deniable.aggregator.storage.sqlite.index._filter import BloomFilter
from deniable.aggregator.storage.sqlite.index._id_index import IdIndex
from deniable.aggregator.storage.sqlite.index._segments import (
    Sealed,
    Segment,
    prepare_segment,
    segment_prints,
    write_segment,
)
from deniable.aggregator.storage.sqlite.index._survey_ids import SEGMENT_CAPACITY, SurveyIds

__all__ = ["Growth", "Seal", "fill"]


@dataclass
class Seal:
    """Writing a survey's recent ids as a segment, then forgetting them but for its filter.

    The segment is committed with ``synchronous=NORMAL``: it is derived from the log, and
    the next batch's commit, with ``FULL``, makes it durable anyway; if it is lost, its
    ids are simply recent again at the next start.
    """

    survey_id: str
    survey: SurveyIds
    prints: NDArray[np.uint64]
    seqs: NDArray[np.int64]
    bloom: BloomFilter
    sealed: Sealed | None = None

    @classmethod
    def take(cls, index: IdIndex, survey_id: str) -> Seal | None:
        """Under the lock: a copy of the survey's recent ids; None if closed or none."""
        survey = index.surveys.get(survey_id)
        if survey is None or not survey.recent.count:
            return None
        count = survey.recent.count
        recent = survey.recent.bloom
        return cls(
            survey_id,
            survey,
            survey.recent.prints[:count].copy(),
            survey.recent.seqs[:count].copy(),
            BloomFilter.of_words(recent.words.copy(), recent.capacity, count, second=True),
        )

    def build(self) -> None:
        """Without the lock: sort the ids (no database access)."""
        self.sealed = prepare_segment(self.prints, self.seqs, SEGMENT_CAPACITY, self.bloom)

    def install(self, db: sqlite3.Connection, index: IdIndex) -> bool:
        """Under the lock: write the segment and drop its ids from the recent ones.

        False if the survey was closed meanwhile (nothing written).
        """
        assert self.sealed is not None, "build() first"
        if index.surveys.get(self.survey_id) is not self.survey:
            return False
        db.execute("PRAGMA synchronous=NORMAL")
        try:
            with transaction(db):
                segment = write_segment(db, self.survey_id, self.sealed)
        finally:
            db.execute("PRAGMA synchronous=FULL")
        self.survey.segments.add(segment, self.sealed.bloom)
        self.survey.recent.drop_through(segment.last_seq)
        return True


@dataclass
class Growth:
    """Replacing a survey's filter by one of twice the capacity.

    The new filter is built from what the survey held at the snapshot (its segments'
    fingerprints, read from the database, and its recent ids), by one thread alone;
    the ids entered meanwhile, the recent ids after the snapshot's count, are added when
    it is installed. If ids were sealed meanwhile (they moved out of the recent ids),
    it is not installed, and the next run builds one again.
    """

    survey_id: str
    survey: SurveyIds
    grown: BloomFilter
    segments: list[Segment]
    recent: NDArray[np.uint64]
    seals: int

    @classmethod
    def take(cls, index: IdIndex, survey_id: str) -> Growth | None:
        """Under the lock: what the survey holds now, or None if it is closed."""
        survey = index.surveys.get(survey_id)
        if survey is None:
            return None
        return cls(
            survey_id,
            survey,
            BloomFilter(2 * max(survey.count, survey.bloom.capacity)),
            list(survey.segments.list),
            survey.recent.prints[: survey.recent.count].copy(),
            survey.recent.seals,
        )

    def build(self, db: sqlite3.Connection) -> None:
        """Without the lock, through a connection of its own: fill the new filter."""
        fill(db, self.grown, self.segments, self.recent)

    def install(self, index: IdIndex) -> bool:
        """Under the lock: add the ids entered since the snapshot, then replace the filter.

        False if the survey was closed, or ids were sealed, meanwhile (not installed).
        """
        survey = self.survey
        if index.surveys.get(self.survey_id) is not survey or survey.recent.seals != self.seals:
            return False
        self.grown.add(survey.recent.prints[len(self.recent) : survey.recent.count])
        survey.bloom = self.grown
        return True


def fill(
    db: sqlite3.Connection,
    bloom: BloomFilter,
    segments: list[Segment],
    recent: NDArray[np.uint64],
    lock: threading.Lock | None = None,
) -> None:
    """Add the segments' and recent fingerprints, yielding the interpreter in between.

    (A background thread holds the GIL while it runs Python code; between segments it
    lets the threads that answer requests go first.) With ``lock``, each segment is read
    under it (for a connection the batches use too).
    """
    for segment in segments:
        if lock is None:
            bloom.add(segment_prints(db, segment))
        else:
            with lock:
                bloom.add(segment_prints(db, segment))
        time.sleep(0)
    bloom.add(recent)
