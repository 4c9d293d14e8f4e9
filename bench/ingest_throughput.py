"""Report ingest over gRPC: SubmitReports on the real aggregator against a bare grpcio server."""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import google.protobuf
import grpc
from google.protobuf.internal import api_implementation
from ingest_participants import (
    IN_FLIGHT,
    PARTICIPANTS,
    SURVEY,
    ParticipantRun,
    measure_participants,
    participant_questions,
    report_participants,
)
from ingest_profile import profile_ingest
from ingest_servers import (
    ADMIN_TOKEN,
    BARE,
    CALL_TIMEOUT,
    MAX_WORKERS,
    MIXED,
    QUESTION_ID,
    REAL,
    YESNO,
    ServerHandle,
    build_requests,
    start,
    survey_questions,
)

from deniable.aggregator.server._lifecycle import MAX_MESSAGE_BYTES
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

SEQUENTIAL = "sequential"
TARGET_BATCH = 1000
BARE_MAX_PASSES = 20
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
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
    stubs: Sequence[pb_grpc.AggregatorStub],
    requests: Sequence[pb.SubmitReportsRequest],
    threads: int,
    max_seconds: float,
    *,
    passes: int = 1,
    min_seconds: float = 0.0,
) -> Sample:
    """Send ``requests`` with one call in flight per client thread, each on its own channel.

    Each thread sends its share, and sends it again (up to ``passes`` times in all) while
    less than ``min_seconds`` have passed; it stops early once ``max_seconds`` have passed.
    """
    totals = [0, 0, 0]  # reports, stored, calls
    lock = threading.Lock()

    def worker(
        stub: pb_grpc.AggregatorStub, share: Sequence[pb.SubmitReportsRequest], t0: float
    ) -> None:
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
        worker(stubs[0], requests, t0)
    else:
        with futures.ThreadPoolExecutor(max_workers=threads) as pool:
            jobs = [pool.submit(worker, stubs[i], requests[i::threads], t0) for i in range(threads)]
            for job in jobs:
                job.result()
    elapsed = time.perf_counter() - t0
    return Sample(totals[0], totals[1], totals[2], elapsed)


@dataclass(frozen=True)
class Cell:
    """One (mode, traffic, batch size) combination of the table."""

    mode: str
    threads: int
    batch: int
    requests: int
    traffic: str = YESNO


def make_cells(
    batches: Sequence[int], reports: int, max_requests: int, threads: int, traffics: Sequence[str]
) -> list[Cell]:
    """Per traffic: sequential cells, then the concurrent ones if asked for.

    Yes/no traffic is measured at every batch size, mixed traffic at the target's.
    """
    modes = [(SEQUENTIAL, 1)]
    if threads > 1:
        modes.append((f"{threads} clients", threads))
    return [
        Cell(mode, n_threads, batch, max(1, min(max_requests, reports // batch)), traffic)
        for traffic in traffics
        for mode, n_threads in modes
        for batch in (batches if traffic == YESNO else [TARGET_BATCH])
    ]


def target_ratio(cell: Cell) -> float | None:
    """The line a batch-1000 cell is held against (None: shown for information only).

    Yes/no batches of 1000 from one client or four: 0.5x (a bare call plus one fsync is
    about 0.8x); mixed kinds in one batch: 0.4x.
    """
    if cell.batch != TARGET_BATCH:
        return None
    return 0.5 if cell.traffic == YESNO else 0.4


@dataclass
class Run:
    """Everything measured in one run."""

    samples: dict[tuple[Cell, str], list[Sample]]
    real_sent: int
    real_stored: int


def measure(
    stubs: dict[str, list[pb_grpc.AggregatorStub]],
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
    for batch, traffic in sorted({(c.batch, c.traffic) for c in cells}):  # warm-up, counted
        warm = build_requests(rng, survey_id, batch, 3, traffic)
        for name, stub in stubs.items():
            sample = send(stub, warm, 1, max_seconds)
            if name == REAL:
                real_sent += sample.reports
                real_stored += sample.stored
    for round_index in range(rounds):
        for cell_index, cell in enumerate(cells):
            requests = build_requests(rng, survey_id, cell.batch, cell.requests, cell.traffic)
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


def paired_ratios(real: Sequence[Sample], bare: Sequence[Sample]) -> list[float]:
    """Real rate ÷ bare rate of each round: the two were measured back to back.

    The machine's speed drifts from second to second (other virtual machines share the
    host), and both servers of a round see about the same speed, so the ratio of a pair
    is steadier than a ratio of medians taken over different rounds.
    """
    return [r.rate / b.rate for r, b in zip(real, bare, strict=True)]


def report_table(cells: Sequence[Cell], run: Run) -> dict[Cell, float]:
    """Print the results table; return the paired ratio of each batch-1000 cell."""
    print(
        f"{'traffic':<7} {'mode':<10} {'batch':>5}  {'real calls':>10} {'real rep/s':>11}"
        f" {'(min-max)':>19}"
        f"  {'bare calls':>10} {'bare rep/s':>11} {'(min-max)':>21}  {'real/bare':>9}"
        f"  {'paired':>6} {'(min-max)':>13}  {'real ms':>7} {'bare ms':>7}"
    )
    targets: dict[Cell, float] = {}
    for cell in cells:
        real = run.samples[cell, REAL]
        bare = run.samples[cell, BARE]
        real_rate, bare_rate = _median_rate(real), _median_rate(bare)
        ratio = real_rate / bare_rate
        pairs = paired_ratios(real, bare)
        paired = statistics.median(pairs)
        if cell.batch == TARGET_BATCH:
            targets[cell] = paired
        real_range = f"({min(s.rate for s in real):,.0f}-{max(s.rate for s in real):,.0f})"
        bare_range = f"({min(s.rate for s in bare):,.0f}-{max(s.rate for s in bare):,.0f})"
        print(
            f"{cell.traffic:<7} {cell.mode:<10} {cell.batch:>5}"
            f"  {statistics.median(s.calls for s in real):>10,.0f}"
            f" {real_rate:>11,.0f} {real_range:>19}"
            f"  {statistics.median(s.calls for s in bare):>10,.0f}"
            f" {bare_rate:>11,.0f} {bare_range:>21}  {ratio:>8.3f}x"
            f"  {paired:>5.3f}x {f'({min(pairs):.2f}-{max(pairs):.2f})':>13}"
            f"  {statistics.median(s.ms_per_call for s in real):>7.2f}"
            f" {statistics.median(s.ms_per_call for s in bare):>7.2f}"
        )
    return targets


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
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per server")
    parser.add_argument(
        "--threads",
        type=int,
        default=4,
        help="concurrent clients (threads, a channel each) of the concurrent variant (0: off)",
    )
    parser.add_argument(
        "--traffic",
        nargs="+",
        choices=[YESNO, MIXED, PARTICIPANTS],
        default=[YESNO, MIXED, PARTICIPANTS],
        help="yes/no reports only; yes/no, multiple-choice and numeric reports interleaved "
        "in every batch (measured at batch 1000); and/or participants: each call one "
        f"participant's {len(SURVEY)} reports, {IN_FLIGHT} in flight (asyncio client)",
    )
    parser.add_argument(
        "--participant-calls",
        type=int,
        default=6000,
        help="participants' calls per round sent to the real server (upper bound)",
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
        help="break down the real server's time (auto: when a batch-1000 line fails)",
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
    batch_traffic = [traffic for traffic in args.traffic if traffic != PARTICIPANTS]
    cells = make_cells(batches, args.reports, args.max_requests, args.threads, batch_traffic)
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
                survey = admin.create_survey("ingest benchmark", survey_questions())
                stubs: dict[str, list[pb_grpc.AggregatorStub]] = {}
                for name, handle in servers.items():
                    stubs[name] = []
                    for _ in range(max(1, args.threads)):
                        channel = grpc.insecure_channel(handle.address, options=CHANNEL_OPTIONS)
                        channels.append(channel)
                        stubs[name].append(pb_grpc.AggregatorStub(channel))
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
                counted = sum(
                    admin.get_estimate(survey.id, question.id).n
                    for question in survey_questions()
                    if any(c.traffic == MIXED for c in cells)
                    or (cells and question.id == QUESTION_ID)
                )
                participants: ParticipantRun | None = None
                if PARTICIPANTS in args.traffic:
                    answered = admin.create_survey("participants", participant_questions())
                    addresses = {REAL: servers[REAL].address, BARE: servers[BARE].address}
                    participants = measure_participants(
                        addresses,
                        answered,
                        args.rounds,
                        args.participant_calls,
                        args.max_seconds,
                        args.bare_min_seconds,
                        args.seed,
                    )
                    counted += sum(
                        admin.get_estimate(answered.id, question.id).n
                        for question in answered.questions
                    )
                    run.real_sent += participants.sent
                    run.real_stored += participants.stored
                elapsed = time.perf_counter() - t0
        finally:
            for channel in channels:
                channel.close()
            for handle in servers.values():
                handle.stop()

        print(
            f"measured in {elapsed:.1f} s (load average now {os.getloadavg()[0]:.2f}); "
            f"median (min-max) of {args.rounds} rounds\n"
        )
        targets = report_table(cells, run) if cells else {}
        print()
        lines = [] if participants is None else report_participants(participants)
        print()
        failed = False
        for cell, ratio in targets.items():
            line = target_ratio(cell)
            assert line is not None
            failed |= ratio < line
            print(
                f"target: >= {line}x bare at batch {TARGET_BATCH}, {cell.traffic}, {cell.mode}: "
                f"{'PASS' if ratio >= line else 'FAIL'} ({ratio:.2f}, the median of the "
                "rounds' paired ratios)"
            )
        for name, met, figure in lines:
            print(f"target: {name}: {'PASS' if met else 'FAIL'} ({figure})")
        correct = counted == run.real_sent == run.real_stored
        print(
            f"correctness: GetEstimate n, summed over the questions = {counted:,}; reports "
            f"sent to the real server = {run.real_sent:,}; acknowledged as stored = "
            f"{run.real_stored:,}: {'OK' if correct else 'MISMATCH'}"
        )
        if cells and (args.profile == "on" or (args.profile == "auto" and failed)):
            print()
            profile_ingest(tmp / "bench.db", survey.id, TARGET_BATCH, 20, args.seed + 1)
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
