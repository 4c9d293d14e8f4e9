"""Attack on a stepped survey's central ε: fill a step with forged reports, then subtract them."""

# The adversary is anyone who can reach the daemon and read released estimates (no admin
# token, no enrollment token). A stepped survey promises readers of its estimates a
# central ε far below the local one, because each release mixes a participant's report
# with a step of others. If the others can be forged with known values, the release minus
# the forged part is the one honest report: the local ε is all that held. The daemon must
# refuse to make such a survey, and a survey that requires enrollment must refuse the
# forged reports.

from __future__ import annotations

import grpc
import pytest

from deniable.client import build_reports
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import binary_question

STEP = 1000


def _forge(admin: AggregatorClient, anonymous: AggregatorClient) -> pb.Estimate:
    """One honest answer, then the step filled by forgeries of known value: the release.

    The release minus the forged part is the honest participant's report, whatever
    central ε the estimate claims.
    """
    survey = admin.create_survey("Stepped", [binary_question("q1", 0.5)], release_step=STEP)
    (honest,) = build_reports(survey, {"q1": True})
    anonymous.submit_reports([honest.report])
    anonymous.submit_reports(reports(survey, "q1", STEP - 1, "forged"))
    return anonymous.get_estimate(survey.id, "q1")


def test_a_stepped_survey_without_enrollment_is_refused(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    with pytest.raises(RemoteError) as raised:
        _forge(admin, anonymous)  # a release with a central ε the forgeries defeat
    assert raised.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "release_step: a survey released in steps shows a central ε" in raised.value.details
    assert "Create it with enrollment_required" in raised.value.details


def test_with_enrollment_forged_reports_cannot_fill_a_step(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    questions = [binary_question("q1", 0.5)]
    survey = admin.create_survey("Stepped", questions, release_step=STEP, enrollment_required=True)
    (token,) = admin.issue_tokens(survey.id, 1)
    (honest,) = build_reports(survey, {"q1": True})
    anonymous.submit_reports([honest.report], enrollment_token=token)
    with pytest.raises(RemoteError) as raised:
        anonymous.submit_reports(reports(survey, "q1", STEP - 1, "forged"))
    assert raised.value.status == grpc.StatusCode.UNAUTHENTICATED
    # The one token cannot carry them either: it answers each question once.
    with pytest.raises(RemoteError) as again:
        anonymous.submit_reports(reports(survey, "q1", 1, "forged"), enrollment_token=token)
    assert again.value.status == grpc.StatusCode.ALREADY_EXISTS
    with pytest.raises(RemoteError) as withheld:
        anonymous.get_estimate(survey.id, "q1")
    assert withheld.value.status == grpc.StatusCode.FAILED_PRECONDITION
    assert withheld.value.details.endswith("its first release is at 1,000 reports")


def test_the_live_count_of_a_stepped_question_is_not_shown_without_the_admin_token(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    """Timing a step: the count before and after one participant's batch is that batch."""
    survey = admin.create_survey(
        "Stepped", [binary_question("q1", 0.5)], release_step=2, enrollment_required=True
    )
    tokens = admin.issue_tokens(survey.id, 3)
    for token, report in zip(tokens, reports(survey, "q1", 3, "p"), strict=True):
        anonymous.submit_reports([report], enrollment_token=token)
    public = anonymous.get_estimate(survey.id, "q1")
    assert (public.n, public.stored, public.stored_as_released) == (2, 2, True)
    live = admin.get_estimate(survey.id, "q1")
    assert (live.n, live.stored, live.stored_as_released) == (2, 3, False)
