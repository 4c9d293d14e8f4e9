"""The embedded SQLite backend: one aggregator process per database file."""

from __future__ import annotations

from deniable.aggregator.storage.sqlite._reader import SqliteReader, sqlite_path
from deniable.aggregator.storage.sqlite._schema import SCHEMA_VERSION, upgrade
from deniable.aggregator.storage.sqlite._staging import staged
from deniable.aggregator.storage.sqlite._storage import SqliteStorage

__all__ = ["SCHEMA_VERSION", "SqliteReader", "SqliteStorage", "sqlite_path", "staged", "upgrade"]
