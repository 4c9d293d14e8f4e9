"""Storage at scale: daemon memory per stored report, restart to serving, GetEstimate latency.

A ``deniable-aggregator serve`` daemon (a subprocess, 127.0.0.1, a temporary SQLite file)
takes yes/no reports with fresh random ids in batches, up to ``--reports``. At each
checkpoint the fill pauses until the daemon is idle, and its resident memory
(``VmRSS``) is read from ``/proc``; at the first checkpoint and at the end, GetEstimate
latency is measured over ``--latency-calls`` sequential calls. Then the daemon is
restarted ``--restarts`` times (SIGTERM, and once ``kill -9``): restart to serving is the
time from starting the process to the first answered GetEstimate, on a port chosen in
advance. Everything is bounded by ``--max-seconds``.

Targets (printed PASS/FAIL): RSS grows at most 10 MB per 10^6 stored reports (least
squares over the checkpoints from 10^6 on, and from the first checkpoint to the last);
restart to serving at most 2 s; GetEstimate median latency at the end at most 1.5 times
that at the first checkpoint.

    python bench/storage_scale.py                      # 5,000,000 reports
    python bench/storage_scale.py --reports 1000000 --restarts 1
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import numpy as np
from scale_fill import Filler

from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb

BIN = Path(sys.executable).parent
TOKEN = "storage-scale-admin-token"
MB = 1 << 20
RSS_TARGET = 10.0  # MB per 10^6 reports
RESTART_TARGET = 2.0  # seconds
LATENCY_TARGET = 1.5  # end / first checkpoint
STARTUP_TIMEOUT = 120.0  # hang guards, never measurements
IDLE_WAIT = 1.5  # seconds without batches before memory is read


class Daemon:
    """A ``serve`` subprocess on a fixed loopback port."""

    def __init__(self, workdir: Path, db: Path, port: int) -> None:
        self.address = f"127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        env["XDG_DATA_HOME"] = str(workdir / "data")
        (workdir / "token").write_text(TOKEN + "\n")
        self.log = (workdir / "daemon.log").open("ab")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", self.address,
             "--db", f"sqlite:///{db}", "--admin-token-file", str(workdir / "token")],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env,
        )  # fmt: skip

    def rss_mb(self) -> float:
        """Resident memory, from /proc."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS line")

    def stop(self, sig: int = signal.SIGTERM) -> float:
        """Send ``sig`` and wait (bounded); the seconds it took to exit."""
        t0 = time.perf_counter()
        self.process.send_signal(sig)
        self.process.wait(timeout=STARTUP_TIMEOUT)
        self.log.close()
        return time.perf_counter() - t0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_serving(daemon: Daemon, survey_id: str, question_id: str) -> tuple[float, int]:
    """Seconds from the daemon's start to its first GetEstimate answer, and that n.

    The port is probed with plain connects every 2 ms (a gRPC channel that found nothing
    listening backs off for a second before it tries again), then the call is made.
    """
    deadline = time.perf_counter() + STARTUP_TIMEOUT
    host, port = daemon.address.split(":")
    while True:
        if daemon.process.poll() is not None:
            raise RuntimeError(f"the daemon exited ({daemon.process.returncode})")
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the daemon did not listen within {STARTUP_TIMEOUT:.0f} s")
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            break
        except OSError:
            time.sleep(0.002)
    request = pb.GetEstimateRequest(survey_id=survey_id, question_id=question_id)
    with grpc.insecure_channel(daemon.address) as channel:
        estimate = channel.unary_unary(
            "/deniable.v1.Aggregator/GetEstimate",
            request_serializer=pb.GetEstimateRequest.SerializeToString,
            response_deserializer=pb.Estimate.FromString,
        )
        reply = estimate(request, timeout=STARTUP_TIMEOUT, wait_for_ready=True)
    return time.perf_counter() - daemon.started, int(reply.n)


def latencies(address: str, survey_id: str, question_id: str, calls: int) -> list[float]:
    """Seconds per GetEstimate call, one call in flight, on a warm channel."""
    request = pb.GetEstimateRequest(survey_id=survey_id, question_id=question_id)
    with grpc.insecure_channel(address) as channel:
        estimate = channel.unary_unary(
            "/deniable.v1.Aggregator/GetEstimate",
            request_serializer=pb.GetEstimateRequest.SerializeToString,
            response_deserializer=pb.Estimate.FromString,
        )
        for _ in range(10):
            estimate(request, timeout=30.0)
        out = []
        for _ in range(calls):
            t0 = time.perf_counter()
            estimate(request, timeout=30.0)
            out.append(time.perf_counter() - t0)
    return out


def slope(points: Sequence[tuple[int, float]]) -> float:
    """Least-squares MB per 10^6 reports through (reports, MB) points."""
    if len(points) < 2:
        return float("nan")
    x = np.array([p[0] for p in points], dtype=float) / 1e6
    y = np.array([p[1] for p in points], dtype=float)
    return float(np.polyfit(x, y, 1)[0])


def checkpoints(total: int) -> list[int]:
    marks = [100_000, 500_000, *range(1_000_000, total + 1, 1_000_000)]
    return sorted({m for m in marks if m < total} | {total})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=5_000_000, help="reports to store")
    parser.add_argument("--batch", type=int, default=5000, help="reports per fill request")
    parser.add_argument("--clients", type=int, default=2, help="filling client threads")
    parser.add_argument("--restarts", type=int, default=3, help="SIGTERM restarts (then a kill -9)")
    parser.add_argument("--latency-calls", type=int, default=300, help="GetEstimate calls")
    parser.add_argument("--max-seconds", type=float, default=1200.0, help="bound on the run")
    parser.add_argument("--dir", type=Path, help="keep the database and log here")
    args = parser.parse_args(argv)
    if not 100_000 <= args.reports <= 50_000_000:
        parser.error("--reports must be in 100000..50000000")
    if not 1 <= args.batch <= 10_000 or not 1 <= args.clients <= 8:
        parser.error("--batch must be in 1..10000 and --clients in 1..8")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    deadline = time.monotonic() + args.max_seconds
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.reports:,} "
        f"yes/no reports in batches of {args.batch} from {args.clients} clients"
    )
    with tempfile.TemporaryDirectory(prefix="deniable-scale-") as tmp:
        workdir = args.dir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        db = workdir / "scale.db"
        daemon = Daemon(workdir, db, free_port())
        try:
            with AggregatorClient(daemon.address, admin_token=TOKEN) as admin:
                question = pb.Question(
                    id="q", text="Yes or no?", binary=pb.BinaryQuestion(),
                    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
                )  # fmt: skip
                deadline_start = time.perf_counter() + STARTUP_TIMEOUT
                while True:
                    try:
                        survey = admin.create_survey("scale", [question])
                        break
                    except Exception:
                        if time.perf_counter() > deadline_start:
                            raise
                        time.sleep(0.05)
            time.sleep(IDLE_WAIT)
            empty_rss = daemon.rss_mb()
            print(f"empty database: RSS {empty_rss:.1f} MB")
            filler = Filler(daemon.address, survey.id, "q", args.batch, args.clients)
            rss: list[tuple[int, float]] = []
            first_latency: list[float] = []
            fill_seconds = 0.0
            for mark in checkpoints(args.reports):
                if time.monotonic() > deadline:
                    raise RuntimeError("--max-seconds ran out while filling")
                t0 = time.perf_counter()
                filler.fill_to(mark, deadline)
                fill_seconds += time.perf_counter() - t0
                time.sleep(IDLE_WAIT)
                rss.append((mark, daemon.rss_mb()))
                if not first_latency:
                    first_latency = latencies(daemon.address, survey.id, "q", args.latency_calls)
                print(
                    f"{mark:>10,} reports: RSS {rss[-1][1]:7.1f} MB "
                    f"(fill {fill_seconds:.1f} s, {filler.sent / fill_seconds:,.0f} reports/s)",
                    flush=True,
                )
            last_latency = latencies(daemon.address, survey.id, "q", args.latency_calls)
            restarts: list[tuple[str, float, float, int, float]] = []
            for attempt in range(args.restarts + 1):
                if time.monotonic() > deadline:
                    raise RuntimeError("--max-seconds ran out while restarting")
                how = "kill -9" if attempt == args.restarts else "SIGTERM"
                stopped = daemon.stop(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
                daemon = Daemon(workdir, db, free_port())
                serving, n = wait_serving(daemon, survey.id, "q")
                time.sleep(IDLE_WAIT)
                restarts.append((how, stopped, serving, n, daemon.rss_mb()))
                print(
                    f"restart after {how}: stopped in {stopped:.2f} s, serving after "
                    f"{serving:.2f} s, n = {n:,}, RSS {restarts[-1][4]:.1f} MB",
                    flush=True,
                )
            restarted_latency = latencies(daemon.address, survey.id, "q", args.latency_calls)
        finally:
            if daemon.process.poll() is None:
                daemon.stop()
        return report(args, empty_rss, rss, first_latency, last_latency, restarted_latency,
                      restarts, filler.sent)  # fmt: skip


def report(
    args: argparse.Namespace,
    empty_rss: float,
    rss: list[tuple[int, float]],
    first: list[float],
    last: list[float],
    restarted: list[float],
    restarts: list[tuple[str, float, float, int, float]],
    sent: int,
) -> int:
    """Print the summary and the verdicts; exit status 0 when every target is met."""
    fit = slope([p for p in rss if p[0] >= 1_000_000])
    span = (rss[-1][1] - rss[0][1]) / ((rss[-1][0] - rss[0][0]) / 1e6)
    first_ms, last_ms = 1e3 * statistics.median(first), 1e3 * statistics.median(last)
    restarted_ms = 1e3 * statistics.median(restarted)
    clean = [r[2] for r in restarts if r[0] == "SIGTERM"]
    counted = all(r[3] == sent for r in restarts)
    print()
    print(f"RSS per 10^6 reports: {fit:.2f} MB (least squares from 10^6), {span:.2f} MB "
          f"({rss[0][0]:,} to {rss[-1][0]:,}); empty database {empty_rss:.1f} MB")  # fmt: skip
    print(f"GetEstimate median {first_ms:.3f} ms at {rss[0][0]:,}, {last_ms:.3f} ms at "
          f"{rss[-1][0]:,}, {restarted_ms:.3f} ms after the restarts "
          f"(p90 {1e3 * float(np.percentile(last, 90)):.3f} ms)")  # fmt: skip
    verdicts = [
        ("RSS growth <= 10 MB per 10^6 reports", max(fit, span) <= RSS_TARGET),
        ("restart to serving <= 2 s", bool(clean) and max(clean) <= RESTART_TARGET),
        ("GetEstimate at the end <= 1.5x the first checkpoint",
         max(last_ms, restarted_ms) <= LATENCY_TARGET * first_ms),
        ("every stored report counted after each restart", counted),
    ]  # fmt: skip
    for name, ok in verdicts:
        print(f"target: {name}: {'PASS' if ok else 'FAIL'}")
    print(f"load average now {os.getloadavg()[0]:.2f}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
