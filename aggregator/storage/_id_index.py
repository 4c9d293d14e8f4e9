"""Which reports of a batch are new: filters first, then an exact comparison with the log.

A report is stored before when its survey holds its id; it is an exact resend when the
stored report's payload (its canonical encoding without the id) is the same, and a
conflict otherwise. The per-survey filters (:mod:`._survey_ids`) answer "new" for almost
every new id at once. Every other id is resolved exactly: its fingerprint leads to the
log rows that may hold it (recent ids in memory, sealed segments on disk), and those log
rows are read and their ids compared byte for byte. A fingerprint match is only ever a
hint, so two distinct ids are never taken for one. Batches committed in the same
transaction are compared with each other in memory (:class:`Claim`).
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import StorageError, Submission
from deniable.aggregator.storage._decode import decode_log
from deniable.aggregator.storage._fingerprint import Hasher
from deniable.aggregator.storage._ids import ReportIds
from deniable.aggregator.storage._survey_ids import Slots, SurveyIds
from deniable.shared.errors import AlreadyExists, FailedPrecondition

__all__ = ["Claim", "IdIndex"]


@dataclass
class Claim:
    """One batch's reports sorted into new and stored before, not yet entered.

    Attributes:
        submission: the batch.
        total: its reports.
        prints: each report's fingerprint.
        fresh: None if every report is new, else a mask of the new ones.
        rows: per survey, the rows of its reports (ascending).
        slots: per survey, its reports' places in the survey's filter.
    """

    submission: Submission
    total: int
    prints: NDArray[np.uint64]
    fresh: NDArray[np.bool_] | None = None
    rows: dict[str, NDArray[np.intp]] = field(default_factory=dict)
    slots: dict[str, Slots] = field(default_factory=dict)

    @property
    def stored(self) -> int:
        """How many reports are new."""
        return self.total if self.fresh is None else int(np.count_nonzero(self.fresh))

    def new_rows(self, survey_id: str) -> NDArray[np.intp]:
        """The survey's rows that are new."""
        rows = self.rows[survey_id]
        return rows if self.fresh is None else rows[self.fresh[rows]]

    def new_slots(self, survey_id: str) -> Slots:
        """The filter places of the survey's new reports."""
        bloom, index, pattern = self.slots[survey_id]
        if self.fresh is None:
            return bloom, index, pattern
        keep = self.fresh[self.rows[survey_id]]
        return bloom, index[keep], pattern[keep]


class _StoredRows:
    """Log rows read while resolving one batch, decoded once each."""

    def __init__(self, db: sqlite3.Connection, hasher: Hasher) -> None:
        self.db, self.hasher = db, hasher
        self.rows: dict[int, tuple[ReportIds, Sequence[bytes], list[NDArray[np.uint64]]]] = {}

    def payload(self, seq: int, report_id: bytes, fingerprint: int) -> bytes | None:
        """The stored payload of ``report_id`` in log row ``seq``, or None if not there."""
        row = self.rows.get(seq)
        if row is None:
            (data,) = self.db.execute("SELECT reports FROM log WHERE seq = ?", (seq,)).fetchone()
            ids, payloads = decode_log(bytes(data))
            row = self.rows[seq] = (
                ids,
                payloads,
                [group.prints_for(self.hasher) for group in ids.groups],
            )
        ids, payloads, prints = row
        for group, group_prints in zip(ids.groups, prints, strict=True):
            if group.ids.shape[1] != len(report_id):
                continue
            for at in np.flatnonzero(group_prints == np.uint64(fingerprint)).tolist():
                if group.ids[at].tobytes() == report_id:
                    return payloads[int(group.rows[at])]
        return None


class IdIndex:
    """The report ids of each open survey, for telling new reports from resends."""

    def __init__(self, hasher: Hasher) -> None:
        self.hasher = hasher
        self.surveys: dict[str, SurveyIds] = {}
        self.unentered: deque[tuple[Claim, dict[str, int]]] = deque()
        self.broken = False  # set if entering ids failed: the index can no longer be trusted

    def __contains__(self, survey_id: str) -> bool:
        return survey_id in self.surveys

    def claim(
        self, db: sqlite3.Connection, submission: Submission, pending: Sequence[Claim]
    ) -> Claim:
        """Sort a batch's reports into new and stored before (stored or ``pending``).

        Raises:
            FailedPrecondition: a survey is closed.
            AlreadyExists: an id is stored (or pending) with a different payload.
        """
        if self.broken:
            raise StorageError("the report-id index failed (see the log); restart the daemon")
        self.catch_up()
        ids = submission.report_ids
        if not isinstance(ids, ReportIds):
            ids = ReportIds.of(list(ids))
        if len(ids.groups) == 1 and len(ids.groups[0].rows) == len(ids):
            prints = ids.groups[0].prints_for(self.hasher)  # rows 0..n-1, in order
        else:
            prints = np.empty(len(ids), dtype=np.uint64)
            for id_group in ids.groups:
                prints[id_group.rows] = id_group.prints_for(self.hasher)
        claim = Claim(submission, len(ids), prints)
        parts: dict[str, list[NDArray[np.intp]]] = {}
        for group in submission.groups:
            if group.survey_id not in self.surveys:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
            parts.setdefault(group.survey_id, []).append(group.rows)
        stored = _StoredRows(db, self.hasher)
        for survey_id, pieces in parts.items():
            rows = pieces[0] if len(pieces) == 1 else np.sort(np.concatenate(pieces))
            claim.rows[survey_id] = rows
            survey_prints = prints if len(rows) == len(prints) else prints[rows]
            candidates, claim.slots[survey_id] = self.surveys[survey_id].locate(db, survey_prints)
            for other in pending:
                if survey_id in other.rows:
                    theirs = other.prints[other.new_rows(survey_id)]
                    for at in np.flatnonzero(np.isin(survey_prints, theirs)).tolist():
                        candidates.setdefault(at, [])
            for at in sorted(candidates):
                row = int(rows[at])
                seqs = candidates[at]
                if self._stored_before(claim, survey_id, row, seqs, pending, stored, ids):
                    if claim.fresh is None:
                        claim.fresh = np.ones(claim.total, dtype=bool)
                    claim.fresh[row] = False
        return claim

    @staticmethod
    def _stored_before(
        claim: Claim,
        survey_id: str,
        row: int,
        seqs: list[int],
        pending: Sequence[Claim],
        stored: _StoredRows,
        ids: ReportIds,
    ) -> bool:
        """Whether the report at ``row`` is an exact resend; AlreadyExists if it conflicts.

        ``seqs`` are the log rows that may hold it.
        """
        report_id = ids[row]
        fingerprint = int(claim.prints[row])
        payload = claim.submission.payloads[row]
        found: bytes | None = None
        for other in pending:
            if found is None and survey_id in other.rows:
                found = _pending_payload(other, survey_id, report_id, fingerprint)
        for seq in seqs:
            if found is not None:
                break
            found = stored.payload(seq, report_id, fingerprint)
        if found is None:
            return False
        if found != payload:
            raise AlreadyExists(
                f"reports[{claim.submission.positions[row]}].report_id: "
                f"{report_id.decode()!r} is already stored in survey {survey_id!r} "
                "with different content"
            )
        return True

    def first_stored(
        self, db: sqlite3.Connection, survey_id: str, ids: ReportIds, prints: NDArray[np.uint64]
    ) -> bytes | None:
        """The first of ``ids`` (with their ``prints``) the survey already holds, if any."""
        self.catch_up()
        stored = _StoredRows(db, self.hasher)
        for row, seqs in sorted(self.surveys[survey_id].locate(db, prints)[0].items()):
            report_id, fingerprint = ids[row], int(prints[row])
            for seq in seqs:
                if stored.payload(seq, report_id, fingerprint) is not None:
                    return report_id
        return None

    def committed(self, claim: Claim, seqs: dict[str, int]) -> None:
        """Note a batch's new ids (``seqs``: each survey's log row), to be entered.

        They are entered by :meth:`catch_up` once the transaction has committed (the
        storage does it right after ``COMMIT``; :meth:`mark` and :meth:`rewind` forget
        them if it fails); whoever reads the index calls :meth:`catch_up` first, so
        nothing is missed.
        """
        self.unentered.append((claim, seqs))

    def mark(self) -> dict[str, tuple[int, int, int]]:
        """The index's size before the batches noted by :meth:`committed` are entered."""
        marks = {}
        for _, seqs in self.unentered:
            for survey_id in seqs:
                survey = self.surveys.get(survey_id)
                if survey is not None and survey_id not in marks:
                    marks[survey_id] = (
                        survey.recent.count,
                        survey.bloom.count,
                        survey.recent.bloom.count,
                    )
        return marks

    def rewind(self, marks: dict[str, tuple[int, int, int]]) -> None:
        """Forget the ids entered since :meth:`mark` (their transaction failed).

        The recent ids are cut back; bits the failed batches set in the filters stay,
        which only makes a few more ids look like "maybe".
        """
        self.unentered.clear()
        for survey_id, (recent, bloom, recent_bloom) in marks.items():
            survey = self.surveys.get(survey_id)
            if survey is not None:
                survey.recent.count = recent
                survey.bloom.count = bloom
                survey.recent.bloom.count = recent_bloom

    def catch_up(self) -> None:
        """Enter every committed batch not entered yet, in commit order, all at once."""
        if not self.unentered:
            return
        entries: dict[str, list[tuple[NDArray[np.uint64], int, Slots]]] = {}
        while self.unentered:
            claim, seqs = self.unentered.popleft()
            for survey_id, seq in seqs.items():
                entries.setdefault(survey_id, []).append(
                    (claim.prints[claim.new_rows(survey_id)], seq, claim.new_slots(survey_id))
                )
        for survey_id, rows in entries.items():
            survey = self.surveys.get(survey_id)
            if survey is None:
                continue
            if len(rows) == 1:
                survey.enter(*rows[0])
                continue
            prints = np.concatenate([p for p, _, _ in rows])
            counts = [len(p) for p, _, _ in rows]
            each = np.repeat(np.array([s for _, s, _ in rows], dtype=np.int64), counts)
            blooms = {id(slots[0]) for _, _, slots in rows}
            merged: Slots | None = None
            if len(blooms) == 1:
                merged = (
                    rows[0][2][0],
                    np.concatenate([slots[1] for _, _, slots in rows]),
                    np.concatenate([slots[2] for _, _, slots in rows]),
                )
            survey.enter(prints, each, merged)


def _pending_payload(
    claim: Claim, survey_id: str, report_id: bytes, fingerprint: int
) -> bytes | None:
    """The payload of ``report_id`` among a pending batch's new reports of the survey."""
    rows = claim.new_rows(survey_id)
    ids = claim.submission.report_ids
    for at in np.flatnonzero(claim.prints[rows] == np.uint64(fingerprint)).tolist():
        row = int(rows[at])
        if ids[row] == report_id:
            payload: bytes = claim.submission.payloads[row]
            return payload
    return None
