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
0.6x bare and 2 daemons >= 1.0x 1, and fails if a count does not add up: a daemon run's
estimate n must equal the reports acknowledged, and ``deniable-aggregator check`` pass.

    python bench/pg_ingest_limit.py                      # --rounds 5 --batches 200
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from fault_harness import ADMIN_TOKEN, BIN, Daemon, start_daemon
from ingest_backends import percentile, send
from ingest_servers import QUESTION_ID, build_requests, survey_questions
from pg_cluster import Cluster, Used, create_database, open_cluster, used

from deniable.aggregator.storage._postgres import migrate
from deniable.client._remote import AggregatorClient

BARE, PLAIN = "bare ON CONFLICT, 1 conn", "bare plain INSERT, 1 conn"
ONE, TWO = "1 daemon", "2 daemons"
CONFIGS = (BARE, ONE, TWO, PLAIN)
DAEMON_TARGET, TWO_TARGET = 0.6, 1.0
BARE_SURVEY = "0123456789abcdef"  # survey ids are 16 hex digits
BARE_INSERT = (
    "INSERT INTO report_ids (survey_id, report_id, payload_digest) "
    "SELECT %(survey)s::text, k.r, CASE k.b WHEN '1' THEN %(yes)s::bytea ELSE %(no)s::bytea END "
    "FROM unnest(string_to_array(%(ids)s::text, ' '), string_to_array(%(bits)s::text, NULL)) "
    "AS k(r, b)"
)


@dataclass(frozen=True)
class Run:
    """One configuration's measurement in one round."""

    config: str
    round: int
    stored: int
    seconds: float
    latencies: tuple[float, ...]
    used: Used

    @property
    def rate(self) -> float:
        """Reports stored per second."""
        return self.stored / self.seconds


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
            warm = send(addresses, bodies[: args.warmup], args.threads, float("inf"))[1]
            before = used(cluster, url, pids)
            sent, stored, seconds, latencies = send(
                addresses, bodies[args.warmup :], args.threads, float("inf")
            )
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


def summarize(runs: Sequence[Run], args: argparse.Namespace) -> dict[str, object]:
    """Medians with ranges, and the paired ratios of each round."""
    by = {
        config: sorted((r for r in runs if r.config == config), key=lambda r: r.round)
        for config in CONFIGS
    }
    ratio = [o.rate / b.rate for o, b in zip(by[ONE], by[BARE], strict=True)]
    plain = [o.rate / b.rate for o, b in zip(by[ONE], by[PLAIN], strict=True)]
    cpu = [b.used.cpu / o.used.cpu for o, b in zip(by[ONE], by[BARE], strict=True)]
    two = [t.rate / o.rate for t, o in zip(by[TWO], by[ONE], strict=True)]
    rates = {
        config: {
            "median": statistics.median(r.rate for r in mine),
            "min": min(r.rate for r in mine),
            "max": max(r.rate for r in mine),
            "p50_ms": 1e3 * percentile([x for r in mine for x in r.latencies], 0.50),
            "p99_ms": 1e3 * percentile([x for r in mine for x in r.latencies], 0.99),
            "transactions_per_batch": statistics.median(
                r.used.transactions / args.batches for r in mine
            ),
            **{
                f"{part}_cpu_ms_per_batch": statistics.median(
                    1e3 * getattr(r.used, part) / args.batches for r in mine
                )
                for part in ("server", "daemons", "client")
            },
        }
        for config, mine in by.items()
    }
    return {
        "reports_per_s": rates,
        "daemon_vs_bare": ratio,
        "daemon_vs_plain": plain,
        "bare_cpu_vs_daemon_cpu": cpu,
        "two_vs_one": two,
    }


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
    return report(summary, args)


def report(summary: dict[str, object], args: argparse.Namespace) -> int:
    """Print the summary (and write it as JSON); 0 if both targets are met, else 1."""
    rates = summary["reports_per_s"]
    assert isinstance(rates, dict)
    print(
        f"\n{'configuration':26} reports/s, median (range) of {args.rounds}  p50 ms  p99 ms"
        "  CPU ms per batch: server daemons client  xacts/batch"
    )
    for config, row in rates.items():
        print(
            f"{config:26} {row['median']:9,.0f} ({row['min']:,.0f}-{row['max']:,.0f})"
            f"  {row['p50_ms']:6.1f}  {row['p99_ms']:6.1f}  {' ' * 17}"
            f"{row['server_cpu_ms_per_batch']:6.1f} {row['daemons_cpu_ms_per_batch']:7.1f} "
            f"{row['client_cpu_ms_per_batch']:6.1f}  {row['transactions_per_batch']:11.2f}"
        )
    ok = True
    for name, key, target in (
        ("1 daemon / bare ON CONFLICT", "daemon_vs_bare", DAEMON_TARGET),
        ("2 daemons / 1 daemon", "two_vs_one", TWO_TARGET),
        ("1 daemon / bare plain INSERT", "daemon_vs_plain", None),
        ("CPU per batch, bare ON CONFLICT / 1 daemon", "bare_cpu_vs_daemon_cpu", None),
    ):
        per_round = summary[key]
        assert isinstance(per_round, list)
        median = statistics.median(per_round)
        verdict = ""
        if target is not None:
            ok &= median >= target
            verdict = f" (target >= {target}): {'PASS' if median >= target else 'FAIL'}"
        print(
            f"{name}: per round {' '.join(f'{x:.2f}' for x in per_round)}; "
            f"median {median:.2f}x{verdict}"
        )
    if args.json:
        args.json.write_text(
            json.dumps(summary | {"args": vars(args) | {"json": str(args.json)}}, indent=2)
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
