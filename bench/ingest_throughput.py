"""Report ingest over gRPC: SubmitReports on the real aggregator against a bare grpcio server."""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import io
import multiprocessing
import os
import platform
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NoReturn
from unittest import mock

import google.protobuf
import grpc
from google.protobuf.internal import api_implementation

from aggregator._batch import decode_batch
from aggregator._server import MAX_MESSAGE_BYTES, start_server
from aggregator._service import AggregatorService
from aggregator.storage import Storage, Submission, open_storage
from client._remote import AggregatorClient
from shared.deniable.v1 import aggregator_pb2 as pb
from shared.deniable.v1 import aggregator_pb2_grpc as pb_grpc

REAL = "real"
BARE = "bare"
SEQUENTIAL = "sequential"
TARGET_BATCH = 1000
TARGET_RATIO = 0.5
ALPHA = 0.5
QUESTION_ID = "cheated"
ADMIN_TOKEN = "bench-admin-token"
MAX_WORKERS = 16  # start_server's default thread pool
CALL_TIMEOUT = 60.0  # seconds, per RPC
SERVER_LIFETIME = 900.0  # a server subprocess exits on its own after this many seconds
STARTUP_TIMEOUT = 60.0
BARE_MAX_PASSES = 20
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


# --- the two servers -------------------------------------------------------------------


def _unimplemented(context: grpc.ServicerContext) -> NoReturn:
    context.abort(grpc.StatusCode.UNIMPLEMENTED, "the bare baseline only takes SubmitReports")


class BareServicer(pb_grpc.AggregatorServicer):
    """Receives SubmitReports like the real service, then discards the reports."""

    def CreateSurvey(  # noqa: N802 - names fixed by the generated base class
        self, request: pb.CreateSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def GetSurvey(  # noqa: N802
        self, request: pb.GetSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def ListSurveys(  # noqa: N802
        self, request: pb.ListSurveysRequest, context: grpc.ServicerContext
    ) -> pb.ListSurveysResponse:
        """Not part of the baseline."""
        _unimplemented(context)

    def CloseSurvey(  # noqa: N802
        self, request: pb.CloseSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def GetEstimate(  # noqa: N802
        self, request: pb.GetEstimateRequest, context: grpc.ServicerContext
    ) -> pb.Estimate:
        """Not part of the baseline."""
        _unimplemented(context)

    def IssueTokens(  # noqa: N802
        self, request: pb.IssueTokensRequest, context: grpc.ServicerContext
    ) -> pb.IssueTokensResponse:
        """Not part of the baseline."""
        _unimplemented(context)

    def SubmitReports(  # noqa: N802
        self, request: pb.SubmitReportsRequest, context: grpc.ServicerContext
    ) -> pb.SubmitReportsResponse:
        """Acknowledge every report without looking at it."""
        return pb.SubmitReportsResponse(stored=len(request.reports))


def start_bare_server() -> tuple[grpc.Server, int]:
    """A grpcio server with the Aggregator service and start_server's pool and limits."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="rpc"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=MAX_WORKERS * 8,
    )
    pb_grpc.add_AggregatorServicer_to_server(BareServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    if port == 0:
        raise OSError("cannot listen on 127.0.0.1:0")
    server.start()
    return server, port


def start_in_process(kind: str, db_url: str) -> tuple[int, Callable[[], None]]:
    """Start the real or the bare server in this process: its port and a stop function."""
    if kind == REAL:
        running = start_server(open_storage(db_url), ADMIN_TOKEN, "127.0.0.1:0")
        return running.port, functools.partial(running.stop, 2.0)
    server, port = start_bare_server()

    def stop() -> None:
        server.stop(2.0).wait(10.0)

    return port, stop


def _serve_child(kind: str, db_url: str, conn: Connection) -> None:
    port, stop = start_in_process(kind, db_url)
    conn.send(port)
    with contextlib.suppress(EOFError, OSError):
        conn.poll(SERVER_LIFETIME)  # any message, or the parent going away, means stop
    stop()


@dataclass
class ServerHandle:
    """A running server (in this process or a child) and how to stop it."""

    name: str
    port: int
    stop: Callable[[], None]

    @property
    def address(self) -> str:
        """Loopback address of the server."""
        return f"127.0.0.1:{self.port}"


def start_subprocess(kind: str, db_url: str) -> ServerHandle:
    """Start a server in a spawned child process, so it does not share the client's GIL."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve_child, args=(kind, db_url, child), daemon=True)
    process.start()
    child.close()
    if not parent.poll(STARTUP_TIMEOUT):
        process.kill()
        raise RuntimeError(f"{kind} server did not start within {STARTUP_TIMEOUT:.0f} s")
    port = int(parent.recv())

    def stop() -> None:
        with contextlib.suppress(OSError):
            parent.send("stop")
        process.join(20.0)
        if process.is_alive():
            process.kill()
            process.join(5.0)
        parent.close()

    return ServerHandle(kind, port, stop)


def start(kind: str, db_url: str, in_process: bool) -> ServerHandle:
    """Start one server with the chosen arrangement (the same for both servers)."""
    if in_process:
        port, stop = start_in_process(kind, db_url)
        return ServerHandle(kind, port, stop)
    return start_subprocess(kind, db_url)


# --- requests --------------------------------------------------------------------------


def binary_question() -> pb.Question:
    """The survey's one yes/no question, randomized response at α = 0.5."""
    return pb.Question(
        id=QUESTION_ID,
        text="Have you ever cheated in an exam?",
        binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=ALPHA)),
    )


def build_requests(
    rng: random.Random, survey_id: str, batch: int, count: int
) -> list[pb.SubmitReportsRequest]:
    """``count`` requests of ``batch`` reports each, every report_id fresh (32 hex chars)."""
    mechanism = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=ALPHA))
    return [
        pb.SubmitReportsRequest(
            reports=[
                pb.Report(
                    report_id=f"{rng.getrandbits(128):032x}",
                    survey_id=survey_id,
                    question_id=QUESTION_ID,
                    mechanism=mechanism,
                    bit=rng.getrandbits(1) == 1,
                )
                for _ in range(batch)
            ]
        )
        for _ in range(count)
    ]


# --- measuring -------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One timed measurement: reports sent, acknowledged as stored, calls and seconds."""

    reports: int
    stored: int
    calls: int
    seconds: float

    @property
    def rate(self) -> float:
        """Reports per second."""
        return self.reports / self.seconds

    @property
    def ms_per_call(self) -> float:
        """Mean wall time per call, in milliseconds."""
        return 1e3 * self.seconds / self.calls


def send(
    stub: pb_grpc.AggregatorStub,
    requests: Sequence[pb.SubmitReportsRequest],
    threads: int,
    max_seconds: float,
    *,
    passes: int = 1,
    min_seconds: float = 0.0,
) -> Sample:
    """Send ``requests`` with one call in flight per client thread.

    Each thread sends its share, and sends it again (up to ``passes`` times in all) while
    less than ``min_seconds`` have passed; it stops early once ``max_seconds`` have passed.
    """
    totals = [0, 0, 0]  # reports, stored, calls
    lock = threading.Lock()

    def worker(share: Sequence[pb.SubmitReportsRequest], t0: float) -> None:
        reports = stored = calls = 0
        deadline = t0 + max_seconds
        for _ in range(passes):
            for request in share:
                response = stub.SubmitReports(request, timeout=CALL_TIMEOUT)
                reports += len(request.reports)
                stored += response.stored
                calls += 1
                if time.perf_counter() > deadline:
                    break
            now = time.perf_counter()
            if now > deadline or now - t0 >= min_seconds:
                break
        with lock:
            totals[0] += reports
            totals[1] += stored
            totals[2] += calls

    t0 = time.perf_counter()
    if threads <= 1:
        worker(requests, t0)
    else:
        with futures.ThreadPoolExecutor(max_workers=threads) as pool:
            jobs = [pool.submit(worker, requests[i::threads], t0) for i in range(threads)]
            for job in jobs:
                job.result()
    elapsed = time.perf_counter() - t0
    return Sample(totals[0], totals[1], totals[2], elapsed)


@dataclass(frozen=True)
class Cell:
    """One (mode, batch size) combination of the table."""

    mode: str
    threads: int
    batch: int
    requests: int


def make_cells(batches: Sequence[int], reports: int, max_requests: int, threads: int) -> list[Cell]:
    """Sequential cells for every batch size, then the concurrent ones if asked for."""
    modes = [(SEQUENTIAL, 1)]
    if threads > 1:
        modes.append((f"{threads} threads", threads))
    return [
        Cell(mode, n_threads, batch, max(1, min(max_requests, reports // batch)))
        for mode, n_threads in modes
        for batch in batches
    ]


@dataclass
class Run:
    """Everything measured in one run."""

    samples: dict[tuple[Cell, str], list[Sample]]
    real_sent: int
    real_stored: int


def measure(
    stubs: dict[str, pb_grpc.AggregatorStub],
    survey_id: str,
    cells: Sequence[Cell],
    rounds: int,
    max_seconds: float,
    bare_min_seconds: float,
    seed: int,
) -> Run:
    """Interleave real and bare per cell and round; the starting server alternates.

    Both servers receive the same pre-built request objects, built before the pair is
    timed; the real server sees every report_id exactly once.
    """
    rng = random.Random(seed)
    samples: dict[tuple[Cell, str], list[Sample]] = defaultdict(list)
    real_sent = real_stored = 0
    for batch in sorted({cell.batch for cell in cells}):  # warm-up, counted for the check
        warm = build_requests(rng, survey_id, batch, 3)
        for name, stub in stubs.items():
            sample = send(stub, warm, 1, max_seconds)
            if name == REAL:
                real_sent += sample.reports
                real_stored += sample.stored
    for round_index in range(rounds):
        for cell_index, cell in enumerate(cells):
            requests = build_requests(rng, survey_id, cell.batch, cell.requests)
            first_real = (round_index + cell_index) % 2 == 0  # each cell alternates per round
            order = [REAL, BARE] if first_real else [BARE, REAL]
            for name in order:
                if name == REAL:  # every report_id reaches the real server exactly once
                    sample = send(stubs[name], requests, cell.threads, max_seconds)
                else:  # the bare server keeps nothing: repeat short lists for a stable time
                    sample = send(
                        stubs[name],
                        requests,
                        cell.threads,
                        max_seconds,
                        passes=BARE_MAX_PASSES,
                        min_seconds=bare_min_seconds,
                    )
                samples[cell, name].append(sample)
                if name == REAL:
                    real_sent += sample.reports
                    real_stored += sample.stored
                elif sample.stored != sample.reports:
                    raise RuntimeError("the bare server acknowledged a wrong count")
            del requests
    return Run(dict(samples), real_sent, real_stored)


def _median_rate(samples: Sequence[Sample]) -> float:
    return statistics.median(s.rate for s in samples)


def report_table(cells: Sequence[Cell], run: Run) -> dict[str, float]:
    """Print the results table; return the batch-1000 ratio real/bare of each mode run."""
    print(
        f"{'mode':<11} {'batch':>5}  {'real calls':>10} {'real rep/s':>11} {'(min-max)':>19}"
        f"  {'bare calls':>10} {'bare rep/s':>11} {'(min-max)':>21}  {'real/bare':>9}"
        f"  {'real ms':>7} {'bare ms':>7}"
    )
    targets: dict[str, float] = {}
    for cell in cells:
        real = run.samples[cell, REAL]
        bare = run.samples[cell, BARE]
        real_rate, bare_rate = _median_rate(real), _median_rate(bare)
        ratio = real_rate / bare_rate
        if cell.batch == TARGET_BATCH:
            targets[cell.mode] = ratio
        real_range = f"({min(s.rate for s in real):,.0f}-{max(s.rate for s in real):,.0f})"
        bare_range = f"({min(s.rate for s in bare):,.0f}-{max(s.rate for s in bare):,.0f})"
        print(
            f"{cell.mode:<11} {cell.batch:>5}  {statistics.median(s.calls for s in real):>10,.0f}"
            f" {real_rate:>11,.0f} {real_range:>19}"
            f"  {statistics.median(s.calls for s in bare):>10,.0f}"
            f" {bare_rate:>11,.0f} {bare_range:>21}  {ratio:>8.3f}x"
            f"  {statistics.median(s.ms_per_call for s in real):>7.2f}"
            f" {statistics.median(s.ms_per_call for s in bare):>7.2f}"
        )
    return targets


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
            groups = [service._check_group(group, decoded.positions) for group in decoded.groups]
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
    print(f"    Python in submit (id index, sums)       {_ms(parts['submit_python']):7.2f} ms")
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


# --- main --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--batches", type=int, nargs="+", default=[1, 100, 1000], help="reports per request"
    )
    parser.add_argument(
        "--reports",
        type=int,
        default=200_000,
        help="reports per measurement (upper bound); the default keeps the real server's "
        "rounds about as long as the bare server's (--bare-min-seconds)",
    )
    parser.add_argument(
        "--max-requests", type=int, default=500, help="requests per measurement (upper bound)"
    )
    parser.add_argument("--max-seconds", type=float, default=10.0, help="time cap per measurement")
    parser.add_argument(
        "--bare-min-seconds",
        type=float,
        default=0.5,
        help=f"bare server: resend the same requests (at most {BARE_MAX_PASSES} passes) "
        "until this long",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per server")
    parser.add_argument(
        "--threads", type=int, default=4, help="client threads of the concurrent variant (0: off)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run both servers in this process (default: each in a spawned subprocess)",
    )
    parser.add_argument(
        "--profile",
        choices=["auto", "on", "off"],
        default="auto",
        help="break down the real server's time (auto: when the batch-1000 target fails)",
    )
    parser.add_argument("--seed", type=int, default=20261121, help="seed for report contents")
    args = parser.parse_args(argv)
    if any(b < 1 or b > 10_000 for b in args.batches):
        parser.error("--batches must be in 1..10000 (the service's batch limit)")
    if args.reports < 1 or args.max_requests < 1 or args.rounds < 1:
        parser.error("--reports, --max-requests and --rounds must be at least 1")
    if not 0.0 < args.max_seconds <= 60.0:
        parser.error("--max-seconds must be in (0, 60]")
    if not 0.0 <= args.bare_min_seconds <= args.max_seconds:
        parser.error("--bare-min-seconds must be in [0, --max-seconds]")
    if not 0 <= args.threads <= 32:
        parser.error("--threads must be in 0..32")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    batches: list[int] = sorted(set(args.batches))
    in_process: bool = args.in_process
    cells = make_cells(batches, args.reports, args.max_requests, args.threads)
    arrangement = (
        "both servers in this process (client and server share one GIL)"
        if in_process
        else "each server in its own spawned subprocess, client in the main process"
    )
    print(
        f"python {platform.python_version()}, grpcio {grpc.__version__}, protobuf "
        f"{google.protobuf.__version__} ({api_implementation.Type()}), sqlite "
        f"{sqlite3.sqlite_version}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(f"arrangement: {arrangement}; loopback 127.0.0.1, plaintext")
    print(
        "real: start_server + SQLite (WAL, synchronous=FULL, fsync per batch); "
        f"bare: grpcio, same service, discards; {MAX_WORKERS} workers, 8 MiB messages"
    )
    print(
        f"rounds={args.rounds}, at most {args.reports:,} reports and {args.max_requests:,} "
        f"requests per measurement, max {args.max_seconds:g} s each; the bare server gets "
        f"the same requests, resent until {args.bare_min_seconds:g} s; seed={args.seed}"
    )

    with tempfile.TemporaryDirectory(prefix="deniable-bench-") as tmpdir:
        tmp = Path(tmpdir)
        db_url = f"sqlite:///{tmp / 'bench.db'}"
        servers: dict[str, ServerHandle] = {}
        channels: list[grpc.Channel] = []
        try:
            servers[REAL] = start(REAL, db_url, in_process)
            servers[BARE] = start(BARE, db_url, in_process)
            with AggregatorClient(servers[REAL].address, admin_token=ADMIN_TOKEN) as admin:
                survey = admin.create_survey("ingest benchmark", [binary_question()])
                stubs: dict[str, pb_grpc.AggregatorStub] = {}
                for name, handle in servers.items():
                    channel = grpc.insecure_channel(handle.address, options=CHANNEL_OPTIONS)
                    channels.append(channel)
                    stubs[name] = pb_grpc.AggregatorStub(channel)
                t0 = time.perf_counter()
                run = measure(
                    stubs,
                    survey.id,
                    cells,
                    args.rounds,
                    args.max_seconds,
                    args.bare_min_seconds,
                    args.seed,
                )
                elapsed = time.perf_counter() - t0
                estimate = admin.get_estimate(survey.id, QUESTION_ID)
        finally:
            for channel in channels:
                channel.close()
            for handle in servers.values():
                handle.stop()

        print(
            f"measured in {elapsed:.1f} s (load average now {os.getloadavg()[0]:.2f}); "
            f"median (min-max) of {args.rounds} rounds\n"
        )
        targets = report_table(cells, run)
        print()
        for mode, ratio in targets.items():
            verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
            print(
                f"target >= {TARGET_RATIO}x bare at batch {TARGET_BATCH}, {mode}: "
                f"{verdict} ({ratio:.2f})"
            )
        correct = estimate.n == run.real_sent == run.real_stored
        print(
            f"correctness: GetEstimate n = {estimate.n:,}; reports sent to the real server "
            f"= {run.real_sent:,}; acknowledged as stored = {run.real_stored:,}: "
            f"{'OK' if correct else 'MISMATCH'}"
        )
        if args.profile == "on" or (
            args.profile == "auto" and any(ratio < TARGET_RATIO for ratio in targets.values())
        ):
            print()
            profile_ingest(tmp / "bench.db", survey.id, TARGET_BATCH, 20, args.seed + 1)
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
