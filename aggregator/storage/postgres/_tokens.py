"""PostgreSQL side of enrollment: each (token, question) bound to one report, across daemons.

The same rules as SQLite's (:mod:`..sqlite._tokens`), decided by the database: the batch's
bindings go in with one ``INSERT ... ON CONFLICT DO NOTHING``, so of two daemons that
bind one (token, question) at once, the second waits for the first to commit and then
finds its binding. Only the bindings that did not go in are looked at again, each in
its own statement's snapshot, which sees every binding committed before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from deniable.aggregator.storage._base import Submission
from deniable.shared.errors import AlreadyExists, InvalidArgument, Unauthenticated

__all__ = ["Binding", "bind", "insert_bindings"]

Connection = psycopg.Connection[TupleRow]
# (token hash, question id, survey id, report id, SHA-256 of the report's payload)
Binding = tuple[bytes, str, str, str, bytes]


def bind(db: Connection, submission: Submission) -> None:
    """Check a token batch and store its new (token, question) bindings (caller's transaction).

    A report the token already stored (same id, same payload) makes no new binding; the
    batch's report ids then count it as stored before.

    Raises:
        InvalidArgument: the batch spans surveys.
        Unauthenticated: the token was not issued for the batch's survey.
        AlreadyExists: the token answered a question with another report, or a report id
            is stored for another token or question.
    """
    token = submission.token_hash
    assert token is not None
    surveys = sorted({group.survey_id for group in submission.groups})
    if len(surveys) != 1:
        raise InvalidArgument(
            f"enrollment_token: a batch with a token holds one survey's reports, not {surveys}"
        )
    survey_id = surveys[0]
    row = db.execute("SELECT survey_id FROM tokens WHERE hash = %s", (token,)).fetchone()
    if row is None or row[0] != survey_id:
        raise Unauthenticated(f"enrollment_token: not a token issued for survey {survey_id!r}")
    # (where, question, report id, digest) in the batch's order, which the errors follow.
    wanted = [
        (
            submission.positions[index],
            group.question_id,
            submission.report_ids[index].decode("ascii"),
            hashlib.sha256(submission.payloads[index]).digest(),
        )
        for group in submission.groups
        for index in group.rows.tolist()
    ]
    in_order = sorted(wanted, key=lambda w: w[1])  # one lock order for every daemon
    inserted = db.execute(
        "INSERT INTO token_answers "
        "(token_hash, question_id, survey_id, report_id, payload_digest) "
        "SELECT %s, q, %s, r, d FROM unnest(%s::text[], %s::text[], %s::bytea[]) AS k(q, r, d) "
        "ON CONFLICT DO NOTHING RETURNING question_id, report_id",
        (
            token,
            survey_id,
            [w[1] for w in in_order],
            [w[2] for w in in_order],
            [w[3] for w in in_order],
        ),
    ).fetchall()
    bound_now = {(str(q), str(r)) for q, r in inserted}
    if len(bound_now) == len(wanted):
        return
    answers = {
        str(q): (str(r), bytes(d))
        for q, r, d in db.execute(
            "SELECT question_id, report_id, payload_digest FROM token_answers "
            "WHERE token_hash = %s AND question_id = ANY(%s)",
            (token, [w[1] for w in wanted]),
        )
    }
    for position, question_id, report_id, digest in wanted:
        if (question_id, report_id) in bound_now:
            continue
        where = f"reports[{position}]"
        answer = answers.get(question_id)
        if answer == (report_id, digest):
            continue  # an exact resend
        if answer is not None:
            raise AlreadyExists(
                f"{where}: this enrollment token already answered question "
                f"{question_id!r} with a different report; a token answers each "
                "question once"
            )
        raise AlreadyExists(
            f"{where}.report_id: {report_id!r} is already stored in survey "
            f"{survey_id!r} for another enrollment token or question"
        )


def insert_bindings(db: Connection, bindings: Sequence[Binding]) -> None:
    """Store (token, question) -> report bindings copied from another database (``migrate``)."""
    if bindings:
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO token_answers "
                "(token_hash, question_id, survey_id, report_id, payload_digest) "
                "VALUES (%s, %s, %s, %s, %s)",
                bindings,
            )
