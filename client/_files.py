"""The participant's local files: XDG locations, atomic JSON writes, one lock, fail-closed reads."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from deniable.client._errors import RefusedError

__all__ = [
    "LOCK_NAME",
    "LocalStateError",
    "atomic_write",
    "config_dir",
    "data_dir",
    "exclusive_lock",
    "load_document",
    "read_json",
    "unreadable",
    "write_document",
]

T = TypeVar("T")

LOCK_NAME = "participant.lock"
"""The lock file, in the data directory, that serializes ledger and memo updates."""


class LocalStateError(RefusedError):
    """A ledger, memo or key file on this device is unreadable: refuse to answer (exit code 5).

    The client fails closed: it never resets such a file, since that would forget the
    privacy already spent.
    """


def data_dir() -> Path:
    """``$XDG_DATA_HOME/deniable`` (``~/.local/share/deniable`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deniable"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/deniable`` (``~/.config/deniable`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "deniable"


def unreadable(path: Path, problem: str) -> LocalStateError:
    """The fail-closed error for a damaged file: what is wrong and what the participant can do."""
    return LocalStateError(
        f"{path}: {problem}. deniable answers no survey until it is readable (nothing was "
        "sent): restore the file from a backup, or move it aside to start afresh, which "
        "forgets the privacy loss and the answers it records"
    )


def read_json(path: Path) -> Any | None:
    """The JSON document in ``path``, or None when the file does not exist.

    Raises:
        LocalStateError: the file exists but cannot be read or is not valid JSON.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise unreadable(path, f"cannot be read ({error.strerror})") from None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise unreadable(path, f"is not valid JSON ({error})") from None


def load_document(path: Path, parse: Callable[[Any], T], empty: T, what: str) -> T:
    """The JSON document in ``path`` as ``parse`` reads it; ``empty`` if there is no file yet.

    Raises:
        LocalStateError: the file is unreadable or ``parse`` refuses it (fail closed).
    """
    document = read_json(path)
    if document is None:
        return empty
    try:
        return parse(document)
    except ValueError as error:
        raise unreadable(path, f"is not a valid {what} ({error})") from None


def write_document(path: Path, document: Any) -> None:
    """Write a JSON document atomically (temporary file, fsync, rename, fsync the directory)."""
    atomic_write(path, (json.dumps(document, indent=2) + "\n").encode("utf-8"))


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - not POSIX
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file, fsync, rename, fsync the dir.

    A crash leaves either the old file or the new one, never a mix; the file's mode is 0600.

    Raises:
        LocalStateError: the file cannot be written (the old one, if any, is intact).
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise _unwritable(path, error) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        _fsync_dir(path.parent)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise _unwritable(path, error) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _unwritable(path: Path, error: OSError) -> LocalStateError:
    return LocalStateError(
        f"{path}: cannot be written ({error.strerror or error}); nothing was sent. Check "
        "that the directory is writable and the disk is not full"
    )


@contextmanager
def exclusive_lock(path: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if needed) for the ``with`` block.

    Concurrent ``deniable`` processes queue here, so each reads the ledger and memo, decides
    and writes them back without another writing in between. When the lock is busy,
    ``on_wait`` is called once with a message, then the call blocks until it is free. The
    kernel releases the lock if the process dies, so a crash leaves no stale lock.
    """
    import fcntl  # POSIX only, like the participant's data directory layout

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise _unwritable(path, error) from None
    with os.fdopen(fd, "r+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(f"Waiting for another deniable process to finish (lock file {path}).")
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
