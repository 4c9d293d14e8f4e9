"""The in-memory index of stored report ids per open survey, for idempotent resends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import Submission
from deniable.aggregator.storage._id_table import IdTable
from deniable.aggregator.storage._ids import ReportIds
from deniable.shared.errors import AlreadyExists, FailedPrecondition

__all__ = ["Claim", "IdIndex"]

_ROW_BITS = 20  # a reference is (batch number << 20) | row; batches hold at most 10,000
_ROW_MASK = (1 << _ROW_BITS) - 1


@dataclass
class _Survey:
    """One open survey's ids (a table per id length) and the payloads of its batches."""

    tables: dict[int, IdTable] = field(default_factory=dict)
    batches: list[Sequence[bytes]] = field(default_factory=list)

    def table(self, length: int) -> IdTable:
        table = self.tables.get(length)
        if table is None:
            table = self.tables[length] = IdTable(length)
        return table


@dataclass
class Claim:
    """What claiming a submission's ids did, so that it can be undone.

    Attributes:
        total: the submission's reports.
        fresh: None if every report is new, else a mask of the new ones.
        marks: per survey touched, its batch count and table sizes before the claim.
    """

    total: int
    fresh: NDArray[np.bool_] | None = None
    marks: list[tuple[_Survey, int, list[tuple[IdTable, int]]]] = field(default_factory=list)

    @property
    def stored(self) -> int:
        """How many reports the claim found new."""
        return self.total if self.fresh is None else int(np.count_nonzero(self.fresh))


class IdIndex:
    """The ids of each open survey's stored (or claimed) reports, with their payloads.

    Ids sit in compiled open-addressing tables (:class:`IdTable`), one per survey and id
    length; each id refers to its batch's payloads (a report's canonical encoding without
    its id), which tell an exact resend from a different report that reuses an id. A
    uniform yes/no batch keeps one byte of payload per report, so an id costs its own
    bytes plus 33 to 49 bytes. Closing a survey frees its part.
    """

    def __init__(self) -> None:
        self.surveys: dict[str, _Survey] = {}

    def open(self, survey_id: str) -> None:
        """Start an empty index for a new open survey."""
        self.surveys[survey_id] = _Survey()

    def forget(self, survey_id: str) -> None:
        """Drop a (closed) survey's ids."""
        self.surveys.pop(survey_id, None)

    def __contains__(self, survey_id: str) -> bool:
        return survey_id in self.surveys

    def count(self, survey_id: str) -> int:
        """How many ids the survey's index holds."""
        return sum(table.used for table in self.surveys[survey_id].tables.values())

    def load(self, survey_id: str, ids: ReportIds, payloads: Sequence[bytes]) -> None:
        """Enter a stored batch, read back from the log.

        Raises:
            ValueError: an id is already in the index (the log repeats a report).
        """
        claim = Claim(total=len(ids))
        self._enter(self.surveys[survey_id], np.arange(len(ids)), ids, payloads, claim, None)

    def claim(self, submission: Submission) -> Claim:
        """Enter the submission's new ids; which of its reports are new.

        On error nothing stays claimed; the caller releases the claim if the batch is not
        committed. Claims are undone in the reverse order they were made.

        Raises:
            FailedPrecondition: a survey is closed.
            AlreadyExists: an id is stored with a different payload.
        """
        claim = Claim(total=len(submission.report_ids))
        try:
            self._claim(submission, claim)
        except BaseException:
            self.release(claim)
            raise
        return claim

    def _claim(self, submission: Submission, claim: Claim) -> None:
        ids = submission.report_ids
        if not isinstance(ids, ReportIds):
            ids = ReportIds.of(list(ids))
        by_survey: dict[str, list[NDArray[np.intp]]] = {}
        for group in submission.groups:
            if group.survey_id not in self.surveys:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
            by_survey.setdefault(group.survey_id, []).append(group.rows)
        for survey_id, parts in by_survey.items():
            rows = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
            self._enter(self.surveys[survey_id], rows, ids, submission.payloads, claim, submission)

    @staticmethod
    def _enter(
        survey: _Survey,
        rows: NDArray[np.intp],
        ids: ReportIds,
        payloads: Sequence[bytes],
        claim: Claim,
        submission: Submission | None,
    ) -> None:
        """Enter the ids at ``rows`` (ascending) as one batch of ``survey``."""
        if len(ids) > _ROW_MASK + 1:
            raise ValueError(f"a batch of {len(ids)} reports exceeds the index's {_ROW_MASK + 1}")
        batch = len(survey.batches)
        survey.batches.append(payloads)
        tables: list[tuple[IdTable, int]] = []
        claim.marks.append((survey, batch, tables))
        everything = len(rows) == len(ids)
        for group in ids.groups:
            keep = slice(None) if everything else np.isin(group.rows, rows)
            group_rows = group.rows[keep]
            if not len(group_rows):
                continue
            table = survey.table(group.ids.shape[1])
            tables.append((table, table.used))
            refs = (batch << _ROW_BITS) | group_rows.astype(np.int64)
            found = table.claim(group.ids[keep], group.fingerprints[keep], refs)
            for at in np.flatnonzero(found >= 0).tolist():  # rare: an id seen before
                row, ref = int(group_rows[at]), int(found[at])
                if submission is None:
                    raise ValueError(f"report id {ids[row].decode()!r} appears twice in the log")
                if ref >> _ROW_BITS == batch:
                    raise ValueError(f"report id {ids[row].decode()!r} repeats in one batch")
                if survey.batches[ref >> _ROW_BITS][ref & _ROW_MASK] != payloads[row]:
                    raise AlreadyExists(
                        f"reports[{submission.positions[row]}].report_id: "
                        f"{ids[row].decode()!r} is already stored in survey "
                        f"{_survey_of(submission, row)!r} with different content"
                    )
                if claim.fresh is None:
                    claim.fresh = np.ones(claim.total, dtype=bool)
                claim.fresh[row] = False

    @staticmethod
    def release(claim: Claim) -> None:
        """Forget everything a claim entered (its batch was not stored)."""
        for survey, batch, tables in reversed(claim.marks):
            for table, used in reversed(tables):
                table.truncate(used)
            del survey.batches[batch:]
        claim.marks = []


def _survey_of(submission: Submission, row: int) -> str:
    for group in submission.groups:
        at = int(np.searchsorted(group.rows, row))
        if at < len(group.rows) and group.rows[at] == row:
            return group.survey_id
    raise AssertionError(f"row {row} is in no group")  # pragma: no cover
