"""SQLite side of enrollment: issued token hashes, and each token's one report per question.

Token batches are small (one participant, one report per question), so every lookup is
an indexed SQL query; the in-memory report-id index is not involved.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from deniable.aggregator.storage._base import Submission
from deniable.shared.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Binding", "PendingBindings", "bind", "insert_tokens", "issued", "store_bindings"]

# (token hash, question id, survey id, report id, SHA-256 of the report's payload)
Binding = tuple[bytes, str, str, str, bytes]


@dataclass
class PendingBindings:
    """Bindings of the batches checked for one group commit, not yet committed.

    Attributes:
        answers: (token hash, question id) -> (report id, payload digest).
        reports: (survey id, report id) -> the token hash that stores it.
    """

    answers: dict[tuple[bytes, str], tuple[str, bytes]] = field(default_factory=dict)
    reports: dict[tuple[str, str], bytes] = field(default_factory=dict)

    def add(self, bindings: Sequence[Binding]) -> None:
        """Enter a checked batch's new bindings, for the batches after it."""
        for token, question_id, survey_id, report_id, digest in bindings:
            self.answers[token, question_id] = (report_id, digest)
            self.reports[survey_id, report_id] = token


def payload_digest(payload: bytes) -> bytes:
    """The SHA-256 of a report's payload, which tells an exact resend from another report."""
    return hashlib.sha256(payload).digest()


def insert_tokens(db: sqlite3.Connection, survey_id: str, hashes: Sequence[bytes]) -> None:
    """Store token hashes of an open survey and count them (inside the caller's transaction).

    Raises:
        NotFound: no such survey.
        FailedPrecondition: the survey is closed.
    """
    row = db.execute("SELECT state FROM surveys WHERE id = ?", (survey_id,)).fetchone()
    if row is None:
        raise NotFound(f"survey_id: unknown survey {survey_id!r}")
    if row[0] != pb.SURVEY_STATE_OPEN:
        raise FailedPrecondition(f"survey_id: survey {survey_id!r} is closed")
    db.executemany(
        "INSERT INTO tokens (hash, survey_id) VALUES (?, ?)", [(h, survey_id) for h in hashes]
    )
    db.execute(
        "INSERT INTO token_counts (survey_id, issued) VALUES (?, ?) "
        "ON CONFLICT (survey_id) DO UPDATE SET issued = issued + excluded.issued",
        (survey_id, len(hashes)),
    )


def issued(db: sqlite3.Connection, survey_id: str) -> int:
    """How many tokens the survey has issued (one indexed row)."""
    row = db.execute("SELECT issued FROM token_counts WHERE survey_id = ?", (survey_id,)).fetchone()
    return 0 if row is None else int(row[0])


def bind(db: sqlite3.Connection, submission: Submission, pending: PendingBindings) -> list[Binding]:
    """Check a token batch against the stored and pending bindings; its new bindings.

    A report the token already stored (same id, same payload) makes no new binding: the
    id index counts it as stored before. The caller enters the new bindings in
    ``pending`` once the batch is accepted.

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
    row = db.execute("SELECT survey_id FROM tokens WHERE hash = ?", (token,)).fetchone()
    if row is None or row[0] != survey_id:
        raise Unauthenticated(f"enrollment_token: not a token issued for survey {survey_id!r}")
    made: list[Binding] = []
    batch = PendingBindings()  # this batch's own bindings, checked like the pending ones
    for group in submission.groups:
        question_id = group.question_id
        for row_index in group.rows.tolist():
            where = f"reports[{submission.positions[row_index]}]"
            report_id = submission.report_ids[row_index].decode("ascii")
            digest = payload_digest(submission.payloads[row_index])
            bound = _answer(db, token, question_id, pending, batch)
            if bound == (report_id, digest):
                continue  # an exact resend
            if bound is not None:
                raise AlreadyExists(
                    f"{where}: this enrollment token already answered question "
                    f"{question_id!r} with a different report; a token answers each "
                    "question once"
                )
            if _stored_under_a_token(db, survey_id, report_id, pending, batch):
                raise AlreadyExists(
                    f"{where}.report_id: {report_id!r} is already stored in survey "
                    f"{survey_id!r} for another enrollment token or question"
                )
            binding = (token, question_id, survey_id, report_id, digest)
            batch.add([binding])
            made.append(binding)
    return made


def _answer(
    db: sqlite3.Connection,
    token: bytes,
    question_id: str,
    pending: PendingBindings,
    batch: PendingBindings,
) -> tuple[str, bytes] | None:
    """The (report id, payload digest) the token stored for the question, if any."""
    key = (token, question_id)
    found = batch.answers.get(key) or pending.answers.get(key)
    if found is not None:
        return found
    row = db.execute(
        "SELECT report_id, payload_digest FROM token_answers "
        "WHERE token_hash = ? AND question_id = ?",
        key,
    ).fetchone()
    return None if row is None else (str(row[0]), bytes(row[1]))


def _stored_under_a_token(
    db: sqlite3.Connection,
    survey_id: str,
    report_id: str,
    pending: PendingBindings,
    batch: PendingBindings,
) -> bool:
    key = (survey_id, report_id)
    if key in batch.reports or key in pending.reports:
        return True
    row = db.execute(
        "SELECT 1 FROM token_answers WHERE survey_id = ? AND report_id = ?", key
    ).fetchone()
    return row is not None


def store_bindings(db: sqlite3.Connection, bindings: Sequence[Binding]) -> None:
    """Write new bindings (inside the caller's transaction)."""
    if bindings:
        db.executemany(
            "INSERT INTO token_answers "
            "(token_hash, question_id, survey_id, report_id, payload_digest) "
            "VALUES (?, ?, ?, ?, ?)",
            bindings,
        )
