"""Which reports of a group of batches are new: filters first, then an exact comparison.

A report is stored before when its survey holds its id; it is an exact resend when the
stored report's payload (its canonical encoding without the id) is the same, and a
conflict otherwise. The batches a commit takes together are sorted as one: each survey's
fingerprints of all of them go through the survey's filters at once
(:meth:`SurveyIds.locate`), which answer "new" for almost every new id. Every other id
is resolved exactly: its fingerprint leads to the log rows that may hold it, and those
rows are read and their ids compared byte for byte (:mod:`._stored_rows`); an id that an
earlier batch of the same group also holds is compared with that batch's. A fingerprint
match is only ever a hint, so two distinct ids are never taken for one.

Once the group's transaction has committed, its new ids are entered (:meth:`IdIndex.enter`)
before the storage lock is released, so the index always answers for every committed id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import StorageError, Submission
from deniable.aggregator.storage.codec import Hasher, IdGroup, ReportIds
from deniable.aggregator.storage.sqlite.index._stored_rows import StoredRows
from deniable.aggregator.storage.sqlite.index._survey_ids import Slots, SurveyIds
from deniable.shared.errors import AlreadyExists, FailedPrecondition

__all__ = ["Claim", "GroupClaim", "IdIndex"]


@dataclass
class Claim:
    """One batch's reports sorted into new and stored before.

    Attributes:
        submission: the batch.
        total: its reports.
        prints: each report's fingerprint.
        fresh: None if every report is new, else a mask of the new ones.
        rows: per survey, the rows of its reports (ascending).
    """

    submission: Submission
    total: int
    prints: NDArray[np.uint64]
    fresh: NDArray[np.bool_] | None = None
    rows: dict[str, NDArray[np.intp]] = field(default_factory=dict)

    @property
    def stored(self) -> int:
        """How many reports are new."""
        return self.total if self.fresh is None else int(np.count_nonzero(self.fresh))

    def new_rows(self, survey_id: str) -> NDArray[np.intp]:
        """The survey's rows that are new."""
        rows = self.rows[survey_id]
        return rows if self.fresh is None else rows[self.fresh[rows]]

    def resent(self, row: int) -> None:
        """Mark the report at ``row`` as stored before."""
        if self.fresh is None:
            self.fresh = np.ones(self.total, dtype=bool)
        self.fresh[row] = False


@dataclass
class _Part:
    """One survey's reports across a group's batches, in batch order, then row order."""

    survey: SurveyIds
    owners: NDArray[np.intp]  # the batch (its place in the group) of each report
    rows: NDArray[np.intp]  # its row in that batch
    prints: NDArray[np.uint64]
    slots: Slots  # their places in the survey's filter, for entering them


@dataclass
class GroupClaim:
    """A group of batches sorted into new and stored reports.

    Attributes:
        claims: per batch, in order, its claim, or the error that refuses it.
        parts: per survey, its reports across the group.
    """

    claims: list[Claim | BaseException]
    parts: dict[str, _Part]


class IdIndex:
    """The report ids of each open survey, for telling new reports from resends."""

    def __init__(self, hasher: Hasher) -> None:
        self.hasher = hasher
        self.surveys: dict[str, SurveyIds] = {}
        self.broken = False  # set if entering ids failed: the index can no longer be trusted

    def __contains__(self, survey_id: str) -> bool:
        return survey_id in self.surveys

    def claim(self, db: sqlite3.Connection, submissions: Sequence[Submission]) -> GroupClaim:
        """Sort each batch's reports into new and stored before (stored, or earlier here).

        A batch is refused, alone, with FailedPrecondition (a survey is closed) or
        AlreadyExists (an id stored, or held by an earlier batch of the group, with
        another payload); a refused batch holds nothing for the later ones.

        Raises:
            StorageError: the index failed earlier; nothing can be claimed until a restart.
        """
        if self.broken:
            raise StorageError("the report-id index failed (see the log); restart the daemon")
        claims: list[Claim | BaseException] = []
        pieces: dict[str, list[tuple[int, NDArray[np.intp]]]] = {}
        self._fingerprint([submission.report_ids for submission in submissions])
        for owner, submission in enumerate(submissions):
            try:
                claim = self._claim_one(submission)
            except Exception as error:
                claims.append(error)
                continue
            claims.append(claim)
            for survey_id, rows in claim.rows.items():
                pieces.setdefault(survey_id, []).append((owner, rows))
        group = GroupClaim(claims, {})
        candidates: list[tuple[int, str, int, list[int], bool]] = []
        for survey_id, entries in pieces.items():
            part, found, repeated = self._locate(db, survey_id, entries, claims)
            group.parts[survey_id] = part
            for at in sorted(found.keys() | repeated):
                owner, row = int(part.owners[at]), int(part.rows[at])
                candidates.append((owner, survey_id, row, found.get(at, []), at in repeated))
        if candidates:
            self._resolve(db, claims, candidates)
        return group

    def _fingerprint(self, batches: Sequence[Sequence[bytes]]) -> None:
        """Fingerprint the ids of many batches in one pass per id length (cached on each).

        The hash is a few dozen numpy operations whatever the number of ids: a commit of
        many small batches pays them once, not once per batch.
        """
        if len(batches) < 2:
            return
        by_length: dict[int, list[IdGroup]] = {}
        for ids in batches:
            if isinstance(ids, ReportIds):
                for group in ids.groups:
                    if not group.has_prints(self.hasher):
                        by_length.setdefault(group.ids.shape[1], []).append(group)
        for groups in by_length.values():
            if len(groups) < 2:
                continue
            prints = self.hasher(np.concatenate([group.ids for group in groups]))
            start = 0
            for group in groups:
                end = start + len(group.ids)
                group.set_prints(self.hasher, prints[start:end])
                start = end

    def _claim_one(self, submission: Submission) -> Claim:
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
        for survey_id, pieces in parts.items():
            claim.rows[survey_id] = (
                pieces[0] if len(pieces) == 1 else np.sort(np.concatenate(pieces))
            )
        return claim

    def _locate(
        self,
        db: sqlite3.Connection,
        survey_id: str,
        entries: list[tuple[int, NDArray[np.intp]]],
        claims: list[Claim | BaseException],
    ) -> tuple[_Part, dict[int, list[int]], set[int]]:
        """One survey's reports of the group, through the survey's filters at once.

        Returns their part; by position, the log rows that may hold each; and the
        positions whose fingerprint another batch of the group has too.
        """
        survey = self.surveys[survey_id]
        prints_of = [_claim(claims, owner).prints for owner, _ in entries]
        if len(entries) == 1:
            (owner, rows), batch_prints = entries[0], prints_of[0]
            prints = batch_prints if len(rows) == len(batch_prints) else batch_prints[rows]
            owners = np.full(len(rows), owner, dtype=np.intp)
        else:
            rows = np.concatenate([rows for _, rows in entries])
            prints = np.concatenate([p[r] for p, (_, r) in zip(prints_of, entries, strict=True)])
            owners = np.repeat(
                np.array([owner for owner, _ in entries], dtype=np.intp),
                [len(r) for _, r in entries],
            )
        found, slots = survey.locate(db, prints)
        repeated: set[int] = set()
        if len(entries) > 1:  # each batch's ids are distinct; two batches may share some
            ordered = np.sort(prints)
            same = ordered[1:][ordered[1:] == ordered[:-1]]
            if len(same):
                repeated = set(np.flatnonzero(np.isin(prints, same)).tolist())
        return _Part(survey, owners, rows, prints, slots), found, repeated

    def _resolve(
        self,
        db: sqlite3.Connection,
        claims: list[Claim | BaseException],
        candidates: list[tuple[int, str, int, list[int], bool]],
    ) -> None:
        """Decide each candidate exactly, batch by batch in the group's order.

        A candidate is (batch, survey, row, the log rows that may hold it, whether another
        batch of the group has its fingerprint). Stored payloads are read first, all at
        once; then an earlier batch of the group that holds the same id (and was not
        refused) answers before the log does.
        """
        candidates.sort(key=lambda c: (c[0], c[2]))
        ids: list[bytes] = []
        at = 0
        while at < len(candidates):  # each batch's ids in one pass
            owner, end = candidates[at][0], at
            while end < len(candidates) and candidates[end][0] == owner:
                end += 1
            batch = _claim(claims, owner).submission.report_ids
            rows = [c[2] for c in candidates[at:end]]
            ids.extend(
                batch.take(rows) if isinstance(batch, ReportIds) else [batch[r] for r in rows]
            )
            at = end
        looked = [at for at, c in enumerate(candidates) if c[3]]
        stored: list[bytes | None] = [None] * len(candidates)
        payloads = StoredRows(db, self.hasher).payloads(
            [(ids[at], int(_claim(claims, candidates[at][0]).prints[candidates[at][2]]),
              candidates[at][3]) for at in looked]
        )  # fmt: skip
        for at, payload in zip(looked, payloads, strict=True):
            stored[at] = payload
        pending: dict[tuple[str, bytes], bytes] = {}  # new ids of earlier, accepted batches
        at = 0
        while at < len(candidates):
            owner = candidates[at][0]
            end = at
            while end < len(candidates) and candidates[end][0] == owner:
                end += 1
            try:
                pending.update(self._decide(_claim(claims, owner), candidates, ids, stored,
                                            pending, range(at, end)))  # fmt: skip
            except AlreadyExists as error:
                claims[owner] = error  # refused alone: holds nothing for later batches
            at = end

    @staticmethod
    def _decide(
        claim: Claim,
        candidates: list[tuple[int, str, int, list[int], bool]],
        ids: list[bytes],
        stored: list[bytes | None],
        pending: dict[tuple[str, bytes], bytes],
        span: range,
    ) -> dict[tuple[str, bytes], bytes]:
        """One batch's candidates: mark its resends; its new ids that later batches share.

        Raises:
            AlreadyExists: an id is stored (or held earlier in the group) with other content.
        """
        mine: dict[tuple[str, bytes], bytes] = {}
        for at in span:
            _, survey_id, row, _, shared = candidates[at]
            report_id = ids[at]
            payload = claim.submission.payloads[row]
            found = pending.get((survey_id, report_id)) if shared else None
            if found is None:
                found = stored[at]
            if found is None:
                if shared:
                    mine[survey_id, report_id] = payload
                continue
            if found != payload:
                raise AlreadyExists(
                    f"reports[{claim.submission.positions[row]}].report_id: "
                    f"{report_id.decode()!r} is already stored in survey {survey_id!r} "
                    "with different content"
                )
            claim.resent(row)
        return mine

    def enter(self, group: GroupClaim, seqs: Sequence[dict[str, int] | None]) -> None:
        """Enter a committed group's new ids (``seqs``: each batch's log row per survey).

        Called once its transaction has committed, under the storage lock; a refused
        batch has None.
        """
        for survey_id, part in group.parts.items():
            if self.surveys.get(survey_id) is not part.survey:
                continue  # closed meanwhile
            new = np.ones(len(part.prints), dtype=bool)
            rows_seq = np.zeros(len(seqs), dtype=np.int64)
            for owner, claim in enumerate(group.claims):
                where = seqs[owner]
                if not isinstance(claim, Claim) or where is None or survey_id not in where:
                    new[part.owners == owner] = False
                    continue
                rows_seq[owner] = where[survey_id]
                if claim.fresh is not None:
                    mine = part.owners == owner
                    new[mine] &= claim.fresh[part.rows[mine]]
            bloom, index, pattern = part.slots
            if new.all():
                part.survey.enter(part.prints, rows_seq[part.owners], part.slots)
            else:
                slots = (bloom, index[new], pattern[new])
                part.survey.enter(part.prints[new], rows_seq[part.owners[new]], slots)

    def first_stored(
        self, db: sqlite3.Connection, survey_id: str, ids: ReportIds, prints: NDArray[np.uint64]
    ) -> bytes | None:
        """The first of ``ids`` (with their ``prints``) the survey already holds, if any."""
        found, _ = self.surveys[survey_id].locate(db, prints)
        rows = sorted(found)
        payloads = StoredRows(db, self.hasher).payloads(
            [(ids[row], int(prints[row]), found[row]) for row in rows]
        )
        for row, payload in zip(rows, payloads, strict=True):
            if payload is not None:
                return ids[row]
        return None


def _claim(claims: list[Claim | BaseException], owner: int) -> Claim:
    claim = claims[owner]
    assert isinstance(claim, Claim)
    return claim
