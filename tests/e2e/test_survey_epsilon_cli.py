"""`survey create` refuses an epsilon it cannot store and warns above the participants' limit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from deniable.client import AggregatorClient
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test compares the survey list before and after."""
    return shared_daemon


def write_spec(tmp_path: Path, *epsilons: float) -> Path:
    questions = [
        {"id": f"q{i}", "text": "t", "type": "binary", "epsilon": e} for i, e in enumerate(epsilons)
    ]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"title": "T", "questions": questions}))  # NaN, Infinity as JS
    return path


def create(
    daemon: Daemon, run_cli: RunCli, spec: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "deniable-aggregator", "survey", "create", "--server", daemon.address,
        "--admin-token-file", str(daemon.token_file), str(spec), *args,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("epsilon", "message"),
    [
        (100, "spec.questions[0]: 'epsilon' is 100, above the largest allowed, 20.0: "),
        (float("nan"), "spec.questions[0]: epsilon must be a finite number > 0, got nan"),
        (float("inf"), "spec.questions[0]: epsilon must be a finite number > 0, got inf"),
        (0, "spec.questions[0]: epsilon must be a finite number > 0, got 0"),
        (-2, "spec.questions[0]: epsilon must be a finite number > 0, got -2"),
    ],
)
def test_epsilon_that_cannot_be_stored_as_asked_is_refused_and_nothing_created(
    daemon: Daemon, run_cli: RunCli, tmp_path: Path, epsilon: float, message: str
) -> None:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        before = client.list_surveys(include_closed=True)
    done = create(daemon, run_cli, write_spec(tmp_path, 1.0, epsilon, 1.0), "--json")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(f"Error: {message.replace('[0]', '[1]')}")
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        assert client.list_surveys(include_closed=True) == before


def test_above_the_participants_default_limit_is_created_with_a_warning(
    daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    done = create(daemon, run_cli, write_spec(tmp_path, 2.0, 3.0, 20.0), "--json")
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    epsilons = [q["privacy"]["epsilon"] for q in created["questions"]]
    assert epsilons == pytest.approx([2.0, 3.0, 20.0], rel=1e-6)  # stored as asked
    warnings = created["warnings"]
    assert [w.split(" (")[0] for w in warnings] == ["spec.questions[1]", "spec.questions[2]"]
    assert "has epsilon 3, above the participants' default limit of 2.0" in warnings[0]
    assert "every participant who keeps that default" in warnings[0]
    lines = [line for line in done.stderr.splitlines() if line.startswith("Warning: ")]
    assert lines == [f"Warning: {warning}" for warning in warnings]
