"""Load test: concurrent client processes stream SubmitReports to a daemon, then no report is lost.

Each client process sends batches of valid yes/no reports with fresh report ids, one call
after the other, for ``--seconds`` (at most ``--max-requests`` calls each), against a
``deniable-aggregator serve`` it starts on 127.0.0.1:0 with a temporary SQLite database, or
against ``--server HOST:PORT`` (loopback only) with ``--admin-token-file``. Then it checks
that every acknowledged report was stored once: the sum of ``stored`` equals the reports
in acknowledged calls and the survey's estimate n, and ``deniable-aggregator check``
passes on the database when there is one to check.

Output: a table on stdout (``--json``: one JSON document); progress on stderr. Exit code 0
when there was no error and nothing was lost, 1 otherwise, 2 for invalid usage.

    python bench/load_test.py --clients 8 --batch 100 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
CALL_TIMEOUT = 60.0  # seconds per call: a hang guard
STARTUP_TIMEOUT = 60.0
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
]
QUESTION = pb.Question(
    id="q",
    text="Load?",
    binary=pb.BinaryQuestion(),
    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
)


@dataclass
class ClientResult:
    """What one client process did: calls, latencies and the server's acknowledgements."""

    calls: int = 0
    reports_acked: int = 0  # reports in calls answered OK
    stored: int = 0  # sum of SubmitReportsResponse.stored
    already_stored: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    ended: float = 0.0


def run_client(
    index: int,
    target: str,
    survey_id: str,
    run: str,
    batch: int,
    start_at: float,
    seconds: float,
    max_requests: int,
) -> ClientResult:
    """One client process: batches of fresh reports until the time or the call cap runs out.

    The report ids are fresh and of one length, as the participant CLI's are (32 hex
    digits), so a batch takes the server's vectorized path like a real client's.
    """
    result = ClientResult()
    rng = np.random.default_rng()
    with grpc.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        grpc.channel_ready_future(channel).result(timeout=STARTUP_TIMEOUT)
        stub = pb_grpc.AggregatorStub(channel)
        time.sleep(max(0.0, start_at - time.time()))
        stop = time.monotonic() + seconds
        for call in range(max_requests):
            if time.monotonic() >= stop:
                break
            bits = rng.integers(0, 2, batch).tolist()
            request = pb.SubmitReportsRequest(
                reports=[
                    pb.Report(
                        report_id=f"{run}.{index:03d}.{call:06d}.{i:05d}",
                        survey_id=survey_id,
                        question_id=QUESTION.id,
                        mechanism=QUESTION.mechanism,
                        bit=bool(bit),
                    )
                    for i, bit in enumerate(bits)
                ]
            )
            began = time.perf_counter()
            try:
                response = stub.SubmitReports(request, timeout=CALL_TIMEOUT)
            except grpc.RpcError as error:
                result.errors[error.code().name] += 1
            else:
                result.reports_acked += batch
                result.stored += response.stored
                result.already_stored += response.already_stored
            result.latencies.append(time.perf_counter() - began)
            result.calls += 1
    result.ended = time.time()  # made relative to the common start by run_clients
    return result


@dataclass
class Daemon:
    """A ``deniable-aggregator serve`` subprocess on 127.0.0.1:0 with a temporary database."""

    process: subprocess.Popen[bytes]
    address: str
    db_url: str

    def stop(self) -> int:
        """SIGTERM, then wait (kill after 30 s); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def aggregator_command() -> str:
    """The ``deniable-aggregator`` console script next to this Python, or on PATH."""
    beside = Path(sys.executable).parent / "deniable-aggregator"
    found = str(beside) if beside.exists() else shutil.which("deniable-aggregator")
    if found is None:
        raise SystemExit("deniable-aggregator is not installed (pip install -e '.[aggregator]')")
    return found


def start_daemon(workdir: Path, token: str) -> Daemon:
    """Start ``serve`` on 127.0.0.1:0 and wait for its ``listening`` log line."""
    token_file = workdir / "admin-token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    db_url = f"sqlite:///{workdir / 'load.db'}"
    log_path = workdir / "daemon.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(workdir / "data")
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                aggregator_command(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                db_url,
                "--admin-token-file",
                str(token_file),
                "--grace",
                "10",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            record = json.loads(line) if line.startswith("{") else {}
            if record.get("event") == "listening":
                return Daemon(process, f"127.0.0.1:{record['port']}", db_url)
        if process.poll() is not None:
            raise SystemExit(f"the daemon exited early:\n{log_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"the daemon did not listen within {STARTUP_TIMEOUT:.0f} s")


def run_check(db_url: str | None) -> dict[str, Any]:
    """``deniable-aggregator check --db`` on the database, if there is one and the command."""
    if db_url is None:
        return {"ran": False, "note": "no database to check (pass --db with --server)"}
    command = [aggregator_command(), "check", "--db", db_url, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode == 2 and "No such command" in done.stderr:
        return {"ran": False, "note": "this aggregator has no 'check' command"}
    return {"ran": True, "ok": done.returncode == 0, "exit_code": done.returncode}


class RssSampler:
    """Samples a process's resident memory (VmRSS) every 0.1 s in a thread: start and peak."""

    def __init__(self, pid: int) -> None:
        self.path = Path(f"/proc/{pid}/status")
        self.start = self.peak = self.last = self.read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def read(self) -> float:
        """VmRSS in MB (0 if the process is gone)."""
        try:
            text = self.path.read_text()
        except OSError:
            return 0.0
        line = next(line for line in text.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.last = self.read()
            self.peak = max(self.peak, self.last)

    def stop(self) -> dict[str, float]:
        """Stop sampling; the figures in MB."""
        self._stop.set()
        self._thread.join()
        return {
            "start": round(self.start, 1),
            "peak": round(self.peak, 1),
            "end": round(self.last, 1),
        }


def percentiles(latencies: list[float]) -> dict[str, float]:
    """p50, p90, p99 and max of the call latencies, in milliseconds."""
    if not latencies:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    ms = np.asarray(latencies) * 1000.0
    p50, p90, p99 = np.percentile(ms, [50, 90, 99]).tolist()
    return {"p50": p50, "p90": p90, "p99": p99, "max": float(ms.max())}


def run_clients(args: argparse.Namespace, target: str, survey_id: str) -> list[ClientResult]:
    """Start ``--clients`` processes together; wait for them (bounded by a hang guard)."""
    run = secrets.token_hex(4)
    start_at = time.time() + 2.0 + 0.25 * args.clients  # every process started and connected
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.clients, mp_context=context) as pool:
        futures = [
            pool.submit(
                run_client,
                i,
                target,
                survey_id,
                run,
                args.batch,
                start_at,
                args.seconds,
                args.max_requests,
            )
            for i in range(args.clients)
        ]
        results = [f.result(timeout=args.seconds + STARTUP_TIMEOUT + 120) for f in futures]
    for result in results:
        result.ended -= start_at  # seconds since the common start
    return results


def measure(
    args: argparse.Namespace, target: str, token: str, pid: int | None = None
) -> dict[str, Any]:
    """Create a survey, run the clients, read the estimate, close the survey; the figures.

    ``pid``: the daemon's process, whose resident memory is sampled while the clients run.
    """
    metadata = (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        stub = pb_grpc.AggregatorStub(channel)
        title = f"load test {time.strftime('%Y-%m-%d %H:%M:%S')}"
        create = pb.CreateSurveyRequest(title=title, questions=[QUESTION])
        survey = stub.CreateSurvey(create, timeout=CALL_TIMEOUT, metadata=metadata)
        print(
            f"{args.clients} clients x batch {args.batch} for {args.seconds:g} s against "
            f"{target}, survey {survey.id}",
            file=sys.stderr,
        )
        sampler = RssSampler(pid) if pid is not None else None
        results = run_clients(args, target, survey.id)
        rss = sampler.stop() if sampler is not None else None
        question = pb.GetEstimateRequest(survey_id=survey.id, question_id=QUESTION.id)
        n = stub.GetEstimate(question, timeout=CALL_TIMEOUT).n
        close = pb.CloseSurveyRequest(survey_id=survey.id)
        stub.CloseSurvey(close, timeout=CALL_TIMEOUT, metadata=metadata)
    elapsed = max(r.ended for r in results)
    errors: Counter[str] = sum((r.errors for r in results), Counter())
    calls = sum(r.calls for r in results)
    acked = sum(r.reports_acked for r in results)
    stored = sum(r.stored for r in results)
    latency = percentiles([x for r in results for x in r.latencies])
    return {
        "target": target,
        "survey_id": survey.id,
        "clients": args.clients,
        "batch": args.batch,
        "seconds": round(elapsed, 3),
        "calls": calls,
        "reports_sent": calls * args.batch,
        "reports_acked": acked,
        "stored": stored,
        "already_stored": sum(r.already_stored for r in results),
        "estimate_n": n,
        "reports_per_s": round(acked / elapsed, 1),
        "calls_per_s": round(calls / elapsed, 1),
        "latency_ms": {name: round(value, 2) for name, value in latency.items()},
        "errors": dict(errors),
        "error_count": sum(errors.values()),
        "daemon_rss_mb": rss,
        # Every id is fresh: each acknowledged report is newly stored and counted in n. (A
        # call that failed may still have been stored, so n may exceed stored then.)
        "lost": max(0, acked - stored) + max(0, stored - n),
        "unexpected": n - stored if not errors else 0,
    }


def table(result: dict[str, Any]) -> str:
    """The human-readable summary."""
    latency, check = result["latency_ms"], result["check"]
    rows = [
        ("target", result["target"]),
        ("clients x batch", f"{result['clients']} x {result['batch']}"),
        ("duration", f"{result['seconds']:.1f} s"),
        (
            "throughput",
            f"{result['reports_per_s']:,.0f} reports/s, {result['calls_per_s']:,.1f} calls/s",
        ),
        (
            "latency per call",
            f"p50 {latency['p50']:.1f} ms, p90 {latency['p90']:.1f} ms, "
            f"p99 {latency['p99']:.1f} ms, max {latency['max']:.1f} ms",
        ),
        (
            "daemon memory (RSS)",
            "not sampled (--server)"
            if result["daemon_rss_mb"] is None
            else "{start:.1f} MB before the clients, {peak:.1f} MB at the peak, {end:.1f} MB at "
            "the end".format(**result["daemon_rss_mb"]),
        ),
        ("calls", f"{result['calls']:,}"),
        ("reports acked/stored", f"{result['reports_acked']:,} / {result['stored']:,}"),
        ("estimate n", f"{result['estimate_n']:,}"),
        ("errors", ", ".join(f"{k} {v}" for k, v in result["errors"].items()) or "0"),
        ("lost", str(result["lost"])),
        (
            "check",
            ("passed" if check["ok"] else f"FAILED (exit {check['exit_code']})")
            if check["ran"]
            else f"skipped: {check['note']}",
        ),
        ("verdict", "OK" if result["ok"] else "FAILED"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="client processes (default 8)")
    parser.add_argument("--batch", type=int, default=100, help="reports per call (default 100)")
    parser.add_argument("--seconds", type=float, default=20.0, help="run time (default 20)")
    parser.add_argument(
        "--max-requests", type=int, default=100_000, help="most calls per client (default 100000)"
    )
    parser.add_argument("--server", metavar="HOST:PORT", help="a running daemon (loopback)")
    parser.add_argument("--admin-token-file", type=Path, help="its admin token (with --server)")
    parser.add_argument("--db", help="its database URL, for 'deniable-aggregator check'")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 256 and 1 <= args.batch <= 10_000):
        parser.error("--clients must be 1..256 and --batch 1..10000")
    if not (0 < args.seconds <= 3600 and args.max_requests >= 1):
        parser.error("--seconds must be in (0, 3600] and --max-requests >= 1")
    if args.server:
        if not args.server.startswith(tuple(f"{host}:" for host in LOOPBACK)):
            parser.error(f"--server {args.server}: only loopback addresses (127.0.0.1:PORT)")
        if args.admin_token_file is None:
            parser.error("--server needs --admin-token-file")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the load test; 0 when nothing failed and nothing was lost."""
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="deniable-load-") as workdir:
        daemon = None
        if args.server:
            target, token, db_url = args.server, args.admin_token_file.read_text().strip(), args.db
        else:
            token = secrets.token_urlsafe(32)
            daemon = start_daemon(Path(workdir), token)
            target, db_url = daemon.address, daemon.db_url
        try:
            result = measure(args, target, token, daemon.process.pid if daemon else None)
        finally:
            code = daemon.stop() if daemon else 0
        result["daemon_exit_code"] = code
        result["check"] = run_check(db_url)
    check = result["check"]
    result["ok"] = (
        result["error_count"] == 0
        and result["lost"] == 0
        and result["unexpected"] == 0
        and result["reports_acked"] == result["stored"] == result["estimate_n"]
        and code == 0
        and (not check["ran"] or check["ok"])
    )
    print(json.dumps(result) if args.json else table(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
