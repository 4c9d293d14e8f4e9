"""The PostgreSQL backend, shared by any number of daemons (needs the postgres extra)."""

from __future__ import annotations

from deniable.aggregator.storage.postgres._errors import one_line, redacted
from deniable.aggregator.storage.postgres._reader import PostgresReader
from deniable.aggregator.storage.postgres._schema import SCHEMA_VERSION, migrate, upgrade
from deniable.aggregator.storage.postgres._storage import PostgresStorage

__all__ = [
    "SCHEMA_VERSION",
    "PostgresReader",
    "PostgresStorage",
    "migrate",
    "one_line",
    "redacted",
    "upgrade",
]
