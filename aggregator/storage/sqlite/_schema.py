"""The SQLite schema, its version, and the upgrade from earlier versions."""

from __future__ import annotations

import secrets
import sqlite3

from deniable.aggregator.storage._base import StorageError
from deniable.aggregator.storage.codec import frame
from deniable.aggregator.storage.sqlite._lock import exclusive_lock

__all__ = ["SCHEMA", "SCHEMA_VERSION", "fingerprint_key", "migrate", "upgrade"]

SCHEMA_VERSION = 7
SCHEMA = """
CREATE TABLE IF NOT EXISTS surveys (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    state INTEGER NOT NULL,
    spec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS tallies (
    survey_id TEXT NOT NULL REFERENCES surveys(id),
    question_id TEXT NOT NULL,
    n INTEGER NOT NULL DEFAULT 0,
    sums TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (survey_id, question_id)
);
CREATE TABLE IF NOT EXISTS releases (
    survey_id TEXT NOT NULL REFERENCES surveys(id),
    question_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    sums TEXT NOT NULL,
    PRIMARY KEY (survey_id, question_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys(id),
    reports BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS log_by_survey ON log (survey_id, seq);
CREATE TABLE IF NOT EXISTS tokens (
    hash BLOB PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys(id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS token_counts (
    survey_id TEXT PRIMARY KEY REFERENCES surveys(id),
    issued INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS token_answers (
    token_hash BLOB NOT NULL REFERENCES tokens(hash),
    question_id TEXT NOT NULL,
    survey_id TEXT NOT NULL REFERENCES surveys(id),
    report_id TEXT NOT NULL,
    payload_digest BLOB NOT NULL,
    PRIMARY KEY (token_hash, question_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS token_answers_by_report ON token_answers (survey_id, report_id);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS id_segments (
    segment INTEGER PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys(id),
    last_seq INTEGER NOT NULL,
    count INTEGER NOT NULL,
    fences BLOB NOT NULL,
    filter BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS id_segments_by_survey ON id_segments (survey_id, segment);
CREATE TABLE IF NOT EXISTS id_chunks (
    chunk INTEGER PRIMARY KEY,
    prints BLOB NOT NULL,
    seqs BLOB NOT NULL
);
"""
# Version 1 kept one row per report in a `reports` table with a random primary key.
# Version 2 introduced the batch log; version 3 also writes compact log rows, which
# version 2 cannot read, so the tables are the same and only the number changes.
# Version 4 adds enrollment: `tokens` holds the SHA-256 hash of every issued token (never
# the token), `token_counts` how many each survey issued, and `token_answers` binds each
# (token, question) to the one report it stored (its id and the SHA-256 of its payload).
# Upgrading from 3 only creates these tables.
# Version 5 also writes compact rows with hex-packed ids (first byte 0x02), which version 4
# cannot read: again the tables are the same and only the number changes.
# Version 6 adds the report-id index the daemon keeps on disk: `meta` holds the secret key
# of the id fingerprints, `id_segments` and `id_chunks` the sealed segments of each open
# survey's ids (sorted fingerprints and their log rows). Version 5 would not keep them up
# to date, hence the new number. Upgrading creates the tables and the key; the daemon
# seals the segments of the existing log when it opens the database.
# Version 7 adds release steps: `releases` holds the tally last released for each question
# of a survey with a release_step, written in the transaction of the batch that reached the
# release point. Upgrading only creates the table (older surveys are not stepped); version 6
# would not keep it up to date, hence the new number.
_V1_CHUNK = 10_000
_KEY_NAME = "fingerprint_key"


def migrate(db: sqlite3.Connection) -> None:
    """Create the schema in a new database, or upgrade an older one in one transaction.

    Raises:
        StorageError: the database was written by a newer version of deniable.
    """
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"the database has schema version {version}, newer than this aggregator's "
            f"{SCHEMA_VERSION}; upgrade deniable"
        )
    db.execute("BEGIN IMMEDIATE")
    try:
        v1 = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reports'"
        ).fetchone()
        if v1:
            db.execute("ALTER TABLE tallies RENAME TO tallies_v1")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        if v1:
            _from_v1(db)
        db.execute(
            "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)",
            (_KEY_NAME, secrets.token_bytes(16)),
        )
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def fingerprint_key(db: sqlite3.Connection) -> tuple[int, int]:
    """The database's secret key for report-id fingerprints."""
    (value,) = db.execute("SELECT value FROM meta WHERE name = ?", (_KEY_NAME,)).fetchone()
    return int.from_bytes(value[:8], "little"), int.from_bytes(value[8:16], "little")


def _from_v1(db: sqlite3.Connection) -> None:
    """Move v1's per-report rows into the batch log, and its yes counts into ``sums``."""
    db.execute(
        "INSERT INTO tallies (survey_id, question_id, n, sums) "
        "SELECT survey_id, question_id, n, CASE WHEN n = 0 THEN '[]' ELSE '[' || ones || ']' END "
        "FROM tallies_v1"
    )
    surveys = [row[0] for row in db.execute("SELECT id FROM surveys ORDER BY seq")]
    for survey_id in surveys:
        cursor = db.execute(
            "SELECT payload FROM reports WHERE survey_id = ? ORDER BY rowid", (survey_id,)
        )
        while chunk := cursor.fetchmany(_V1_CHUNK):
            db.execute(
                "INSERT INTO log (survey_id, reports) VALUES (?, ?)",
                (survey_id, b"".join(frame(bytes(payload)) for (payload,) in chunk)),
            )
    db.execute("DROP TABLE tallies_v1")
    db.execute("DROP TABLE reports")


def upgrade(path: str) -> tuple[str, int, int]:
    """Upgrade a SQLite database in one transaction, holding the daemon's lock file.

    Returns:
        The database's name (its path), and its schema versions before and after.

    Raises:
        StorageError: the database is in use, cannot be read, or is from a newer version.
    """
    lock = exclusive_lock(f"{path}.lock")
    try:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            (before,) = db.execute("PRAGMA user_version").fetchone()
            migrate(db)
            (after,) = db.execute("PRAGMA user_version").fetchone()
        finally:
            db.close()
    except sqlite3.Error as error:
        raise StorageError(f"cannot upgrade SQLite database {path!r}: {error}") from None
    except StorageError as error:
        raise StorageError(f"{path!r}: {error}") from None
    finally:
        lock.close()
    return path, int(before), int(after)
