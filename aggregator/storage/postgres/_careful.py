"""Writing a batch to PostgreSQL carefully: a resend, a token, a stepped or a capped survey.

The careful path, for a resend, an enrollment token, a stepped question or a survey
with ``max_reports``, runs in a transaction: ``INSERT ... ON CONFLICT DO NOTHING`` tells
which ids are new, a stored id with another payload refuses the batch, and tally and log
rows count the new reports. A batch of new reports takes the fast path (:mod:`._batch`).
"""

from __future__ import annotations

import hashlib

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import ReportGroup, Submission
from deniable.aggregator.storage._survey_cap import CapCheck, caps_of
from deniable.aggregator.storage.postgres._batch import (
    OPEN,
    ORDER,
    Written,
    batch_rows,
    closed,
    log_rows,
)
from deniable.aggregator.storage.postgres._errors import Connection
from deniable.aggregator.storage.postgres._tally import released_row, sum_rows
from deniable.aggregator.storage.postgres._tokens import bind
from deniable.shared.errors import AlreadyExists
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["careful"]

# A batch for a survey with max_reports: its batches take turns (see _check_caps).
_OPEN_CAPPED = (
    "SELECT id FROM surveys WHERE id = ANY(%(surveys)s::text[]) AND state = %(open)s "
    "ORDER BY id FOR UPDATE"
)
_CLAIM = (
    "WITH k AS MATERIALIZED ({rows}), "
    "ids AS (INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    f"SELECT s, r, d FROM k {ORDER} ON CONFLICT DO NOTHING RETURNING survey_id, report_id) "
    "SELECT array(SELECT k.i FROM k WHERE NOT EXISTS "
    "(SELECT 1 FROM ids WHERE ids.survey_id = k.s AND ids.report_id = k.r) ORDER BY k.i)"
)


def careful(db: Connection, submission: Submission) -> Written:
    """Store the batch's new reports, inside the caller's transaction.

    Raises:
        FailedPrecondition: a survey is closed.
        AlreadyExists: a report id is stored in its survey with a different payload.
    """
    caps = caps_of(submission.groups)
    open_ = [
        row[0]
        for row in db.execute(
            _OPEN_CAPPED if caps else OPEN,
            {
                "surveys": sorted({group.survey_id for group in submission.groups}),
                "open": pb.SURVEY_STATE_OPEN,
            },
        )
    ]
    error = closed(submission, open_)
    if error is not None:
        raise error
    if submission.token_hash is not None:
        bind(db, submission)
    fresh = _claim(db, submission)
    if caps:
        _check_caps(db, submission, fresh)
    tally_rows = []
    for group in sorted(submission.groups, key=lambda g: (g.survey_id, g.question_id)):
        batch = _add_tally(db, group, fresh)
        if batch is not None:
            tally_rows.append((group.survey_id, group.question_id, batch))
    log_s, log_reports = log_rows(submission, fresh)
    if log_s:
        db.execute(
            "INSERT INTO log (survey_id, reports) SELECT * FROM unnest(%s::text[], %b::bytea[])",
            (log_s, log_reports),
        )
    return Written(int(np.count_nonzero(fresh)), tally_rows)


def _check_caps(db: Connection, submission: Submission, fresh: NDArray[np.bool_]) -> None:
    """Refuse the batch if its new reports take a survey past its ``max_reports``.

    The batch holds its capped surveys' rows ``FOR UPDATE`` (:data:`_OPEN_CAPPED`), so
    the batches of a capped survey, on every daemon, commit one at a time; this query,
    run after the lock was granted, sees every one committed before. Raising rolls the
    transaction back, the ids it inserted included.
    """
    new: dict[str, int] = {}
    for group in submission.groups:
        new[group.survey_id] = new.get(group.survey_id, 0) + int(
            np.count_nonzero(fresh[group.rows])
        )
    error = CapCheck(lambda survey_id: _survey_count(db, survey_id)).admit(submission, new)
    if error is not None:
        raise error


def _survey_count(db: Connection, survey_id: str) -> int:
    row = db.execute(
        "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = %s", (survey_id,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def _claim(db: Connection, submission: Submission) -> NDArray[np.bool_]:
    """Insert the batch's ids (ON CONFLICT DO NOTHING); which rows are new.

    Raises:
        AlreadyExists: an id is stored in its survey with a different payload.
    """
    rows, params = batch_rows(submission)
    row = db.execute(_CLAIM.replace("{rows}", rows), params, prepare=True).fetchone()
    assert row is not None
    old = np.asarray(row[0], dtype=np.intp) - 1
    fresh = np.ones(len(submission.report_ids), dtype=bool)
    fresh[old] = False
    if not len(old):
        return fresh
    survey_of = np.empty(len(fresh), dtype=object)
    for group in submission.groups:
        survey_of[group.rows] = group.survey_id
    surveys = [str(survey_of[i]) for i in old.tolist()]
    ids = [submission.report_ids[i].decode("ascii") for i in old.tolist()]
    # A new statement: it sees the ids that a concurrent batch committed meanwhile.
    stored = {
        (str(s), str(r)): bytes(d)
        for s, r, d in db.execute(
            "SELECT r.survey_id, r.report_id, r.payload_digest FROM report_ids r "
            "JOIN unnest(%s::text[], %s::text[]) AS k(s, i) "
            "ON r.survey_id = k.s AND r.report_id = k.i",
            (surveys, ids),
        )
    }
    for row_index, survey_id, report_id in zip(old.tolist(), surveys, ids, strict=True):
        digest = hashlib.sha256(submission.payloads[row_index]).digest()
        if stored[survey_id, report_id] != digest:
            raise AlreadyExists(
                f"reports[{submission.positions[row_index]}].report_id: {report_id!r} is "
                f"already stored in survey {survey_id!r} with a different report"
            )
    return fresh


def _add_tally(db: Connection, group: ReportGroup, fresh: NDArray[np.bool_]) -> int | None:
    """Add the group's new reports as one tally row (its batch number); store a due release."""
    mask: NDArray[np.bool_] = fresh[group.rows]
    count = int(np.count_nonzero(mask))
    if not count:
        return None
    key = (group.survey_id, group.question_id)
    delta = group.tally(mask)
    if group.releases is not None:  # serialize the question's batches: lock batch 0
        db.execute(
            "SELECT 1 FROM tallies WHERE survey_id = %s AND question_id = %s AND batch = 0 "
            "FOR UPDATE",
            key,
        )
        old = sum_rows(db, key)[0]
    row = db.execute(
        "INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
        "VALUES (%s, %s, nextval('tally_batches'), %s, %s) RETURNING batch",
        (*key, count, delta),
    ).fetchone()
    assert row is not None
    if group.releases is not None:
        new = old.plus(count, delta)
        last = released_row(db, key)
        if group.releases.due(last.n, new.n):
            db.execute(
                "INSERT INTO releases (survey_id, question_id, n, sums) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (survey_id, question_id) "
                "DO UPDATE SET n = excluded.n, sums = excluded.sums",
                (*key, new.n, list(new.sums)),
            )
    return int(row[0])
