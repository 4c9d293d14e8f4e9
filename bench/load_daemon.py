"""The load test's daemons: start ``serve`` of any install, sample its memory, run ``check``.

The daemon may be this checkout's or an older commit's install (``--baseline-aggregator``,
built by ``bench/baseline_daemon.sh``), so nothing here relies on options or log fields
newer than that: the listening port is read from the ``listening`` log line (JSON, both
old and new) or from ``listening on HOST:PORT`` on stdout (newer), and ``check`` is
skipped with a note when the install has no such command or option.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = 60.0
CHECK_TIMEOUT = 900.0
_LISTENING = re.compile(r"listening on \S+:(\d+)")


def aggregator_command() -> str:
    """The ``deniable-aggregator`` console script next to this Python, or on PATH."""
    beside = Path(sys.executable).parent / "deniable-aggregator"
    found = str(beside) if beside.exists() else shutil.which("deniable-aggregator")
    if found is None:
        raise SystemExit("deniable-aggregator is not installed (pip install -e '.[aggregator]')")
    return found


@dataclass
class Daemon:
    """A ``serve`` subprocess on 127.0.0.1:0 with a database of its own in ``workdir``."""

    command: str
    process: subprocess.Popen[bytes]
    address: str
    db_url: str
    log_path: Path

    def peak_rss_mb(self) -> float | None:
        """The process's peak resident memory so far (VmHWM), in MB; None once it is gone."""
        return _status_mb(self.process.pid, "VmHWM:")

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

    def log_summary(self, keep: int = 3) -> dict[str, Any]:
        """Warnings and errors in the daemon's JSON log: counts and the first few events."""
        counts = {"warning": 0, "error": 0}
        first: list[str] = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            record = _json(line)
            level = str(record.get("level", "")).lower()
            if level in ("warning", "error", "critical"):
                counts["error" if level == "critical" else level] += 1
                if len(first) < keep:
                    first.append(f"{level}: {record.get('event', line)}")
        return {**counts, "first": first}


def _status_mb(pid: int, key: str) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((line for line in text.splitlines() if line.startswith(key)), None)
    return None if line is None else int(line.split()[1]) / 1024


def _json(line: str) -> dict[str, Any]:
    if not line.startswith("{"):
        return {}
    try:
        record = json.loads(line)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _port(log_path: Path, stdout_path: Path) -> int | None:
    """The bound port, from the ``listening`` log line or stdout's ``listening on``."""
    for line in log_path.read_text(errors="replace").splitlines():
        record = _json(line)
        if record.get("event") == "listening" and isinstance(record.get("port"), int):
            return int(record["port"])
    found = _LISTENING.search(stdout_path.read_text(errors="replace"))
    return int(found.group(1)) if found else None


def start_daemon(command: str, workdir: Path, token: str) -> Daemon:
    """Start ``command serve`` on 127.0.0.1:0 with SQLite in ``workdir``; wait until it listens."""
    workdir.mkdir(parents=True, exist_ok=True)
    token_file = workdir / "admin-token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    db_url = f"sqlite:///{workdir / 'load.db'}"
    log_path, stdout_path = workdir / "daemon.log", workdir / "daemon.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(workdir / "data")
    # Every client runs on this machine: no per-peer report limit. As a variable, which an
    # older --baseline-aggregator (without the option) ignores.
    env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"
    arguments = ["serve", "--listen", "127.0.0.1:0", "--db", db_url]
    arguments += ["--admin-token-file", str(token_file), "--grace", "10"]
    with log_path.open("w") as log, stdout_path.open("w") as out:
        process = subprocess.Popen([command, *arguments], stdout=out, stderr=log, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        port = _port(log_path, stdout_path)
        if port is not None:
            return Daemon(command, process, f"127.0.0.1:{port}", db_url, log_path)
        if process.poll() is not None:
            raise SystemExit(f"{command} serve exited early:\n{log_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise SystemExit(f"{command} serve did not listen within {STARTUP_TIMEOUT:.0f} s")


def run_check(command: str, db_url: str | None) -> dict[str, Any]:
    """``command check --db URL --json``: ran, ok, exit code, reports and repeated ids."""
    if db_url is None:
        return {"ran": False, "note": "no database to check (pass --db with --server)"}
    done = subprocess.run(
        [command, "check", "--db", db_url, "--json"],
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT,
        check=False,
    )
    if done.returncode == 2 and "no such" in done.stderr.lower():  # command or option
        return {"ran": False, "note": f"this aggregator cannot run 'check --json' ({command})"}
    result: dict[str, Any] = {"ran": True, "ok": done.returncode == 0, "exit_code": done.returncode}
    document = _json(done.stdout.strip())
    surveys = document.get("surveys")
    if isinstance(surveys, list):
        result["reports"] = sum(int(s.get("reports", 0)) for s in surveys)
        result["duplicate_reports"] = sum(int(s.get("duplicate_reports", 0)) for s in surveys)
        result["duplicate_ids"] = [i for s in surveys for i in s.get("duplicate_ids", [])][:5]
        result["problems"] = [p for s in surveys for p in s.get("problems", [])][:5]
    if done.returncode == 2:
        result["note"] = done.stderr.strip().splitlines()[-1:] or ["exit 2"]
    return result


class RssSampler:
    """Samples a process's resident memory (VmRSS) every 0.1 s in a thread: start and end."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = self.peak = self.last = self.read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def read(self) -> float:
        """VmRSS in MB (0 if the process is gone)."""
        return _status_mb(self.pid, "VmRSS:") or 0.0

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.last = self.read()
            self.peak = max(self.peak, self.last)

    def stop(self) -> dict[str, float]:
        """Stop sampling; the figures in MB (peak: the kernel's VmHWM when readable)."""
        self._stop.set()
        self._thread.join()
        peak = _status_mb(self.pid, "VmHWM:") or self.peak
        return {"start": round(self.start, 1), "peak": round(peak, 1), "end": round(self.last, 1)}
