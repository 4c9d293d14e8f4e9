"""Storage at scale: daemon memory per stored report, restart to serving, GetEstimate latency.

A ``deniable-aggregator serve`` daemon (a subprocess, 127.0.0.1, a temporary SQLite file)
takes yes/no reports with fresh random ids in batches, up to ``--reports``. At each
checkpoint the fill pauses until the daemon is idle (its CPU time still for 1.5 s: any
background work done), and its resident memory (``VmRSS``) is read from ``/proc``. At
the first checkpoint GetEstimate latency is measured over ``--latency-calls`` sequential
calls and the daemon is restarted once, so that a fresh process's memory is known there
too; at the end, the latency again, then ``--restarts`` restarts after SIGTERM and one
after ``kill -9``. Restart to serving is the time from starting the process to the first
answered GetEstimate, on a port chosen in advance. Everything is bounded by
``--max-seconds``.

Targets (printed PASS/FAIL): RSS grows at most 10 MB per 10^6 stored reports, both while
filling (least squares over the checkpoints from 10^6 on) and between the fresh
processes at the first and the last checkpoint; restart to serving at most 2 s (after
SIGTERM, at the end); GetEstimate median latency at the end at most 1.5 times that at
the first checkpoint.

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
from dataclasses import dataclass, field
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
IDLE_WAIT = 1.5  # seconds without batches before memory is read, at least
IDLE_CPU = 0.02  # ...and until the daemon used less than this CPU share over IDLE_WAIT
IDLE_TIMEOUT = 60.0  # hang guard: give up waiting for idle after this long
QUESTION = pb.Question(
    id="q",
    text="Yes or no?",
    binary=pb.BinaryQuestion(),
    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
)


class Daemon:
    """A ``serve`` subprocess on a fixed loopback port."""

    def __init__(self, workdir: Path, db: Path, port: int) -> None:
        self.address = f"127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        env["XDG_DATA_HOME"] = str(workdir / "data")
        env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"  # one machine's clients
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

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the daemon so far, from /proc."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settle(self) -> None:
        """Wait until the daemon is idle, so that memory and latency are read in a steady state.

        Idle: its background work (sealing id segments, growing a filter) done.
        """
        deadline = time.monotonic() + IDLE_TIMEOUT
        before = self.cpu_seconds()
        while True:
            time.sleep(IDLE_WAIT)
            after = self.cpu_seconds()
            if after - before < IDLE_CPU * IDLE_WAIT or time.monotonic() > deadline:
                return
            before = after

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


def wait_serving_port(daemon: Daemon) -> None:
    """Wait (bounded) until the daemon accepts connections."""
    deadline = time.perf_counter() + STARTUP_TIMEOUT
    host, port = daemon.address.split(":")
    while True:
        if daemon.process.poll() is not None:
            raise RuntimeError(f"the daemon exited ({daemon.process.returncode})")
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the daemon did not listen within {STARTUP_TIMEOUT:.0f} s")
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.002)


def wait_serving(daemon: Daemon, survey_id: str, question_id: str) -> tuple[float, int]:
    """Seconds from the daemon's start to its first GetEstimate answer, and that n.

    The port is probed with plain connects every 2 ms (a gRPC channel that found nothing
    listening backs off for a second before it tries again), then the call is made.
    """
    wait_serving_port(daemon)
    request = pb.GetEstimateRequest(survey_id=survey_id, question_id=question_id)
    with grpc.insecure_channel(daemon.address) as channel:
        estimate = channel.unary_unary(
            "/deniable.v1.Aggregator/GetEstimate",
            request_serializer=pb.GetEstimateRequest.SerializeToString,
            response_deserializer=pb.Estimate.FromString,
        )
        reply = estimate(request, timeout=STARTUP_TIMEOUT, wait_for_ready=True)
    return time.perf_counter() - daemon.started, int(reply.n)


def latencies(
    address: str, survey_id: str, question_id: str, args: argparse.Namespace
) -> list[float]:
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
        for _ in range(args.latency_calls):
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
    if not 1_000_000 <= args.reports <= 50_000_000:
        parser.error("--reports must be in 1000000..50000000")
    if not 1 <= args.batch <= 10_000 or not 1 <= args.clients <= 8:
        parser.error("--batch must be in 1..10000 and --clients in 1..8")
    return args


@dataclass
class Run:
    """What one run measured."""

    empty_rss: float = 0.0
    filling: list[tuple[int, float]] = field(default_factory=list)  # (reports, MB)
    fresh: list[tuple[int, float]] = field(default_factory=list)  # after a restart
    first_latency: list[float] = field(default_factory=list)
    last_latency: list[float] = field(default_factory=list)
    restarts: list[tuple[str, float, float, int]] = field(default_factory=list)
    sent: int = 0


class Scale:
    """The daemon, its database and the filling clients, for one run."""

    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.workdir, self.args, self.db = workdir, args, workdir / "scale.db"
        self.deadline = time.monotonic() + args.max_seconds
        self.daemon = Daemon(workdir, self.db, free_port())
        self.survey_id = ""
        self.filler: Filler | None = None
        self.run = Run()

    def start(self) -> None:
        """Wait for the daemon, create the survey, read the empty database's memory."""
        wait_serving_port(self.daemon)
        with AggregatorClient(self.daemon.address, admin_token=TOKEN) as admin:
            self.survey_id = admin.create_survey("scale", [QUESTION]).id
        self.daemon.settle()
        self.run.empty_rss = self.daemon.rss_mb()
        print(f"empty database: RSS {self.run.empty_rss:.1f} MB", flush=True)
        self.filler = Filler(
            self.daemon.address, self.survey_id, "q", self.args.batch, self.args.clients
        )

    def restart(self, how: str) -> None:
        """Stop the daemon (SIGTERM or kill -9), start it again, time it to serving."""
        if time.monotonic() > self.deadline:
            raise RuntimeError("--max-seconds ran out")
        stopped = self.daemon.stop(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
        self.daemon = Daemon(self.workdir, self.db, free_port())
        serving, n = wait_serving(self.daemon, self.survey_id, "q")
        self.daemon.settle()
        self.run.fresh.append((n, self.daemon.rss_mb()))
        self.run.restarts.append((how, stopped, serving, n))
        assert self.filler is not None
        self.filler.connect(self.daemon.address)
        print(
            f"restart after {how}: stopped in {stopped:.2f} s, serving after {serving:.2f} s, "
            f"n = {n:,}, RSS {self.run.fresh[-1][1]:.1f} MB",
            flush=True,
        )

    def fill(self) -> None:
        """Fill to each checkpoint, measuring as the module docstring says; restart."""
        assert self.filler is not None
        seconds = 0.0
        for index, mark in enumerate(checkpoints(self.args.reports)):
            t0 = time.perf_counter()
            self.filler.fill_to(mark, self.deadline)
            seconds += time.perf_counter() - t0
            self.daemon.settle()
            self.run.filling.append((mark, self.daemon.rss_mb()))
            print(
                f"{mark:>10,} reports: RSS {self.run.filling[-1][1]:7.1f} MB (fill "
                f"{seconds:.1f} s, {self.filler.sent / seconds:,.0f} reports/s)",
                flush=True,
            )
            if index == 0:
                address = self.daemon.address
                self.run.first_latency = latencies(address, self.survey_id, "q", self.args)
                self.restart("SIGTERM")  # a fresh process's memory at the first mark
        self.run.sent = self.filler.sent
        self.run.last_latency = latencies(self.daemon.address, self.survey_id, "q", self.args)
        for attempt in range(self.args.restarts + 1):
            self.restart("kill -9" if attempt == self.args.restarts else "SIGTERM")

    def close(self) -> None:
        """Close the channels and stop the daemon."""
        if self.filler is not None:
            self.filler.close()
        if self.daemon.process.poll() is None:
            self.daemon.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.reports:,} "
        f"yes/no reports in batches of {args.batch} from {args.clients} clients"
    )
    with tempfile.TemporaryDirectory(prefix="deniable-scale-") as tmp:
        workdir = args.dir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        scale = Scale(workdir, args)
        try:
            scale.start()
            scale.fill()
        finally:
            scale.close()
        return report(scale.run)


def report(run: Run) -> int:
    """Print the summary and the verdicts; exit status 1 only if a report was miscounted.

    Targets print PASS/FAIL but do not set the status: a slow machine is not an error.
    """
    fit = slope([p for p in run.filling if p[0] >= 1_000_000])
    (n0, fresh0), (n1, fresh1) = run.fresh[0], run.fresh[-1]
    fresh = (fresh1 - fresh0) / ((n1 - n0) / 1e6)
    first_ms = 1e3 * statistics.median(run.first_latency)
    last_ms = 1e3 * statistics.median(run.last_latency)
    clean = [r[2] for r in run.restarts[1:] if r[0] == "SIGTERM"]
    counted = all(r[3] == run.sent for r in run.restarts[1:])
    print()
    print(
        f"RSS per 10^6 reports: {fit:.2f} MB while filling (least squares from 10^6); "
        f"{fresh:.2f} MB between fresh processes ({fresh0:.1f} MB at {n0:,}, {fresh1:.1f} MB "
        f"at {n1:,}); empty database {run.empty_rss:.1f} MB"
    )
    print(
        f"restart to serving at {n1:,}: "
        + ", ".join(f"{r[2]:.2f} s ({r[0]})" for r in run.restarts[1:])
    )
    print(
        f"GetEstimate median {first_ms:.3f} ms at {run.filling[0][0]:,}, {last_ms:.3f} ms at "
        f"{run.filling[-1][0]:,} (p90 {1e3 * float(np.percentile(run.last_latency, 90)):.3f} "
        f"ms), ratio {last_ms / first_ms:.2f}"
    )
    verdicts = [
        ("RSS growth <= 10 MB per 10^6 reports", max(fit, fresh) <= RSS_TARGET),
        ("restart to serving <= 2 s", bool(clean) and max(clean) <= RESTART_TARGET),
        ("GetEstimate at the end <= 1.5x the first checkpoint",
         last_ms <= LATENCY_TARGET * first_ms),
        ("every stored report counted after each restart", counted),
    ]  # fmt: skip
    for name, ok in verdicts:
        print(f"target: {name}: {'PASS' if ok else 'FAIL'}")
    print(f"load average now {os.getloadavg()[0]:.2f}")
    return 0 if counted else 1


if __name__ == "__main__":
    sys.exit(main())
