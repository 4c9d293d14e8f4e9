"""The daemon side of bench/burst_memory.py: ``serve`` as a process of its own, and its RSS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from deniable.shared.wire.v1 import aggregator_pb2 as pb

BIN = Path(sys.executable).parent
ADMIN_TOKEN = "burst-memory-admin-token"
IDLE_WAIT_S = 1.0  # how long the daemon must stay (nearly) idle before memory is read
IDLE_CPU = 0.05  # ... using at most this share of a CPU
IDLE_TIMEOUT_S = 60.0  # hang guard: give up waiting for idle after this long
QUESTION_ID = "which_option".ljust(64, "_")


def question(options: int) -> pb.Question:
    """A multiple-choice question of ``options`` options, answered with OUE (1 bit each).

    Its id is as long as ids may be (64 characters): every report repeats it.
    """
    return pb.Question(
        id=QUESTION_ID, text="Which one?",
        categorical=pb.CategoricalQuestion(options=[f"option {i}" for i in range(options)]),
        mechanism=pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25)),
    )  # fmt: skip


@dataclass
class Daemon:
    """A ``deniable-aggregator serve`` process on 127.0.0.1, its port chosen by the OS."""

    process: subprocess.Popen[bytes]
    address: str
    log: Path

    @classmethod
    def start(cls, workdir: Path, serve_args: list[str], timeout: float) -> Daemon:
        """Start ``serve`` with a temporary SQLite database; wait for its 'listening' line."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        env["XDG_DATA_HOME"] = str(workdir / "data")
        env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"  # one machine's clients
        token = workdir / "admin-token"
        token.write_text(ADMIN_TOKEN + "\n")
        log = workdir / "daemon.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [str(BIN / "deniable-aggregator"), "serve", "--listen", "127.0.0.1:0",
                 "--db", f"sqlite:///{workdir / 'burst.db'}", "--admin-token-file", str(token),
                 "--grace", "5", *serve_args],
                stdout=subprocess.DEVNULL, stderr=stderr, env=env,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in log.read_text().splitlines():
                if '"listening"' in line:
                    return cls(process, f"127.0.0.1:{json.loads(line)['port']}", log)
            if process.poll() is not None:
                raise RuntimeError(f"serve exited early: {log.read_text()}")
            time.sleep(0.05)
        process.kill()
        raise RuntimeError(f"serve did not listen within {timeout:.0f} s")

    def rss_bytes(self, field: str = "VmRSS") -> int:
        """Resident memory (or its peak, ``VmHWM``) from /proc; 0 once the process is gone."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        return 0

    def reset_peak(self) -> bool:
        """Restart the kernel's record of the peak (VmHWM) from now; False if not allowed."""
        try:
            Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
        except OSError:
            return False
        return True

    def cpu_seconds(self) -> float:
        """User plus system CPU time so far, from /proc (0 once the process is gone)."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settle(self) -> None:
        """Wait (bounded) until the daemon is idle, so that memory is read in a steady state."""
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        before = self.cpu_seconds()
        while time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(IDLE_WAIT_S)
            after = self.cpu_seconds()
            if after - before < IDLE_CPU * IDLE_WAIT_S:
                return
            before = after

    def stop(self) -> None:
        """SIGTERM, and wait (bounded; then SIGKILL)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
