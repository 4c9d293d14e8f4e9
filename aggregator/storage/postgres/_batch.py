"""Writing a batch to PostgreSQL in one statement, when every report is new.

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

The careful path, for every other batch, is :mod:`._careful`.
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

from deniable.aggregator.storage._base import Submission
from deniable.aggregator.storage.codec import ReportIds, UniformPayloads
from deniable.shared.errors import FailedPrecondition
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["OPEN", "ORDER", "Written", "batch_rows", "closed", "fast", "log_rows"]

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
ORDER = 'ORDER BY s COLLATE "C", r COLLATE "C"'
OPEN = "SELECT id FROM surveys WHERE id = ANY(%(surveys)s::text[]) AND state = %(open)s FOR SHARE"
_FAST = (
    f"WITH open AS ({OPEN}), "
    "ok AS (SELECT count(*) = cardinality(%(surveys)s::text[]) AS ok FROM open), "
    "ids AS (INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    "SELECT k.s, k.r, k.d FROM ({rows}) AS k WHERE (SELECT ok FROM ok) "
    f"{ORDER}), "
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


@dataclass(frozen=True)
class Written:
    """What a committed batch stored, and the tally rows it added."""

    stored: int
    tally_rows: Sequence[tuple[str, str, int]]  # (survey, question, batch number)


def batch_rows(submission: Submission) -> tuple[str, dict[str, Any]]:
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


def closed(submission: Submission, open_: Sequence[str]) -> FailedPrecondition | None:
    """The error for the batch's first report in a closed (or unknown) survey, if any."""
    for group in submission.groups:
        if group.survey_id not in open_:
            first = submission.positions[int(group.rows[0])]
            return FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
    return None


def log_rows(
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
    rows, params = batch_rows(submission)
    groups = submission.groups
    deltas = [group.tally(_ALL) for group in groups]
    log_s, log_reports = log_rows(submission, None)
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
        error = closed(submission, open_)
        assert error is not None
        raise error
    return Written(
        len(submission.report_ids),
        [(s, q, int(b)) for s, q, b in zip(surveys, questions, batches, strict=True)],
    )
