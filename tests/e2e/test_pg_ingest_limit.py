"""A short run of bench/pg_ingest_limit.py: every configuration stores and counts every report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests._postgres import require_server

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pg_ingest_limit.py"
CONFIGS = ("bare ON CONFLICT, 1 conn", "1 daemon", "2 daemons", "bare plain INSERT, 1 conn")


def test_each_configuration_is_measured_and_its_counts_checked(tmp_path: Path) -> None:
    require_server()
    figures = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "2", "--batches", "3", "--warmup", "2",
         "--batch", "50", "--threads", "2", "--no-fsync", "--json", str(figures)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    # A target missed is printed, not an error; a count that does not add up (or a failed
    # `check`) raises before the figures are written.
    assert done.returncode == 0, done.stderr
    summary = json.loads(figures.read_text())
    rates = summary["reports_per_s"]
    assert sorted(rates) == sorted(CONFIGS)
    for config in CONFIGS:
        row = rates[config]
        assert 0 < row["min"] <= row["median"] <= row["max"], (config, row)
        assert row["server_cpu_ms_per_batch"] >= 0, (config, row)  # clock ticks: 10 ms
        # one write transaction per batch (the daemons may fold tally rows now and then)
        assert 1.0 <= row["transactions_per_batch"] < 1.5, (config, row)
    assert rates["bare ON CONFLICT, 1 conn"]["daemons_cpu_ms_per_batch"] == 0
    for key in ("daemon_vs_bare", "two_vs_one", "daemon_vs_plain", "bare_cpu_vs_daemon_cpu"):
        assert len(summary[key]) == 2, (key, summary[key])  # one paired ratio per round
        assert all(x > 0 for x in summary[key]), (key, summary[key])
    verdicts = [line for line in done.stdout.splitlines() if "(target >=" in line]
    assert [v.rsplit(": ", 1)[1] in ("PASS", "FAIL") for v in verdicts] == [True, True], verdicts
