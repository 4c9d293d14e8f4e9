"""End to end through the installed console scripts and a real daemon subprocess."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from deniable.aggregator import estimate_proportion
from deniable.client._remote import AggregatorClient
from tests.conftest import ADMIN_TOKEN, BIN, Daemon, RunCli, start_daemon

SPEC = {
    "title": "Exam honesty",
    "questions": [
        {"id": "cheated", "text": "Have you ever cheated in an exam?", "epsilon": 1.0},
        {"id": "copied", "text": "Have you copied homework?", "type": "binary", "alpha": 0.5},
    ],
}


def write_spec(tmp_path: Path, spec: object = SPEC) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def create(run_cli: RunCli, daemon: Daemon, spec: Path) -> str:
    done = run_cli(
        "deniable-aggregator", "survey", "create", "--server", daemon.address,
        "--admin-token-file", str(daemon.token_file), str(spec),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def reports_stored(daemon: Daemon) -> int:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        return sum(s.reports for s in client.list_surveys(include_closed=True))


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test makes its surveys, counts its reports."""
    return shared_daemon


def test_serve_create_answer_estimate(run_script: RunCli, daemon: Daemon, tmp_path: Path) -> None:
    """The installed executables themselves, each its own process (the others fork)."""
    run_cli = run_script
    survey_id = create(run_cli, daemon, write_spec(tmp_path))
    assert len(survey_id) == 16
    answers = [("yes", "no"), ("no", "no"), ("yes", "yes")]
    for participant, (cheated, copied) in enumerate(answers):
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id,
            "--answer", f"cheated={cheated}", "--answer", f"copied={copied}", "--yes", "--json",
            env={"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        sent = json.loads(done.stdout)
        assert sent["stored"] == 2
        assert {r["question_id"] for r in sent["reports"]} == {"cheated", "copied"}
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    by_question = {e["question_id"]: e for e in result["estimates"]}
    cheated = by_question["cheated"]
    assert cheated["n"] == 3
    assert cheated["epsilon"] == 1.0
    assert cheated["method"] == "clopper-pearson"
    # The estimate is exactly the library's on the stored reports.
    ones = round((cheated["estimate_raw"] * cheated["alpha"] + (1 - cheated["alpha"]) / 2) * 3)
    expected = estimate_proportion(ones, 3, cheated["alpha"])
    # (release steps and the other interval options add wire fields of their own)
    assert {key: cheated[key] for key in (*expected.to_dict(), "question_id", "mechanism")} == {
        "question_id": "cheated",
        **expected.to_dict(),
        "mechanism": "randomized_response",
    }
    text = run_cli("deniable-aggregator", "estimate", "--server", daemon.address, survey_id)
    assert "cheated" in text.stdout
    assert "clopper-pearson" in text.stdout


def test_survey_commands_and_their_errors(
    run_cli: RunCli, own_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = own_daemon  # a daemon of its own: the survey list is exactly its surveys
    spec = write_spec(tmp_path)
    survey_id = create(run_cli, daemon, spec)
    server = ("--server", daemon.address)
    listing = run_cli("deniable-aggregator", "survey", "list", *server, "--json")
    assert [s["id"] for s in json.loads(listing.stdout)["surveys"]] == [survey_id]
    shown = run_cli("deniable-aggregator", "survey", "show", *server, survey_id)
    assert "epsilon = 1.0000 (exact" in shown.stdout
    assert "epsilon = 1.0986 (exact" in shown.stdout

    def fails(code: int, message: str, *args: str, env: dict[str, str] | None = None) -> None:
        done = run_cli("deniable-aggregator", *args, env=env)
        assert done.returncode == code, (args, done.stderr)
        assert message in done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""

    wrong = tmp_path / "wrong-token"
    wrong.write_text("x" * 32)
    fails(6, "unauthenticated", "survey", "create", *server, "--admin-token-file", str(wrong),
          str(spec))  # fmt: skip
    fails(2, "need --admin-token-file or DENIABLE_AGGREGATOR_ADMIN_TOKEN", "survey", "create",
          *server, str(spec))  # fmt: skip
    fails(2, "(DENIABLE_ADMIN_TOKEN is set but no longer read: rename it)", "survey", "create",
          *server, str(spec), env={"DENIABLE_ADMIN_TOKEN": ADMIN_TOKEN})  # fmt: skip
    fails(2, "does not hold a valid admin token", "survey", "create", *server,
          "--admin-token-file", str(spec), str(spec))  # fmt: skip
    missing = tmp_path / "no-such-token"
    for command in (("survey", "create", *server, str(spec)), ("serve", "--listen", "127.0.0.1:0")):
        fails(2, "does not exist", *command, "--admin-token-file", str(missing))
    binary = tmp_path / "binary-token"
    binary.write_bytes(b"\xff\xfe" * 20)
    fails(2, f"cannot read admin token file {binary}: not UTF-8 text", "serve", "--listen",
          "127.0.0.1:0", "--db", f"sqlite:///{tmp_path / 'other.db'}",
          "--admin-token-file", str(binary))  # fmt: skip
    bad = write_spec(tmp_path, {"title": "T", "questions": [{"id": "q", "text": "t", "alpha": 2}]})
    fails(2, "spec.questions[0]: alpha must be in (0, 1], got 2.0", "survey", "create", *server,
          "--admin-token-file", str(daemon.token_file), str(bad))  # fmt: skip
    both = write_spec(tmp_path, {"title": "T", "questions": [
        {"id": "q", "text": "t", "alpha": 0.5, "epsilon": 1}]})  # fmt: skip
    fails(2, "exactly one of 'alpha' or 'epsilon'", "survey", "create", *server,
          "--admin-token-file", str(daemon.token_file), str(both))  # fmt: skip
    fails(2, "invalid argument: questions[0].id", "survey", "create", *server,
          "--admin-token-file", str(daemon.token_file),
          str(write_spec(tmp_path, {"title": "T", "questions": [
              {"id": "a b", "text": "t", "alpha": 0.5}]})))  # fmt: skip
    fails(4, "unknown survey 'feedfacefeedface'", "survey", "show", *server, "feedfacefeedface")
    fails(4, "has no question 'nope'", "estimate", *server, survey_id, "--question", "nope")
    fails(5, "no reports yet", "estimate", *server, survey_id, "--question", "cheated")
    fails(3, "cannot reach the aggregator at 127.0.0.1:9", "survey", "list",
          "--server", "127.0.0.1:9")  # fmt: skip
    fails(2, "admin commands need --admin-token-file", "survey", "list", *server, "--all")
    listing = run_cli("deniable-aggregator", "survey", "list", *server, "--all", "--json",
                      "--admin-token-file", str(daemon.token_file))  # fmt: skip
    assert len(json.loads(listing.stdout)["surveys"]) == 1  # no failed call created anything
    closed = run_cli(
        "deniable-aggregator", "survey", "close", *server, survey_id,
        env={"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN},
    )  # fmt: skip
    assert closed.returncode == 0, closed.stderr
    refused = run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id,
        "--answer", "cheated=yes", "--answer", "copied=no", "--yes",
    )  # fmt: skip
    assert refused.returncode == 5
    assert reports_stored(daemon) == 0


def test_daemon_restart_keeps_every_report(run_cli: RunCli, tmp_path: Path) -> None:
    first = start_daemon(tmp_path)
    try:
        survey_id = create(run_cli, first, write_spec(tmp_path))
        for participant in range(2):
            done = run_cli(
                "deniable", "answer", "--server", first.address, survey_id,
                "--answer", "cheated=yes", "--answer", "copied=no", "--yes",
                env={"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")},
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        before = run_cli(
            "deniable-aggregator", "estimate", "--server", first.address, survey_id, "--json"
        ).stdout
    finally:
        assert first.stop() == 0
    log = [json.loads(line) for line in first.stderr_path.read_text().splitlines()]
    assert [r["event"] for r in log][-2:] == ["signal received", "stopped"]
    assert not any(ADMIN_TOKEN in json.dumps(r) for r in log)  # tokens are never logged
    second = start_daemon(tmp_path, first.db_url)
    try:
        after = run_cli(
            "deniable-aggregator", "estimate", "--server", second.address, survey_id, "--json"
        ).stdout
        assert json.loads(after) == json.loads(before)
    finally:
        second.stop()


def test_generated_token_is_private_and_its_path_logged(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", "127.0.0.1:0"],
            stderr=stderr,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            while "listening" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            record = json.loads(log.read_text().splitlines()[0])
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
    token_path = Path(record["admin_token_file"])
    assert token_path == tmp_path / "data" / "deniable" / "admin-token"
    assert record["admin_token_created"] is True
    assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
    token = token_path.read_text().strip()
    assert len(token) >= 32
    assert token not in log.read_text()
    assert record["db"] == f"sqlite:///{tmp_path}/data/deniable/aggregator.db"


@pytest.mark.parametrize("transport", ["grpc", "inprocess"])
def test_simulate_transports_json(run_cli: RunCli, transport: str) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--participants", "3000", "--p", "0.4",
        "--alpha", "0.5", "--seed", "9", "--transport", transport, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["transport"] == transport
    assert data["estimate"]["n"] == 3000
    if transport == "grpc":
        assert data["grpc"]["embedded"] is True
        assert data["grpc"]["reports_sent"] == 3000
        assert data["grpc"]["reports_per_second"] > 0
    else:
        assert data["grpc"] is None


def test_simulate_against_a_running_daemon(run_cli: RunCli, daemon: Daemon) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    done = run_cli(
        "deniable-aggregator", "simulate", "--participants", "2000", "--p", "0.2",
        "--epsilon", "1", "--server", daemon.address, "--batch-size", "500", "--json",
        env={"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["grpc"]["embedded"] is False
    assert reports_stored(daemon) - stored_before == 2000
    no_token = run_cli(
        "deniable-aggregator", "simulate", "--participants", "10", "--p", "0.2",
        "--alpha", "0.5", "--server", daemon.address,
    )  # fmt: skip
    assert no_token.returncode == 2
    assert "DENIABLE_AGGREGATOR_ADMIN_TOKEN" in no_token.stderr
