"""SQLite side of ``migrate``: a copy built in a staging file that replaces the target."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from deniable.aggregator.storage._base import StorageError
from deniable.aggregator.storage.sqlite._lock import exclusive_lock
from deniable.aggregator.storage.sqlite._reader import SqliteReader, sqlite_path
from deniable.aggregator.storage.sqlite._storage import SqliteStorage

__all__ = ["staged"]


@contextmanager
def staged(url: str) -> Iterator[tuple[SqliteStorage, str]]:
    """The backend a copy into ``sqlite:///PATH`` writes, and PATH; kept only on success.

    The calls go to a staging copy of ``PATH`` (``PATH.migrating``; the lock file
    ``PATH.lock`` is held meanwhile, so no daemon can open it), which replaces ``PATH``
    when the block ends normally and is deleted otherwise.

    Raises:
        ValueError: an unsupported URL.
        StorageError: the target cannot be opened or written (nothing of the block is kept).
    """
    path = sqlite_path(url)
    try:
        with _staged(path) as staging:
            yield staging, path
    except sqlite3.Error as error:
        raise StorageError(
            f"cannot write SQLite database {path!r}: {error}; nothing was copied"
        ) from None


@contextmanager
def _staged(path: str) -> Iterator[SqliteStorage]:
    """A SQLite backend on a staging copy of ``path`` that replaces it on success."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise StorageError(f"no folder {str(folder)!r} for the database {path!r}")
    lock = exclusive_lock(f"{path}.lock")
    staging = f"{path}.migrating"
    try:
        _remove(staging)
        if Path(path).exists():
            SqliteReader(path).close()  # refuses what is not a deniable database, naming it
            _backup(path, staging)
        storage = SqliteStorage(staging, background=False)
        storage.unsynced()  # synced once below, before it replaces the target
        try:
            yield storage
        finally:
            storage.close()
        _self_contained(staging)
        with open(staging, "rb+") as handle:
            os.fsync(handle.fileno())
        _remove_companions(path)
        os.replace(staging, path)
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    finally:
        _remove(staging)
        lock.close()


def _backup(path: str, staging: str) -> None:
    """Copy the database at ``path`` (with its committed WAL content) to ``staging``."""
    uri = f"file:{Path(path).absolute()}?mode=ro"
    source = sqlite3.connect(uri, uri=True)
    target = sqlite3.connect(staging)
    try:
        source.backup(target)
    except sqlite3.Error as error:
        raise StorageError(f"cannot read SQLite database {path!r}: {error}") from None
    finally:
        target.close()
        source.close()


def _self_contained(path: str) -> None:
    """Fold the WAL into the database file and drop it: the file alone is the database."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=DELETE")
    finally:
        db.close()


def _remove_companions(path: str) -> None:
    """Fold ``path``'s WAL in, so that no stale WAL is applied to the file replacing it."""
    if Path(path).exists():
        _self_contained(path)
    for suffix in ("-wal", "-shm"):
        with suppress(FileNotFoundError):
            os.remove(f"{path}{suffix}")


def _remove(staging: str) -> None:
    for suffix in ("", "-wal", "-shm", ".lock"):
        with suppress(FileNotFoundError):
            os.remove(f"{staging}{suffix}")
