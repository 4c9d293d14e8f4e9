"""The minimum-n release gate: GetEstimate withholds a question's estimate below min_reports."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, binary_question


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test compares the survey list before and after."""
    return shared_daemon


def reports(survey: pb.Survey, qid: str, count: int, prefix: str) -> list[pb.Report]:
    question = next(q for q in survey.questions if q.id == qid)
    return [
        pb.Report(
            report_id=f"{prefix}{i}", survey_id=survey.id, question_id=qid,
            mechanism=question.mechanism, bit=i % 2 == 0,
        )
        for i in range(count)
    ]  # fmt: skip


def create(admin: AggregatorClient, min_reports: int) -> pb.Survey:
    questions = [binary_question("q1"), binary_question("q2")]
    return admin.create_survey("Gated", questions, min_reports=min_reports)


def gated(client: AggregatorClient, survey_id: str, qid: str) -> str:
    with pytest.raises(RemoteError) as raised:
        client.get_estimate(survey_id, qid)
    assert raised.value.status == grpc.StatusCode.FAILED_PRECONDITION
    return raised.value.details


def test_estimates_are_withheld_below_min_reports_per_question(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = create(admin, 3)
    assert anonymous.get_survey(survey.id).min_reports == 3
    expected = "question 'q1' has {} {}; the survey releases estimates from 3"
    assert gated(anonymous, survey.id, "q1") == expected.format(0, "reports")
    anonymous.submit_reports(reports(survey, "q1", 1, "a"))
    assert gated(anonymous, survey.id, "q1") == expected.format(1, "report")
    anonymous.submit_reports(reports(survey, "q1", 1, "b") + reports(survey, "q2", 5, "c"))
    assert gated(anonymous, survey.id, "q1") == expected.format(2, "reports")
    assert anonymous.get_estimate(survey.id, "q2").n == 5  # each question on its own
    anonymous.submit_reports(reports(survey, "q1", 1, "d"))  # exactly at the minimum
    assert anonymous.get_estimate(survey.id, "q1").n == 3
    anonymous.submit_reports(reports(survey, "q1", 1, "e"))
    assert anonymous.get_estimate(survey.id, "q1").n == 4


def test_no_gate_by_default(admin: AggregatorClient, anonymous: AggregatorClient) -> None:
    survey = admin.create_survey("Open", [binary_question("q1")])
    assert survey.min_reports == 0
    anonymous.submit_reports(reports(survey, "q1", 1, "a"))
    assert anonymous.get_estimate(survey.id, "q1").n == 1


def test_min_reports_bounds(admin: AggregatorClient) -> None:
    assert create(admin, 10**9).min_reports == 10**9
    with pytest.raises(RemoteError) as raised:
        create(admin, 10**9 + 1)
    assert raised.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details == "min_reports: must be 0..1,000,000,000, got 1000000001"
    assert len(admin.list_surveys(include_closed=True)) == 1  # nothing stored


# --- the analyst CLI -------------------------------------------------------------------


def _spec(tmp_path: Path, **extra: object) -> Path:
    spec = {
        "title": "Gated",
        "questions": [{"id": "q1", "text": "Q1?", "epsilon": 1.0}],
        **extra,
    }
    path = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    path.write_text(json.dumps(spec))
    return path


def _create_cli(daemon: Daemon, run_cli: RunCli, spec: Path) -> dict[str, object]:
    done = run_cli(
        "deniable-aggregator", "survey", "create", "--server", daemon.address,
        "--admin-token-file", str(daemon.token_file), str(spec), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    created: dict[str, object] = json.loads(done.stdout)
    return created


def test_estimate_cli_shows_the_gate_and_exits_5(
    daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    created = _create_cli(daemon, run_cli, _spec(tmp_path, min_reports=2))
    assert created["min_reports"] == "2"  # uint64 in the proto JSON mapping
    survey_id = str(created["id"])
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        survey = client.get_survey(survey_id)
        client.submit_reports(reports(survey, "q1", 1, "a"))
    message = "question 'q1' has 1 report; the survey releases estimates from 2"
    for args in ((), ("--question", "q1"), ("--json",)):
        done = run_cli(
            "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, *args
        )
        assert done.returncode == 5, (args, done.stdout, done.stderr)
        assert done.stderr == f"Error: failed precondition: {message}\n"
        assert done.stdout == ""
    with AggregatorClient(daemon.address) as client:
        client.submit_reports(reports(survey, "q1", 1, "b"))
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["estimates"][0]["n"] == 2


WHOLE = "spec.min_reports: a whole number 0..1,000,000,000 is required"


BAD_KEYS: list[tuple[dict[str, object], str]] = [
    ({"min_reports": -1}, f"{WHOLE}, got -1"),
    ({"min_reports": 2.5}, f"{WHOLE}, got 2.5"),
    ({"min_reports": True}, f"{WHOLE}, got True"),
    ({"min_reports": 10**9 + 1}, "got 1000000001"),
    ({"enrollment_required": "yes"}, "spec.enrollment_required: true or false, got 'yes'"),
    ({"enrollment_required": 1}, "spec.enrollment_required: true or false, got 1"),
    ({"min_report": 3}, "spec: unknown keys ['min_report']"),
    ({"max_reports": -5}, "spec.max_reports: a whole number 0..1,000,000,000,000,000 is required"),
    ({"max_reports": 1.5}, "(0: no limit), got 1.5"),
]


def test_survey_create_refuses_bad_survey_keys(
    daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        before = client.list_surveys(include_closed=True)
    for extra, error in BAD_KEYS:
        done = run_cli(
            "deniable-aggregator", "survey", "create", "--server", daemon.address,
            "--admin-token-file", str(daemon.token_file), str(_spec(tmp_path, **extra)),
        )  # fmt: skip
        assert done.returncode == 2, (extra, done.stderr)
        assert done.stderr.startswith("Usage: ") or done.stderr.startswith("Error: ")
        assert error in done.stderr, (extra, done.stderr)
        assert done.stdout == ""
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        assert client.list_surveys(include_closed=True) == before
