"""Faults on PostgreSQL: kill -9 of one of two daemons, and a PostgreSQL restart, under load.

Two ``deniable-aggregator serve --db postgresql://...`` processes share one throwaway
PostgreSQL database. Client threads that fail over between them (one ``ipv4:A,B``
target, round-robin) send batches of fresh reports, each resent until acknowledged
(bounded), and record every acknowledged report id and every status they were answered
with. Mid-load, (a) one daemon is killed with SIGKILL and restarted on its port, and
(b) PostgreSQL is stopped (immediate, as if it crashed) and started again. Afterwards
every acknowledged report must be stored exactly once: the stored ids are the
acknowledged ones, and the tally counts each once. Repeated ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
import psycopg
from fault_harness import ADMIN_TOKEN, BIN, STARTUP_TIMEOUT
from pg_cluster import Cluster, create_database, open_cluster

from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

OK = "OK"
CALL_TIMEOUT = 5.0  # seconds per call: a daemon waiting on a dead database answers in time
BACKOFF = 0.1  # seconds between resends of an unacknowledged batch
POLL = 0.02


@dataclass
class Serve:
    """A ``deniable-aggregator serve`` process on a fixed loopback port."""

    address: str
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(workdir: Path, address: str, db_url: str) -> Serve:
    """Start the installed console script on ``address``; wait (bounded) until it listens."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(workdir / "data")
    env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"  # one machine's clients
    token_file = workdir / "admin-token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    log_path = workdir / f"daemon-{time.monotonic_ns()}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", address,
             "--db", db_url, "--admin-token-file", str(token_file), "--grace", "2"],
            stdout=subprocess.DEVNULL, stderr=log, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if '"listening"' in log_path.read_text():
            return Serve(address, process)
        if process.poll() is not None:
            raise RuntimeError(f"daemon exited early: {log_path.read_text()[-2000:]}")
        time.sleep(POLL)
    process.kill()
    raise RuntimeError(f"daemon did not listen within {STARTUP_TIMEOUT:.0f} s")


def bit(report_id: str) -> bool:
    """The answer each report carries, fixed by its id (so the tally can be recomputed)."""
    return int(report_id[-2:], 16) % 2 == 1


@dataclass
class Load:
    """Client threads sending batches until each is acknowledged; what they saw."""

    target: str
    survey: pb.Survey
    clients: int
    batches: int
    batch: int
    deadline: float  # time.monotonic() after which no batch is resent
    acked: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    ack_times: list[float] = field(default_factory=list)
    gave_up: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, index: int) -> None:
        """Client ``index``: send its batches in turn, each resent until acknowledged."""
        mechanism = self.survey.questions[0].mechanism
        with AggregatorClient(self.target, attempts=1, timeout=CALL_TIMEOUT) as client:
            for number in range(self.batches):
                ids = [f"c{index:02d}b{number:05d}r{i:05x}" for i in range(self.batch)]
                reports = [
                    pb.Report(
                        report_id=i, survey_id=self.survey.id, question_id="q1",
                        mechanism=mechanism, bit=bit(i),
                    )
                    for i in ids
                ]  # fmt: skip
                while True:
                    try:
                        response = client.submit_reports(reports)
                    except RemoteError as error:
                        with self.lock:
                            self.statuses[error.status.name] += 1
                        if time.monotonic() > self.deadline:
                            with self.lock:
                                self.gave_up += 1
                            return
                        time.sleep(BACKOFF)
                        continue
                    if response.stored + response.already_stored != len(ids):
                        raise RuntimeError(f"acknowledged {response} for {len(ids)} reports")
                    with self.lock:
                        self.statuses[OK] += 1
                        self.acked.extend(ids)
                        self.ack_times.append(time.monotonic())
                    break

    def acked_batches(self) -> int:
        """Batches acknowledged so far, by every client."""
        with self.lock:
            return len(self.ack_times)

    def acked_after(self, moment: float) -> float | None:
        """The first acknowledgement after ``moment``, in seconds after it."""
        with self.lock:
            later = [t for t in self.ack_times if t > moment]
        return min(later) - moment if later else None


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail after ``seconds`` (a hang guard)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(POLL)


def answers(address: str) -> bool:
    """Whether the daemon at ``address`` serves a call now."""
    try:
        with AggregatorClient(address, attempts=1, timeout=1.0) as client:
            client.list_surveys()
    except RemoteError:
        return False
    return True


@dataclass
class Verdict:
    """What was stored against what was acknowledged."""

    acknowledged: int
    stored_ids: int
    acknowledged_missing: int
    tally_n: int
    tally_yes: int
    expected_yes: int

    @property
    def ok(self) -> bool:
        """Every acknowledged report stored, and counted exactly once."""
        return (
            self.acknowledged_missing == 0
            and self.stored_ids == self.acknowledged == self.tally_n
            and self.tally_yes == self.expected_yes
        )


def verify(url: str, survey_id: str, acked: Sequence[str]) -> Verdict:
    """Compare the database with the acknowledged ids (run after every client stopped)."""
    with psycopg.connect(url) as db:
        stored = {
            row[0]
            for row in db.execute(
                "SELECT report_id FROM report_ids WHERE survey_id = %s", (survey_id,)
            )
        }
    storage = open_storage(url)
    try:
        tally = storage.tally(survey_id, "q1")
    finally:
        storage.close()
    assert tally is not None
    return Verdict(
        len(acked), len(stored), len(set(acked) - stored), tally.n, tally.ones,
        sum(bit(i) for i in acked),
    )  # fmt: skip


def check(url: str) -> str:
    """``deniable-aggregator check`` on the database: its exit code and last line."""
    done = subprocess.run(
        [str(BIN / "deniable-aggregator"), "check", "--db", url],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    last = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:]
    return f"exit {done.returncode}: {last[0] if last else ''}"


@dataclass
class RoundResult:
    """One round's figures."""

    fault: str
    verdict: Verdict
    ok: bool
    statuses: dict[str, int]
    gave_up: int
    recover_s: float | None  # fault repaired -> next acknowledged batch
    failover_gap_s: float | None  # fault -> next acknowledged batch (kill only)
    restart_s: float | None  # restart command -> the repaired part serves again
    down_s: float
    check: str


def run_round(cluster: Cluster, fault: str, work: Path, args: argparse.Namespace) -> RoundResult:
    url = create_database(cluster)
    addresses = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    daemons = [serve(work / f"d{i}", a, url) for i, a in enumerate(addresses)]
    try:
        target = "ipv4:" + ",".join(addresses)
        with AggregatorClient(target, admin_token=ADMIN_TOKEN) as admin:
            question = pb.Question(
                id="q1", text="Yes?", binary=pb.BinaryQuestion(),
                mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
            )  # fmt: skip
            survey = admin.create_survey("Faults", [question])
        load = Load(
            target, survey, args.clients, args.batches, args.batch,
            time.monotonic() + args.max_seconds,
        )  # fmt: skip
        threads = [threading.Thread(target=load.run, args=(i,)) for i in range(args.clients)]
        for thread in threads:
            thread.start()
        third = args.clients * args.batches // 3
        wait_for(lambda: load.acked_batches() >= third, args.max_seconds, "a third of the load")
        failover = restart = None
        faulted = time.monotonic()
        if fault == "kill -9 daemon":
            daemons[0].process.send_signal(signal.SIGKILL)
            daemons[0].process.wait()
            time.sleep(args.down_seconds)
            failover = load.acked_after(faulted)
            repaired = time.monotonic()
            daemons[0] = serve(work / "d0-again", addresses[0], url)
            wait_for(lambda: answers(addresses[0]), STARTUP_TIMEOUT, "the restarted daemon")
        else:
            cluster.stop_server("immediate")
            time.sleep(args.down_seconds)
            repaired = time.monotonic()
            cluster.start_server()
            wait_for(lambda: load.acked_after(repaired) is not None, args.max_seconds, "recovery")
        restart = time.monotonic() - repaired
        down = repaired - faulted
        for thread in threads:
            thread.join()
        recover = load.acked_after(repaired)
    finally:
        for daemon in daemons:
            daemon.process.terminate()
            daemon.process.wait(timeout=60)
    verdict = verify(url, survey.id, load.acked)
    return RoundResult(
        fault, verdict, verdict.ok, dict(load.statuses), load.gave_up, recover, failover,
        restart, down, check(url) if args.check else "not run",
    )  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="repetitions of each fault")
    parser.add_argument("--clients", type=int, default=4, help="client threads")
    parser.add_argument("--batches", type=int, default=60, help="batches per client")
    parser.add_argument("--batch", type=int, default=200, help="reports per batch")
    parser.add_argument(
        "--down-seconds", type=float, default=2.0, help="how long the failed part stays down"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=120.0, help="bound per round; then batches give up"
    )
    parser.add_argument("--check", action="store_true", help="also run deniable-aggregator check")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    for name in ("rounds", "clients", "batches", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"# {os.cpu_count()} cores, Python {platform.python_version()}, grpcio "
        f"{grpc.__version__}; {args.clients} clients x {args.batches} batches x {args.batch} "
        f"reports per round, down {args.down_seconds:g} s",
        flush=True,
    )
    cluster = open_cluster(durable=True)
    results: list[RoundResult] = []
    try:
        with tempfile.TemporaryDirectory(prefix="deniable-faults-") as tmp:
            for round_ in range(args.rounds):
                for fault in ("kill -9 daemon", "restart postgresql"):
                    work = Path(tmp) / f"r{round_}-{len(results)}"
                    result = run_round(cluster, fault, work, args)
                    results.append(result)
                    v = result.verdict
                    print(
                        f"round {round_ + 1} {fault:18} {'ok' if result.ok else 'LOST/TWICE'}: "
                        f"acked {v.acknowledged:,} stored {v.stored_ids:,} tally {v.tally_n:,} "
                        f"missing {v.acknowledged_missing}; statuses {result.statuses}; "
                        f"gave up {result.gave_up}; recovered "
                        f"{_seconds(result.recover_s)} after repair"
                        + (
                            f", fail-over gap {_seconds(result.failover_gap_s)}"
                            if result.failover_gap_s is not None
                            else ""
                        )
                        + f"; restart {_seconds(result.restart_s)}; check {result.check}",
                        flush=True,
                    )
    finally:
        cluster.stop()
    for fault in ("kill -9 daemon", "restart postgresql"):
        mine = [r for r in results if r.fault == fault]
        statuses: Counter[str] = Counter()
        for r in mine:
            statuses.update(r.statuses)
        recover = [r.recover_s for r in mine if r.recover_s is not None]
        print(
            f"{fault}: {sum(r.ok for r in mine)}/{len(mine)} rounds with nothing lost or "
            f"counted twice; statuses {dict(statuses)}; median recovery "
            f"{_seconds(statistics.median(recover) if recover else None)}"
        )
    if args.json:
        document = {"results": [asdict(r) for r in results], "args": vars(args) | {"json": None}}
        args.json.write_text(json.dumps(document, indent=2))
    return 0 if all(r.ok and r.gave_up == 0 for r in results) else 1


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


if __name__ == "__main__":
    sys.exit(main())
