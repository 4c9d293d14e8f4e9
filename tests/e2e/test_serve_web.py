"""``serve --web``: the participant's RPCs over Connect answer as the gRPC port does."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._web import RPC, call, call_proto, request
from tests.conftest import ADMIN_TOKEN, Daemon, binary_question, start_daemon

MAX_BATCH = 50
ADMIN_RPCS = ("CreateSurvey", "CloseSurvey", "IssueTokens", "ExportReports", "GetEstimate")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    folder = tmp_path_factory.mktemp("web")
    running = start_daemon(folder, args=["--web", "127.0.0.1:0", "--max-batch", str(MAX_BATCH)])
    yield running
    assert running.stop() == 0


@pytest.fixture
def admin(daemon: Daemon) -> Iterator[AggregatorClient]:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
        yield client


def web(daemon: Daemon) -> str:
    assert daemon.web_address is not None
    return daemon.web_address


def reports(survey: pb.Survey, bits: list[bool], prefix: str) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(
            report_id=f"{prefix}{i:04d}", survey_id=survey.id, question_id=question.id,
            mechanism=question.mechanism, bit=bit,
        )
        for i, bit in enumerate(bits)
    ]  # fmt: skip


def grpc_status(address: str, rpc: str, data: bytes) -> tuple[str, str]:
    """The gRPC port's status for a request's bytes, as its code in Connect's spelling."""
    with grpc.insecure_channel(address) as channel:
        method: Any = channel.unary_unary(RPC + rpc)  # no serializers: bytes as they are
        try:
            method(data, timeout=30)
        except grpc.RpcError as error:
            return error.code().name.lower(), error.details() or ""
    return "ok", ""


def test_get_and_list_surveys_in_json_and_binary_as_over_grpc(
    daemon: Daemon, admin: AggregatorClient
) -> None:
    survey = admin.create_survey("Exam", [binary_question("cheated")])
    closed = admin.create_survey("Old", [binary_question("late")])
    admin.close_survey(closed.id)
    with AggregatorClient(daemon.address, attempts=1) as anonymous:
        expected = anonymous.get_survey(survey.id)
        listed = anonymous.list_surveys()
    got = call(web(daemon), "GetSurvey", {"surveyId": survey.id})
    assert (got.status, got.headers["content-type"]) == (200, "application/json")
    assert json_format.ParseDict(got.json(), pb.Survey()) == expected
    binary = call_proto(
        web(daemon), "GetSurvey", pb.GetSurveyRequest(survey_id=survey.id).SerializeToString()
    )
    assert binary.headers["content-type"] == "application/proto"
    assert pb.Survey.FromString(binary.body) == expected
    listing = call(web(daemon), "ListSurveys", {})
    shown = json_format.ParseDict(listing.json(), pb.ListSurveysResponse())
    assert list(shown.surveys) == listed
    assert survey.id in {s.id for s in shown.surveys}
    assert closed.id not in {s.id for s in shown.surveys}
    # Closed surveys are the admin's: the token is never read on this port.
    for headers in ({}, {"Authorization": f"Bearer {ADMIN_TOKEN}"}):
        refused = call(web(daemon), "ListSurveys", {"includeClosed": True}, headers)
        expected_code = grpc_status(
            daemon.address,
            "ListSurveys",
            pb.ListSurveysRequest(include_closed=True).SerializeToString(),
        )
        assert refused.status == 401
        assert (refused.json()["code"], refused.json()["message"]) == expected_code
        assert expected_code[0] == "unauthenticated"


def test_reports_sent_to_the_web_port_are_stored_and_estimated_as_over_grpc(
    daemon: Daemon, admin: AggregatorClient
) -> None:
    over_web = admin.create_survey("Web", [binary_question("cheated")])
    over_grpc = admin.create_survey("gRPC", [binary_question("cheated")])
    bits = [i % 3 == 0 for i in range(2 * MAX_BATCH)]
    sent = reports(over_web, bits, "w")
    as_json = pb.SubmitReportsRequest(reports=sent[:MAX_BATCH])
    as_binary = pb.SubmitReportsRequest(reports=sent[MAX_BATCH:])
    first = call(web(daemon), "SubmitReports", as_json)
    assert first.status == 200, first.body
    assert first.json() == {"stored": MAX_BATCH}
    second = call_proto(web(daemon), "SubmitReports", as_binary.SerializeToString())
    assert pb.SubmitReportsResponse.FromString(second.body).stored == MAX_BATCH
    for part in (0, MAX_BATCH):
        admin.submit_reports(reports(over_grpc, bits, "g")[part : part + MAX_BATCH])
    web_estimate = admin.get_estimate(over_web.id, "cheated")
    grpc_estimate = admin.get_estimate(over_grpc.id, "cheated")
    assert web_estimate.stored == grpc_estimate.stored == 2 * MAX_BATCH
    assert (web_estimate.estimate, web_estimate.ci_low, web_estimate.ci_high) == (
        grpc_estimate.estimate, grpc_estimate.ci_low, grpc_estimate.ci_high,
    )  # fmt: skip
    # A resend (the page retrying after a lost answer) is acknowledged, counted once.
    again = call(web(daemon), "SubmitReports", as_json)
    assert again.json() == {"alreadyStored": MAX_BATCH}
    assert admin.get_survey(over_web.id).reports == 2 * MAX_BATCH


def test_bad_input_gets_the_grpc_ports_code_and_message_and_stores_nothing(
    daemon: Daemon, admin: AggregatorClient
) -> None:
    survey = admin.create_survey("Bad input", [binary_question("cheated")])
    closed = admin.create_survey("Closed", [binary_question("cheated")])
    admin.close_survey(closed.id)
    enrolled = admin.create_survey(
        "Enrolled", [binary_question("cheated")], enrollment_required=True
    )
    good = reports(survey, [True, False], "b")
    wrong_question, no_value, reused = pb.Report(), pb.Report(), pb.Report()
    for report in (wrong_question, no_value, reused):
        report.CopyFrom(good[0])
    wrong_question.report_id, wrong_question.question_id = "b8", "nope"
    no_value.report_id = "b9"
    no_value.ClearField("bit")
    reused.bit = not good[0].bit  # the id of good[0] with another value
    unknown = pb.Survey(id="0" * 16, questions=survey.questions)
    too_many = reports(survey, [True] * (MAX_BATCH + 1), "x")
    batches = {
        "not_found": pb.SubmitReportsRequest(reports=[*good, wrong_question]),
        "unknown survey": pb.SubmitReportsRequest(reports=reports(unknown, [True], "u")),
        "invalid_argument": pb.SubmitReportsRequest(reports=[*good, no_value]),
        "failed_precondition": pb.SubmitReportsRequest(reports=reports(closed, [True], "c")),
        "resource_exhausted": pb.SubmitReportsRequest(reports=too_many),
        "unauthenticated": pb.SubmitReportsRequest(
            reports=reports(enrolled, [True], "e"), enrollment_token="not-a-token"
        ),
        "without a token": pb.SubmitReportsRequest(reports=reports(enrolled, [True], "e")),
        "empty": pb.SubmitReportsRequest(),
        "two versions of one id": pb.SubmitReportsRequest(reports=[good[0], reused]),
    }  # fmt: skip
    codes = set()
    for name, batch in batches.items():
        data = batch.SerializeToString()
        expected = grpc_status(daemon.address, "SubmitReports", data)
        assert expected[0] != "ok", name
        as_json = call(web(daemon), "SubmitReports", batch)
        as_binary = call_proto(web(daemon), "SubmitReports", data)
        for reply in (as_json, as_binary):
            assert reply.status >= 400, (name, reply.body)
            assert (reply.json()["code"], reply.json()["message"]) == expected, name
        codes.add(expected[0])
    assert {
        "not_found",
        "invalid_argument",
        "failed_precondition",
        "resource_exhausted",
        "unauthenticated",
    } <= codes
    # Bytes that are no request at all.
    garbage = b"\xff\xff\xff\xff"
    assert (
        call_proto(web(daemon), "SubmitReports", garbage).json()["message"]
        == grpc_status(daemon.address, "SubmitReports", garbage)[1]
    )
    assert call_proto(web(daemon), "GetSurvey", garbage).json() == {
        "code": "invalid_argument",
        "message": "request: not a valid deniable.v1.GetSurveyRequest",
    }
    not_json = request(
        web(daemon),
        "POST",
        RPC + "SubmitReports",
        b"{reports",
        {"Content-Type": "application/json"},
    )
    assert (not_json.status, not_json.json()["code"]) == (400, "invalid_argument")
    assert not_json.json()["message"].startswith(
        "request: not a valid deniable.v1.SubmitReportsRequest in JSON: "
    )
    for each in (survey, closed, enrolled):
        assert admin.get_survey(each.id).reports == 0  # nothing of any of them was stored
    assert call(web(daemon), "SubmitReports", pb.SubmitReportsRequest(reports=good)).json() == {
        "stored": 2
    }
    # The log has one line per request, and never a token or what a report holds.
    log = daemon.stderr_path.read_text()
    assert "not-a-token" not in log
    lines = [json.loads(line) for line in log.splitlines() if '"web request"' in line]
    assert {line["path"] for line in lines} >= {f"{RPC}SubmitReports", f"{RPC}GetSurvey"}
    assert all(set(line) >= {"method", "path", "status", "peer", "ms"} for line in lines)
    assert not [line for line in lines if "b0" in json.dumps(line) or "bit" in line]


def test_admin_and_analyst_rpcs_are_not_served_even_with_the_token(
    daemon: Daemon, admin: AggregatorClient
) -> None:
    before = admin.list_surveys(include_closed=True)
    spec = {"title": "Sneaky", "questions": [json_format.MessageToDict(binary_question())]}
    bodies: dict[str, dict[str, Any]] = {
        "CreateSurvey": spec,
        "CloseSurvey": {"surveyId": before[0].id if before else "x"},
    }
    for rpc in (*ADMIN_RPCS, "Nope", "SubmitReports/extra"):
        for headers in ({}, {"Authorization": f"Bearer {ADMIN_TOKEN}"}):
            reply = call(web(daemon), rpc, bodies.get(rpc, {}), headers)
            assert reply.status == 404, (rpc, reply.body)
            assert reply.json()["code"] == "unimplemented"
            assert "not served on the web port" in reply.json()["message"]
        binary = call_proto(web(daemon), rpc, b"")
        assert (binary.status, binary.json()["code"]) == (404, "unimplemented")
    assert admin.list_surveys(include_closed=True) == before  # nothing created or closed


def test_a_body_over_the_message_limit_is_refused_before_it_is_read(daemon: Daemon) -> None:
    limit = json.loads(
        next(line for line in daemon.stderr_path.read_text().splitlines() if '"listening"' in line)
    )["max_message_bytes"]
    # The length alone refuses it: the daemon answers without reading the body (and closes).
    headers = {"Content-Type": "application/proto", "Content-Length": str(limit + 1)}
    refused = request(web(daemon), "POST", RPC + "SubmitReports", b"\x00" * 16, headers)
    assert refused.status == 429
    assert refused.json() == {
        "code": "resource_exhausted",
        "message": f"Received message larger than max ({limit + 1} vs. {limit})",
    }
    assert refused.headers["connection"] == "close"
    chunked = request(
        web(daemon),
        "POST",
        RPC + "ListSurveys",
        iter([b"{}"]),
        {"Content-Type": "application/json"},
    )  # no length: http.client sends it chunked
    assert chunked.status == 411
    wrong_type = request(
        web(daemon), "POST", RPC + "ListSurveys", b"{}", {"Content-Type": "text/plain"}
    )
    assert (wrong_type.status, wrong_type.headers["accept-post"]) == (
        415,
        "application/json, application/proto",
    )
    as_get = request(web(daemon), "GET", RPC + "ListSurveys?message=%7B%7D&encoding=json")
    assert (as_get.status, as_get.headers["allow"]) == (405, "POST")


def test_a_peer_has_one_report_bucket_on_both_ports(tmp_path: Path) -> None:
    daemon = start_daemon(
        tmp_path, peer_limit=True,
        args=["--web", "127.0.0.1:0",
              "--peer-report-burst", "3", "--peer-reports-per-second", "0.001"],
    )  # fmt: skip
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = admin.create_survey("Bucket", [binary_question("cheated")])
            sent = reports(survey, [True] * 4, "p")
            with AggregatorClient(daemon.address, attempts=1) as participant:
                assert participant.submit_reports(sent[:2]).stored == 2
            too_many = pb.SubmitReportsRequest(reports=sent[2:])
            code, message = grpc_status(
                daemon.address, "SubmitReports", too_many.SerializeToString()
            )
            assert code == "resource_exhausted"
            assert "peer 127.0.0.1 is over its report rate" in message
            refused = call(web(daemon), "SubmitReports", too_many)
            assert (refused.status, refused.json()["code"]) == (429, code)
            # The same words, but for the wait, which moves with the clock.
            wait = re.compile(r"in [0-9.]+ s;")
            assert wait.sub("", refused.json()["message"]) == wait.sub("", message)
            assert admin.get_survey(survey.id).reports == 2
    finally:
        assert daemon.stop() == 0
