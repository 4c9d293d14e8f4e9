"""Folding a question's per-batch tally rows into its batch-0 row, safely beside other daemons.

Every batch adds a tally row per question it answers (no hot row to update), so the rows
would grow without bound. A compaction deletes the question's other rows and adds them
to batch 0, in one short transaction that first locks batch 0 with ``FOR UPDATE SKIP
LOCKED``: two daemons never fold at once (the second skips), a stepped question's batch
(which holds that lock) is never raced, and a read sees either the rows or their sum,
never both. A batch that commits meanwhile adds a row the fold does not see; it stays.
"""

from __future__ import annotations

import psycopg
from psycopg.rows import TupleRow

from deniable.aggregator.storage._base import Tally

__all__ = ["COMPACT_EVERY", "COMPACT_ROWS", "compact", "released_row", "sum_rows"]

Connection = psycopg.Connection[TupleRow]

COMPACT_EVERY = 64
"""A batch whose tally row's number is a multiple of this folds its question's rows."""
COMPACT_ROWS = 256
"""A read that sums more rows than this folds them."""


def compact(db: Connection, key: tuple[str, str]) -> int:
    """Fold the question's rows into batch 0 (caller's transaction); how many were folded.

    0 when another transaction holds batch 0 (it is folding, or storing a stepped batch).
    """
    zero = db.execute(
        "SELECT n, sums FROM tallies WHERE survey_id = %s AND question_id = %s AND batch = 0 "
        "FOR UPDATE SKIP LOCKED",
        key,
    ).fetchone()
    if zero is None:
        return 0
    # A new statement, after the lock: it sees every fold committed before ours.
    folded = db.execute(
        "DELETE FROM tallies WHERE survey_id = %s AND question_id = %s AND batch <> 0 "
        "RETURNING n, sums",
        key,
    ).fetchall()
    if not folded:
        return 0
    total = Tally(int(zero[0])).plus(0, zero[1])
    for rows_n, rows_sums in folded:
        total = total.plus(int(rows_n), rows_sums)
    db.execute(
        "UPDATE tallies SET n = %s, sums = %s "
        "WHERE survey_id = %s AND question_id = %s AND batch = 0",
        (total.n, list(total.sums), *key),
    )
    return len(folded)


def sum_rows(db: Connection, key: tuple[str, str]) -> tuple[Tally, int]:
    """The sum of a question's tally rows, and how many rows there are."""
    total = Tally(0)
    rows = db.execute(
        "SELECT n, sums FROM tallies WHERE survey_id = %s AND question_id = %s", key
    ).fetchall()
    for n, sums in rows:
        total = total.plus(int(n), sums)
    return total, len(rows)


def released_row(db: Connection, key: tuple[str, str]) -> Tally:
    """The question's last release (``Tally(0)`` before the first)."""
    row = db.execute(
        "SELECT n, sums FROM releases WHERE survey_id = %s AND question_id = %s", key
    ).fetchone()
    return Tally(0) if row is None else Tally(int(row[0]), tuple(int(s) for s in row[1]))
