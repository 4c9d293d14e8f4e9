"""A backend, a read-only view or a schema upgrade chosen by URL; the default database location."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from deniable.aggregator.storage._base import Storage, StorageError

if TYPE_CHECKING:
    from deniable.aggregator.storage.postgres import PostgresReader
    from deniable.aggregator.storage.sqlite import SqliteReader

__all__ = [
    "POSTGRES_EXTRA",
    "data_dir",
    "default_database_url",
    "open_reader",
    "open_storage",
    "upgrade",
]

POSTGRES_EXTRA = (
    "a postgresql:// database needs the postgres extra: pip install 'deniable[postgres]'"
)


def data_dir() -> Path:
    """``$XDG_DATA_HOME/deniable`` (``~/.local/share/deniable`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deniable"


def default_database_url() -> str:
    """The embedded SQLite database in the XDG data directory."""
    return f"sqlite:///{data_dir() / 'aggregator.db'}"


def open_storage(url: str, *, connections: int | None = None) -> Storage:
    """Open the backend a URL names.

    ``sqlite:///absolute/path``, ``sqlite:///:memory:``, or a libpq URL
    ``postgresql://user@host:port/dbname`` (also ``postgres://``; needs the postgres extra).
    ``connections``: PostgreSQL's most pooled connections (the daemon's worker threads);
    SQLite has one connection.

    Raises:
        ValueError: an unsupported URL.
        StorageError: the database cannot be opened, or the postgres extra is missing.
    """
    if url.startswith("sqlite:///"):
        from deniable.aggregator.storage.sqlite import SqliteStorage

        return SqliteStorage(url.removeprefix("sqlite:///"))
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from deniable.aggregator.storage.postgres import PostgresStorage
        except ImportError:
            raise StorageError(POSTGRES_EXTRA) from None
        return (
            PostgresStorage(url)
            if connections is None
            else PostgresStorage(url, connections=connections)
        )
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ValueError(
        f"unsupported database URL {url!r} (scheme {scheme!r}); "
        "use sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME"
    )


def open_reader(url: str) -> SqliteReader | PostgresReader:
    """A read-only view of the database a URL names (``sqlite:///PATH`` or a libpq URL).

    Raises:
        ValueError: an unsupported URL, or one that names no file.
        StorageError: the database cannot be opened, or is not a deniable database.
    """
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from deniable.aggregator.storage.postgres import PostgresReader
        except ImportError:
            raise ValueError(POSTGRES_EXTRA) from None
        return PostgresReader(url)
    if not url.startswith("sqlite:///"):
        scheme = url.split(":", 1)[0] if ":" in url else url
        raise ValueError(
            f"unsupported database URL {url!r} (scheme {scheme!r}); "
            "use sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME"
        )
    from deniable.aggregator.storage.sqlite import SqliteReader, sqlite_path

    return SqliteReader(sqlite_path(url))


def upgrade(url: str) -> tuple[str, int, int]:
    """Bring a database's schema to this version in one transaction.

    Returns:
        The database's name for messages, and its schema versions before and after.

    Raises:
        ValueError: an unsupported URL, or one that names no file.
        StorageError: the database cannot be upgraded (in use, unreadable, newer), or the
            postgres extra is missing.
    """
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from deniable.aggregator.storage.postgres import upgrade as upgrade_postgres
        except ImportError:
            raise StorageError(POSTGRES_EXTRA) from None
        return upgrade_postgres(url)
    from deniable.aggregator.storage.sqlite import sqlite_path
    from deniable.aggregator.storage.sqlite import upgrade as upgrade_sqlite

    return upgrade_sqlite(sqlite_path(url))
