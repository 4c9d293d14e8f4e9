"""PostgreSQL's schema, its version, and the upgrade from earlier versions (daemons take turns)."""

from __future__ import annotations

from typing import Any

import psycopg

from deniable.aggregator.storage._base import StorageError
from deniable.aggregator.storage.postgres._errors import Connection, redacted

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "upgrade"]

# Each migration runs once, in order, in one transaction with the schema_version bump.
# Version 1: the tables of the SQLite schema that this backend uses, except that
# `report_ids` holds every stored (survey, report id) with its payload's SHA-256, so that
# the primary key makes a report id count once whichever daemon receives it, and that
# `tallies` holds one row per (question, batch): batch 0 is written when the survey is
# created, every commit adds its own row, and a read sums them (no hot row to update).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE surveys (
        id TEXT PRIMARY KEY,
        seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        state INTEGER NOT NULL,
        spec BYTEA NOT NULL
    );
    CREATE TABLE tallies (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        question_id TEXT NOT NULL,
        batch BIGINT NOT NULL,
        n BIGINT NOT NULL,
        sums BIGINT[] NOT NULL,
        PRIMARY KEY (survey_id, question_id, batch)
    );
    CREATE SEQUENCE tally_batches;
    CREATE TABLE releases (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        question_id TEXT NOT NULL,
        n BIGINT NOT NULL,
        sums BIGINT[] NOT NULL,
        PRIMARY KEY (survey_id, question_id)
    );
    CREATE TABLE log (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        reports BYTEA NOT NULL
    );
    CREATE INDEX log_by_survey ON log (survey_id, seq);
    CREATE TABLE report_ids (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        report_id TEXT NOT NULL,
        payload_digest BYTEA NOT NULL,
        PRIMARY KEY (survey_id, report_id)
    );
    CREATE TABLE tokens (
        hash BYTEA PRIMARY KEY,
        survey_id TEXT NOT NULL REFERENCES surveys(id)
    );
    CREATE TABLE token_counts (
        survey_id TEXT PRIMARY KEY REFERENCES surveys(id),
        issued BIGINT NOT NULL
    );
    CREATE TABLE token_answers (
        token_hash BYTEA NOT NULL REFERENCES tokens(hash),
        question_id TEXT NOT NULL,
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        report_id TEXT NOT NULL,
        payload_digest BYTEA NOT NULL,
        PRIMARY KEY (token_hash, question_id),
        UNIQUE (survey_id, report_id)
    );
    """,
    # Version 2: no foreign key from report_ids to surveys. Every batch already holds its
    # surveys open (FOR SHARE) before inserting ids, and the key's check cost a lookup
    # per report: about half of the time the server spent inserting a batch's ids.
    """
    ALTER TABLE report_ids DROP CONSTRAINT IF EXISTS report_ids_survey_id_fkey;
    """,
    # Version 3: tally sums of any size, as SQLite stores them. A numeric mechanism's sums
    # are exact integers on a fine grid and outgrow 64 bits within a few reports.
    """
    ALTER TABLE tallies ALTER COLUMN sums TYPE NUMERIC[];
    ALTER TABLE releases ALTER COLUMN sums TYPE NUMERIC[];
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_MIGRATION_LOCK = 0x64656E69  # pg_advisory_xact_lock key: one daemon migrates at a time


def migrate(db: Connection) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction (daemons take turns).

    Raises:
        StorageError: the database was written by a newer version of deniable.
    """
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = 0 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"the database has schema version {version}, newer than this aggregator's "
                f"{SCHEMA_VERSION}; upgrade deniable"
            )
        for statement in MIGRATIONS[version:]:
            db.execute(statement.encode())
        if row is None:
            db.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
        else:
            db.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))


def upgrade(url: str) -> tuple[str, int, int]:
    """Upgrade a PostgreSQL database in one transaction (daemons starting meanwhile wait).

    Returns:
        The database's name (its URL without the password), and its schema versions
        before and after.

    Raises:
        StorageError: the database cannot be reached, or is from a newer version.
    """
    name = redacted(url)

    def version(db: psycopg.Connection[Any]) -> int:
        exists = db.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
        if exists is None or not exists[0]:
            return 0
        row = db.execute("SELECT COALESCE(max(version), 0) FROM schema_version").fetchone()
        return 0 if row is None else int(row[0])

    try:
        with psycopg.connect(url, connect_timeout=10, autocommit=True) as db:
            before = version(db)
            migrate(db)
            after = version(db)
    except psycopg.Error as error:
        raise StorageError(f"cannot upgrade PostgreSQL database {name!r}: {error}") from None
    except StorageError as error:
        raise StorageError(f"{name!r}: {error}") from None
    return name, before, after
