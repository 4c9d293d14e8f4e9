"""``serve``'s memory limits: options and environment reach the daemon; bad values exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.aggregator.server._http2 import MAX_CONCURRENT_STREAMS, server_settings
from tests.conftest import BIN, RunCli

PREFIX = "DENIABLE_AGGREGATOR_SERVE_"
HANG_GUARD = 30.0  # seconds; only so that a daemon that never listens fails the test


def _serve(tmp_path: Path, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Start ``serve`` with ``args`` and ``env``; its 'listening' record and its SETTINGS."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    environment.update(env, XDG_DATA_HOME=str(tmp_path / "data"))
    log = tmp_path / f"serve-{time.monotonic_ns()}.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", "127.0.0.1:0",
             "--db", f"sqlite:///{tmp_path / 'limits.db'}", "--grace", "1", *args],
            stdout=subprocess.DEVNULL, stderr=stderr, env=environment,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + HANG_GUARD
        while not (listening := [json.loads(line) for line in log.read_text().splitlines()
                                 if '"listening"' in line]):  # fmt: skip
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        record: dict[str, Any] = listening[0]
        record["settings"] = server_settings(record["port"])
        return record
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=HANG_GUARD)


def test_memory_limits_reach_the_daemon_from_options_and_the_environment(
    tmp_path: Path,
) -> None:
    given = _serve(
        tmp_path,
        ["--max-inflight-bytes", str(12 << 20), "--calls-per-connection", "4"],
        {f"{PREFIX}MAX_CONNECTIONS": "64"},
    )
    assert (given["max_inflight_bytes"], given["max_connections"]) == (12 << 20, 64)
    assert given["settings"][MAX_CONCURRENT_STREAMS] == given["calls_per_connection"] == 4
    from_env = _serve(tmp_path, [], {f"{PREFIX}MAX_INFLIGHT_BYTES": str(16 << 20)})
    assert from_env["max_inflight_bytes"] == 16 << 20
    defaults = _serve(tmp_path, [], {})
    assert defaults["max_message_bytes"] == 4 << 20
    assert defaults["max_inflight_bytes"] == 8 << 20
    assert (defaults["max_connections"], defaults["calls_per_connection"]) == (256, 16)
    # docs/security.md's arithmetic: what the limits let it hold, 1.3 times that for the
    # allocator, and the daemon itself stay under 1 GB by default.
    assert defaults["held_bytes_bound"] == 640 << 20
    assert 1.3 * defaults["held_bytes_bound"] + (72 << 20) < 10**9
    # The report limits (docs/security.md, "Who may store how many reports").
    assert (defaults["peer_reports_per_second"], defaults["peer_report_burst"]) == (20.0, 2000)
    assert defaults["min_free_space"] == "1GiB"
    turned_off = _serve(
        tmp_path, ["--min-free-space", "0"], {f"{PREFIX}PEER_REPORTS_PER_SECOND": "0"}
    )
    assert (turned_off["peer_reports_per_second"], turned_off["min_free_space"]) == (0.0, "0")


def test_bad_memory_limits_exit_2_before_anything_is_opened(
    run_cli: RunCli, tmp_path: Path
) -> None:
    database = tmp_path / "never.db"
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (["--max-inflight-bytes", "1000"], {},
         "--max-inflight-bytes: must be at least the largest message, 4194304 "
         "(--max-message-bytes), got 1000"),
        ([], {f"{PREFIX}MAX_INFLIGHT_BYTES": "0"},
         "--max-inflight-bytes: must be between 1 and 2147483647, got 0"),
        (["--max-message-bytes", str(64 << 20)], {},
         f"--max-inflight-bytes: must be at least the largest message, {64 << 20}"),
        (["--max-connections", "0"], {}, "--max-connections: must be between 1 and"),
        ([], {f"{PREFIX}CALLS_PER_CONNECTION": "-1"},
         "--calls-per-connection: must be between 1 and"),
        (["--max-inflight-bytes", "lots"], {}, "'lots' is not a valid integer"),
        (["--peer-reports-per-second", "-1"], {},
         "--peer-reports-per-second: must be a number >= 0, got -1.0"),
        ([], {f"{PREFIX}PEER_REPORT_BURST": "-5"},
         "--peer-report-burst: must be an integer >= 0, got -5"),
        (["--min-free-space", "lots"], {}, "--min-free-space: 'lots' is not a size"),
        ([], {f"{PREFIX}MIN_FREE_SPACE": "100%"},
         "--min-free-space: a share must be below 100%, got '100%'"),
    ]  # fmt: skip
    for args, env, message in cases:
        done = run_cli(
            "deniable-aggregator", "serve", "--listen", "127.0.0.1:0",
            "--db", f"sqlite:///{database}", *args, env=env, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, (args, env, done.stderr)
        assert message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert not database.exists()  # refused before opening anything
    shown = run_cli("deniable-aggregator", "serve", "--help")
    for option in ("max-inflight-bytes", "max-connections", "calls-per-connection",
                   "peer-reports-per-second", "peer-report-burst", "min-free-space"):  # fmt: skip
        assert f"--{option}" in shown.stdout
        assert PREFIX + option.upper().replace("-", "_") in "".join(shown.stdout.split())
