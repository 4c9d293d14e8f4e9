"""SQLite write transactions: rolled back only if still open, and a full disk named as such."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from deniable.shared.errors import Unavailable

__all__ = ["StorageFull", "rollback", "storage_error", "transaction"]

_logger = logging.getLogger("deniable.aggregator")


class StorageFull(Unavailable):
    """The database's disk (or its size limit) is full: nothing of the write was stored.

    UNAVAILABLE, so that clients retry with backoff: the daemon keeps serving reads, and
    writes succeed again by themselves once there is room.
    """


def rollback(db: sqlite3.Connection) -> None:
    """End the open transaction, if any, without raising.

    After some errors (a full disk, I/O errors) SQLite has already rolled the transaction
    back; a ROLLBACK then fails with "no transaction is active" and would hide the error
    that matters.
    """
    if not db.in_transaction:
        return
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error:  # the first error is the one to report
        _logger.exception("rollback failed")


def storage_error(error: BaseException) -> BaseException:
    """``error`` as the caller should see it: a full disk becomes :class:`StorageFull`."""
    code = getattr(error, "sqlite_errorcode", None)
    if (
        isinstance(error, sqlite3.OperationalError)
        and code is not None
        and code & 0xFF == (sqlite3.SQLITE_FULL)
    ):
        return StorageFull(
            f"the aggregator's database is full ({error}): nothing of this request was "
            "stored; retry later"
        )
    return error


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; on any error, roll back and raise it (translated)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException as error:
        rollback(db)
        translated = storage_error(error)
        if translated is error:
            raise
        raise translated from error
