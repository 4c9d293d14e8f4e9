"""What a per-report unique key costs SQLite: 1000 random 16-byte ids per durable commit.

The textbook way to make report ids idempotent is a unique key (``INSERT OR IGNORE`` into
``ids(id BLOB PRIMARY KEY) WITHOUT ROWID``) written in the batch's transaction. This
measures one such commit (WAL, ``synchronous=FULL``, a 64 MB page cache, 1000 random ids)
at several table sizes and counts the WAL frames (pages) it writes: about one per id,
since random keys land on random B-tree leaves and SQLite's WAL holds whole pages. The
table is filled to each size with ``synchronous=OFF`` between measurements, so the fill
is fast and is not measured.

    python bench/sqlite_unique_key.py                     # 500,000 to 2,000,000 ids
    python bench/sqlite_unique_key.py --sizes 100000 --page-size 1024
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BATCH = 1000


def wal_frames(path: Path, page_size: int) -> int:
    size = path.stat().st_size if path.exists() else 0
    return max(0, (size - 32) // (page_size + 24))


def measure(db: sqlite3.Connection, wal: Path, page_size: int, commits: int) -> tuple[float, float]:
    """Median ms and WAL frames of a commit of 1000 new ids."""
    times, frames = [], []
    for _ in range(commits):
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        ids = [(os.urandom(16),) for _ in range(BATCH)]
        t0 = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT OR IGNORE INTO ids (id) VALUES (?)", ids)
        db.execute("COMMIT")
        times.append(1e3 * (time.perf_counter() - t0))
        frames.append(wal_frames(wal, page_size))
    return statistics.median(times), statistics.median(frames)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[500_000, 1_000_000, 2_000_000], help="ids"
    )
    parser.add_argument("--page-size", type=int, default=4096, choices=[1024, 4096, 16384])
    parser.add_argument("--commits", type=int, default=20, help="measured commits per size")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="bound on the run")
    args = parser.parse_args(argv)
    if any(not 0 <= s <= 10_000_000 for s in args.sizes) or not 1 <= args.commits <= 200:
        parser.error("--sizes must be in 0..10000000 and --commits in 1..200")
    deadline = time.monotonic() + args.max_seconds
    print(
        f"sqlite {sqlite3.sqlite_version}, page size {args.page_size}, WAL, synchronous=FULL, "
        f"cache 64 MB, {BATCH} random 16-byte ids per commit; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(f"{'ids stored':>10}  {'ms per commit':>13}  {'WAL frames':>10}  {'WAL MB':>6}")
    with tempfile.TemporaryDirectory(prefix="deniable-unique-") as tmp:
        path = Path(tmp) / "ids.db"
        db = sqlite3.connect(path, isolation_level=None)
        db.execute(f"PRAGMA page_size={args.page_size}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA cache_size=-65536")
        db.execute("CREATE TABLE ids (id BLOB PRIMARY KEY) WITHOUT ROWID")
        stored = 0
        for size in sorted(args.sizes):
            if time.monotonic() > deadline:
                print("stopped: --max-seconds ran out")
                break
            db.execute("PRAGMA synchronous=OFF")
            while stored < size:
                count = min(50_000, size - stored)
                db.execute("BEGIN")
                db.executemany(
                    "INSERT INTO ids (id) VALUES (?)", ((os.urandom(16),) for _ in range(count))
                )
                db.execute("COMMIT")
                stored += count
            db.execute("PRAGMA synchronous=FULL")
            ms, frames = measure(db, Path(f"{path}-wal"), args.page_size, args.commits)
            stored += BATCH * args.commits
            megabytes = frames * (args.page_size + 24) / 2**20
            print(f"{size:>10,}  {ms:>13.2f}  {frames:>10.0f}  {megabytes:>6.1f}", flush=True)
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
