"""PostgreSQL side of ``migrate``: one transaction around a whole copy, restored bindings."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from deniable.aggregator.storage._postgres import Connection

if TYPE_CHECKING:
    from deniable.aggregator.storage._postgres import PostgresStorage

__all__ = ["insert_bindings", "pinned"]

# (token hash, question id, survey id, report id, SHA-256 of the report's payload)
Binding = tuple[bytes, str, str, str, bytes]


def pinned(storage: PostgresStorage) -> AbstractContextManager[None]:
    """Run every call on ``storage`` made inside on one connection, in one transaction.

    The storage's methods run their work as savepoints of that transaction, which commits
    when the block ends normally and is rolled back on any exception, so the calls made
    inside are stored all or nothing.
    """
    return storage._db.pinned()


def insert_bindings(db: Connection, bindings: Sequence[Binding]) -> None:
    """Store (token, question) -> report bindings copied from another database."""
    if bindings:
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO token_answers "
                "(token_hash, question_id, survey_id, report_id, payload_digest) "
                "VALUES (%s, %s, %s, %s, %s)",
                bindings,
            )
