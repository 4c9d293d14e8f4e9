"""Release steps over gRPC: estimates refresh only every release_step reports, with a central ε."""

from __future__ import annotations

import math

import grpc
import pytest

from deniable.aggregator.server._lifecycle import RunningServer
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.privacy import shuffled_epsilon
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._enrolled import enrolled, stepped_without_enrollment
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import binary_question


def create(admin: AggregatorClient, step: int, min_reports: int = 0) -> pb.Survey:
    questions = [binary_question("q1"), binary_question("q2", alpha=0.25)]
    return admin.create_survey(
        "Stepped", questions, min_reports=min_reports, release_step=step, enrollment_required=True
    )


def refused(client: AggregatorClient, survey_id: str, qid: str, **options: float) -> RemoteError:
    with pytest.raises(RemoteError) as raised:
        client.get_estimate(survey_id, qid, **options)  # type: ignore[arg-type]
    return raised.value


def test_estimates_freeze_between_steps_and_refresh_at_each(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = create(admin, 100)
    assert survey.release_step == 100
    error = refused(admin, survey.id, "q1")
    assert error.status == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details == (
        "question_id: question 'q1' is released in steps; its first release is at 100 "
        "reports, 0 stored so far"
    )
    enrolled(admin, anonymous, reports(survey, "q1", 60, "a"))
    assert (
        "first release is at 100 reports, 60 stored so far"
        in refused(admin, survey.id, "q1").details
    )
    # Each participant's report is a batch of its own: the step is reached at exactly 100.
    enrolled(admin, anonymous, reports(survey, "q1", 50, "b"))
    first = admin.get_estimate(survey.id, "q1")
    assert (first.n, first.stored, first.next_release_at) == (100, 110, 200)
    enrolled(admin, anonymous, [r for r in reports(survey, "q1", 99, "c") if r.bit])  # 50 yes
    frozen = admin.get_estimate(survey.id, "q1")
    assert (frozen.n, frozen.stored, frozen.next_release_at) == (100, 160, 200)
    assert (frozen.estimate_raw, frozen.ci_low, frozen.ci_high) == (
        first.estimate_raw, first.ci_low, first.ci_high,
    )  # fmt: skip
    enrolled(admin, anonymous, reports(survey, "q1", 39, "d"))  # 199: one short
    assert admin.get_estimate(survey.id, "q1").n == 100
    enrolled(admin, anonymous, reports(survey, "q1", 1, "e"))  # exactly at the point
    refreshed = admin.get_estimate(survey.id, "q1")
    assert (refreshed.n, refreshed.stored, refreshed.next_release_at) == (200, 200, 300)
    assert refreshed.estimate_raw != first.estimate_raw
    # Without the admin token the live count is not shown: only what releases are from.
    public = anonymous.get_estimate(survey.id, "q1")
    assert (public.n, public.stored, public.stored_as_released) == (200, 200, True)
    assert public.estimate_raw == refreshed.estimate_raw
    assert not refreshed.stored_as_released
    assert "first release" in refused(admin, survey.id, "q2").details  # each on its own


def test_central_privacy_is_the_shuffling_bound_of_the_step(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = create(admin, 500, min_reports=200)
    enrolled(admin, anonymous, reports(survey, "q1", 200, "a"))
    estimate = anonymous.get_estimate(survey.id, "q1")
    local = survey.questions[0].privacy.epsilon
    central = estimate.central
    assert estimate.HasField("central")
    assert (estimate.n, estimate.next_release_at) == (200, 700)  # the gate is the first step
    assert (central.step, central.delta, central.local_epsilon) == (200, 1e-6, local)
    assert central.epsilon == shuffled_epsilon(local, 200, 1e-6)
    assert 0 < central.epsilon < local
    assert "operator" in central.holds_against
    assert "released estimates" in central.holds_against
    assert "Feldman, McMillan and Talwar" in central.method
    assert "distinct participants admitted with enrollment tokens" in central.assumes
    looser = anonymous.get_estimate(survey.id, "q1", central_delta=1e-3).central
    assert looser.delta == 1e-3
    assert looser.epsilon == shuffled_epsilon(local, 200, 1e-3) < central.epsilon


def test_survey_central_composes_its_questions(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = create(admin, 1000)
    locals_ = [q.privacy.epsilon for q in survey.questions]
    expected = math.fsum(shuffled_epsilon(e, 1000, 1e-6 / 2) for e in locals_)
    for shown in (
        survey,
        anonymous.get_survey(survey.id),
        anonymous.list_surveys()[0],
        admin.close_survey(survey.id),
    ):
        central = shown.central
        assert shown.HasField("central")
        assert (central.questions, central.step) == (2, 1000)
        assert central.delta == pytest.approx(1e-6)
        assert central.epsilon == pytest.approx(expected, rel=1e-12)
        assert central.local_epsilon == pytest.approx(sum(locals_))
        assert central.epsilon < central.local_epsilon


def test_not_stepped_by_default_and_then_no_central(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Open", [binary_question("q1")])
    assert survey.release_step == 0
    assert not survey.HasField("central")
    anonymous.submit_reports(reports(survey, "q1", 3, "a"))
    estimate = anonymous.get_estimate(survey.id, "q1")
    assert (estimate.n, estimate.stored, estimate.next_release_at) == (3, 3, 0)
    assert not estimate.HasField("central")
    error = refused(anonymous, survey.id, "q1", central_delta=1e-6)
    assert error.status == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details.startswith(
        f"central_delta: survey {survey.id!r} is not released in steps with enrollment"
    )


@pytest.mark.parametrize("delta", [1.0, 1.5, -1e-6, math.nan])
def test_bad_central_delta_is_refused(
    admin: AggregatorClient, anonymous: AggregatorClient, delta: float
) -> None:
    survey = create(admin, 10)
    enrolled(admin, anonymous, reports(survey, "q1", 10, "a"))
    error = refused(anonymous, survey.id, "q1", central_delta=delta)
    assert error.status == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details == f"central_delta: must be in (0, 1), got {delta!r}"


def test_release_step_bounds(admin: AggregatorClient) -> None:
    assert create(admin, 10**9).release_step == 10**9
    with pytest.raises(RemoteError) as raised:
        create(admin, 10**9 + 1)
    assert raised.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details == (
        "release_step: must be 0 (not stepped) or 1..1,000,000,000 reports per step, "
        "got 1,000,000,001"
    )
    assert len(admin.list_surveys(include_closed=True)) == 1  # nothing stored


def test_a_stepped_survey_made_without_enrollment_claims_no_central_epsilon(
    server: RunningServer, anonymous: AggregatorClient
) -> None:
    survey = stepped_without_enrollment(server.storage, "Old", [binary_question("q1")], 10)
    anonymous.submit_reports(reports(survey, "q1", 12, "a"))
    estimate = anonymous.get_estimate(survey.id, "q1")
    assert (estimate.n, estimate.stored, estimate.next_release_at) == (12, 12, 22)  # stepped
    assert not estimate.HasField("central")  # forged reports could have filled its steps
    assert not anonymous.get_survey(survey.id).HasField("central")
    error = refused(anonymous, survey.id, "q1", central_delta=1e-6)
    assert error.status == grpc.StatusCode.FAILED_PRECONDITION
    assert "is not released in steps with enrollment" in error.details


def test_an_unstepped_survey_shows_its_count_to_anyone(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Open", [binary_question("q")])
    anonymous.submit_reports(reports(survey, "q", 3, "a"))
    shown = anonymous.get_survey(survey.id)
    assert (shown.reports, shown.reports_as_released) == (3, False)
