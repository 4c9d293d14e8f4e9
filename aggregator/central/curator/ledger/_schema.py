"""The ledger's tables (prefixed ``curator_``) in SQLite and PostgreSQL, and their version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from deniable.aggregator.central.curator._base import CuratorError

__all__ = ["SCHEMA_VERSION", "Db", "migrate"]


class Db(Protocol):
    """One open transaction: statements written with ``?`` placeholders for either backend."""

    for_update: str
    """`` FOR UPDATE`` where the backend locks rows that way (PostgreSQL), else empty."""

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run a query; all its rows."""

    def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run a statement; the number of rows it changed."""


# Exact values are TEXT "p/q"; times are UTC seconds. {time}, {blob} and {serial} are the
# backend's types. Each migration runs once, in order, with the version bump.
_V1 = (
    """CREATE TABLE curator_datasets (
        name TEXT PRIMARY KEY,
        epsilon TEXT NOT NULL,
        delta TEXT NOT NULL,
        spent_epsilon TEXT NOT NULL,
        spent_delta TEXT NOT NULL,
        description TEXT NOT NULL,
        registered_at {time} NOT NULL
    )""",
    """CREATE TABLE curator_analysts (
        dataset TEXT NOT NULL REFERENCES curator_datasets(name),
        name TEXT NOT NULL,
        epsilon TEXT NOT NULL,
        delta TEXT NOT NULL,
        spent_epsilon TEXT NOT NULL,
        spent_delta TEXT NOT NULL,
        PRIMARY KEY (dataset, name)
    )""",
    """CREATE TABLE curator_tokens (
        hash {blob} PRIMARY KEY,
        dataset TEXT NOT NULL,
        analyst TEXT NOT NULL,
        issued_at {time} NOT NULL,
        revoked_at {time},
        FOREIGN KEY (dataset, analyst) REFERENCES curator_analysts(dataset, name)
    )""",
    """CREATE UNIQUE INDEX curator_live_tokens ON curator_tokens (dataset, analyst)
        WHERE revoked_at IS NULL""",
    """CREATE TABLE curator_spends (
        id {serial},
        dataset TEXT NOT NULL,
        analyst TEXT NOT NULL,
        at {time} NOT NULL,
        query TEXT NOT NULL,
        epsilon TEXT NOT NULL,
        delta TEXT NOT NULL,
        FOREIGN KEY (dataset, analyst) REFERENCES curator_analysts(dataset, name)
    )""",
    "CREATE INDEX curator_spends_by_analyst ON curator_spends (dataset, analyst, id)",
    """CREATE TABLE curator_imports (
        source TEXT PRIMARY KEY,
        dataset TEXT NOT NULL REFERENCES curator_datasets(name),
        at {time} NOT NULL
    )""",
    """CREATE TABLE curator_releases (
        id TEXT PRIMARY KEY,
        dataset TEXT NOT NULL REFERENCES curator_datasets(name),
        analyst TEXT NOT NULL,
        at {time} NOT NULL,
        summary TEXT NOT NULL,
        document TEXT NOT NULL
    )""",
    "CREATE INDEX curator_releases_by_dataset ON curator_releases (dataset, at)",
)
MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1,)
SCHEMA_VERSION = len(MIGRATIONS)

TYPES = {
    "sqlite": {"time": "REAL", "blob": "BLOB", "serial": "INTEGER PRIMARY KEY AUTOINCREMENT"},
    "postgresql": {
        "time": "DOUBLE PRECISION",
        "blob": "BYTEA",
        "serial": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    },
}


def migrate(db: Db, dialect: str, name: str) -> None:
    """Create or upgrade the tables in the caller's (exclusive) transaction.

    Raises:
        CuratorError: the database holds a newer ledger schema than this version knows.
    """
    db.run("CREATE TABLE IF NOT EXISTS curator_schema_version (version INTEGER NOT NULL)")
    found = db.rows("SELECT version FROM curator_schema_version")
    version = int(found[0][0]) if found else 0
    if version > SCHEMA_VERSION:
        raise CuratorError(
            f"--db: {name} holds a curator ledger of schema version {version}, newer than "
            f"this deniable's {SCHEMA_VERSION}; upgrade deniable"
        )
    for statements in MIGRATIONS[version:]:
        for statement in statements:
            db.run(statement.format(**TYPES[dialect]))
    if not found:
        db.run("INSERT INTO curator_schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    elif version != SCHEMA_VERSION:
        db.run("UPDATE curator_schema_version SET version = ?", (SCHEMA_VERSION,))
