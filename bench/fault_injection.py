"""Fault injection: kill -9 the aggregator under load, restart it, and prove nothing was lost.

Each cycle: the daemon (``deniable-aggregator serve`` on 127.0.0.1:0, a SQLite file) takes
yes/no batches from several client processes (``bench/fault_client.py``); at a seeded
random moment it is killed with SIGKILL; it is restarted on the same database; each
client resends its unacknowledged batch with the same report ids; then the database is
verified: every acknowledged report is stored (its id is in the log), nothing is counted
twice (tally n == distinct ids in the log), and ``deniable-aggregator check`` passes.

Exit status 1 if any acknowledged report was lost, anything was double counted, or the
check failed; 2 if the harness itself failed (a daemon or client misbehaved).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fault_client
from fault_harness import (
    ADMIN_TOKEN,
    PROCESS_TIMEOUT,
    Config,
    Daemon,
    HarnessError,
    Verification,
    acknowledged_count,
    client_state,
    start_clients,
    start_daemon,
    verify,
    wait_all,
)

from deniable.client._remote import AggregatorClient


@dataclass
class Cycle:
    """One kill and recovery."""

    number: int
    kill_after: float  # seconds after every client had its first batch acknowledged
    acknowledged_at_kill: int
    retried_batches: int
    retried_reports: int
    retried_already_stored: int  # of those: committed before the kill, reply lost
    at_kill: Verification  # the crashed database, read before the restart (no check run)
    verification: Verification  # after the restart and the retries, with `check`

    @property
    def ok(self) -> bool:
        """Both verifications passed."""
        return self.at_kill.ok and self.verification.ok


@dataclass
class Summary:
    """The whole run."""

    cycles: list[Cycle] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The figures docs/reliability.md records, and each cycle's details."""
        last = self.cycles[-1].verification if self.cycles else None
        return {
            "cycles": len(self.cycles),
            "reports_acknowledged": last.acknowledged if last else 0,
            "reports_stored": last.stored if last else 0,
            "lost": max((c.verification.lost_count for c in self.cycles), default=0),
            "lost_at_kill": max((c.at_kill.lost_count for c in self.cycles), default=0),
            "double_counted": max(
                (max(c.at_kill.double_counted, c.verification.double_counted) for c in self.cycles),
                default=0,
            ),
            "unacknowledged_then_retried": sum(c.retried_reports for c in self.cycles),
            "retried_already_stored": sum(c.retried_already_stored for c in self.cycles),
            "kill_moments_s": [round(c.kill_after, 3) for c in self.cycles],
            "ok": all(c.ok for c in self.cycles),
            "per_cycle": [asdict(c) for c in self.cycles],
        }


# --- the cycles ------------------------------------------------------------------------


def kill_under_load(
    config: Config, daemon: Daemon, survey_id: str, cycle: int, rng: random.Random
) -> tuple[float, int]:
    """Stream from every client, SIGKILL the daemon at a random moment; (moment, acked then).

    The moment is drawn uniformly from ``[0, kill_window]`` seconds after every client has
    had a batch of this cycle acknowledged, so the kill lands while all of them stream.
    """
    before = [acknowledged_count(config, i) for i in range(config.clients)]
    kill_after = rng.uniform(0.0, config.kill_window)  # drawn first: independent of timing
    clients = start_clients(config, daemon, survey_id, cycle, retry_only=False)
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while any(acknowledged_count(config, i) <= before[i] for i in range(config.clients)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in clients):
                raise HarnessError("the clients did not all get a batch acknowledged")
            time.sleep(0.005)
        time.sleep(kill_after)
        daemon.process.send_signal(signal.SIGKILL)
        daemon.process.wait(timeout=PROCESS_TIMEOUT)
        at_kill = sum(acknowledged_count(config, i) for i in range(config.clients))
        wait_all(clients, allowed={0, fault_client.UNREACHABLE})
    finally:
        for process in clients:
            if process.poll() is None:
                process.kill()
                process.wait()
    return kill_after, at_kill


def retry_pending(
    config: Config, daemon: Daemon, survey_id: str, cycle: int
) -> list[dict[str, int]]:
    """Have every client resend its unacknowledged batch; the new ``retried`` records."""
    before = [len(fault_client.retried(client_state(config, i))) for i in range(config.clients)]
    wait_all(start_clients(config, daemon, survey_id, cycle, retry_only=True), allowed={0})
    return [
        record
        for i in range(config.clients)
        for record in fault_client.retried(client_state(config, i))[before[i] :]
    ]


def run(config: Config, report: Callable[[Cycle], None] | None = None) -> Summary:
    """Run up to ``config.cycles`` kill/restart cycles (fewer if ``max_seconds`` runs out).

    ``report`` is called with each finished :class:`Cycle` (for printing as it goes).
    """
    rng = random.Random(config.seed)
    config.workdir.mkdir(parents=True, exist_ok=True)
    db_path = config.workdir / "aggregator.db"
    db_url = f"sqlite:///{db_path}"
    started = time.monotonic()
    summary = Summary()
    daemon = start_daemon(config.workdir, db_url)
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey_id = fault_client.create_survey(admin, "fault injection")
        for number in range(1, config.cycles + 1):
            if time.monotonic() - started > config.max_seconds:
                break
            kill_after, at_kill = kill_under_load(config, daemon, survey_id, number, rng)
            crashed = verify(config, db_path, survey_id, with_check=False)
            daemon = start_daemon(config.workdir, db_url)
            records = retry_pending(config, daemon, survey_id, number)
            cycle = Cycle(
                number=number,
                kill_after=kill_after,
                acknowledged_at_kill=at_kill,
                retried_batches=len(records),
                retried_reports=sum(r["reports"] for r in records),
                retried_already_stored=sum(r["already_stored"] for r in records),
                at_kill=crashed,
                verification=verify(config, db_path, survey_id, with_check=True),
            )
            summary.cycles.append(cycle)
            if report is not None:
                report(cycle)
    finally:
        if daemon.process.poll() is None:
            daemon.process.send_signal(signal.SIGTERM)
            try:
                daemon.process.wait(timeout=PROCESS_TIMEOUT)
            except subprocess.TimeoutExpired:
                daemon.process.kill()
                daemon.process.wait()
    return summary


def print_cycle(cycle: Cycle) -> None:
    v = cycle.verification
    print(
        f"cycle {cycle.number}: kill -9 at +{cycle.kill_after:.3f} s "
        f"({cycle.acknowledged_at_kill:,} acknowledged by then); retried "
        f"{cycle.retried_reports:,} unacknowledged reports in {cycle.retried_batches} batches "
        f"({cycle.retried_already_stored:,} already stored); acknowledged {v.acknowledged:,}, "
        f"stored {v.stored:,}, tally n {v.tally_n:,}, check n {v.check_n:,} (exit "
        f"{v.check_exit}); lost {v.lost_count} (at the kill, before any restart: "
        f"{cycle.at_kill.lost_count}), double counted {v.double_counted}"
        + ("" if cycle.ok else f"  FAILED {v.lost[:3]} {cycle.at_kill.lost[:3]}"),
        flush=True,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=20, help="kill/restart cycles")
    parser.add_argument("--clients", type=int, default=3, help="client processes")
    parser.add_argument("--batch", type=int, default=200, help="reports per batch")
    parser.add_argument("--seed", type=int, default=1, help="seeds kill moments, ids, bits")
    parser.add_argument(
        "--kill-window", type=float, default=1.0, help="kill within this many s of streaming"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=600.0, help="start no cycle after this long"
    )
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.cycles <= 1000 or not 1 <= args.clients <= 16:
        parser.error("--cycles must be in 1..1000 and --clients in 1..16")
    if not 1 <= args.batch <= 10_000:
        parser.error("--batch must be in 1..10000 (the service's batch limit)")
    if not 0.0 <= args.kill_window <= 30.0 or args.max_seconds <= 0:
        parser.error("--kill-window must be in [0, 30] and --max-seconds positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="deniable-faults-"))
    config = Config(
        workdir=workdir,
        cycles=args.cycles,
        clients=args.clients,
        batch=args.batch,
        seed=args.seed,
        kill_window=args.kill_window,
        max_seconds=args.max_seconds,
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; loopback 127.0.0.1; "
        f"{config.clients} clients, batches of {config.batch}, seed {config.seed}, "
        f"kill window {config.kill_window:g} s; work dir {workdir}",
        file=sys.stderr,
    )
    started = time.monotonic()
    try:
        summary = run(config, report=None if args.json else print_cycle)
    except HarnessError as error:
        print(f"harness error: {error}", file=sys.stderr)
        return 2
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    data = summary.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(
            f"\n{data['cycles']} cycles in {time.monotonic() - started:.0f} s: "
            f"{data['reports_acknowledged']:,} reports acknowledged, "
            f"{data['reports_stored']:,} stored; lost {data['lost']}, double counted "
            f"{data['double_counted']}; {data['unacknowledged_then_retried']:,} "
            f"unacknowledged reports retried ({data['retried_already_stored']:,} of them "
            f"already stored); kill moments (s after streaming began): "
            f"{', '.join(f'{m:.2f}' for m in data['kill_moments_s'])}\n"
            f"{'OK' if data['ok'] else 'FAILED'}"
        )
    if data["cycles"] < config.cycles:
        print(
            f"stopped after {data['cycles']} of {config.cycles} cycles (--max-seconds)",
            file=sys.stderr,
        )
    return 0 if data["ok"] and data["cycles"] else 1


if __name__ == "__main__":
    sys.exit(main())
