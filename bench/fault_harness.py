"""Processes and checks of the fault-injection run: the daemon, the clients, verification."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import fault_client
import numpy as np

BIN = Path(sys.executable).parent
CLIENT = Path(__file__).with_name("fault_client.py")
ADMIN_TOKEN = "fault-injection-admin-token"
STARTUP_TIMEOUT = 60.0  # hang guards, never measurements
PROCESS_TIMEOUT = 60.0


class HarnessError(RuntimeError):
    """A daemon or client did not behave (not a durability failure)."""


@dataclass
class Config:
    """One fault-injection run."""

    workdir: Path
    cycles: int = 20
    clients: int = 3
    batch: int = 200
    seed: int = 1
    kill_window: float = 1.0  # the kill lands uniformly in [0, this] s once all clients stream
    max_seconds: float = 600.0
    max_batches: int = 2000  # per client per cycle: the stream stops there even without a kill


@dataclass
class Verification:
    """The database's state against the clients' records."""

    acknowledged: int  # distinct report ids the clients recorded as acknowledged
    log_reports: int  # report ids in the log, each occurrence counted
    stored: int  # distinct report ids in the log
    tally_n: int  # the stored running tally
    check_n: int | None  # what `deniable-aggregator check` recomputed (None: not run)
    check_exit: int | None
    lost: list[str]  # acknowledged ids missing from the log (at most 10 shown)
    lost_count: int

    @property
    def double_counted(self) -> int:
        """Reports counted more than once by the tally or present twice in the log."""
        return max(self.tally_n - self.stored, 0) + (self.log_reports - self.stored)

    @property
    def ok(self) -> bool:
        """Nothing lost, nothing double counted, and the check (if run) agrees."""
        consistent = self.tally_n == self.stored == self.log_reports
        checked = self.check_exit is None or (self.check_exit == 0 and self.check_n == self.stored)
        return self.lost_count == 0 and consistent and checked


# --- processes -------------------------------------------------------------------------


@dataclass
class Daemon:
    """A ``deniable-aggregator serve`` subprocess."""

    process: subprocess.Popen[bytes]
    address: str


def start_daemon(workdir: Path, db_url: str) -> Daemon:
    """Start ``serve`` on 127.0.0.1:0 and wait (bounded) for its ``listening`` log line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(workdir / "data")
    env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"  # one machine's clients
    env["DENIABLE_AGGREGATOR_SERVE_MIN_FREE_SPACE"] = "0"  # disk_full fills a small disk
    token_file = workdir / "admin-token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    log_path = workdir / f"daemon-{time.monotonic_ns()}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", "127.0.0.1:0",
             "--db", db_url, "--admin-token-file", str(token_file)],
            stdout=subprocess.DEVNULL, stderr=log, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            if '"listening"' in line:
                return Daemon(process, f"127.0.0.1:{json.loads(line)['port']}")
        if process.poll() is not None:
            raise HarnessError(f"daemon exited early: {log_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise HarnessError(f"daemon did not listen within {STARTUP_TIMEOUT:.0f} s")


def start_clients(
    config: Config, daemon: Daemon, survey_id: str, cycle: int, retry_only: bool
) -> list[subprocess.Popen[bytes]]:
    """One ``fault_client.py`` process per client, each with its own state directory."""
    processes = []
    for index in range(config.clients):
        command = [
            sys.executable, str(CLIENT), "--server", daemon.address, "--survey", survey_id,
            "--state", str(client_state(config, index)), "--batch", str(config.batch),
            "--seed", str(config.seed * 1_000_003 + cycle * 101 + index),
            "--max-batches", str(config.max_batches), "--max-seconds", str(PROCESS_TIMEOUT / 2),
        ]  # fmt: skip
        if retry_only:
            command.append("--retry-only")
        processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
    return processes


def wait_all(processes: Sequence[subprocess.Popen[bytes]], allowed: set[int]) -> None:
    """Wait (bounded) for every process; HarnessError on a hang or an unexpected exit code."""
    deadline = time.monotonic() + PROCESS_TIMEOUT
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(deadline - time.monotonic(), 0.1)))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise HarnessError("a process did not finish within its time guard") from None
    if not set(codes) <= allowed:
        raise HarnessError(f"client exit codes {codes}, expected only {sorted(allowed)}")


def client_state(config: Config, index: int) -> Path:
    return config.workdir / f"client-{index}"


def acknowledged_count(config: Config, index: int) -> int:
    path = client_state(config, index) / "acked"
    return path.stat().st_size // 33 if path.exists() else 0  # 32 hex digits and a newline


# --- verification ----------------------------------------------------------------------


def stored_ids(db_path: Path, survey_id: str) -> tuple[list[bytes], int]:
    """Every report id in the survey's log (each occurrence) and the stored tally n.

    Read-only and in one snapshot, safe while the daemon serves.
    """
    from deniable.aggregator.storage.codec import decode_log
    from deniable.aggregator.storage.sqlite import SqliteReader

    ids: list[bytes] = []
    with SqliteReader(str(db_path)) as reader, reader.snapshot():
        tally = reader.tallies()[(survey_id, fault_client.QUESTION_ID)]
        for _, row in reader.log(survey_id):
            report_ids, _ = decode_log(row)
            for group in report_ids.groups:  # an (m, length) matrix of ASCII ids
                as_bytes = np.dtype((np.bytes_, group.ids.shape[1]))
                column = np.ascontiguousarray(group.ids).view(as_bytes).ravel()
                ids.extend(cast(list[bytes], column.tolist()))
    return ids, tally.n


def run_check(db_url: str) -> tuple[int, int]:
    """``deniable-aggregator check --json``: its exit code and the recomputed n."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    done = subprocess.run(
        [str(BIN / "deniable-aggregator"), "check", "--db", db_url, "--json"],
        capture_output=True, text=True, env=env, timeout=PROCESS_TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise HarnessError(f"check failed to run ({done.returncode}): {done.stderr.strip()}")
    document = json.loads(done.stdout)
    n = sum(q["n_recomputed"] for s in document["surveys"] for q in s["questions"])
    return done.returncode, n


def verify(config: Config, db_path: Path, survey_id: str, with_check: bool) -> Verification:
    """Compare the clients' acknowledged ids with the log, the tally and (optionally) ``check``."""
    acknowledged = {
        report_id.encode()
        for index in range(config.clients)
        for report_id in fault_client.acked_ids(client_state(config, index))
    }
    log, tally_n = stored_ids(db_path, survey_id)
    stored = set(log)
    lost = sorted(acknowledged - stored)
    check_exit, check_n = run_check(f"sqlite:///{db_path}") if with_check else (None, None)
    return Verification(
        acknowledged=len(acknowledged),
        log_reports=len(log),
        stored=len(stored),
        tally_n=tally_n,
        check_n=check_n,
        check_exit=check_exit,
        lost=[report_id.decode() for report_id in lost[:10]],
        lost_count=len(lost),
    )
