"""Where the aggregator's time goes per batch, in process: the ingest benchmark's breakdown."""

from __future__ import annotations

import contextlib
import cProfile
import functools
import io
import pstats
import random
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from ingest_servers import QUESTION_ID, build_requests

from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.storage import Storage, Submission, open_storage
from deniable.aggregator.storage.codec import decode_batch

# --- where the real server's time goes ---------------------------------------------------


class TimedConnection(sqlite3.Connection):
    """A SQLite connection that adds up the wall time of each kind of statement."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: dict[str, float] = defaultdict(float)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        """Run and time one statement."""
        t0 = time.perf_counter()
        try:
            return super().execute(sql, parameters)
        finally:
            self.seconds[_statement(sql)] += time.perf_counter() - t0

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        """Run and time one statement over many parameter rows."""
        t0 = time.perf_counter()
        try:
            return super().executemany(sql, parameters)
        finally:
            self.seconds[_statement(sql)] += time.perf_counter() - t0


_STATEMENTS = (
    ("BEGIN", "BEGIN IMMEDIATE"),
    ("COMMIT", "COMMIT (WAL write + fsync)"),
    ("SELECT n, sums FROM tallies", "SELECT tally"),
    ("UPDATE tallies", "UPDATE tally"),
    ("INSERT INTO log", "INSERT log row"),
)


def _statement(sql: str) -> str:
    text = " ".join(sql.split())
    for prefix, label in _STATEMENTS:
        if text.startswith(prefix):
            return label
    return "other SQL (get_survey: spec + SUM(n))"


@contextlib.contextmanager
def timed_storage(db_path: Path) -> Iterator[tuple[Storage, TimedConnection]]:
    """The real SQLite backend (its own pragmas), on a connection that times statements."""
    connect = functools.partial(sqlite3.connect, factory=TimedConnection)
    with mock.patch.object(sqlite3, "connect", connect):
        storage = open_storage(f"sqlite:///{db_path}")
    db = getattr(storage, "_db", None)
    if not isinstance(db, TimedConnection):
        raise RuntimeError("could not attach the timing connection to the SQLite backend")
    try:
        yield storage, db
    finally:
        storage.close()


def _ms(values: Iterable[float]) -> float:
    return 1e3 * statistics.median(values)


def profile_ingest(db_path: Path, survey_id: str, batch: int, count: int, seed: int) -> None:
    """Break down AggregatorService.submit_reports for ``batch``-report requests, in process.

    Runs on the benchmark's own database after the servers stopped, so the tables are as
    large as the measured run left them.
    """
    rng = random.Random(seed)
    with timed_storage(db_path) as (storage, db):
        service = AggregatorService(storage)
        for request in build_requests(rng, survey_id, batch, 2):  # warm-up
            service.submit_reports(request)

        end_to_end: list[float] = []
        encoded = [r.SerializeToString() for r in build_requests(rng, survey_id, batch, count)]
        for data in encoded:
            t0 = time.perf_counter()
            service.submit_reports(data)
            end_to_end.append(time.perf_counter() - t0)

        parts: dict[str, list[float]] = defaultdict(list)
        for request in build_requests(rng, survey_id, batch, count):
            t0 = time.perf_counter()
            data = request.SerializeToString()
            t1 = time.perf_counter()
            db.seconds.clear()
            decoded = decode_batch(data, service.max_batch)
            t2 = time.perf_counter()
            groups = [service._groups.check(group, decoded.positions) for group in decoded.groups]
            t3 = time.perf_counter()
            checks_sql = sum(db.seconds.values())
            db.seconds.clear()
            storage.submit(
                Submission(
                    decoded.report_ids, decoded.payloads, groups, decoded.encode, decoded.positions
                )
            )
            t4 = time.perf_counter()
            parts["serialize"].append(t1 - t0)
            parts["decode"].append(t2 - t1)
            parts["checks"].append(t3 - t2)
            parts["checks_sql"].append(checks_sql)
            parts["submit"].append(t4 - t3)
            for label, seconds in db.seconds.items():
                parts[label].append(seconds)
            parts["submit_python"].append(t4 - t3 - sum(db.seconds.values()))

        db.execute("PRAGMA synchronous=OFF")  # measurement only: what the fsync costs
        no_fsync: list[float] = []
        for request in build_requests(rng, survey_id, batch, count):
            db.seconds.clear()
            service.submit_reports(request.SerializeToString())
            no_fsync.append(db.seconds["COMMIT (WAL write + fsync)"])
        db.execute("PRAGMA synchronous=FULL")

    plain = open_storage(f"sqlite:///{db_path}")  # cProfile on the untimed backend
    try:
        service = AggregatorService(plain)
        profile_requests = [
            r.SerializeToString() for r in build_requests(rng, survey_id, batch, count)
        ]
        profiler = cProfile.Profile()
        profiler.enable()
        for data in profile_requests:
            service.submit_reports(data)
        profiler.disable()
        tally = plain.tally(survey_id, QUESTION_ID)
    finally:
        plain.close()

    total = _ms(end_to_end)
    print(
        f"in process, no gRPC: AggregatorService.submit_reports(bytes), batch {batch}, median "
        f"of {count}: {total:.2f} ms ({batch / total * 1e3:,.0f} reports/s); the benchmark's "
        f"database, {tally.n if tally else 0:,} reports at the end"
    )
    print("  components (each a median of its own, measured on separate fresh batches):")
    print(f"  (client side: SerializeToString          {_ms(parts['serialize']):7.2f} ms)")
    print(f"  decode_batch (parse + structure)          {_ms(parts['decode']):7.2f} ms")
    print(f"  group checks (survey, question, mech.)    {_ms(parts['checks']):7.2f} ms")
    print(f"    of which get_survey SQL                 {_ms(parts['checks_sql']):7.2f} ms")
    print(f"  storage.submit                            {_ms(parts['submit']):7.2f} ms")
    for _, label in _STATEMENTS:
        if parts[label]:
            print(f"    {label:<38}{_ms(parts[label]):7.2f} ms")
    print(f"    Python in submit (claim, log row, sums) {_ms(parts['submit_python']):7.2f} ms")
    commit = _ms(parts["COMMIT (WAL write + fsync)"])
    print(
        f"  COMMIT with synchronous=OFF (no fsync)    {_ms(no_fsync):7.2f} ms"
        f"  -> fsync share of COMMIT ~ {commit - _ms(no_fsync):.2f} ms"
    )
    print()
    print(f"cProfile of submit_reports, {count} batches of {batch}, top 12 by own time")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    for line in lines[start:]:
        if line.strip():
            print("  " + line.rstrip())
