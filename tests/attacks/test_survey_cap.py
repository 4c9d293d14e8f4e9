"""Attack: a survey created with max_reports is sent more reports than that.

Against the code before the fix the survey had no cap (the field did not exist and the
daemon dropped it), so every batch was stored; now a batch that would pass it is
refused whole, decided in the commit, so concurrent submitters cannot overshoot.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from tests.aggregator.server.test_release_gate import reports as question_reports
from tests.conftest import binary_question


def test_a_survey_never_stores_more_than_max_reports(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Capped", [binary_question("q")], max_reports=100)
    first = question_reports(survey, "q", 60, "a-")
    assert anonymous.submit_reports(first).stored == 60
    with pytest.raises(RemoteError) as refused:
        anonymous.submit_reports(question_reports(survey, "q", 60, "b-"))
    assert refused.value.status == grpc.StatusCode.FAILED_PRECONDITION
    assert refused.value.details == (
        f"reports[0]: survey {survey.id!r} is full: its 60 new report(s) in this batch "
        "would take it past its max_reports of 100; nothing stored"
    )
    assert admin.get_survey(survey.id).reports == 60
    resent = anonymous.submit_reports(first)  # a resend is still acknowledged
    assert (resent.stored, resent.already_stored) == (0, 60)
    assert admin.get_survey(survey.id).max_reports == 100


def test_concurrent_submitters_cannot_overshoot_max_reports(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Capped", [binary_question("q")], max_reports=100)

    def send(k: int) -> int | str:
        try:
            return anonymous.submit_reports(question_reports(survey, "q", 9, f"t{k}-")).stored
        except RemoteError as error:
            return error.code

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(send, range(30)))
    assert {o for o in outcomes if isinstance(o, str)} == {"FAILED_PRECONDITION"}
    stored = sum(o for o in outcomes if isinstance(o, int))
    assert stored == admin.get_survey(survey.id).reports == 99  # 11 batches of 9
    assert anonymous.get_estimate(survey.id, "q").n == 99
