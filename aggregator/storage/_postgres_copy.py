"""PostgreSQL side of ``migrate``: one transaction around a whole copy, restored bindings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from deniable.aggregator.storage._postgres import Connection

if TYPE_CHECKING:
    from deniable.aggregator.storage._postgres import PostgresStorage

__all__ = ["insert_bindings", "pinned"]

# (token hash, question id, survey id, report id, SHA-256 of the report's payload)
Binding = tuple[bytes, str, str, str, bytes]


class _Pinned:
    """Stands in for the connection pool: always the same connection, never closed."""

    def __init__(self, db: Connection) -> None:
        self._db = db

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Connection]:
        yield self._db

    def close(self) -> None:
        """The connection belongs to :func:`pinned`, which ends its transaction."""


@contextmanager
def pinned(storage: PostgresStorage) -> Iterator[None]:
    """Run every call on ``storage`` made inside on one connection, in one transaction.

    The storage's methods open their own transaction blocks on the connection they take
    from the pool; on the pinned connection, already in a transaction, those blocks are
    savepoints. The transaction commits when the block ends normally and is rolled back
    on any exception, so the calls made inside are stored all or nothing.
    """
    pool = storage._pool
    with pool.connection() as db, db.transaction():
        storage._pool = _Pinned(db)  # type: ignore[assignment]
        try:
            yield
        finally:
            storage._pool = pool


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
