"""``simulate`` over gRPC: a progress bar on a terminal's stderr, nothing off a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deniable.aggregator.server._lifecycle import RunningServer
from tests.aggregator.cli._terminal import last_drawn, on_terminal
from tests.conftest import ADMIN_TOKEN, RunCli
from tests.e2e._forks import Runner

SIMULATE = (
    "simulate", "--participants", "600", "--p", "0.3", "--epsilon", "1", "--seed", "5",
    "--transport", "grpc", "--batch-size", "200",
)  # fmt: skip


@pytest.mark.parametrize(
    ("repeats", "label", "end", "rate"),
    [("1", "submitting", "600/600", "reports/s"), ("3", "simulating", "3/3", "repeats/s")],
)
def test_on_a_terminal_a_bar_with_rate_ends_at_the_total(
    cli_runner: Runner, repeats: str, label: str, end: str, rate: str
) -> None:
    done = on_terminal(cli_runner, "deniable-aggregator", *SIMULATE, "--repeats", repeats)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Simulated 600 participants with true share p = 0.3")
    last = last_drawn(done.stderr)
    assert label in last
    assert end in last
    assert "100%" in last
    assert rate in last
    assert "Traceback" not in done.stderr


def test_off_a_terminal_stderr_is_empty_and_json_is_one_document(
    run_cli: RunCli, server: RunningServer, tmp_path: Path
) -> None:
    token = tmp_path / "admin-token"
    token.write_text(ADMIN_TOKEN)
    remote = ("--server", server.address, "--admin-token-file", str(token))
    done = run_cli("deniable-aggregator", *SIMULATE, *remote, "--repeats", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    data = json.loads(done.stdout)  # exactly one document: anything more fails to parse
    assert (data["repeats"], data["grpc"]["reports_sent"]) == (2, 1200)
    assert data["grpc"]["embedded"] is False
    done = run_cli("deniable-aggregator", *SIMULATE, *remote)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("Simulated 600 participants with true share p = 0.3")
    transport = done.stdout.splitlines()[-1]
    assert transport.startswith(f"Transport: gRPC to the daemon at {server.address}, 600 reports")
