"""The in-memory index of stored report ids per open survey, for idempotent resends."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from aggregator._errors import AlreadyExists, FailedPrecondition
from aggregator.storage._base import Submission

__all__ = ["Claim", "IdIndex"]


@dataclass
class Claim:
    """What claiming a submission's ids did.

    Attributes:
        total: the submission's reports.
        fresh: None if every report is new, else a mask of the new ones.
        added: per survey index, the ids entered by this claim (removed on release).
    """

    total: int
    fresh: NDArray[np.bool_] | None = None
    added: list[tuple[dict[bytes, bytes], Sequence[bytes]]] = field(default_factory=list)

    @property
    def stored(self) -> int:
        """How many reports the claim found new."""
        return self.total if self.fresh is None else int(np.count_nonzero(self.fresh))


class IdIndex:
    """Report id -> payload of each open survey's stored (or claimed) reports.

    The payload (a report's canonical encoding without its id) tells an exact resend
    from a different report that reuses an id. It costs about 100 bytes of memory per
    stored report of an open survey; closing a survey frees its part.
    """

    def __init__(self) -> None:
        self.surveys: dict[str, dict[bytes, bytes]] = {}

    def open(self, survey_id: str) -> None:
        """Start an empty index for a new open survey."""
        self.surveys[survey_id] = {}

    def forget(self, survey_id: str) -> None:
        """Drop a (closed) survey's ids."""
        self.surveys.pop(survey_id, None)

    def load(self, survey_id: str, ids: Iterable[bytes], payloads: Iterable[bytes]) -> None:
        """Enter stored reports, read back from the log."""
        self.surveys[survey_id].update(zip(ids, payloads, strict=True))

    def claim(self, submission: Submission) -> Claim:
        """Enter the submission's new ids; which of its reports are new.

        One ``setdefault`` per id both looks it up and claims it. The ids of a submission
        are distinct, so when an index grew by the number of ids, all of them are new
        (the common case, answered without looking at each id again). Otherwise a report
        is new exactly when the index now holds its own payload object: a stored payload
        comes from an earlier decode, never the same object. On error nothing stays
        claimed; the caller releases the claim if the batch is not committed.

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
        ids, payloads = submission.report_ids, submission.payloads
        for group in submission.groups:
            index = self.surveys.get(group.survey_id)
            if index is None:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
            whole = len(group.rows) == len(ids)  # rows are distinct: all of them, in order
            rows = range(len(ids)) if whole else group.rows.tolist()
            mine = payloads if whole else [payloads[row] for row in rows]
            theirs = ids if whole else [ids[row] for row in rows]
            before = len(index)
            held = list(map(index.setdefault, theirs, mine))
            if len(index) - before == len(theirs):
                claim.added.append((index, theirs))
                continue
            claim.added.append(
                (index, [i for i, h, m in zip(theirs, held, mine, strict=True) if h is m])
            )
            if claim.fresh is None:
                claim.fresh = np.ones(len(ids), dtype=bool)
            for row, payload in zip(rows, held, strict=True):
                if payload is payloads[row]:
                    continue
                if payload != payloads[row]:
                    raise AlreadyExists(
                        f"reports[{submission.positions[row]}].report_id: "
                        f"{ids[row].decode()!r} is already stored in survey "
                        f"{group.survey_id!r} with different content"
                    )
                claim.fresh[row] = False

    @staticmethod
    def release(claim: Claim) -> None:
        """Remove the ids a claim entered (its batch was not stored)."""
        for index, ids in claim.added:
            for report_id in ids:
                index.pop(report_id, None)
        claim.added = []
