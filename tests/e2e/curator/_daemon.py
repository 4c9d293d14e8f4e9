"""Start ``curate serve`` as a subprocess and run the analyst's and custodian's commands."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import BIN, stop_process

ADMIN_TOKEN = "curator-admin-token-for-tests-0123456789"


@dataclass
class CuratorDaemon:
    """A ``deniable-aggregator curate serve`` subprocess."""

    process: subprocess.Popen[str]
    address: str
    admin_token_file: Path
    env: dict[str, str]
    log_path: Path

    def stop(self) -> int:
        """SIGTERM and wait; the exit code."""
        return stop_process(self.process)

    def run(self, *args: str, token_file: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``deniable-aggregator curate ARGS --server ADDRESS`` (with the analyst's token)."""
        extra = ["--token-file", str(token_file)] if token_file else []
        return curate(*args, "--server", self.address, *extra, env=self.env)

    def issue(self, tmp_path: Path, analyst: str, budget: str, delta: str = "0") -> Path:
        """Issue an analyst token into a file; its path."""
        path = tmp_path / f"{analyst}-{time.monotonic_ns()}.token"
        done = curate(
            "tokens", "issue", "--server", self.address, "--admin-token-file",
            str(self.admin_token_file), "--analyst", analyst, "--budget", budget,
            "--delta", delta, "--output", str(path), env=self.env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return path


def curate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``deniable-aggregator curate ARGS``."""
    return subprocess.run(
        [str(BIN / "deniable-aggregator"), "curate", *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The --json document of a command that succeeded."""
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def clean_env(tmp_path: Path) -> dict[str, str]:
    """The test's environment without DENIABLE_* variables, its own XDG directories."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return env


def start_curator(
    tmp_path: Path, data: str, args: Sequence[str] = (), *, db_url: str | None = None
) -> CuratorDaemon:
    """``curate serve --data DATA ARGS`` on 127.0.0.1:0; waits for its 'listening' log."""
    env = clean_env(tmp_path)
    token_file = tmp_path / "curator-admin-token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    db_url = db_url or f"sqlite:///{tmp_path / 'curator.db'}"
    log_path = tmp_path / f"curator-{time.monotonic_ns()}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "curate", "serve", "--data", data,
             "--listen", "127.0.0.1:0", "--db", db_url, "--admin-token-file", str(token_file),
             "--grace", "2", *args],
            stdout=subprocess.DEVNULL, stderr=log, text=True, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("event") == "listening":
                address = f"127.0.0.1:{record['port']}"
                return CuratorDaemon(process, address, token_file, env, log_path)
        if process.poll() is not None:
            raise RuntimeError(f"curate serve exited early: {log_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("curate serve did not start listening within 60 s")
