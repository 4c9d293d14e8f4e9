"""A short run of bench/load_test.py: concurrent client processes lose no report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "load_test.py"


def load_test(*args: str) -> tuple[int, dict[str, Any], str]:
    """Run the script with ``--json``; its exit code, JSON document and stderr."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def assert_nothing_lost(result: dict[str, Any]) -> None:
    assert result["calls"] > 0
    assert (result["error_count"], result["errors"], result["lost"]) == (0, {}, 0)
    # Every report id was fresh: each acknowledged report was stored once and is counted.
    sent = result["reports_sent"]
    assert result["reports_acked"] == result["stored"] == result["estimate_n"] == sent
    assert result["already_stored"] == 0


def test_clients_against_a_daemon_of_its_own_lose_nothing() -> None:
    code, result, stderr = load_test("--clients", "3", "--batch", "100", "--seconds", "3")
    assert code == 0, stderr
    assert_nothing_lost(result)
    assert result["daemon_exit_code"] == 0  # a clean SIGTERM shutdown after the load
    check = result["check"]
    assert check == {"ran": True, "ok": True, "exit_code": 0}, check


def test_clients_against_a_running_daemon_lose_nothing(daemon: Daemon) -> None:
    code, result, stderr = load_test(
        "--clients",
        "2",
        "--batch",
        "250",
        "--seconds",
        "2",
        "--server",
        daemon.address,
        "--admin-token-file",
        str(daemon.token_file),
        "--db",
        daemon.db_url,
    )
    assert code == 0, stderr
    assert_nothing_lost(result)
    assert result["target"] == daemon.address
    check = result["check"]
    assert check == {"ran": True, "ok": True, "exit_code": 0}, check
