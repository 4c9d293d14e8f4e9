"""Storage.submit alone, SQLite against PostgreSQL: reports/s for yes/no batches of 1,000.

Batches are encoded and decoded beforehand, exactly as the service hands them to storage,
so the figure is the backend's cost: for PostgreSQL the statement per batch and the
server's work, for SQLite its group commit. Each backend gets a fresh database; runs
alternate between the backends, ``--rounds`` times per thread count, and the median is
printed with the ratio PostgreSQL / SQLite. PostgreSQL is ``--postgres URL`` (a database
this script may fill), else a throwaway cluster like the tests' (needs the server
binaries; run from the repository).

    python bench/storage_submit.py                    # 200 batches, 1 and 4 threads
    python bench/storage_submit.py --batches 400 --threads 1 8 --postgres postgresql://...
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage import ReportGroup, Selection, Submission, open_storage
from deniable.aggregator.storage.codec import decode_batch
from deniable.shared.wire.v1 import aggregator_pb2 as pb

BATCH = 1000
MECHANISM = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5))


def question() -> pb.Question:
    return pb.Question(id="q1", text="Q?", binary=pb.BinaryQuestion(), mechanism=MECHANISM)


def yes_count(bits: NDArray[np.uint8], keep: Selection) -> list[int]:
    return [int(bits[keep].sum())]


def batch(survey_id: str) -> Submission:
    """A batch of fresh random ids, decoded as the service decodes it."""
    reports = [
        pb.Report(
            report_id=secrets.token_hex(16),
            survey_id=survey_id,
            question_id="q1",
            mechanism=MECHANISM,
            bit=bool(secrets.randbits(1)),
        )
        for _ in range(BATCH)
    ]
    decoded = decode_batch(pb.SubmitReportsRequest(reports=reports).SerializeToString(), BATCH)
    groups = [
        ReportGroup(
            g.template.survey_id, g.template.question_id, g.rows, partial(yes_count, g.values)
        )
        for g in decoded.groups
    ]
    return Submission(
        decoded.report_ids, decoded.payloads, groups, decoded.encode, decoded.positions
    )


def rate(url: str, batches: int, threads: int) -> float:
    """Reports/s of ``threads`` threads submitting ``batches`` batches to a new database."""
    storage = open_storage(url)
    try:
        storage.create_survey(pb.Survey(id="s1", title="T", questions=[question()]))
        for _ in range(3):  # warm up: connections, prepared statements
            storage.submit(batch("s1"))
        work = [batch("s1") for _ in range(batches)]
        shares = [work[i::threads] for i in range(threads)]

        def run(share: Sequence[Submission]) -> None:
            for submission in share:
                storage.submit(submission)

        workers = [threading.Thread(target=run, args=(share,)) for share in shares]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return batches * BATCH / (time.perf_counter() - start)
    finally:
        storage.close()


def postgres(url: str | None) -> tuple[Callable[[], str], Callable[[], None]]:
    """A factory of new PostgreSQL databases, and how to clean up."""
    import psycopg

    cluster = None
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests._postgres import Cluster, server_bin_dir

        bin_dir = server_bin_dir()
        if bin_dir is None:
            sys.exit("no PostgreSQL server binaries: pass --postgres URL")
        cluster = Cluster(bin_dir)
        cluster.start()
        url = cluster.url
    base = url

    def new() -> str:
        name = f"bench{uuid.uuid4().hex[:12]}"
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return base.rsplit("/", 1)[0] + f"/{name}"

    return new, (cluster.stop if cluster is not None else lambda: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200, help="batches per measurement")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rounds", type=int, default=3, help="runs per backend and count")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: a throwaway cluster)")
    args = parser.parse_args()
    new_postgres, cleanup = postgres(args.postgres)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for threads in args.threads:
                figures: dict[str, list[float]] = {"sqlite": [], "postgres": []}
                for run in range(args.rounds):
                    sqlite_url = f"sqlite:///{tmp}/t{threads}-{run}.db"
                    figures["sqlite"].append(rate(sqlite_url, args.batches, threads))
                    figures["postgres"].append(rate(new_postgres(), args.batches, threads))
                sqlite, pg = (statistics.median(figures[k]) for k in ("sqlite", "postgres"))
                print(
                    f"{threads} thread(s): SQLite {sqlite:,.0f} reports/s, "
                    f"PostgreSQL {pg:,.0f} reports/s, ratio {pg / sqlite:.2f}",
                    flush=True,
                )
    finally:
        cleanup()


if __name__ == "__main__":
    main()
