"""Ingest by backend: SQLite, PostgreSQL, two daemons on one PostgreSQL (reports/s, p99, RSS)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc
import psycopg
from fault_harness import ADMIN_TOKEN, Daemon, start_daemon
from ingest_servers import CALL_TIMEOUT, build_requests, survey_questions
from pg_cluster import Cluster, create_database, open_cluster, peak_rss_mib

from deniable.aggregator.server._lifecycle import MAX_MESSAGE_BYTES
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb

SQLITE = "sqlite, 1 daemon"
POSTGRES = "postgresql, 1 daemon"
POSTGRES_TWO = "postgresql, 2 daemons"
CONFIGS = (SQLITE, POSTGRES, POSTGRES_TWO)
METHOD = "/deniable.v1.Aggregator/SubmitReports"
OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


@dataclass(frozen=True)
class Run:
    """One measurement of one configuration."""

    config: str
    reports: int
    stored: int
    seconds: float
    latencies: tuple[float, ...]  # seconds per call
    peak_rss_mib: tuple[float, ...]  # per daemon
    commits: int | None  # PostgreSQL transactions committed in the database (None: SQLite)

    @property
    def rate(self) -> float:
        """Reports per second."""
        return self.reports / self.seconds


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def send(
    addresses: Sequence[str], bodies: Sequence[bytes], threads: int, max_seconds: float
) -> tuple[int, int, float, list[float]]:
    """Send pre-serialized batches, one call in flight per thread, threads spread over daemons.

    Returns (reports sent, reports stored, seconds, latency of each call).
    """
    latencies: list[float] = []
    totals = [0, 0]
    lock = threading.Lock()
    t0 = time.perf_counter()

    def worker(index: int) -> None:
        channel = grpc.insecure_channel(addresses[index % len(addresses)], options=OPTIONS)
        call: grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
        call = channel.unary_unary(
            METHOD, response_deserializer=pb.SubmitReportsResponse.FromString
        )
        mine: list[float] = []
        sent = stored = 0
        try:
            for body in bodies[index::threads]:
                start = time.perf_counter()
                response = call(body, timeout=CALL_TIMEOUT)
                mine.append(time.perf_counter() - start)
                sent += response.stored + response.already_stored
                stored += response.stored
                if time.perf_counter() - t0 > max_seconds:
                    break
        finally:
            channel.close()
        with lock:
            latencies.extend(mine)
            totals[0] += sent
            totals[1] += stored

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return totals[0], totals[1], time.perf_counter() - t0, latencies


def commits(url: str) -> int:
    """Transactions committed in the database of ``url`` so far."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SELECT pg_stat_clear_snapshot()")
        row = db.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def measure(config: str, cluster: Cluster, work: Path, args: argparse.Namespace, seed: int) -> Run:
    """Start the configuration's daemons on a fresh database, load them, stop them."""
    work.mkdir(parents=True)
    url = f"sqlite:///{work / 'bench.db'}" if config == SQLITE else create_database(cluster)
    count = 2 if config == POSTGRES_TWO else 1
    daemons: list[Daemon] = []
    for index in range(count):
        (work / f"d{index}").mkdir()
        daemons.append(start_daemon(work / f"d{index}", url))
    try:
        with AggregatorClient(daemons[0].address, admin_token=ADMIN_TOKEN) as admin:
            survey = admin.create_survey("Bench", survey_questions())
        rng = random.Random(seed)
        requests = build_requests(rng, survey.id, args.batch, args.calls)
        bodies = [request.SerializeToString() for request in requests]
        before = None if config == SQLITE else commits(url)
        sent, stored, seconds, latencies = send(
            [d.address for d in daemons], bodies, args.threads, args.max_seconds
        )
        rss = tuple(peak_rss_mib(d.process.pid) for d in daemons)
    finally:
        for daemon in daemons:
            daemon.process.terminate()
            daemon.process.wait(timeout=60)
    done = None if before is None else commits(url) - before
    if stored != sent:
        raise RuntimeError(f"{config}: {sent} reports sent but {stored} stored")
    return Run(config, sent, stored, seconds, tuple(latencies), rss, done)


def table_sizes(cluster: Cluster, work: Path, reports: int, batch: int) -> dict[str, object]:
    """Bytes per stored report in each PostgreSQL table and its indexes, after ``reports``."""
    url = create_database(cluster)
    work.mkdir(parents=True)
    daemon = start_daemon(work, url)
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
            survey = admin.create_survey("Sizes", survey_questions())
        rng = random.Random(7)
        calls = -(-reports // batch)
        bodies = [r.SerializeToString() for r in build_requests(rng, survey.id, batch, calls)]
        sent, _, _, _ = send([daemon.address], bodies, 2, float("inf"))
    finally:
        daemon.process.terminate()
        daemon.process.wait(timeout=60)
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("VACUUM ANALYZE")
        rows = db.execute(
            "SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid), "
            "pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 4 DESC"
        ).fetchall()
    tables = {
        name: {
            "table_bytes": table,
            "index_bytes": index,
            "total_bytes": total,
            "table_bytes_per_report": table / sent,
            "index_bytes_per_report": index / sent,
            "total_bytes_per_report": total / sent,
        }
        for name, table, index, total in rows
    }
    total = sum(int(t["total_bytes"]) for t in tables.values())
    return {"reports": sent, "tables": tables, "total_bytes_per_report": total / sent}


def summarize(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """Per configuration: median reports/s, p50 and p99 latency, peak RSS, ratios."""
    by: dict[str, list[Run]] = {
        config: [r for r in runs if r.config == config] for config in CONFIGS
    }
    rounds = len(by[SQLITE])
    summary: dict[str, dict[str, float]] = {}
    for config, mine in by.items():
        calls = [latency for run in mine for latency in run.latencies]
        row = {
            "reports_per_s": statistics.median(r.rate for r in mine),
            "p50_ms": 1e3 * percentile(calls, 0.50),
            "p99_ms": 1e3 * percentile(calls, 0.99),
            "peak_rss_mib_per_daemon": max(max(r.peak_rss_mib) for r in mine),
            "vs_sqlite": statistics.median(
                mine[i].rate / by[SQLITE][i].rate for i in range(rounds)
            ),
        }
        if mine[0].commits is not None:
            row["commits_per_s"] = statistics.median((r.commits or 0) / r.seconds for r in mine)
        summary[config] = row
    summary[POSTGRES_TWO]["vs_one_postgres_daemon"] = statistics.median(
        by[POSTGRES_TWO][i].rate / by[POSTGRES][i].rate for i in range(rounds)
    )
    return summary


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=1000, help="reports per SubmitReports")
    parser.add_argument("--calls", type=int, default=150, help="batches per measurement (cap)")
    parser.add_argument("--max-seconds", type=float, default=15.0, help="time cap per measurement")
    parser.add_argument("--threads", type=int, default=4, help="client threads, one call each")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per config")
    parser.add_argument(
        "--no-fsync", action="store_true", help="PostgreSQL without fsync (as in the tests)"
    )
    parser.add_argument(
        "--size-reports", type=int, default=100_000, help="reports stored to measure table sizes"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    for name in ("batch", "calls", "threads", "rounds", "size_reports"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; batches of {args.batch} yes/no reports, "
        f"{args.threads} client threads, PostgreSQL fsync {'off' if args.no_fsync else 'on'}, "
        "SQLite synchronous=FULL",
        flush=True,
    )
    cluster = open_cluster(durable=not args.no_fsync)
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory(prefix="deniable-backends-") as tmp:
            root = Path(tmp)
            for round_ in range(args.rounds):
                for config in CONFIGS:
                    work = root / f"r{round_}-{CONFIGS.index(config)}"
                    run = measure(config, cluster, work, args, seed=round_)
                    runs.append(run)
                    print(
                        f"round {round_ + 1}: {config:22} {run.rate:10,.0f} reports/s "
                        f"p99 {1e3 * percentile(run.latencies, 0.99):7.1f} ms "
                        f"RSS {'/'.join(f'{m:.0f}' for m in run.peak_rss_mib)} MiB",
                        flush=True,
                    )
            sizes = table_sizes(cluster, root / "sizes", args.size_reports, args.batch)
    finally:
        cluster.stop()
    summary = summarize(runs)
    print("\nconfiguration            reports/s   p50 ms   p99 ms  RSS MiB  vs SQLite")
    for config, row in summary.items():
        print(
            f"{config:22} {row['reports_per_s']:11,.0f} {row['p50_ms']:8.1f} "
            f"{row['p99_ms']:8.1f} {row['peak_rss_mib_per_daemon']:8.0f} "
            f"{row['vs_sqlite']:9.2f}x"
            + (f"  {row['commits_per_s']:,.0f} commits/s" if "commits_per_s" in row else "")
        )
    two = summary[POSTGRES_TWO]["vs_one_postgres_daemon"]
    print(f"two PostgreSQL daemons vs one: {two:.2f}x (target >= 1.0)")
    print(f"PostgreSQL one daemon vs SQLite: {summary[POSTGRES]['vs_sqlite']:.2f}x (target >= 0.5)")
    print(f"\nbytes per report after {sizes['reports']:,} yes/no reports:")
    for name, table in sizes["tables"].items():  # type: ignore[attr-defined]
        print(
            f"  {name:14} table {table['table_bytes_per_report']:7.1f}  "
            f"indexes {table['index_bytes_per_report']:7.1f}  "
            f"total {table['total_bytes_per_report']:7.1f}"
        )
    print(f"  all tables: {sizes['total_bytes_per_report']:.1f} bytes per report")
    if args.json:
        document = {
            "summary": summary,
            "sizes": sizes,
            "runs": [asdict(run) | {"latencies": None} for run in runs],
            "args": vars(args) | {"json": str(args.json)},
        }
        args.json.write_text(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
