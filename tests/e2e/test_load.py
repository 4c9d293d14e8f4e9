"""Short runs of bench/load_test.py: clients lose nothing, a resend stores nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import Daemon

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPT = BENCH / "load_test.py"
sys.path.insert(0, str(BENCH))

import load_client  # noqa: E402
import load_test  # noqa: E402


def run_load_test(*args: str) -> tuple[int, dict[str, Any], str]:
    """Run the script with ``--json``; its exit code, JSON document and stderr."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def assert_clean(result: dict[str, Any]) -> None:
    assert result["calls"] > 0
    assert (result["error_count"], result["errors"]) == (0, {})
    # Every report id was fresh: each acknowledged report was stored once and is counted.
    assert result["reports_acked"] == result["stored"] == result["estimate_n"] > 0
    assert result["already_stored"] == 0
    # The resent sample came back entirely already stored.
    resend = result["resend"]
    assert resend["batches"] == resend["planned"] >= min(50, result["acked_batches"])
    assert resend["stored"] == 0
    assert resend["already_stored"] == resend["reports"] > 0
    assert result["ok"], result["verdicts"]


# Each run stays small (--max-requests) to keep the suite quick; the id index under load,
# filter growth included, is tested in tests/aggregator/storage/test_index_under_load.py.
def test_threads_of_mixed_calls_against_a_daemon_of_its_own_lose_nothing() -> None:
    code, document, stderr = run_load_test(
        "--clients", "2", "--threads", "2", "--sizes", "mixed", "--max-size", "100",
        "--max-requests", "150", "--estimates", "0.2", "--seconds", "2", "--runs", "2",
    )  # fmt: skip
    assert code == 0, stderr
    assert [run["run"] for run in document["runs"]] == [1, 2]
    for result in document["runs"]:
        assert_clean(result)
        assert result["estimate_calls"] > 0
        assert result["daemon_exit_code"] == 0  # a clean SIGTERM shutdown after the load
        assert result["check"]["ok"]
        assert result["check"]["reports"] == result["stored"]
        assert result["verdicts"] == dict.fromkeys(
            ("load", "resend", "estimate", "check", "daemon"), True
        )
    assert document["current"]["clean"] == 2
    assert document["ok"]


def test_clients_against_a_running_daemon_lose_nothing(daemon: Daemon) -> None:
    code, document, stderr = run_load_test(
        "--clients", "2", "--batch", "250", "--max-requests", "100", "--seconds", "2",
        "--ids", "structured",
        "--server", daemon.address, "--admin-token-file", str(daemon.token_file),
        "--db", daemon.db_url,
    )  # fmt: skip
    assert code == 0, stderr
    (result,) = document["runs"]
    assert_clean(result)
    assert result["target"] == daemon.address
    assert result["reports_acked"] == 250 * result["acked_batches"]
    assert result["check"]["ok"]
    assert result["daemon_exit_code"] is None


@pytest.mark.parametrize("ids", ["random", "structured"])
def test_a_built_batch_is_protobufs_own_and_the_same_when_rebuilt(ids: str) -> None:
    builder = load_client.BatchBuilder("0123456789abcdef", load_client.ID_LENGTH[ids])
    builder.verify()
    workload = load_client.Workload(
        "127.0.0.1:1", "0123456789abcdef", 2, "mixed", 2000, 0, ids, 1, 1
    )
    body = load_client.make_body(builder, workload, 12345, (0, 1, 7, 300))
    assert body == load_client.make_body(builder, workload, 12345, (0, 1, 7, 300))
    request = pb.SubmitReportsRequest.FromString(body)
    report_ids = [report.report_id for report in request.reports]
    assert len(set(report_ids)) == len(report_ids) == 300
    assert {len(i) for i in report_ids} == {load_client.ID_LENGTH[ids]}
    other = load_client.make_body(builder, workload, 12345, (0, 1, 8, 300))
    again = pb.SubmitReportsRequest.FromString(other)
    assert not set(report_ids) & {report.report_id for report in again.reports}


def test_mixed_sizes_are_log_uniform_on_1_to_the_largest() -> None:
    workload = load_client.Workload("127.0.0.1:1", "s", 1, "mixed", 2000, 0, "random", 1, 1)
    rng = np.random.default_rng(7)
    sizes = np.array([load_client.draw_size(rng, workload) for _ in range(20_000)])
    assert sizes.min() == 1
    assert sizes.max() <= 2000
    assert 40 <= np.median(sizes) <= 50  # sqrt(2001) ~ 44.7
    assert abs((sizes == 1).mean() - np.log(2) / np.log(2001)) < 0.015


def test_resend_shares_sample_the_acknowledged_batches() -> None:
    assert load_test.resend_shares([0, 0], 0.05, 50) == [0, 0]
    assert load_test.resend_shares([10, 20], 0.05, 50) == [10, 20]  # fewer than the minimum
    shares = load_test.resend_shares([1000, 3000], 0.05, 50)
    assert sum(shares) == 200
    assert all(0 <= s <= c for s, c in zip(shares, [1000, 3000], strict=True))
