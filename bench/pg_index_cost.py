"""What one batch of 1,000 ids costs PostgreSQL, by how `report_ids` is keyed (ms per batch).

Each variant is a table shaped like ``report_ids`` (survey, id, 32-byte digest) with a
different key: the schema's text primary key, the same with a "C" collation, a ``uuid``
key, a hash-index exclusion constraint, sequential ids (no random index pages), and no
index at all (the heap alone). Every table is first filled with ``--fill`` batches, then
all are timed in interleaved rounds, each a run of 30 one-statement batches; the median
round is printed. Same statement shape as the daemon's: ids as one string that the
server splits. Needs the server binaries (a throwaway cluster, fsync on) or ``--postgres``.

    python bench/pg_index_cost.py                 # --fill 400 --rounds 6
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
import statistics
import time
from typing import Any

import psycopg
from pg_cluster import open_cluster

_SOURCE = (
    "FROM unnest(string_to_array(%(ids)s::text, ' '), string_to_array(%(bits)s::text, NULL)) "
    "AS k(r, b)"
)
_DIGEST = "CASE k.b WHEN '1' THEN %(yes)s::bytea ELSE %(no)s::bytea END"
_C = 'COLLATE "C"'
_COLUMNS = "survey_id TEXT {c} NOT NULL, report_id {t} NOT NULL, payload_digest BYTEA NOT NULL"
# name: (columns and key, the rows to insert)
VARIANTS: dict[str, tuple[str, str]] = {
    "text key (the schema)": (
        _COLUMNS.format(c="", t="TEXT") + ", PRIMARY KEY (survey_id, report_id)",
        f"SELECT %(s)s::text, k.r, {_DIGEST} {_SOURCE} ORDER BY k.r",
    ),
    'text key, "C" collation': (
        _COLUMNS.format(c=_C, t=f"TEXT {_C}") + ", PRIMARY KEY (survey_id, report_id)",
        f"SELECT %(s)s::text, k.r, {_DIGEST} {_SOURCE} ORDER BY k.r {_C}",
    ),
    "uuid key": (
        _COLUMNS.format(c=_C, t="UUID") + ", PRIMARY KEY (survey_id, report_id)",
        f"SELECT %(s)s::text, k.r::uuid, {_DIGEST} {_SOURCE} ORDER BY 2",
    ),
    "hash exclusion constraint": (
        _COLUMNS.format(c=_C, t=f"TEXT {_C}")
        + ", EXCLUDE USING hash ((survey_id || ' ' || report_id) WITH =)",
        f"SELECT %(s)s::text, k.r, {_DIGEST} {_SOURCE}",
    ),
    "sequential ids, text key": (
        _COLUMNS.format(c=_C, t=f"TEXT {_C}") + ", PRIMARY KEY (survey_id, report_id)",
        f"SELECT %(s)s::text, lpad(nextval('ids')::text, 32, '0'), {_DIGEST} {_SOURCE}",
    ),
    "no index (heap only)": (
        _COLUMNS.format(c=_C, t=f"TEXT {_C}"),
        f"SELECT %(s)s::text, k.r, {_DIGEST} {_SOURCE}",
    ),
}
_YES, _NO = hashlib.sha256(b"yes").digest(), hashlib.sha256(b"no").digest()


def batch(size: int) -> dict[str, Any]:
    """One batch's parameters: fresh random 32-hex-digit ids and random bits."""
    ids = " ".join(secrets.token_hex(16) for _ in range(size))
    bits = "".join(secrets.choice("01") for _ in range(size))
    return {"s": "s1", "ids": ids, "bits": bits, "yes": _YES, "no": _NO}


def measure(url: str, fill: int, rounds: int, size: int) -> dict[str, float]:
    """Median ms per batch of each variant after ``fill`` batches."""
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE SEQUENCE IF NOT EXISTS ids")
        tables = {name: f"bench_ids_{i}" for i, name in enumerate(VARIANTS)}
        for name, (columns, _rows) in VARIANTS.items():
            db.execute(f"DROP TABLE IF EXISTS {tables[name]}")
            db.execute(f"CREATE TABLE {tables[name]} ({columns}) WITH (autovacuum_enabled=false)")
        inserts = {
            name: f"INSERT INTO {tables[name]} {rows}" for name, (_, rows) in VARIANTS.items()
        }
        for insert in inserts.values():
            for _ in range(fill):
                db.execute(insert, batch(size), prepare=True)
        db.execute("CHECKPOINT")
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(rounds):
            for name, insert in inserts.items():
                params = [batch(size) for _ in range(30)]
                start = time.perf_counter()
                for p in params:
                    db.execute(insert, p, prepare=True)
                times[name].append((time.perf_counter() - start) / len(params) * 1000)
        for table in tables.values():
            db.execute(f"DROP TABLE {table}")
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fill", type=int, default=400, help="batches stored before timing")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: a throwaway cluster)")
    args = parser.parse_args()
    if args.postgres:
        figures = measure(args.postgres, args.fill, args.rounds, args.batch)
    else:
        cluster = open_cluster(durable=True)
        try:
            figures = measure(cluster.url, args.fill, args.rounds, args.batch)
        finally:
            cluster.stop()
    base = figures["text key (the schema)"]
    print(f"# batches of {args.batch} after {args.fill} stored; median of {args.rounds} rounds")
    for name, ms in figures.items():
        per_id = ms * 1000 / args.batch
        print(f"{name:28} {ms:6.2f} ms/batch  {per_id:5.2f} µs/id  {ms / base:4.2f}x")


if __name__ == "__main__":
    main()
