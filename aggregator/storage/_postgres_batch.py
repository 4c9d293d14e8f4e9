"""Writing a batch to PostgreSQL: one statement when every report is new, else a careful path.

The fast path sends the whole batch as one statement in its own transaction (one round
trip, prepared after a few uses): it holds the batch's surveys open (``FOR SHARE``),
inserts every report id with a plain ``INSERT`` (a stored id, or one another daemon is
inserting, makes it fail with a unique violation: nothing of it is written), and adds
one tally row per question and one log row per survey. A uniform yes/no batch's ids go
as one string that the server splits, its bits as another, and its payloads as the two
digests they can have, so nothing is done per report in Python. Arrays of bytes (log
rows, digests) and of ids go in PostgreSQL's binary format (``%b``): as text, psycopg
would write every byte as two hex digits and the server parse them back.

Both statements are prepared on each pooled connection at their first use (their text
depends only on the batch's shape), so the server plans them once.

The careful path, for a resend, an enrollment token, a stepped question or a survey
with ``max_reports``, runs in a transaction: ``INSERT ... ON CONFLICT DO NOTHING`` tells
which ids are new, a stored id with another payload refuses the batch, and tally and log
rows count the new reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg.rows import TupleRow

from deniable.aggregator.storage._base import ReportGroup, Submission, Tally
from deniable.aggregator.storage._ids import ReportIds, UniformPayloads
from deniable.aggregator.storage._survey_cap import CapCheck, caps_of
from deniable.shared.errors import AlreadyExists, FailedPrecondition
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Written", "careful", "fast", "sum_rows"]

Connection = psycopg.Connection[TupleRow]
_ALL = np.s_[:]

# The batch's rows as (s survey, r report id, d payload digest, i ordinal from 1).
_UNIFORM_ROWS = (
    "SELECT %(survey)s::text AS s, k.r, "
    "CASE k.b WHEN '1' THEN %(yes)s::bytea ELSE %(no)s::bytea END AS d, k.i "
    "FROM unnest(string_to_array(%(ids)s::text, ' '), string_to_array(%(bits)s::text, NULL)) "
    "WITH ORDINALITY AS k(r, b, i)"
)
_LISTED_ROWS = (
    "SELECT * FROM unnest(%(surveys_of)b::text[], %(report_ids)b::text[], "
    "%(digests)b::bytea[]) WITH ORDINALITY AS k(s, r, d, i)"
)
# Ids go in sorted, so two batches that share ids wait for each other, never deadlock.
_ORDER = 'ORDER BY s COLLATE "C", r COLLATE "C"'
_OPEN = "SELECT id FROM surveys WHERE id = ANY(%(surveys)s::text[]) AND state = %(open)s FOR SHARE"
# A batch for a survey with max_reports: its batches take turns (see _check_caps).
_OPEN_CAPPED = (
    "SELECT id FROM surveys WHERE id = ANY(%(surveys)s::text[]) AND state = %(open)s "
    "ORDER BY id FOR UPDATE"
)
_FAST = (
    f"WITH open AS ({_OPEN}), "
    "ok AS (SELECT count(*) = cardinality(%(surveys)s::text[]) AS ok FROM open), "
    "ids AS (INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    "SELECT k.s, k.r, k.d FROM ({rows}) AS k WHERE (SELECT ok FROM ok) "
    f"{_ORDER}), "
    "tally AS (INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
    "SELECT t.s, t.q, nextval('tally_batches'), t.n, t.sums::numeric[] "
    "FROM unnest(%(tally_s)s::text[], %(tally_q)s::text[], %(tally_n)s::bigint[], "
    "%(tally_sums)s::text[]) AS t(s, q, n, sums) WHERE (SELECT ok FROM ok) "
    "RETURNING survey_id, question_id, batch), "
    "log AS (INSERT INTO log (survey_id, reports) "
    "SELECT * FROM unnest(%(log_s)s::text[], %(log_reports)b::bytea[]) "
    "WHERE (SELECT ok FROM ok)) "
    "SELECT (SELECT ok FROM ok), array(SELECT id FROM open), "
    "array(SELECT survey_id FROM tally ORDER BY batch), "
    "array(SELECT question_id FROM tally ORDER BY batch), "
    "array(SELECT batch FROM tally ORDER BY batch)"
)
_CLAIM = (
    "WITH k AS MATERIALIZED ({rows}), "
    "ids AS (INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    f"SELECT s, r, d FROM k {_ORDER} ON CONFLICT DO NOTHING RETURNING survey_id, report_id) "
    "SELECT array(SELECT k.i FROM k WHERE NOT EXISTS "
    "(SELECT 1 FROM ids WHERE ids.survey_id = k.s AND ids.report_id = k.r) ORDER BY k.i)"
)


@dataclass(frozen=True)
class Written:
    """What a committed batch stored, and the tally rows it added."""

    stored: int
    tally_rows: Sequence[tuple[str, str, int]]  # (survey, question, batch number)


def _rows(submission: Submission) -> tuple[str, dict[str, Any]]:
    """The SQL that lists the batch's rows, and its parameters."""
    ids, payloads = submission.report_ids, submission.payloads
    surveys = {group.survey_id for group in submission.groups}
    count = len(ids)
    if (
        len(surveys) == 1
        and isinstance(ids, ReportIds)
        and len(ids.groups) == 1
        and isinstance(payloads, UniformPayloads)
        and np.array_equal(ids.groups[0].rows, np.arange(count))
    ):
        # Report ids never hold a space: the ids joined by spaces, and the bits as '0'/'1'.
        matrix = ids.groups[0].ids
        spaced = np.empty((count, matrix.shape[1] + 1), dtype=np.uint8)
        spaced[:, :-1] = matrix
        spaced[:, -1] = ord(" ")
        bits = np.asarray(payloads.bits, dtype=np.uint8) + ord("0")
        return _UNIFORM_ROWS, {
            "survey": next(iter(surveys)),
            "ids": spaced.tobytes()[:-1].decode("ascii"),
            "bits": bits.tobytes().decode("ascii"),
            "yes": hashlib.sha256(payloads.stem + b"\x01").digest(),
            "no": hashlib.sha256(payloads.stem + b"\x00").digest(),
        }
    surveys_of = [""] * count
    for group in submission.groups:
        for row in group.rows.tolist():
            surveys_of[row] = group.survey_id
    return _LISTED_ROWS, {
        "surveys_of": surveys_of,
        "report_ids": [rid.decode("ascii") for rid in ids],
        "digests": [hashlib.sha256(payload).digest() for payload in payloads],
    }


def _closed(submission: Submission, open_: Sequence[str]) -> FailedPrecondition | None:
    """The error for the batch's first report in a closed (or unknown) survey, if any."""
    for group in submission.groups:
        if group.survey_id not in open_:
            first = submission.positions[int(group.rows[0])]
            return FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
    return None


def _log_rows(
    submission: Submission, fresh: NDArray[np.bool_] | None
) -> tuple[list[str], list[bytes]]:
    """One log row per survey with new reports: (surveys, encodings)."""
    by_survey: dict[str, list[NDArray[np.intp]]] = {}
    for group in submission.groups:
        rows = group.rows if fresh is None else group.rows[fresh[group.rows]]
        by_survey.setdefault(group.survey_id, []).append(rows)
    surveys, encoded = [], []
    for survey_id, parts in by_survey.items():
        rows = np.sort(np.concatenate(parts))
        if len(rows):
            surveys.append(survey_id)
            encoded.append(submission.encode(rows))
    return surveys, encoded


def fast(db: Connection, submission: Submission) -> Written | None:
    """Store a batch of new reports in one statement (autocommit); None if one is stored.

    Only for batches without a token or a stepped question. Raises FailedPrecondition
    (nothing written) when a survey is closed.
    """
    rows, params = _rows(submission)
    groups = submission.groups
    deltas = [group.tally(_ALL) for group in groups]
    log_s, log_reports = _log_rows(submission, None)
    params.update(
        surveys=sorted({group.survey_id for group in groups}),
        open=pb.SURVEY_STATE_OPEN,
        tally_s=[group.survey_id for group in groups],
        tally_q=[group.question_id for group in groups],
        tally_n=[len(group.rows) for group in groups],
        tally_sums=["{" + ",".join(map(str, delta)) + "}" for delta in deltas],
        log_s=log_s,
        log_reports=log_reports,
    )
    try:
        row = db.execute(_FAST.replace("{rows}", rows), params, prepare=True).fetchone()
    except psycopg.errors.UniqueViolation:
        return None  # a stored id (or one being stored): nothing of the statement was written
    assert row is not None
    ok, open_, surveys, questions, batches = row
    if not ok:
        error = _closed(submission, open_)
        assert error is not None
        raise error
    return Written(
        len(submission.report_ids),
        [(s, q, int(b)) for s, q, b in zip(surveys, questions, batches, strict=True)],
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
            _OPEN_CAPPED if caps else _OPEN,
            {
                "surveys": sorted({group.survey_id for group in submission.groups}),
                "open": pb.SURVEY_STATE_OPEN,
            },
        )
    ]
    error = _closed(submission, open_)
    if error is not None:
        raise error
    if submission.token_hash is not None:
        from deniable.aggregator.storage._postgres_tokens import bind

        bind(db, submission)
    fresh = _claim(db, submission)
    if caps:
        _check_caps(db, submission, fresh)
    tally_rows = []
    for group in sorted(submission.groups, key=lambda g: (g.survey_id, g.question_id)):
        batch = _add_tally(db, group, fresh)
        if batch is not None:
            tally_rows.append((group.survey_id, group.question_id, batch))
    log_s, log_reports = _log_rows(submission, fresh)
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
    rows, params = _rows(submission)
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


def sum_rows(db: Connection, key: tuple[str, str]) -> tuple[Tally, int]:
    """The sum of a question's tally rows, and how many rows there are."""
    total = Tally(0)
    rows = db.execute(
        "SELECT n, sums FROM tallies WHERE survey_id = %s AND question_id = %s", key
    ).fetchall()
    for n, sums in rows:
        total = total.plus(int(n), sums)
    return total, len(rows)


def released_row(db: Connection, key: tuple[str, str]) -> Tally:
    """The question's last release (``Tally(0)`` before the first)."""
    row = db.execute(
        "SELECT n, sums FROM releases WHERE survey_id = %s AND question_id = %s", key
    ).fetchone()
    return Tally(0) if row is None else Tally(int(row[0]), tuple(int(s) for s in row[1]))
