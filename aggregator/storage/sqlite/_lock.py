"""An exclusive, non-blocking lock file: one aggregator process per database."""

from __future__ import annotations

from typing import IO

from deniable.aggregator.storage._base import StorageError

__all__ = ["exclusive_lock"]


def exclusive_lock(path: str) -> IO[bytes]:
    """Open ``path`` and hold an exclusive lock on it until the returned file is closed.

    The lock is advisory (``flock``) and released by the kernel when the process dies,
    so a crashed aggregator never leaves a stale lock behind.

    Raises:
        StorageError: another process holds the lock, or the lock file cannot be opened
            (its folder is missing or not writable), naming the file and the reason.
    """
    try:
        handle = open(path, "ab")  # noqa: SIM115 - the caller owns the handle
    except OSError as error:
        raise StorageError(
            f"cannot open the database's lock file {path!r}: {error.strerror or error}; "
            "--db must name a file in a folder this process can write"
        ) from None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no cross-process guard
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StorageError(
            f"the database is in use by another aggregator process (lock file {path!r}); "
            "stop it first, or use another --db"
        ) from None
    return handle
