"""The report limits through the analyst's CLI: max_reports, --all, counts as released."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deniable.client._remote import AggregatorClient
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli


def _spec(tmp_path: Path, **extra: object) -> Path:
    spec = {"title": "Limited", "questions": [{"id": "q1", "text": "Q1?", "epsilon": 1.0}]}
    path = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    path.write_text(json.dumps({**spec, **extra}))
    return path


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py) for the test that makes its own surveys."""
    return shared_daemon


def test_max_reports_from_the_option_or_the_spec(
    daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    token = ("--server", daemon.address, "--admin-token-file", str(daemon.token_file))
    made = run_cli(
        "deniable-aggregator", "survey", "create", *token, str(_spec(tmp_path)),
        "--max-reports", "3", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["max_reports"] == "3"  # uint64 in proto JSON
    from_spec = run_cli(
        "deniable-aggregator", "survey", "create", *token,
        str(_spec(tmp_path, max_reports=5)), "--json",
    )  # fmt: skip
    assert json.loads(from_spec.stdout)["max_reports"] == "5"
    disagree = run_cli(
        "deniable-aggregator", "survey", "create", *token,
        str(_spec(tmp_path, max_reports=5)), "--max-reports", "4",
    )  # fmt: skip
    assert disagree.returncode == 2
    assert "--max-reports 4 and spec.max_reports 5 disagree" in disagree.stderr
    survey_id = json.loads(made.stdout)["id"]
    answered = run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id, "--answer", "q1=yes", "--yes"
    )
    assert answered.returncode == 0, answered.stderr
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        survey = admin.get_survey(survey_id)
        admin.submit_reports(reports(survey, "q1", 2, "a"))  # now full: 3 of 3
    other = {"XDG_DATA_HOME": str(tmp_path / "other"), "XDG_CONFIG_HOME": str(tmp_path / "o")}
    full = run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id, "--answer", "q1=no",
        "--yes", env=other,
    )  # fmt: skip
    assert full.returncode == 5, full.stderr  # refused, like a closed survey
    assert "is full" in full.stderr
    assert "max_reports of 3" in full.stderr


def test_list_all_needs_the_token_and_stepped_counts_are_as_released(
    own_daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    daemon = own_daemon  # a daemon of its own: the survey list is exactly its survey
    server = ("--server", daemon.address)
    token = ("--admin-token-file", str(daemon.token_file))
    made = run_cli(
        "deniable-aggregator", "survey", "create", *server, *token,
        str(_spec(tmp_path, enrollment_required=True)), "--release-step", "10",
    )  # fmt: skip
    survey_id = made.stdout.strip()
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        survey = admin.get_survey(survey_id)
        for k, enrollment in enumerate(admin.issue_tokens(survey_id, 4)):
            admin.submit_reports(reports(survey, "q1", 1, f"p{k}"), enrollment_token=enrollment)
    refused = run_cli("deniable-aggregator", "survey", "list", *server, "--all")
    assert refused.returncode == 2
    assert "admin commands need --admin-token-file" in refused.stderr
    listed = run_cli("deniable-aggregator", "survey", "list", *server)
    assert "        0 reports as released" in listed.stdout
    shown = run_cli("deniable-aggregator", "survey", "show", *server, survey_id)
    assert "(open, 0 reports as released)" in shown.stdout
    live = run_cli("deniable-aggregator", "survey", "list", *server, *token, "--all")
    assert "        4 reports  1 question(s)" in live.stdout
    shown = run_cli("deniable-aggregator", "survey", "show", *server, *token, survey_id)
    assert "(open, 4 reports)" in shown.stdout
