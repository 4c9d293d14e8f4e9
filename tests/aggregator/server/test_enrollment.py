"""Enrollment tokens over gRPC, against a real in-process server: one report per question."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, binary_question

Code = grpc.StatusCode


def report(survey: pb.Survey, qid: str, rid: str, bit: bool = True) -> pb.Report:
    question = next(q for q in survey.questions if q.id == qid)
    return pb.Report(
        report_id=rid, survey_id=survey.id, question_id=qid, mechanism=question.mechanism, bit=bit
    )


def create(admin: AggregatorClient, enrollment: bool = True, **kwargs: int) -> pb.Survey:
    return admin.create_survey(
        "Enrolled",
        [binary_question("q1"), binary_question("q2")],
        enrollment_required=enrollment,
        **kwargs,
    )


def state(client: AggregatorClient, survey_id: str) -> tuple[int, int]:
    """(reports stored, tokens issued): what a refused call must leave unchanged."""
    survey = client.get_survey(survey_id)
    return survey.reports, survey.tokens_issued


def refused(call: object, code: Code) -> RemoteError:
    assert callable(call)
    with pytest.raises(RemoteError) as raised:
        call()
    assert raised.value.status == code, raised.value.details
    return raised.value


@pytest.fixture
def enrolled(admin: AggregatorClient) -> pb.Survey:
    return create(admin)


@pytest.fixture
def token(admin: AggregatorClient, enrolled: pb.Survey) -> str:
    return admin.issue_tokens(enrolled.id, 1)[0]


# --- issuing ---------------------------------------------------------------------------


def test_issued_tokens_are_fresh_random_and_counted(
    admin: AggregatorClient, enrolled: pb.Survey
) -> None:
    first = admin.issue_tokens(enrolled.id, 3)
    second = admin.issue_tokens(enrolled.id, 2)
    assert len(set(first + second)) == 5
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", t) for t in first + second)  # 192 bits
    assert admin.get_survey(enrolled.id).tokens_issued == 5
    assert enrolled.enrollment_required
    assert admin.list_surveys()[0].tokens_issued == 5


def test_issue_tokens_needs_the_admin_token(
    anonymous: AggregatorClient, enrolled: pb.Survey
) -> None:
    refused(lambda: anonymous.issue_tokens(enrolled.id, 1), Code.UNAUTHENTICATED)
    assert state(anonymous, enrolled.id) == (0, 0)


@pytest.mark.parametrize("count", [0, 100_001])
def test_issue_tokens_count_bounds(
    admin: AggregatorClient, enrolled: pb.Survey, count: int
) -> None:
    error = refused(lambda: admin.issue_tokens(enrolled.id, count), Code.INVALID_ARGUMENT)
    assert error.details.startswith("count: must be 1..100,000"), error.details
    assert f"got {count}" in error.details
    assert state(admin, enrolled.id) == (0, 0)


def test_issue_tokens_up_to_the_limit(admin: AggregatorClient, enrolled: pb.Survey) -> None:
    tokens = admin.issue_tokens(enrolled.id, 100_000)
    assert len(set(tokens)) == 100_000
    assert state(admin, enrolled.id) == (0, 100_000)


def test_issue_tokens_for_unknown_closed_or_open_surveys(admin: AggregatorClient) -> None:
    error = refused(lambda: admin.issue_tokens("0123abcd", 1), Code.NOT_FOUND)
    assert "'0123abcd'" in error.details
    plain = create(admin, enrollment=False)
    error = refused(lambda: admin.issue_tokens(plain.id, 1), Code.FAILED_PRECONDITION)
    assert "does not require enrollment" in error.details
    closed = create(admin)
    admin.close_survey(closed.id)
    error = refused(lambda: admin.issue_tokens(closed.id, 1), Code.FAILED_PRECONDITION)
    assert f"survey {closed.id!r} is closed" in error.details
    assert state(admin, plain.id) == (0, 0)
    assert state(admin, closed.id) == (0, 0)


# --- submitting with a token -----------------------------------------------------------


def test_a_token_stores_one_report_per_question_and_resends_are_idempotent(
    anonymous: AggregatorClient, enrolled: pb.Survey, token: str
) -> None:
    batch = [report(enrolled, "q1", "a", True), report(enrolled, "q2", "b", False)]
    first = anonymous.submit_reports(batch, enrollment_token=token)
    assert (first.stored, first.already_stored) == (2, 0)
    again = anonymous.submit_reports(batch, enrollment_token=token)
    assert (again.stored, again.already_stored) == (0, 2)
    one = anonymous.submit_reports(batch[1:], enrollment_token=token)
    assert (one.stored, one.already_stored) == (0, 1)
    assert state(anonymous, enrolled.id) == (2, 1)
    assert anonymous.get_estimate(enrolled.id, "q1").n == 1


def test_questions_may_be_answered_in_separate_batches(
    anonymous: AggregatorClient, enrolled: pb.Survey, token: str
) -> None:
    assert anonymous.submit_reports([report(enrolled, "q1", "a")], token).stored == 1
    assert anonymous.submit_reports([report(enrolled, "q2", "b")], token).stored == 1
    assert state(anonymous, enrolled.id) == (2, 1)


@pytest.mark.parametrize(
    ("rid", "bit"), [("other", True), ("other", False), ("a", False)], ids=["id", "both", "value"]
)
def test_a_different_report_for_an_answered_question_is_refused(
    anonymous: AggregatorClient, enrolled: pb.Survey, token: str, rid: str, bit: bool
) -> None:
    anonymous.submit_reports([report(enrolled, "q1", "a", True)], token)
    batch = [report(enrolled, "q2", "fresh"), report(enrolled, "q1", rid, bit)]
    error = refused(lambda: anonymous.submit_reports(batch, token), Code.ALREADY_EXISTS)
    assert error.details.startswith("reports[1]: this enrollment token already answered")
    assert "question 'q1'" in error.details
    assert token not in error.details
    assert state(anonymous, enrolled.id) == (1, 1)
    # Nothing of the refused batch was bound: the token can still answer q2, once.
    assert anonymous.submit_reports(batch[:1], token).stored == 1
    assert anonymous.get_estimate(enrolled.id, "q1").n == 1


def test_another_tokens_report_id_is_refused(
    admin: AggregatorClient, anonymous: AggregatorClient, enrolled: pb.Survey
) -> None:
    mine, theirs = admin.issue_tokens(enrolled.id, 2)
    anonymous.submit_reports([report(enrolled, "q1", "a")], mine)
    error = refused(
        lambda: anonymous.submit_reports([report(enrolled, "q1", "a")], theirs),
        Code.ALREADY_EXISTS,
    )
    assert error.details.startswith("reports[0].report_id: 'a' is already stored")
    assert state(anonymous, enrolled.id) == (1, 2)
    assert anonymous.submit_reports([report(enrolled, "q1", "b")], theirs).stored == 1


def test_two_reports_for_one_question_in_a_token_batch_are_invalid(
    anonymous: AggregatorClient, enrolled: pb.Survey, token: str
) -> None:
    batch = [report(enrolled, "q1", "a"), report(enrolled, "q2", "b"), report(enrolled, "q1", "c")]
    error = refused(lambda: anonymous.submit_reports(batch, token), Code.INVALID_ARGUMENT)
    assert error.details.startswith("reports[2].question_id: a second report for question 'q1'")
    assert state(anonymous, enrolled.id) == (0, 1)
    twice = [report(enrolled, "q1", "a"), report(enrolled, "q1", "a")]  # an identical repeat
    response = anonymous.submit_reports(twice, token)
    assert (response.stored, response.already_stored) == (1, 1)


def test_missing_token_is_unauthenticated(anonymous: AggregatorClient, enrolled: pb.Survey) -> None:
    error = refused(
        lambda: anonymous.submit_reports([report(enrolled, "q1", "a")]), Code.UNAUTHENTICATED
    )
    assert error.details == f"reports[0]: survey {enrolled.id!r} requires an enrollment token"
    assert state(anonymous, enrolled.id) == (0, 0)


def test_unknown_token_is_unauthenticated_and_not_echoed(
    admin: AggregatorClient, anonymous: AggregatorClient, enrolled: pb.Survey
) -> None:
    other = create(admin)
    foreign = admin.issue_tokens(other.id, 1)[0]  # valid, but for another survey
    for token in (secrets.token_urlsafe(24), foreign, "x" * 5000):
        error = refused(
            lambda token=token: anonymous.submit_reports([report(enrolled, "q1", "a")], token),
            Code.UNAUTHENTICATED,
        )
        assert error.details == f"enrollment_token: not a token issued for survey {enrolled.id!r}"
        assert token not in error.details
    assert state(anonymous, enrolled.id) == (0, 0)
    assert state(anonymous, other.id) == (0, 1)


def test_token_for_a_survey_without_enrollment_is_invalid(
    admin: AggregatorClient, anonymous: AggregatorClient, token: str
) -> None:
    plain = create(admin, enrollment=False)
    error = refused(
        lambda: anonymous.submit_reports([report(plain, "q1", "a")], token),
        Code.INVALID_ARGUMENT,
    )
    assert error.details.startswith(f"enrollment_token: survey {plain.id!r} of reports[0] does")
    assert state(anonymous, plain.id) == (0, 0)
    assert anonymous.submit_reports([report(plain, "q1", "a")]).stored == 1  # without: fine


def test_a_token_batch_holds_one_survey(
    admin: AggregatorClient, anonymous: AggregatorClient, enrolled: pb.Survey, token: str
) -> None:
    plain = create(admin, enrollment=False)
    for other in (plain, create(admin)):
        batch = [report(enrolled, "q1", "a"), report(other, "q1", "b")]
        error = refused(
            lambda batch=batch: anonymous.submit_reports(batch, token), Code.INVALID_ARGUMENT
        )
        assert error.details.startswith(f"reports[1].survey_id: {other.id!r} differs")
        assert state(anonymous, other.id)[0] == 0
    assert state(anonymous, enrolled.id) == (0, 1)


def test_closed_survey_refuses_token_batches(
    admin: AggregatorClient, anonymous: AggregatorClient, enrolled: pb.Survey, token: str
) -> None:
    anonymous.submit_reports([report(enrolled, "q1", "a")], token)  # the spec is now cached
    admin.close_survey(enrolled.id)
    error = refused(
        lambda: anonymous.submit_reports([report(enrolled, "q2", "b")], token),
        Code.FAILED_PRECONDITION,
    )
    assert "is closed" in error.details
    assert state(anonymous, enrolled.id) == (1, 1)


def test_concurrent_batches_of_one_token_store_one_report_per_question(
    admin: AggregatorClient, anonymous: AggregatorClient, enrolled: pb.Survey
) -> None:
    """Batches racing into one group commit see each other's bindings."""
    tokens = admin.issue_tokens(enrolled.id, 12)
    start = threading.Barrier(8, timeout=30)

    def send(job: tuple[int, int]) -> str:
        index, attempt = job
        batch = [report(enrolled, "q1", f"t{index}-{attempt}", bool(attempt))]
        if index < 8:
            start.wait()
        try:
            anonymous.submit_reports(batch, tokens[index])
        except RemoteError as error:
            return error.code  # the status's name
        return Code.OK.name

    jobs = [(i, attempt) for i in range(12) for attempt in range(2)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(send, jobs))
    for index in range(12):
        pair = sorted((codes[2 * index], codes[2 * index + 1]))
        assert pair == sorted((Code.OK.name, Code.ALREADY_EXISTS.name)), (index, pair)
    assert state(anonymous, enrolled.id) == (12, 12)


# --- durability and storage at rest ----------------------------------------------------


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "enrolled.db"


def serve(db_path: Path) -> RunningServer:
    return start_server(open_storage(f"sqlite:///{db_path}"), ADMIN_TOKEN, "127.0.0.1:0")


@pytest.fixture
def first_run(db_path: Path) -> tuple[pb.Survey, list[str]]:
    """A survey answered with one of three tokens, on a server stopped afterwards."""
    running = serve(db_path)
    try:
        with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = create(admin)
            tokens = admin.issue_tokens(survey.id, 3)
            admin.submit_reports([report(survey, "q1", "a"), report(survey, "q2", "b")], tokens[0])
    finally:
        running.stop(grace=1.0)
    return survey, tokens


def test_a_used_token_stays_used_after_a_restart(
    db_path: Path, first_run: tuple[pb.Survey, list[str]]
) -> None:
    survey, tokens = first_run
    running = serve(db_path)
    try:
        with AggregatorClient(running.address, attempts=1) as client:
            assert state(client, survey.id) == (2, 3)
            refused(
                lambda: client.submit_reports([report(survey, "q1", "c", False)], tokens[0]),
                Code.ALREADY_EXISTS,
            )
            resend = client.submit_reports([report(survey, "q1", "a")], tokens[0])
            assert (resend.stored, resend.already_stored) == (0, 1)
            assert client.submit_reports([report(survey, "q1", "c")], tokens[1]).stored == 1
            assert state(client, survey.id) == (3, 3)
    finally:
        running.stop(grace=1.0)


def test_tokens_are_stored_only_as_hashes(
    db_path: Path, first_run: tuple[pb.Survey, list[str]]
) -> None:
    _, tokens = first_run
    stored = b"".join(path.read_bytes() for path in db_path.parent.glob(f"{db_path.name}*"))
    for token in tokens:
        assert token.encode() not in stored
        assert hashlib.sha256(token.encode()).digest() in stored  # what is kept instead
