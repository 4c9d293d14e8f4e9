"""Every RPC against a real in-process server on 127.0.0.1:0, and every error status."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from deniable.aggregator import estimate_proportion
from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._servicer import MAX_DETAILS
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared import RandomizedResponse
from deniable.shared.errors import InvalidArgument, shown
from deniable.shared.questions import MAX_SURVEY_EPSILON, MIN_SURVEY_EPSILON
from deniable.shared.stats._intervals import MAX_CONFIDENCE, METHODS
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc
from tests.conftest import ADMIN_TOKEN, binary_question

Code = grpc.StatusCode


def make_reports(
    survey: pb.Survey, bits: list[bool], qid: str = "cheated", prefix: str = "r"
) -> list[pb.Report]:
    question = next(q for q in survey.questions if q.id == qid)
    return [
        pb.Report(
            report_id=f"{prefix}{i}", survey_id=survey.id, question_id=qid,
            mechanism=question.mechanism, bit=bit,
        )
        for i, bit in enumerate(bits)
    ]  # fmt: skip


@pytest.fixture
def survey(admin: AggregatorClient) -> pb.Survey:
    return admin.create_survey("Exam", [binary_question("cheated"), binary_question("late", 0.25)])


def stored_count(client: AggregatorClient, survey_id: str) -> int:
    return client.get_survey(survey_id).reports


# --- surveys -------------------------------------------------------------------------


def test_create_get_list_close(admin: AggregatorClient, anonymous: AggregatorClient) -> None:
    created = admin.create_survey("Exam", [binary_question("cheated")])
    assert created.state == pb.SURVEY_STATE_OPEN
    assert len(created.id) == 16
    privacy = created.questions[0].privacy
    assert privacy.epsilon == math.log(3)
    assert privacy.epsilon_approx == 1.0
    assert "75%" in privacy.explanation
    assert anonymous.get_survey(created.id) == created
    assert [s.id for s in anonymous.list_surveys()] == [created.id]
    closed = admin.close_survey(created.id)
    assert closed.state == pb.SURVEY_STATE_CLOSED
    assert admin.close_survey(created.id).state == pb.SURVEY_STATE_CLOSED  # idempotent
    assert anonymous.list_surveys() == []
    assert [s.id for s in admin.list_surveys(include_closed=True)] == [created.id]
    with pytest.raises(RemoteError) as refused:  # closed surveys: only to the admin
        anonymous.list_surveys(include_closed=True)
    assert refused.value.status == Code.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("title", "questions", "message"),
    [
        ("", [binary_question()], "title: must be 1..200 characters, got 0"),
        ("x" * 201, [binary_question()], "title: must be 1..200 characters, got 201"),
        ("T", [], "questions: need 1..100 questions, got 0"),
        ("T", [binary_question("a b")], "questions[0].id: 'a b' must match"),
        ("T", [binary_question("q"), binary_question("q")], "questions[1].id: duplicate"),
        ("T", [binary_question(alpha=0.0)], "questions[0].mechanism.randomized_response.alpha"),
        ("T", [binary_question(alpha=1.5)], "alpha must be in (0, 1], got 1.5"),
        ("T", [binary_question(alpha=math.nan)], "alpha must be a finite number, got nan"),
        ("T", [binary_question(alpha=1.0)], "(alpha 1.0) gives no privacy (epsilon = inf)"),
        ("T", [pb.Question(id="q", text="t", binary=pb.BinaryQuestion())], "mechanism: missing"),
        ("T", [pb.Question(id="q", text="t", mechanism=binary_question().mechanism)], "binary"),
        ("T", [pb.Question(id="q", text=" ", binary=pb.BinaryQuestion(),
                           mechanism=binary_question().mechanism)], "questions[0].text"),
    ],
)  # fmt: skip
def test_invalid_survey_is_rejected_and_nothing_is_stored(
    admin: AggregatorClient, title: str, questions: list[pb.Question], message: str
) -> None:
    with pytest.raises(RemoteError) as caught:
        admin.create_survey(title, questions)
    assert caught.value.status == Code.INVALID_ARGUMENT
    assert message in caught.value.details
    assert admin.list_surveys(include_closed=True) == []


def test_admin_calls_need_the_token(
    server: RunningServer, survey: pb.Survey, anonymous: AggregatorClient
) -> None:
    for token in (None, "wrong-token", ADMIN_TOKEN + "x"):
        with AggregatorClient(server.address, admin_token=token, attempts=1) as client:
            with pytest.raises(RemoteError) as caught:
                client.create_survey("Sneaky", [binary_question()])
            assert caught.value.status == Code.UNAUTHENTICATED
            with pytest.raises(RemoteError) as closing:
                client.close_survey(survey.id)
            assert closing.value.status == Code.UNAUTHENTICATED
    assert [s.id for s in anonymous.list_surveys()] == [survey.id]
    assert anonymous.get_survey(survey.id).state == pb.SURVEY_STATE_OPEN


def test_raw_metadata_without_bearer_prefix_is_rejected(server: RunningServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_stub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.CreateSurvey(
                pb.CreateSurveyRequest(title="T", questions=[binary_question()]),
                metadata=(("authorization", ADMIN_TOKEN),),
            )
        assert caught.value.code() == Code.UNAUTHENTICATED


@pytest.mark.parametrize("right_first", [True, False])
def test_several_authorization_headers_are_refused_even_with_the_right_one(
    server: RunningServer, anonymous: AggregatorClient, right_first: bool
) -> None:
    right, wrong = ("authorization", f"Bearer {ADMIN_TOKEN}"), ("authorization", "Bearer wrong")
    with grpc.insecure_channel(server.address) as channel, pytest.raises(grpc.RpcError) as caught:
        pb_stub(channel).CreateSurvey(
            pb.CreateSurveyRequest(title="T", questions=[binary_question()]),
            metadata=(right, wrong) if right_first else (wrong, right),
        )
    assert caught.value.code() == Code.UNAUTHENTICATED
    assert anonymous.list_surveys() == []


def pb_stub(channel: grpc.Channel) -> aggregator_pb2_grpc.AggregatorStub:
    return aggregator_pb2_grpc.AggregatorStub(channel)


@pytest.mark.parametrize("survey_id", ["0123456789abcdef", "", "NOT-AN-ID", "x" * 100])
def test_unknown_survey_is_not_found(
    anonymous: AggregatorClient, admin: AggregatorClient, survey_id: str
) -> None:
    for call in (anonymous.get_survey, admin.close_survey):
        with pytest.raises(RemoteError) as caught:
            call(survey_id)
        assert caught.value.status == Code.NOT_FOUND
        assert "unknown survey" in caught.value.details


# --- reports ---------------------------------------------------------------------------


def test_submit_then_estimate_matches_the_library(
    anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    bits = [i % 3 == 0 for i in range(300)]
    response = anonymous.submit_reports(make_reports(survey, bits))
    assert (response.stored, response.already_stored) == (300, 0)
    estimate = anonymous.get_estimate(survey.id, "cheated", 0.9, "wilson")
    expected = estimate_proportion(sum(bits), 300, 0.5, 0.9, "wilson")
    for field, value in expected.to_dict().items():
        assert getattr(estimate, field) == value, field
    assert estimate.survey_id == survey.id
    assert estimate.question_id == "cheated"
    default = anonymous.get_estimate(survey.id, "cheated", 0.0, "")
    assert (default.confidence, default.method) == (0.95, "clopper-pearson")
    assert anonymous.get_survey(survey.id).reports == 300


def test_resend_is_acknowledged_and_counted_once(
    anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    reports = make_reports(survey, [True, False, True])
    assert anonymous.submit_reports(reports).stored == 3
    again = anonymous.submit_reports(reports)
    assert (again.stored, again.already_stored) == (0, 3)
    mixed = anonymous.submit_reports(reports[:1] + make_reports(survey, [True], prefix="new"))
    assert (mixed.stored, mixed.already_stored) == (1, 1)
    assert anonymous.get_estimate(survey.id, "cheated").n == 4
    # The same report twice in one batch counts once too.
    twice = make_reports(survey, [False], prefix="dup") * 2
    assert (anonymous.submit_reports(twice).stored, stored_count(anonymous, survey.id)) == (1, 5)


def test_batches_can_span_questions(anonymous: AggregatorClient, survey: pb.Survey) -> None:
    reports = make_reports(survey, [True] * 4) + make_reports(survey, [False] * 6, "late", "l")
    assert anonymous.submit_reports(reports).stored == 10
    assert anonymous.get_estimate(survey.id, "cheated").n == 4
    assert anonymous.get_estimate(survey.id, "late").n == 6


def corrupt(report: pb.Report, field: str) -> pb.Report:
    broken = pb.Report()
    broken.CopyFrom(report)
    match field:
        case "report_id_empty":
            broken.report_id = ""
        case "report_id_bad":
            broken.report_id = "has space"
        case "report_id_long":
            broken.report_id = "x" * 129
        case "survey_id":
            broken.survey_id = ""
        case "question_id":
            broken.question_id = ""
        case "bit":
            broken.ClearField("bit")
        case "mechanism":
            broken.ClearField("mechanism")
    return broken


BAD_REPORTS = [
    ("report_id_empty", Code.INVALID_ARGUMENT, "reports[2].report_id: '' must match"),
    ("report_id_bad", Code.INVALID_ARGUMENT, "reports[2].report_id: 'has space'"),
    ("report_id_long", Code.INVALID_ARGUMENT, "reports[2].report_id:"),
    ("survey_id", Code.INVALID_ARGUMENT, "reports[2].survey_id: missing"),
    ("question_id", Code.INVALID_ARGUMENT, "reports[2].question_id: missing"),
    ("bit", Code.INVALID_ARGUMENT, "reports[2].value: missing"),
    ("mechanism", Code.INVALID_ARGUMENT, "reports[2].mechanism: missing"),
]


@pytest.mark.parametrize(("field", "code", "message"), BAD_REPORTS)
def test_one_malformed_report_rejects_the_whole_batch(
    anonymous: AggregatorClient, survey: pb.Survey, field: str, code: grpc.StatusCode, message: str
) -> None:
    reports = make_reports(survey, [True] * 5)
    reports[2] = corrupt(reports[2], field)
    with pytest.raises(RemoteError) as caught:
        anonymous.submit_reports(reports)
    assert caught.value.status == code
    assert message in caught.value.details
    assert stored_count(anonymous, survey.id) == 0


def test_rule_violations_name_the_report_and_store_nothing(
    admin: AggregatorClient, anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    def rejected(reports: list[pb.Report]) -> RemoteError:
        with pytest.raises(RemoteError) as caught:
            anonymous.submit_reports(reports)
        return caught.value

    good = make_reports(survey, [True] * 3)
    unknown_survey = make_reports(survey, [True] * 3)
    unknown_survey[1].survey_id = "0123456789abcdef"
    error = rejected(unknown_survey)
    assert (error.status, error.details) == (
        Code.NOT_FOUND, "reports[1].survey_id: unknown survey '0123456789abcdef'"
    )  # fmt: skip
    unknown_question = make_reports(survey, [True] * 3)
    unknown_question[2].question_id = "nope"
    error = rejected(unknown_question)
    assert error.status == Code.NOT_FOUND
    assert error.details.startswith("reports[2].question_id:")
    mismatch = make_reports(survey, [True] * 3)
    mismatch[1].mechanism.randomized_response.alpha = 0.9
    error = rejected(mismatch)
    assert error.status == Code.FAILED_PRECONDITION
    assert (
        "reports[1].mechanism: randomized_response (alpha 0.9) differs from the survey's "
        "randomized_response (alpha 0.5)"
    ) in error.details
    conflicting = make_reports(survey, [True, True])
    conflicting[1].report_id = conflicting[0].report_id
    conflicting[1].bit = False
    error = rejected(conflicting)
    assert (error.status, error.details.startswith("reports[1].report_id:")) == (
        Code.INVALID_ARGUMENT, True
    )  # fmt: skip
    assert stored_count(anonymous, survey.id) == 0
    # A stored report_id resent with different content: ALREADY_EXISTS, nothing stored.
    anonymous.submit_reports(good)
    changed = make_reports(survey, [True] * 3, prefix="x")
    changed[2].report_id = good[0].report_id
    changed[2].bit = False
    error = rejected(changed)
    assert error.status == Code.ALREADY_EXISTS
    assert "reports[2].report_id" in error.details
    assert stored_count(anonymous, survey.id) == 3
    # Closed survey: FAILED_PRECONDITION, nothing stored.
    admin.close_survey(survey.id)
    error = rejected(make_reports(survey, [True], prefix="late"))
    assert error.status == Code.FAILED_PRECONDITION
    assert "is closed" in error.details
    assert stored_count(anonymous, survey.id) == 3


def test_batch_limits(
    server: RunningServer, anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    with pytest.raises(RemoteError) as empty:
        anonymous.submit_reports([])
    assert empty.value.status == Code.INVALID_ARGUMENT
    assert "at least one report" in empty.value.details
    too_many = make_reports(survey, [True] * (server.service.max_batch + 1))
    with pytest.raises(RemoteError) as caught:
        anonymous.submit_reports(too_many)
    assert caught.value.status == Code.RESOURCE_EXHAUSTED
    assert "batch of 10001 exceeds the limit of 10000" in caught.value.details
    assert stored_count(anonymous, survey.id) == 0
    full = make_reports(survey, [False] * server.service.max_batch)
    assert anonymous.submit_reports(full).stored == 10_000


def test_bytes_that_are_not_a_request_are_invalid_and_store_nothing(
    server: RunningServer, anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    valid = pb.SubmitReportsRequest(reports=make_reports(survey, [True, False])).SerializeToString()
    with grpc.insecure_channel(server.address) as channel:
        submit: grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
        submit = channel.unary_unary(
            "/deniable.v1.Aggregator/SubmitReports",
            request_serializer=None,
            response_deserializer=pb.SubmitReportsResponse.FromString,
        )
        for garbage in (b"\xff\xff\xff", valid[:-3], b"\x0a\x80"):
            with pytest.raises(grpc.RpcError) as caught:
                submit(garbage, timeout=10)
            assert caught.value.code() == Code.INVALID_ARGUMENT
            assert "request: not a valid SubmitReportsRequest" in (caught.value.details() or "")
        assert stored_count(anonymous, survey.id) == 0
        assert submit(valid, timeout=10).stored == 2  # raw bytes are the wire format


# --- estimates -------------------------------------------------------------------------


def test_estimate_errors(anonymous: AggregatorClient, survey: pb.Survey) -> None:
    cases: list[tuple[tuple[str, str], dict[str, Any], grpc.StatusCode, str]] = [
        (("0123456789abcdef", "cheated"), {}, Code.NOT_FOUND, "unknown survey"),
        ((survey.id, "nope"), {}, Code.NOT_FOUND, "has no question 'nope'"),
        ((survey.id, "cheated"), {}, Code.FAILED_PRECONDITION, "no reports yet"),
        ((survey.id, "cheated"), {"confidence": 1.5}, Code.INVALID_ARGUMENT, "confidence"),
        ((survey.id, "cheated"), {"confidence": -0.1}, Code.INVALID_ARGUMENT, "confidence"),
        ((survey.id, "cheated"), {"method": "bayes"}, Code.INVALID_ARGUMENT, "'bayes'"),
    ]
    anonymous.submit_reports(make_reports(survey, [True], "late", "l"))
    for args, kwargs, code, message in cases:
        if code is Code.INVALID_ARGUMENT:
            anonymous.submit_reports(make_reports(survey, [True], prefix=f"e{len(kwargs)}"))
        with pytest.raises(RemoteError) as caught:
            anonymous.get_estimate(*args, **kwargs)
        assert caught.value.status == code, (args, kwargs)
        assert message in caught.value.details


@pytest.mark.parametrize("method", sorted(METHODS))
def test_confidence_up_to_the_bound_is_accepted_and_above_it_refused(
    anonymous: AggregatorClient, survey: pb.Survey, method: str
) -> None:
    anonymous.submit_reports(make_reports(survey, [True, False, True]))
    for level in (MAX_CONFIDENCE, 5e-324):
        got = anonymous.get_estimate(survey.id, "cheated", level, method)
        assert got.confidence == level
        assert 0.0 <= got.ci_low <= got.estimate <= got.ci_high <= 1.0
        assert math.isfinite(got.std_error)
    assert MAX_CONFIDENCE == 0.999999999  # the documented bound, 1 - 1e-9
    for level in (math.nextafter(MAX_CONFIDENCE, 1.0), 1 - 2**-53, 1.0, math.nan, -5e-324):
        with pytest.raises(RemoteError) as caught:
            anonymous.get_estimate(survey.id, "cheated", level, method)
        assert caught.value.status == Code.INVALID_ARGUMENT
        assert caught.value.details == (
            f"confidence: must be in (0, 0.999999999] (at most 1 - 1e-9), got {level!r}"
        )


@pytest.mark.parametrize(
    ("alpha", "accepted"),
    [
        (RandomizedResponse.from_epsilon(MIN_SURVEY_EPSILON).alpha, True),
        (math.nextafter(RandomizedResponse.from_epsilon(MIN_SURVEY_EPSILON).alpha, 0), False),
        (5e-324, False),
        (RandomizedResponse.from_epsilon(MAX_SURVEY_EPSILON).alpha, True),
        (math.nextafter(RandomizedResponse.from_epsilon(MAX_SURVEY_EPSILON).alpha, 1), False),
        (1 - 2**-53, False),  # the largest alpha below 1: epsilon = ln(2^54 - 1), about 37.4
    ],
)
def test_yes_no_alpha_from_the_minimum_to_the_maximum_epsilon(
    admin: AggregatorClient, alpha: float, accepted: bool
) -> None:
    spec = RandomizedResponse(alpha)
    if not accepted:
        with pytest.raises(RemoteError) as caught:
            admin.create_survey("T", [binary_question(alpha=alpha)])
        assert caught.value.status == Code.INVALID_ARGUMENT
        limit = "below the minimum 0.001" if alpha < 0.5 else "above the maximum 20.0"
        assert caught.value.details.startswith(
            f"questions[0].mechanism: epsilon {spec.epsilon!r} of randomized_response "
            f"(alpha {alpha!r}) is {limit}"
        )
        assert admin.list_surveys(include_closed=True) == []
        return
    privacy = admin.create_survey("T", [binary_question(alpha=alpha)]).questions[0].privacy
    assert MIN_SURVEY_EPSILON <= privacy.epsilon == spec.epsilon <= MAX_SURVEY_EPSILON
    assert privacy.explanation == spec.explain()


# --- the standard services and durability ----------------------------------------------


def test_health_and_reflection(server: RunningServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "deniable.v1.Aggregator"):
            answer = health.Check(health_pb2.HealthCheckRequest(service=service))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (reply,) = list(stub.ServerReflectionInfo(iter([request])))
        names = {s.name for s in reply.list_services_response.service}
        assert {"deniable.v1.Aggregator", "grpc.health.v1.Health"} <= names


def test_graceful_stop_reports_not_serving(tmp_path: Path) -> None:
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "127.0.0.1:0"
    )
    running.enter_graceful_shutdown()
    with grpc.insecure_channel(running.address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING
    running.stop(grace=1.0)


def test_restart_on_the_same_database_keeps_the_estimate(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    first = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0")
    with AggregatorClient(first.address, admin_token=ADMIN_TOKEN) as client:
        survey = client.create_survey("Exam", [binary_question("cheated")])
        reports = make_reports(survey, [i % 4 == 0 for i in range(400)])
        client.submit_reports(reports)
        before = client.get_estimate(survey.id, "cheated")
    first.stop(grace=1.0)
    second = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0")
    with AggregatorClient(second.address) as client:
        assert client.get_estimate(survey.id, "cheated") == before
        assert client.get_survey(survey.id).reports == 400
        again = client.submit_reports(reports)
        assert (again.stored, again.already_stored) == (0, 400)  # ids survive the restart
    second.stop(grace=1.0)


def test_unreachable_server_is_retried_then_unavailable() -> None:
    waits: list[float] = []
    with (
        AggregatorClient(
            "127.0.0.1:9", attempts=3, backoff=0.01, timeout=2, sleep=waits.append
        ) as client,
        pytest.raises(RemoteError) as caught,
    ):
        client.list_surveys()
    assert caught.value.status == Code.UNAVAILABLE
    assert caught.value.attempts == 3
    assert waits == [0.01, 0.02]


def test_a_huge_error_message_is_cut_and_keeps_its_status(
    server: RunningServer, anonymous: AggregatorClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error message too long for a header is cut, so its status survives.

    Status details travel in a header that gRPC caps at 16 KiB: a longer message would
    turn the answer into RESOURCE_EXHAUSTED.
    """

    def refuse(survey_id: str, *, admin: bool) -> pb.Survey:
        raise InvalidArgument("survey_id: " + "x" * 50_000)

    monkeypatch.setattr(server.service, "get_survey", refuse)
    with pytest.raises(RemoteError) as refused:
        anonymous.get_survey("abc")
    assert refused.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details.startswith("survey_id: xxx")
    assert refused.value.details.endswith("... (message cut)")
    assert len(refused.value.details) <= MAX_DETAILS


def test_values_a_client_sent_are_echoed_cut_to_a_few_characters() -> None:
    assert shown("abc") == "'abc'"
    long = "y" * 100_000
    assert shown(long) == f"{'y' * 40!r}... (100,000 characters)"
