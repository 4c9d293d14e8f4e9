"""PostgreSQL against its own limit: daemons' ingest vs a bare INSERT of the same ids, same run.

Every round, in a rotating order, on one throwaway cluster (fsync on), each configuration
gets a fresh database and stores the same ``--warmup`` untimed and then ``--batches``
timed batches of ``--batch`` yes/no reports (the same fresh 32-hex-digit ids):

* **bare ON CONFLICT**: one connection, no daemon: per batch one prepared ``INSERT INTO
  report_ids ... ON CONFLICT DO NOTHING`` in its own transaction (autocommit: a commit per
  batch), the ids as one space-separated string and the bits as another that the server
  splits, each id's digest one of two constants (the daemon's own form: as fast as
  binary arrays, faster than text arrays or multi-row ``VALUES``);
* **1 daemon**: ``deniable-aggregator serve`` fed pre-serialized ``SubmitReports`` by
  ``--threads`` gRPC client threads, one call in flight each;
* **2 daemons**: two such processes on one database, the threads alternating;
* **bare plain INSERT**: as the first, without ``ON CONFLICT`` (for reference: the
  statement the daemon tries first).

It prints reports/s, CPU per batch of the server, the daemons and this process (the
clients), the paired ratios per round and their medians, PASS or FAIL for 1 daemon >=
0.6x bare and 2 daemons >= 1.0x 1. It exits with status 1 only if a count does not add
up: a daemon run's estimate n must equal the reports acknowledged, and
``deniable-aggregator check`` pass on its database; never because the machine was slow.

    python bench/pg_ingest_limit.py                      # --rounds 5 --batches 200
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import grpc
import psycopg
from fault_harness import ADMIN_TOKEN, BIN, Daemon, start_daemon
from ingest_backends import METHOD, OPTIONS, percentile
from ingest_servers import CALL_TIMEOUT, QUESTION_ID, build_requests, survey_questions
from pg_cluster import Cluster, create_database, open_cluster, used
from pg_limit_figures import BARE, CONFIGS, PLAIN, TWO, Run, report, summarize

from deniable.aggregator.storage.postgres import migrate
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb


class Sent(NamedTuple):
    """What a load of batches got: reports acknowledged and stored, seconds, latencies."""

    reports: int
    stored: int
    seconds: float
    latencies: tuple[float, ...]


BARE_SURVEY = "0123456789abcdef"  # survey ids are 16 hex digits
BARE_INSERT = (
    "INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    "SELECT %(survey)s::text, k.r, CASE k.b WHEN '1' THEN %(yes)s::bytea ELSE %(no)s::bytea END "
    "FROM unnest(string_to_array(%(ids)s::text, ' '), string_to_array(%(bits)s::text, NULL)) "
    "AS k(r, b)"
)


def send(addresses: Sequence[str], bodies: Sequence[bytes], threads: int) -> Sent:
    """Send every batch: ``threads`` clients, each on a daemon of its own (round robin).

    Each client keeps one call in flight and takes the next batch from one shared queue as
    its call returns, so a daemon that the machine slows for a while takes fewer batches;
    a fixed share per client would leave the run waiting for that daemon's clients alone.
    Channels connect before the clock starts.
    """
    queue, lock, results = iter(bodies), threading.Lock(), []
    channels = [
        grpc.insecure_channel(addresses[i % len(addresses)], options=OPTIONS)
        for i in range(threads)
    ]
    for channel in channels:
        grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)

    def client(channel: grpc.Channel) -> None:
        call: grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
        call = channel.unary_unary(
            METHOD, response_deserializer=pb.SubmitReportsResponse.FromString
        )
        while True:
            with lock:
                body = next(queue, None)
            if body is None:
                return
            start = time.perf_counter()
            response = call(body, timeout=CALL_TIMEOUT)
            with lock:
                results.append(
                    (response.stored, response.already_stored, time.perf_counter() - start)
                )

    workers = [threading.Thread(target=client, args=(channel,)) for channel in channels]
    t0 = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - t0
    for channel in channels:
        channel.close()
    stored, already, latencies = zip(*results, strict=True) if results else ((), (), ())
    return Sent(sum(stored) + sum(already), sum(stored), seconds, tuple(latencies))


def total(args: argparse.Namespace) -> int:
    """Batches stored per measurement: the warm-up's, then the timed ones."""
    return int(args.warmup + args.batches)


def bare(config: str, cluster: Cluster, round_: int, args: argparse.Namespace) -> Run:
    """The round's ids into a fresh ``report_ids`` from one connection, a commit per batch.

    ``BARE`` inserts with ``ON CONFLICT DO NOTHING``, ``PLAIN`` without (a stored id would
    fail the statement: the daemon's own first try).
    """
    insert = BARE_INSERT + (" ON CONFLICT DO NOTHING" if config == BARE else "")
    requests = build_requests(random.Random(round_), BARE_SURVEY, args.batch, total(args))
    url = create_database(cluster)
    with psycopg.connect(url) as db:
        migrate(db)
    yes, no = hashlib.sha256(b"yes").digest(), hashlib.sha256(b"no").digest()
    params = [
        {
            "survey": BARE_SURVEY,
            "ids": " ".join(r.report_id for r in request.reports),
            "bits": "".join("1" if r.bit else "0" for r in request.reports),
            "yes": yes,
            "no": no,
        }
        for request in requests
    ]
    with psycopg.connect(url, autocommit=True) as db, db.cursor() as cursor:
        warm = 0
        for p in params[: args.warmup]:
            cursor.execute(insert, p, prepare=True)
            warm += cursor.rowcount
        stored, latencies = 0, []
        before = used(cluster, url)
        t0 = time.perf_counter()
        for p in params[args.warmup :]:
            start = time.perf_counter()
            cursor.execute(insert, p, prepare=True)
            latencies.append(time.perf_counter() - start)
            stored += cursor.rowcount
        seconds = time.perf_counter() - t0
        after = used(cluster, url)
        row = db.execute("SELECT count(*) FROM report_ids").fetchone()
    assert row is not None
    if not warm + stored == row[0] == args.batch * total(args):
        raise RuntimeError(f"bare: {warm} + {stored} ids inserted, {row[0]} in the table")
    return Run(config, round_, stored, seconds, tuple(latencies), after - before)


def daemons(
    config: str, cluster: Cluster, work: Path, round_: int, args: argparse.Namespace
) -> Run:
    """Start the configuration's daemons on a fresh database, load them, check the counts."""
    url = create_database(cluster)
    started: list[Daemon] = []
    for index in range(2 if config == TWO else 1):
        (work / f"d{index}").mkdir(parents=True)
        started.append(start_daemon(work / f"d{index}", url))
    try:
        with AggregatorClient(started[0].address, admin_token=ADMIN_TOKEN) as admin:
            survey = admin.create_survey("Limit", survey_questions())
            requests = build_requests(random.Random(round_), survey.id, args.batch, total(args))
            bodies = [request.SerializeToString() for request in requests]
            addresses, pids = [d.address for d in started], [d.process.pid for d in started]
            warm = send(addresses, bodies[: args.warmup], args.threads).stored
            before = used(cluster, url, pids)
            sent, stored, seconds, latencies = send(addresses, bodies[args.warmup :], args.threads)
            done = used(cluster, url, pids) - before
            estimate = admin.get_estimate(survey.id, QUESTION_ID)
    finally:
        for daemon in started:
            daemon.process.terminate()
            daemon.process.wait(timeout=60)
    if not warm + stored == warm + sent == estimate.stored == args.batch * total(args):
        raise RuntimeError(
            f"{config}: {warm} + {sent} sent, {warm} + {stored} stored, estimate n "
            f"{estimate.stored}"
        )
    check = subprocess.run(
        [str(BIN / "deniable-aggregator"), "check", "--db", url],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        raise RuntimeError(f"{config}: check failed:\n{check.stdout}{check.stderr}")
    return Run(config, round_, stored, seconds, tuple(latencies), done)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1000, help="reports per batch")
    parser.add_argument("--batches", type=int, default=200, help="batches per measurement")
    parser.add_argument("--threads", type=int, default=8, help="gRPC client threads")
    parser.add_argument(
        "--warmup", type=int, default=32, help="batches stored first, untimed (connections)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--no-fsync", action="store_true", help="PostgreSQL without fsync")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    for name in ("batch", "batches", "threads", "rounds", "warmup"):
        if getattr(args, name) < (name != "warmup"):
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds "
        f"of {args.batches} batches of {args.batch} yes/no reports, {args.threads} client "
        f"threads, PostgreSQL fsync {'off' if args.no_fsync else 'on'}",
        flush=True,
    )
    cluster = open_cluster(durable=not args.no_fsync)
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory(prefix="deniable-pg-limit-") as tmp:
            for round_ in range(args.rounds):
                # The same seed, so the same ids, for every configuration of a round.
                for config in CONFIGS[round_ % 4 :] + CONFIGS[: round_ % 4]:
                    work = Path(tmp) / f"r{round_}-{CONFIGS.index(config)}"
                    if config in (BARE, PLAIN):
                        run = bare(config, cluster, round_, args)
                    else:
                        run = daemons(config, cluster, work, round_, args)
                    runs.append(run)
                    print(
                        f"round {round_ + 1}: {config:26} {run.rate:10,.0f} reports/s  "
                        f"p99 {1e3 * percentile(run.latencies, 0.99):6.1f} ms  "
                        f"CPU ms/batch: server {1e3 * run.used.server / args.batches:5.1f} "
                        f"daemons {1e3 * run.used.daemons / args.batches:5.1f} "
                        f"client {1e3 * run.used.client / args.batches:5.1f}  "
                        f"{run.used.transactions / args.batches:.2f} xacts/batch",
                        flush=True,
                    )
    finally:
        cluster.stop()
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")
    summary = summarize(runs, args)
    report(summary, args)  # a target missed is a figure, not a failure of the run
    return 0


if __name__ == "__main__":
    sys.exit(main())
