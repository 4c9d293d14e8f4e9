"""Attack: without the admin token, enumerate closed surveys and time a stepped survey's count.

Against the code before the fix, ``ListSurveys(include_closed=true)`` listed every survey
ever made to anyone, and ``ListSurveys``/``GetSurvey`` showed a stepped survey's live
report count: calling before and after one person's submission isolates that person's
batch, which the release steps exist to prevent.
"""

from __future__ import annotations

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from tests.aggregator.server.test_release_gate import reports as question_reports
from tests.conftest import binary_question


def test_closed_surveys_are_listed_only_to_the_admin(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    secret = admin.create_survey("Finished", [binary_question("q")])
    admin.close_survey(secret.id)
    with pytest.raises(RemoteError) as refused:
        anonymous.list_surveys(include_closed=True)
    assert refused.value.status == grpc.StatusCode.UNAUTHENTICATED
    assert refused.value.details.startswith(
        "include_closed: closed surveys are listed only to the admin"
    )
    assert anonymous.list_surveys() == []  # the open ones: none
    assert [s.id for s in admin.list_surveys(include_closed=True)] == [secret.id]


def test_a_stepped_surveys_live_count_is_not_shown_without_the_admin_token(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey(
        "Stepped", [binary_question("q")], release_step=50, enrollment_required=True
    )
    tokens = iter(admin.issue_tokens(survey.id, 53))

    def participant(prefix: str) -> None:  # one enrolled participant's answer
        anonymous.submit_reports(
            question_reports(survey, "q", 1, f"{prefix}-"), enrollment_token=next(tokens)
        )

    before = anonymous.get_survey(survey.id).reports
    participant("victim")
    for seen in (anonymous.get_survey(survey.id), anonymous.list_surveys()[0]):
        assert seen.reports == before == 0  # nothing released yet: no change to time
        assert seen.reports_as_released
    assert admin.get_survey(survey.id).reports == 1  # the operator sees the live count
    assert not admin.list_surveys()[0].reports_as_released
    # Once a step is released, the count shown is the released one, and stays put
    # between steps.
    for k in range(52):
        participant(f"p{k}")
    assert anonymous.get_survey(survey.id).reports == 50
    assert admin.get_survey(survey.id).reports == 53
